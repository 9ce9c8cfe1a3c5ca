#include "farmctl/cli.h"

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>

#include "campaign/campaign_yaml.h"
#include "common/files.h"
#include "common/flags.h"
#include "common/log.h"
#include "common/status.h"
#include "dataset/dataset.h"
#include "farmctl/binaries.h"
#include "farmctl/compare.h"
#include "farmctl/curves.h"
#include "farmctl/local.h"
#include "farmctl/noise_floor.h"
#include "farmctl/render.h"
#include "farmctl/report.h"
#include "farmctl/rounds.h"
#include "farmctl/submission.h"
#include "farmctl/tune.h"
#include "farmctl/watch_log.h"
#include "pipeline/spec.h"
#include "protocol/control_client.h"
#include "protocol/security.h"
#include "scheduler/autoscheduler_names.h"
#include "storage/export.h"

namespace schedfarm {
namespace {

const char kUsage[] =
    "usage: farmctl [GLOBAL FLAGS] COMMAND [ARGUMENTS] [FLAGS]\n"
    "\n"
    "CAMPAIGN: a campaign's id or name (the newest campaign of that name)\n"
    "\n"
    "commands:\n"
    "  submit FILE            check a campaign file (docs/CAMPAIGN_YAML.md), build its\n"
    "                         pipelines here and submit it; prints the campaign id\n"
    "  check FILE             check a campaign file as submit does, without a coordinator:\n"
    "                         the strategy with every setting resolved, the pipelines, the\n"
    "                         budget and the baselines (--json: the resolved config)\n"
    "  status [CAMPAIGN]      campaigns: state, budget used, counters, results/s, and per\n"
    "                         pipeline the best runtime so far with its speedup over each\n"
    "                         baseline (all pipelines of CAMPAIGN; 10 per campaign without)\n"
    "  watch [CAMPAIGN]       live view of CAMPAIGN (default: the newest), refreshed every\n"
    "        [--once]         second until it ends; --once renders once\n"
    "  workers                the workers: state, cores, credits, leases, results, audits by\n"
    "                         other hosts (agreed/deviated) and trust, last seen\n"
    "       [--clear WORKER]  trust a flagged worker again (its results count again)\n"
    "  best CAMPAIGN          the best schedule of each pipeline as Halide C++ source (a\n"
    "                         network campaign: the whole network's assembled schedule)\n"
    "       [--pipeline ID] [-k N]   one pipeline only; the N best (default 1)\n"
    "  export CAMPAIGN        the campaign's measurements, one row each\n"
    "       [--format csv|jsonl] [--output FILE]   default csv to standard output\n"
    "  backup DIR             a consistent copy of the coordinator's store, taken while it\n"
    "                         runs, into DIR (an absolute path on the coordinator's host\n"
    "                         that does not exist yet); restore: farm-coordinator --store DIR\n"
    "  pause CAMPAIGN         no new leases (leases in flight finish)\n"
    "  resume CAMPAIGN        run a paused campaign again\n"
    "  cancel CAMPAIGN        stop a campaign for good\n"
    "  keygen PATH            a CURVE key pair: PATH.key (secret, mode 0600) and PATH.pub;\n"
    "                         never overwrites\n"
    "  compare CAMPAIGN...    campaigns of the same pipelines side by side: per pipeline\n"
    "                         each campaign's best runtime and each baseline's, geomeans,\n"
    "                         speedups over the baselines, search time, candidates by\n"
    "                         origin, benchmarks and failures of each campaign\n"
    "       [--first N]       each campaign's best among the first N candidates of each\n"
    "                         pipeline: campaigns compared at an equal budget\n"
    "  report CAMPAIGN        the campaign as one self-contained HTML page with charts:\n"
    "       [--output FILE]   best so far per pipeline against the baselines, runtimes,\n"
    "                         failures over time, worker throughput, model metrics\n"
    "                         (default: standard output)\n"
    "  model eval CAMPAIGN    the newest model of each kind side by side: their metrics on\n"
    "                         the held-out pipelines (docs/EVALUATION.md)\n"
    "  model list CAMPAIGN    every stored version, newest first, with its sizes, feature\n"
    "       [--kind K]        schema and held-out metrics (of kind K only)\n"
    "  model export CAMPAIGN  the newest stored model of kind K (or version V) as a\n"
    "       --kind K          TorchScript module with its feature schema (docs/MODELS.md;\n"
    "       --output FILE     Torch kinds: gcn, gcn-rank, gcn0, sage, lann, bilstm)\n"
    "       [--version V]\n"
    "  rounds CAMPAIGN        a value-iteration campaign: its rounds (models, prefixes,\n"
    "                         targets, wall times, held-out metrics), then per value\n"
    "                         function the measured runtime of the greedy and beam\n"
    "                         searches' schedules on the held-out pipelines beside random\n"
    "                         schedules and the baselines\n"
    "  dataset pack CAMPAIGN  a campaign's measurements and pipelines as a recorded dataset\n"
    "       --output FILE     (docs/DATASETS.md): one compressed file with its provenance;\n"
    "       [--into FILE]     --into adds the campaign to an existing dataset of the same\n"
    "                         kind of host, written to --output\n"
    "  dataset show FILE      a dataset's id, host, campaigns, dates and counts\n"
    "  dataset noise FILE     the noise floor: its schedules measured twice, the second\n"
    "                         scored as a model of the first (docs/EVALUATION.md)\n"
    "  curves CAMPAIGN...     replay campaigns of one dataset (ids or names) as learning\n"
    "                         curves\n"
    "       [--output DIR]    (docs/ACTIVE_LEARNING.md): per acquisition, averaged over\n"
    "                         its seeds, held-out tau and top-1 regret and the share of\n"
    "                         pipelines within 5% of the dataset's best against\n"
    "                         benchmarks, and the headline ratios; --output also writes\n"
    "                         DIR/curves.md and the charts as SVG\n"
    "  local FILE...          a whole farm on this machine for the campaign files: every\n"
    "       [--workers N]     file checked, then a coordinator (store in DIR/store), N\n"
    "       [--dir DIR]       workers (default 1: one per host) and a learner; the campaigns\n"
    "                         submitted in order, the live view of each until it ends, then\n"
    "                         their best schedules and speedups, and compare of them all;\n"
    "                         DIR defaults to ./schedfarm-local; Ctrl-C stops the farm\n"
    "  tune MODEL             a whole network tuned as tasks on a local farm\n"
    "       [--budget N]      (docs/NETWORKS.md): MODEL an ONNX file, a pipeline YAML or a\n"
    "       [--time D]        zoo block; N benchmarks and/or D of wall time (default 30m);\n"
    "       [--threads T]     T threads per timed run (default 2); the campaign is written\n"
    "       [--dir DIR]       to DIR/tune.yaml (default ./schedfarm-tune) and run as local\n"
    "       [--baselines L]   runs it, ending with the network's end-to-end table and its\n"
    "                         assembled schedule; L the baselines (default\n"
    "                         li2018,mullapudi2016,adams2019,libtorch)\n"
    "       [--layout X]      X the layout the tasks exchange tensors in: channels_last\n"
    "                         (default) or nchw\n"
    "\n"
    "global flags:\n"
    "  --coordinator ENDPOINT  the coordinator (default $SCHEDFARM_COORDINATOR, else\n"
    "                          tcp://127.0.0.1:5555)\n"
    "  --json                  the coordinator's reply as protobuf JSON, one object a line\n"
    "                          (check: the resolved campaign config; compare: the\n"
    "                          comparison; not for export, whose --format says how to\n"
    "                          write rows, nor keygen, nor local)\n"
    "  --retry-s S             resend an unanswered request for up to S seconds (default 30)\n"
    "  --curve-key PATH        CURVE: this client's key pair PATH.key / PATH.pub (keygen)\n"
    "  --server-key FILE       CURVE: the coordinator's public key file\n"
    "  --help                  this text\n"
    "\n"
    "exit codes:\n"
    "  0  success\n"
    "  1  the coordinator refused the operation (no such campaign, wrong state, internal\n"
    "     error), or a local step failed (keygen onto existing files, writing the export\n"
    "     or the report)\n"
    "  2  usage error\n"
    "  3  invalid input file: campaign YAML, pipeline, key file\n"
    "  4  no reply from the coordinator within --retry-s, or it rejected the CURVE key\n"
    "  5  watch ended with the campaign cancelled or failed\n";

constexpr int kTryTimeoutMs = 5000;
constexpr double kDefaultRetrySeconds = 30;
constexpr int kExportPageRows = 500;
constexpr int kStatusPipelinesPerCampaign = 10;
constexpr auto kWatchInterval = std::chrono::seconds(1);

// Flags and whether each takes a value.
const std::map<std::string, bool>& KnownFlags() {
  static const std::map<std::string, bool> kFlags = {
      {"--coordinator", true}, {"--json", false},  {"--retry-s", true},  {"--curve-key", true},
      {"--server-key", true},  {"--once", false},  {"--pipeline", true}, {"-k", true},
      {"--format", true},      {"--output", true}, {"--help", false},    {"--workers", true},
      {"--dir", true},         {"--first", true},  {"--into", true},     {"--kind", true},
      {"--budget", true},      {"--time", true},   {"--threads", true},  {"--baselines", true},
      {"--clear", true},       {"--version", true}, {"--layout", true}};
  return kFlags;
}

bool IsGlobalFlag(const std::string& flag) {
  return flag == "--coordinator" || flag == "--json" || flag == "--retry-s" ||
         flag == "--curve-key" || flag == "--server-key" || flag == "--help";
}

struct Invocation {
  std::string command;
  std::vector<std::string> args;
  std::map<std::string, std::string> flags;  // a flag without a value maps to ""

  bool Has(const std::string& flag) const { return flags.count(flag) > 0; }
  std::string Get(const std::string& flag, const std::string& fallback = "") const {
    const auto it = flags.find(flag);
    return it == flags.end() ? fallback : it->second;
  }
};

class Runner;
using Handler = int (*)(Runner&);

// One command of the dispatch table: its positional arguments, the flags it takes
// besides the global ones, whether --json applies, what runs it, and whether its last
// positional argument may be given more than once.
struct Command {
  std::string name;
  std::vector<std::string> required;  // positional arguments, in order
  std::vector<std::string> optional;  // optional positional arguments after them
  std::set<std::string> flags;
  bool json;
  Handler run;
  bool repeats_last = false;
};

const std::vector<Command>& Commands();

const Command* FindCommand(const std::string& name) {
  for (const Command& command : Commands()) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

// The name of the command's i-th positional argument; past the last, the last's (it
// repeats).
const std::string& ArgumentName(const Command& command, size_t i) {
  if (i < command.required.size()) return command.required[i];
  const size_t k = i - command.required.size();
  if (k < command.optional.size()) return command.optional[k];
  return command.optional.empty() ? command.required.back() : command.optional.back();
}

// Parses `args` into an invocation of a known command; errors are usage errors.
StatusOr<Invocation> Parse(const std::vector<std::string>& args) {
  Invocation inv;
  std::vector<std::string> positional;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool is_flag = arg.size() > 1 && arg[0] == '-' && arg != "-";
    if (!is_flag) {
      positional.push_back(arg);
      continue;
    }
    std::string flag = arg, value;
    bool has_value = false;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      flag = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (flag == "-h") flag = "--help";
    const auto known = KnownFlags().find(flag);
    if (known == KnownFlags().end()) return Status::Error("unknown flag '" + flag + "'");
    if (!known->second && has_value) return Status::Error("flag " + flag + " takes no value");
    if (known->second && !has_value) {
      if (i + 1 >= args.size()) return Status::Error("flag " + flag + " needs a value");
      value = args[++i];
    }
    if (inv.flags.count(flag)) return Status::Error("flag " + flag + " given twice");
    inv.flags[flag] = value;
  }
  if (inv.Has("--help")) return inv;
  if (positional.empty()) return Status::Error("missing COMMAND");
  inv.command = positional[0];
  const Command* command = FindCommand(inv.command);
  if (command == nullptr) return Status::Error("unknown command '" + inv.command + "'");
  inv.args.assign(positional.begin() + 1, positional.end());
  for (const auto& [flag, value] : inv.flags) {
    if (!IsGlobalFlag(flag) && !command->flags.count(flag)) {
      return Status::Error("flag " + flag + " does not apply to '" + inv.command + "'");
    }
  }
  if (inv.Has("--json") && !command->json) {
    return Status::Error("flag --json does not apply to '" + inv.command + "'" +
                         (inv.command == "export" ? " (use --format jsonl)" : ""));
  }
  if (inv.args.size() < command->required.size()) {
    return Status::Error("'" + inv.command + "' needs " + command->required[inv.args.size()]);
  }
  const size_t most = command->required.size() + command->optional.size();
  if (!command->repeats_last && inv.args.size() > most) {
    return Status::Error("unexpected argument '" + inv.args[most] + "' for '" + inv.command + "'");
  }
  for (size_t i = 0; i < inv.args.size(); ++i) {
    if (inv.args[i].empty()) {
      return Status::Error(ArgumentName(*command, i) + " of '" + inv.command + "' is empty");
    }
  }
  if (inv.Has("--curve-key") != inv.Has("--server-key")) {
    return Status::Error(inv.Has("--curve-key") ? "flag --curve-key needs --server-key too"
                                                : "flag --server-key needs --curve-key too");
  }
  return inv;
}

// A positive number of seconds, for --retry-s.
StatusOr<double> ParseSeconds(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 86400) {
    return Status::Error("flag " + flag + ": expected seconds between 0 and 86400, got '" + text +
                         "'");
  }
  return v;
}

StatusOr<int> ParsePositiveInt(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  const long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v <= 0 || v > 1000000) {
    return Status::Error("flag " + flag + ": expected a positive integer, got '" + text + "'");
  }
  return static_cast<int>(v);
}

// The base path of a key pair given as PATH, PATH.key or PATH.pub.
std::string KeyPairBase(const std::string& path) {
  for (const char* suffix : {".key", ".pub"}) {
    const std::string s = suffix;
    if (path.size() > s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0) {
      return path.substr(0, path.size() - s.size());
    }
  }
  return path;
}

// Runs one command: the connection to the coordinator, the calls and the error
// reporting with their exit codes.
class Runner {
 public:
  Runner(Invocation inv, const CliStreams& io) : inv_(std::move(inv)), io_(io) {}

  const Invocation& inv() const { return inv_; }
  std::ostream& out() { return io_.out; }
  const CliStreams& io() const { return io_; }
  bool out_is_tty() const { return io_.out_is_tty; }
  bool json() const { return inv_.Has("--json"); }

  int Fail(int code, const std::string& message) {
    io_.err << "farmctl: " << message << "\n";
    if (code == kExitUsage) io_.err << "\n" << kUsage;
    return code;
  }

  // The coordinator's status of `campaign` (Call of a StatusRequest).
  std::optional<ClientReply> CampaignStatus(const std::string& campaign, int* exit_code) {
    ClientRequest request;
    request.mutable_status()->set_campaign(campaign);
    return Call(request, &ClientReply::has_status, "status", exit_code);
  }

  // Sends `request` and checks the reply's code and body (`has_body`). Returns the
  // reply, or nothing with `*exit_code` set and the error printed.
  std::optional<ClientReply> Call(const ClientRequest& request,
                                  bool (ClientReply::*has_body)() const, const char* body_name,
                                  int* exit_code) {
    if (!client_) {
      const int code = Connect();
      if (code != kExitOk) {
        *exit_code = code;
        return std::nullopt;
      }
    }
    CallFailure failure = CallFailure::kUnreachable;
    StatusOr<ClientReply> reply = client_->Call(request, &failure);
    if (!reply.ok()) {
      std::string message = reply.status().message();
      if (failure == CallFailure::kUnreachable) {
        message +=
            "; is farm-coordinator running there? (--coordinator or "
            "$SCHEDFARM_COORDINATOR name it, --retry-s sets how long to try)";
      }
      *exit_code = Fail(kExitUnreachable, message);
      return std::nullopt;
    }
    if (reply->code() != CLIENT_OK) {
      if (json()) out() << ToJsonLine(*reply) << "\n";
      *exit_code = Fail(kExitFailed, inv_.command + ": " + reply->error() + " (" +
                                         ClientErrorCode_Name(reply->code()) + ")");
      return std::nullopt;
    }
    if (!((*reply).*has_body)()) {
      *exit_code = Fail(
          kExitFailed, "the coordinator's reply to '" + inv_.command + "' carries no " + body_name);
      return std::nullopt;
    }
    return std::move(*reply);
  }

 private:
  int Connect() {
    FarmClientOptions options;
    const char* env = std::getenv("SCHEDFARM_COORDINATOR");
    options.endpoint = inv_.Get("--coordinator",
                                env != nullptr && *env != '\0' ? env : kDefaultCoordinatorEndpoint);
    double retry_seconds = kDefaultRetrySeconds;
    if (inv_.Has("--retry-s")) {
      StatusOr<double> parsed = ParseSeconds("--retry-s", inv_.Get("--retry-s"));
      if (!parsed.ok()) return Fail(kExitUsage, parsed.status().message());
      retry_seconds = *parsed;
    }
    options.total_timeout_ms = static_cast<int>(retry_seconds * 1000);
    options.try_timeout_ms = std::min(kTryTimeoutMs, options.total_timeout_ms);
    if (inv_.Has("--curve-key")) {
      StatusOr<CurveKeyPair> keys = ReadKeyPair(KeyPairBase(inv_.Get("--curve-key")));
      if (!keys.ok()) return Fail(kExitInvalidInput, "--curve-key: " + keys.status().message());
      StatusOr<std::string> server = ReadPublicKey(inv_.Get("--server-key"));
      if (!server.ok()) {
        return Fail(kExitInvalidInput, "--server-key: " + server.status().message());
      }
      options.own_keys = *keys;
      options.server_public_key = *server;
    }
    StatusOr<std::unique_ptr<FarmClient>> client = FarmClient::Create(options);
    if (!client.ok()) return Fail(kExitUsage, "--coordinator: " + client.status().message());
    client_ = std::move(*client);
    return kExitOk;
  }

  Invocation inv_;
  const CliStreams& io_;
  std::unique_ptr<FarmClient> client_;
};

// Prints the reply as JSON or as `text`.
int Print(Runner& r, const ClientReply& reply, const std::string& text) {
  r.out() << (r.json() ? ToJsonLine(reply) + "\n" : text);
  return kExitOk;
}

int RunSubmit(Runner& r) {
  StatusOr<SubmitCampaign> submit = BuildSubmission(r.inv().args[0]);
  if (!submit.ok()) return r.Fail(kExitInvalidInput, submit.status().message());
  ClientRequest request;
  *request.mutable_submit() = std::move(*submit);
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_submitted, "campaign", &code);
  if (!reply) return code;
  return Print(r, *reply, "submitted " + RenderCampaignLine(reply->submitted()));
}

// Checks the campaign file as submit does and prints it as it would run; needs no
// coordinator.
int RunCheck(Runner& r) {
  CampaignConfig config;
  StatusOr<SubmitCampaign> submit = BuildSubmission(r.inv().args[0], &config);
  if (!submit.ok()) return r.Fail(kExitInvalidInput, submit.status().message());
  r.out() << (r.json() ? ToJsonLine(config) + "\n" : RenderCampaignCheck(config, *submit));
  return kExitOk;
}

int RunStatus(Runner& r) {
  ClientRequest request;
  const bool one = !r.inv().args.empty();
  request.mutable_status()->set_campaign(one ? r.inv().args[0] : "");
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_status, "status", &code);
  if (!reply) return code;
  return Print(r, *reply, RenderStatus(reply->status(), one ? 0 : kStatusPipelinesPerCampaign));
}

int RunWatch(Runner& r) {
  std::string campaign = r.inv().args.empty() ? "" : r.inv().args[0];
  WatchLog log;  // output that is not a terminal: one line per change
  const auto watch_started = std::chrono::steady_clock::now();
  while (true) {
    const auto started = std::chrono::steady_clock::now();
    ClientRequest request;
    request.mutable_status()->set_campaign(campaign);
    int code = kExitOk;
    const auto reply = r.Call(request, &ClientReply::has_status, "status", &code);
    if (!reply) return code;
    const StatusReply& status = reply->status();
    if (status.campaigns().empty()) return r.Fail(kExitFailed, "watch: no campaign to watch");
    if (campaign.empty()) campaign = status.campaigns(0).campaign().id();
    if (r.json()) {
      r.out() << ToJsonLine(*reply) << "\n";
    } else if (r.out_is_tty()) {
      r.out() << "\x1b[H\x1b[2J" << RenderWatch(status);
    } else if (r.inv().Has("--once")) {
      r.out() << RenderWatch(status);
    } else {
      const std::chrono::duration<double> seconds = started - watch_started;
      for (const std::string& line : log.Update(status.campaigns(0), seconds.count())) {
        r.out() << line << "\n";
      }
    }
    r.out().flush();
    switch (status.campaigns(0).campaign().state()) {
      case CAMPAIGN_DONE:
        return kExitOk;
      case CAMPAIGN_CANCELLED:
      case CAMPAIGN_FAILED:
        return kExitCampaignUnsuccessful;
      default:
        break;
    }
    if (r.inv().Has("--once")) return kExitOk;
    std::this_thread::sleep_until(started + kWatchInterval);
  }
}

int RunWorkers(Runner& r) {
  ClientRequest request;
  if (r.inv().Has("--clear")) {
    const std::string worker = r.inv().Get("--clear");
    if (worker.empty()) return r.Fail(kExitUsage, "workers: --clear needs a worker id");
    request.mutable_clear_worker()->set_worker_id(worker);
    int code = kExitOk;
    const auto reply = r.Call(request, &ClientReply::has_workers, "workers --clear", &code);
    if (!reply) return code;
    return Print(r, *reply, "cleared " + worker + ": its results count again\n");
  }
  request.mutable_workers();
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_workers, "workers", &code);
  if (!reply) return code;
  return Print(r, *reply, RenderWorkers(reply->workers(), UnixMillis()));
}

int RunBest(Runner& r) {
  ClientRequest request;
  BestRequest* best = request.mutable_best();
  best->set_campaign(r.inv().args[0]);
  best->set_pipeline_id(r.inv().Get("--pipeline"));
  best->set_k(1);
  if (r.inv().Has("-k")) {
    StatusOr<int> k = ParsePositiveInt("-k", r.inv().Get("-k"));
    if (!k.ok()) return r.Fail(kExitUsage, k.status().message());
    best->set_k(*k);
  }
  if (!r.inv().Has("--pipeline")) {
    // A network campaign's best is the whole network's: its assembly pipeline's.
    int code = kExitOk;
    const auto reply = r.CampaignStatus(r.inv().args[0], &code);
    if (!reply) return code;
    for (const CampaignStatus& campaign : reply->status().campaigns()) {
      StatusOr<CampaignConfig> config = CampaignConfigFromJson(campaign.campaign().config_json());
      if (config.ok() && config->has_network() && campaign.campaign().pipeline_ids_size() > 1) {
        best->set_pipeline_id(campaign.campaign().pipeline_ids(1));
      }
    }
  }
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_best, "best schedules", &code);
  if (!reply) return code;
  if (r.json()) return Print(r, *reply, "");
  StatusOr<std::string> text = RenderBest(reply->best());
  if (!text.ok()) return r.Fail(kExitFailed, "best: " + text.status().message());
  return Print(r, *reply, *text);
}

// Hands every measurement of `campaign` to `row` in seq order, reading the
// coordinator's export pages until the last. Returns the exit code, with the error
// printed: the coordinator's, a page that makes no progress, or `row`'s (exit 1).
int ForEachMeasurement(Runner& r, const std::string& campaign,
                       const std::function<Status(const StoredMeasurementRecord&)>& row) {
  uint64_t from_seq = 0;
  while (true) {
    ClientRequest request;
    ExportRequest* page = request.mutable_export_measurements();
    page->set_campaign(campaign);
    page->set_from_seq(from_seq);
    page->set_max_rows(kExportPageRows);
    int code = kExitOk;
    const auto reply = r.Call(request, &ClientReply::has_export_page, "export page", &code);
    if (!reply) return code;
    const ExportReply& got = reply->export_page();
    for (const StoredMeasurementRecord& record : got.rows()) {
      Status handled = row(record);
      if (!handled.ok()) return r.Fail(kExitFailed, r.inv().command + ": " + handled.message());
    }
    if (got.done()) return kExitOk;
    if (got.next_seq() <= from_seq && got.rows().empty()) {
      return r.Fail(kExitFailed, r.inv().command + ": the coordinator's page from seq " +
                                     std::to_string(from_seq) + " made no progress");
    }
    from_seq = got.next_seq();
  }
}

// The campaign's status first (an unknown campaign fails before a file is made): its
// pipelines' FLOPs, for each row's GFLOP/s; then its measurements, page by page.
int RunExport(Runner& r) {
  const std::string format_name = r.inv().Get("--format", "csv");
  if (format_name != "csv" && format_name != "jsonl") {
    return r.Fail(kExitUsage, "flag --format: expected csv or jsonl, got '" + format_name + "'");
  }
  const ExportFormat format = format_name == "csv" ? ExportFormat::kCsv : ExportFormat::kJsonLines;
  std::map<std::string, double> flops;  // by pipeline id
  std::string campaign_id = r.inv().args[0];  // a name becomes the id it named
  {
    int code = kExitOk;
    const auto reply = r.CampaignStatus(r.inv().args[0], &code);
    if (!reply) return code;
    for (const CampaignStatus& campaign : reply->status().campaigns()) {
      campaign_id = campaign.campaign().id();
      for (const PipelineProgress& p : campaign.pipelines()) flops[p.pipeline_id()] = p.flops();
    }
  }
  const std::string output = r.inv().Get("--output", "-");
  // A file is written under a temporary name and renamed once complete.
  const std::string partial = output + ".partial";
  std::ofstream file;
  if (output != "-") {
    file.open(partial, std::ios::binary | std::ios::trunc);
    if (!file) return r.Fail(kExitFailed, "export: cannot write '" + partial + "'");
  }
  std::ostream& out = output == "-" ? r.out() : file;
  // Removes the partial file; prints `message` unless the failure was reported already.
  const auto fail = [&](int code, const std::string& message) {
    if (output != "-") {
      file.close();
      std::remove(partial.c_str());
    }
    return message.empty() ? code : r.Fail(code, message);
  };
  WriteExportHeader(format, out);
  int64_t rows = 0;
  const int code =
      ForEachMeasurement(r, campaign_id, [&](const StoredMeasurementRecord& record) {
        const auto pipeline = flops.find(record.measurement().candidate().pipeline_id());
        SCHEDFARM_RETURN_IF_ERROR(WriteExportRow({record.seq(), record.measurement()},
                                                 pipeline == flops.end() ? 0 : pipeline->second,
                                                 format, out));
        if (!out) return Status::Error("writing '" + output + "' failed");
        ++rows;
        return Status::Ok();
      });
  if (code != kExitOk) return fail(code, "");
  out.flush();
  if (output != "-") {
    file.close();
    if (!file || std::rename(partial.c_str(), output.c_str()) != 0) {
      return fail(kExitFailed, "export: cannot write '" + output + "'");
    }
    r.out() << "exported " << rows << " measurements to " << output << "\n";
  }
  return kExitOk;
}

// pause, resume and cancel: one CampaignRef each.
int RunBackup(Runner& r) {
  const std::string& dir = r.inv().args[0];
  if (dir[0] != '/') {
    return r.Fail(kExitUsage,
                  "backup: DIR '" + dir +
                      "' must be an absolute path (it is a path on the coordinator's host)");
  }
  ClientRequest request;
  request.mutable_backup()->set_dir(dir);
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_backup, "backup", &code);
  if (!reply) return code;
  const BackupReply& b = reply->backup();
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.2f", b.seconds());
  return Print(r, *reply,
               "backed up to " + b.dir() + ": " + std::to_string(b.campaigns()) + " campaigns, " +
                   std::to_string(b.measurements()) + " measurements (last seq " +
                   std::to_string(b.last_measurement_seq()) + ") in " + seconds +
                   " s; restore with farm-coordinator --store " + b.dir() + "\n");
}

int RunCampaignAction(Runner& r) {
  ClientRequest request;
  CampaignRef* ref = r.inv().command == "pause"    ? request.mutable_pause()
                     : r.inv().command == "resume" ? request.mutable_resume()
                                                   : request.mutable_cancel();
  ref->set_campaign(r.inv().args[0]);
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_campaign, "campaign", &code);
  if (!reply) return code;
  return Print(r, *reply, RenderCampaignLine(reply->campaign()));
}

int RunKeygen(Runner& r) {
  const std::string& path = r.inv().args[0];
  const CurveKeyPair keys = GenerateCurveKeyPair();
  Status written = WriteKeyPair(keys, path);
  if (!written.ok()) return r.Fail(kExitFailed, "keygen: " + written.message());
  r.out() << "wrote " << path << ".key (secret, mode 0600) and " << path << ".pub (public key "
          << keys.public_key << ")\n";
  return kExitOk;
}

// `model export`: the newest stored model of the kind (or --version), with its
// weights, written as TorchScript by farm-model-export into OUTPUT.partial, renamed to
// OUTPUT when complete.
int RunModelExport(Runner& r) {
  if (!r.inv().Has("--kind") || !r.inv().Has("--output")) {
    return r.Fail(kExitUsage, "model export: --kind and --output are required");
  }
  const std::string kind = r.inv().Get("--kind");
  const std::string output = r.inv().Get("--output");
  const std::string partial = output + ".partial";
  if (!std::ofstream(partial, std::ios::binary | std::ios::trunc)) {
    return r.Fail(kExitFailed, "model export: cannot write '" + partial + "'");
  }
  const std::string model_file = output + ".model";
  auto fail = [&](int code, const std::string& message) {
    std::remove(partial.c_str());
    std::remove(model_file.c_str());
    return message.empty() ? code : r.Fail(code, message);
  };
  const std::string exporter = FindBinary("farm-model-export", "tools");
  if (exporter.empty()) {
    return fail(kExitFailed,
                "model export: cannot find farm-model-export (set SCHEDFARM_BIN_DIR to the "
                "folder that holds it)");
  }
  ClientRequest request;
  request.mutable_models()->set_campaign(r.inv().args[1]);
  request.mutable_models()->set_kind(kind);
  request.mutable_models()->set_with_weights(true);
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_models, "models", &code);
  if (!reply) return fail(code, "");
  const Model* chosen = nullptr;
  for (const Model& model : reply->models().models()) {
    if (!r.inv().Has("--version") || model.version() == r.inv().Get("--version")) {
      chosen = &model;
      break;
    }
  }
  if (chosen == nullptr) {
    return fail(kExitFailed,
                "model export: campaign " + r.inv().args[1] + " has no stored '" + kind +
                    "' model" +
                    (r.inv().Has("--version") ? " of version " + r.inv().Get("--version") : ""));
  }
  if (Status written = WriteFileAtomically(model_file, chosen->SerializeAsString());
      !written.ok()) {
    return fail(kExitFailed, "model export: " + written.message());
  }
  std::string log;
  const int status = RunToEnd(exporter, {model_file, partial}, &log);
  if (status != 0) {
    while (!log.empty() && log.back() == '\n') log.pop_back();
    return fail(kExitFailed, "model export: " + (log.empty() ? "farm-model-export exited with " +
                                                                   std::to_string(status)
                                                             : log));
  }
  std::remove(model_file.c_str());
  if (std::rename(partial.c_str(), output.c_str()) != 0) {
    return fail(kExitFailed, "model export: cannot rename '" + partial + "' to '" + output + "'");
  }
  r.out() << "exported " << chosen->kind() << " model " << chosen->version() << " (feature schema "
          << chosen->feature_schema_version() << ", " << chosen->training_set_size()
          << " training samples) to " << output << " as TorchScript\n";
  return kExitOk;
}

int RunModel(Runner& r) {
  const std::string& action = r.inv().args[0];
  if (action == "export") return RunModelExport(r);
  if (action != "eval" && action != "list") {
    return r.Fail(kExitUsage, "model: unknown action '" + action + "' (known: eval, list, export)");
  }
  if (action == "eval" && r.inv().Has("--kind")) {
    return r.Fail(kExitUsage, "model eval: --kind is for model list and export");
  }
  for (const char* flag : {"--output", "--version"}) {
    if (r.inv().Has(flag)) {
      return r.Fail(kExitUsage, "model " + action + ": " + flag + " is for model export");
    }
  }
  ClientRequest request;
  request.mutable_models()->set_campaign(r.inv().args[1]);
  if (r.inv().Has("--kind")) request.mutable_models()->set_kind(r.inv().Get("--kind"));
  int code = kExitOk;
  const auto reply = r.Call(request, &ClientReply::has_models, "models", &code);
  if (!reply) return code;
  return Print(
      r, *reply,
      action == "eval" ? RenderModelEval(reply->models()) : RenderModelList(reply->models()));
}

// Every campaign's status first (so an unknown one fails before any long read), then
// the tally of each one's measurements, then the comparison.
int RunCompare(Runner& r) {
  std::set<std::string> named;
  for (const std::string& id : r.inv().args) {
    if (!named.insert(id).second) {
      return r.Fail(kExitUsage, "CAMPAIGN " + id + " of 'compare' given twice");
    }
  }
  int first = 0;
  if (r.inv().Has("--first")) {
    StatusOr<int> n = ParsePositiveInt("--first", r.inv().Get("--first"));
    if (!n.ok()) return r.Fail(kExitUsage, n.status().message());
    first = *n;
  }
  std::vector<ComparedCampaign> campaigns;
  for (const std::string& id : r.inv().args) {
    ClientRequest request;
    request.mutable_status()->set_campaign(id);
    int code = kExitOk;
    const auto reply = r.Call(request, &ClientReply::has_status, "status", &code);
    if (!reply) return code;
    if (reply->status().campaigns_size() != 1) {
      return r.Fail(kExitFailed, "compare: the coordinator's status of " + id + " carries " +
                                     std::to_string(reply->status().campaigns_size()) +
                                     " campaigns");
    }
    campaigns.push_back({reply->status().campaigns(0), MeasurementTally(first)});
  }
  for (ComparedCampaign& campaign : campaigns) {
    const int code = ForEachMeasurement(r, campaign.status.campaign().id(),
                                        [&](const StoredMeasurementRecord& record) {
                                          campaign.tally.Add(record.measurement());
                                          return Status::Ok();
                                        });
    if (code != kExitOk) return code;
  }
  const Comparison comparison = CompareCampaigns(std::move(campaigns));
  r.out() << (r.json() ? ToJsonLine(ComparisonToJson(comparison)) + "\n"
                       : RenderComparison(comparison));
  return kExitOk;
}

// The campaign's status first (an unknown campaign fails before any long read), its
// models, then its measurements; the page is written whole or not at all.
int RunReport(Runner& r) {
  ReportInput input;
  int code = kExitOk;
  const auto status_reply = r.CampaignStatus(r.inv().args[0], &code);
  if (!status_reply) return code;
  if (status_reply->status().campaigns_size() != 1) {
    return r.Fail(kExitFailed,
                  "report: the coordinator's status of " + r.inv().args[0] + " carries " +
                      std::to_string(status_reply->status().campaigns_size()) + " campaigns");
  }
  input.status = status_reply->status().campaigns(0);
  const std::string& id = input.status.campaign().id();
  ClientRequest models;
  models.mutable_models()->set_campaign(id);
  const auto models_reply = r.Call(models, &ClientReply::has_models, "models", &code);
  if (!models_reply) return code;
  input.models.assign(models_reply->models().models().begin(),
                      models_reply->models().models().end());
  code = ForEachMeasurement(r, id, [&](const StoredMeasurementRecord& record) {
    input.measurements.push_back(record.measurement());
    return Status::Ok();
  });
  if (code != kExitOk) return code;
  const std::time_t now = std::time(nullptr);
  char when[32];
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  input.generated = std::string("farmctl report, ") + when;
  const std::string page = RenderCampaignReport(input);
  if (!r.inv().Has("--output")) {
    r.out() << page;
    return kExitOk;
  }
  const std::string output = r.inv().Get("--output");
  const Status written = WriteFileAtomically(output, page);
  if (!written.ok()) return r.Fail(kExitFailed, "report: " + written.message());
  r.out() << "wrote " << output << " (" << input.measurements.size() << " results, "
          << input.models.size() << " models)\n";
  return kExitOk;
}

int RunRounds(Runner& r) {
  const std::string& campaign = r.inv().args[0];
  ValueIterationReport report;
  int code = kExitOk;
  const auto status_reply = r.CampaignStatus(campaign, &code);
  if (!status_reply) return code;
  if (status_reply->status().campaigns_size() != 1) {
    return r.Fail(kExitFailed, "rounds: the coordinator's status of " + campaign + " carries " +
                                   std::to_string(status_reply->status().campaigns_size()) +
                                   " campaigns");
  }
  report.status = status_reply->status().campaigns(0);
  ClientRequest rounds;
  rounds.mutable_value_rounds()->set_campaign(campaign);
  const auto rounds_reply = r.Call(rounds, &ClientReply::has_value_rounds, "value rounds", &code);
  if (!rounds_reply) return code;
  if (r.json()) return Print(r, *rounds_reply, "");
  report.rounds.assign(rounds_reply->value_rounds().rounds().begin(),
                       rounds_reply->value_rounds().rounds().end());
  ClientRequest models;
  models.mutable_models()->set_campaign(campaign);
  const auto models_reply = r.Call(models, &ClientReply::has_models, "models", &code);
  if (!models_reply) return code;
  report.models.assign(models_reply->models().models().begin(),
                       models_reply->models().models().end());
  code = ForEachMeasurement(r, campaign, [&](const StoredMeasurementRecord& record) {
    report.measurements.push_back(record.measurement());
    return Status::Ok();
  });
  if (code != kExitOk) return code;
  r.out() << RenderValueRounds(report);
  return kExitOk;
}

// For each of `refs` (an id or a name), the status of the campaign it names; nothing
// (with *code set and the coordinator's error printed) when one names none.
std::optional<std::vector<CampaignStatus>> CampaignsNamed(Runner& r,
                                                          const std::vector<std::string>& refs,
                                                          int* code) {
  std::vector<CampaignStatus> named;
  for (const std::string& ref : refs) {
    const auto reply = r.CampaignStatus(ref, code);
    if (!reply) return std::nullopt;
    if (reply->status().campaigns().empty()) {
      *code = r.Fail(kExitFailed, r.inv().command + ": no campaign '" + ref + "'");
      return std::nullopt;
    }
    named.push_back(reply->status().campaigns(0));
  }
  return named;
}

// dataset show FILE, and dataset pack CAMPAIGN: the campaign record (its file and
// name), its pipelines and every measurement, read from the coordinator.
int RunDataset(Runner& r) {
  const std::string& action = r.inv().args[0];
  const std::string& target = r.inv().args[1];
  if (action == "show") {
    StatusOr<LoadedDataset> loaded = ReadDataset(target);
    if (!loaded.ok()) return r.Fail(kExitInvalidInput, loaded.status().message());
    r.out() << DescribeDataset(*loaded);
    return kExitOk;
  }
  if (action == "noise") {
    StatusOr<LoadedDataset> loaded = ReadDataset(target);
    if (!loaded.ok()) return r.Fail(kExitInvalidInput, loaded.status().message());
    // The learner's default split (farm-learner --held-out, --seed).
    StatusOr<std::string> table = RenderNoiseFloor(*loaded, 0.2, 1);
    if (!table.ok()) return r.Fail(kExitFailed, "dataset noise: " + table.status().message());
    r.out() << *table;
    return kExitOk;
  }
  if (action != "pack") {
    return r.Fail(kExitUsage,
                  "dataset: unknown action '" + action + "' (known: pack, show, noise)");
  }
  if (!r.inv().Has("--output")) return r.Fail(kExitUsage, "dataset pack needs --output FILE");
  Dataset dataset;
  if (r.inv().Has("--into")) {
    StatusOr<LoadedDataset> into = ReadDataset(r.inv().Get("--into"));
    if (!into.ok()) return r.Fail(kExitInvalidInput, "--into: " + into.status().message());
    dataset = std::move(into->data);
  }
  int code = kExitOk;
  const std::optional<std::vector<CampaignStatus>> named = CampaignsNamed(r, {target}, &code);
  if (!named) return code;
  const Campaign& campaign = named->front().campaign();
  ClientRequest pipelines;
  pipelines.mutable_pipelines()->set_campaign(campaign.id());
  const auto pipelines_reply = r.Call(pipelines, &ClientReply::has_pipelines, "pipelines", &code);
  if (!pipelines_reply) return code;
  std::vector<Measurement> measurements;
  code = ForEachMeasurement(r, campaign.id(), [&](const StoredMeasurementRecord& record) {
    measurements.push_back(record.measurement());
    return Status::Ok();
  });
  if (code != kExitOk) return code;
  const std::vector<PipelineSpec> specs(pipelines_reply->pipelines().pipelines().begin(),
                                        pipelines_reply->pipelines().pipelines().end());
  Status added = AddDatasetPart(campaign, specs, measurements, UnixMillis(), &dataset);
  if (!added.ok()) return r.Fail(kExitFailed, "dataset pack: " + added.message());
  const std::string output = r.inv().Get("--output");
  Status written = WriteDataset(output, dataset);
  if (!written.ok()) return r.Fail(kExitFailed, "dataset pack: " + written.message());
  StatusOr<LoadedDataset> loaded = ReadDataset(output);
  if (!loaded.ok()) return r.Fail(kExitFailed, "dataset pack: " + loaded.status().message());
  r.out() << DescribeDataset(*loaded);
  return kExitOk;
}

// Each campaign's status, models and measurements from the coordinator; the dataset
// (for each pipeline's best) from the file the campaigns replay.
int RunCurves(Runner& r) {
  std::vector<CurveCampaign> campaigns;
  std::string dataset_path, dataset_id;
  int code = kExitOk;
  std::optional<std::vector<CampaignStatus>> named = CampaignsNamed(r, r.inv().args, &code);
  if (!named) return code;
  for (size_t i = 0; i < named->size(); ++i) {
    const std::string& id = r.inv().args[i];
    CurveCampaign campaign;
    campaign.status = std::move((*named)[i]);
    StatusOr<CampaignConfig> config =
        CampaignConfigFromJson(campaign.status.campaign().config_json());
    if (!config.ok())
      return r.Fail(kExitFailed, "curves: " + id + ": " + config.status().message());
    if (!config->has_replay()) {
      return r.Fail(kExitFailed, "curves: campaign " + id + " is not a replay campaign");
    }
    if (dataset_id.empty()) {
      dataset_path = config->replay().dataset();
      dataset_id = config->replay().dataset_id();
    } else if (config->replay().dataset_id() != dataset_id) {
      return r.Fail(kExitFailed, "curves: campaign " + id + " replays dataset " +
                                     config->replay().dataset_id() + ", the first one " +
                                     dataset_id);
    }
    ClientRequest models;
    models.mutable_models()->set_campaign(campaign.status.campaign().id());
    const auto models_reply = r.Call(models, &ClientReply::has_models, "models", &code);
    if (!models_reply) return code;
    campaign.models.assign(models_reply->models().models().begin(),
                           models_reply->models().models().end());
    code = ForEachMeasurement(r, campaign.status.campaign().id(),
                              [&](const StoredMeasurementRecord& record) {
                                campaign.measurements.push_back(record.measurement());
                                return Status::Ok();
                              });
    if (code != kExitOk) return code;
    campaigns.push_back(std::move(campaign));
  }
  StatusOr<LoadedDataset> dataset = ReadDataset(dataset_path);
  if (!dataset.ok()) return r.Fail(kExitInvalidInput, "curves: " + dataset.status().message());
  if (dataset->id != dataset_id) {
    return r.Fail(kExitInvalidInput, "curves: '" + dataset_path + "' is now dataset " +
                                         dataset->id + ", the campaigns replayed " + dataset_id);
  }
  const CurveReport report = RenderLearningCurves(campaigns, DatasetBestRuntimes(dataset->data));
  r.out() << report.text;
  if (!r.inv().Has("--output")) return kExitOk;
  const std::string dir = r.inv().Get("--output");
  Status written = WriteFileAtomically(dir + "/curves.md", report.text);
  for (const auto& [name, svg] : report.charts) {
    if (written.ok()) written = WriteFileAtomically(dir + "/" + name, svg);
  }
  if (!written.ok()) return r.Fail(kExitFailed, "curves: " + written.message());
  r.out() << "wrote " << dir << "/curves.md and " << report.charts.size() << " charts\n";
  return kExitOk;
}

int RunLocal(Runner& r) {
  LocalFarmOptions options;
  options.campaign_files = r.inv().args;
  options.dir = r.inv().Get("--dir", options.dir);
  if (r.inv().Has("--workers")) {
    StatusOr<int> workers = ParsePositiveInt("--workers", r.inv().Get("--workers"));
    if (!workers.ok()) return r.Fail(kExitUsage, workers.status().message());
    options.workers = *workers;
  }
  return RunLocalFarm(options, r.io());
}

// A duration as campaign files write it: a number, then ms, s, m or h (or nothing: s).
bool IsDuration(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.')) {
    ++digits;
  }
  const std::string unit = text.substr(digits);
  return digits > 0 && (unit.empty() || unit == "ms" || unit == "s" || unit == "m" || unit == "h");
}

int RunTuneCommand(Runner& r) {
  TuneOptions options;
  options.model = r.inv().args[0];
  options.dir = r.inv().Get("--dir", options.dir);
  if (r.inv().Has("--budget")) {
    StatusOr<int> budget = ParsePositiveInt("--budget", r.inv().Get("--budget"));
    if (!budget.ok()) return r.Fail(kExitUsage, budget.status().message());
    options.benchmarks = *budget;
  }
  if (r.inv().Has("--time")) {
    options.wall_time = r.inv().Get("--time");
    if (!IsDuration(options.wall_time)) {
      return r.Fail(kExitUsage, "--time '" + options.wall_time +
                                    "' is not a duration (a number, then ms, s, m or h: 30m)");
    }
  }
  if (options.benchmarks == 0 && options.wall_time.empty()) options.wall_time = "30m";
  if (r.inv().Has("--baselines")) {
    options.baselines.clear();
    for (const std::string& name : SplitFlagList(r.inv().Get("--baselines"))) {
      if (name.empty()) continue;
      if (!IsBaselineName(name)) {
        std::string known;
        for (const std::string& b : BaselineNames()) known += (known.empty() ? "" : ", ") + b;
        return r.Fail(kExitUsage,
                      "--baselines: unknown baseline '" + name + "' (known: " + known + ")");
      }
      options.baselines.push_back(name);
    }
  }
  if (r.inv().Has("--threads")) {
    StatusOr<int> threads = ParsePositiveInt("--threads", r.inv().Get("--threads"));
    if (!threads.ok()) return r.Fail(kExitUsage, threads.status().message());
    options.threads = *threads;
  }
  options.layout = r.inv().Get("--layout", options.layout);
  if (!BoundaryLayoutNamed(options.layout)) {
    return r.Fail(kExitUsage,
                  "--layout '" + options.layout + "' is not a layout (nchw or channels_last)");
  }
  return RunTune(options, r.io());
}

// The dispatch table. `farmctl local` (a whole farm on this machine) joins it as one
// more entry.
const std::vector<Command>& Commands() {
  static const std::vector<Command> kCommands = {
      {"submit", {"FILE"}, {}, {}, true, RunSubmit},
      {"check", {"FILE"}, {}, {}, true, RunCheck},
      {"status", {}, {"CAMPAIGN"}, {}, true, RunStatus},
      {"watch", {}, {"CAMPAIGN"}, {"--once"}, true, RunWatch},
      {"workers", {}, {}, {"--clear"}, true, RunWorkers},
      {"best", {"CAMPAIGN"}, {}, {"--pipeline", "-k"}, true, RunBest},
      {"export", {"CAMPAIGN"}, {}, {"--format", "--output"}, false, RunExport},
      {"backup", {"DIR"}, {}, {}, true, RunBackup},
      {"pause", {"CAMPAIGN"}, {}, {}, true, RunCampaignAction},
      {"resume", {"CAMPAIGN"}, {}, {}, true, RunCampaignAction},
      {"cancel", {"CAMPAIGN"}, {}, {}, true, RunCampaignAction},
      {"keygen", {"PATH"}, {}, {}, false, RunKeygen},
      {"compare", {"CAMPAIGN"}, {}, {"--first"}, true, RunCompare, /*repeats_last=*/true},
      {"model", {"ACTION", "CAMPAIGN"}, {}, {"--kind", "--output", "--version"}, true, RunModel},
      {"rounds", {"CAMPAIGN"}, {}, {}, true, RunRounds},
      {"report", {"CAMPAIGN"}, {}, {"--output"}, false, RunReport},
      {"dataset", {"ACTION", "TARGET"}, {}, {"--output", "--into"}, false, RunDataset},
      {"curves", {"CAMPAIGN"}, {}, {"--output"}, false, RunCurves, /*repeats_last=*/true},
      {"local", {"FILE"}, {}, {"--workers", "--dir"}, false, RunLocal, /*repeats_last=*/true},
      {"tune",
       {"MODEL"},
       {},
       {"--budget", "--time", "--threads", "--dir", "--baselines", "--layout"},
       false,
       RunTuneCommand},
  };
  return kCommands;
}

}  // namespace

int RunFarmctl(const std::vector<std::string>& args, const CliStreams& streams) {
  StatusOr<Invocation> inv = Parse(args);
  if (!inv.ok()) {
    streams.err << "farmctl: " << inv.status().message() << "\n\n" << kUsage;
    return kExitUsage;
  }
  if (inv->Has("--help")) {
    streams.out << kUsage;
    return kExitOk;
  }
  Runner runner(*inv, streams);
  return FindCommand(inv->command)->run(runner);
}

}  // namespace schedfarm
