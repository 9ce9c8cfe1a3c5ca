// farmctl's command line, and a map of the folder's command code:
//   cli.cc                this file: the usage text, the flags, parsing, the dispatch table
//   runner.h              the invocation, the connection and its errors, shared helpers
//   campaign_commands.cc  submit, check, status, watch, best, pause, resume, cancel,
//                         compare, rounds, report
//   data_commands.cc      export, backup, dataset, curves
//   model_commands.cc     model list, eval, export
//   farm_commands.cc      workers, keygen, local, tune
// What the commands print is render.h (and compare.h, rounds.h, curves.h, report.h);
// the farms `local` and `tune` start are local.h and tune.h.
#include "farmctl/cli.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "farmctl/commands.h"
#include "farmctl/runner.h"

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
    "                         origin, benchmarks and failures of each campaign, and the\n"
    "                         candidates each took to come within 5% of its best\n"
    "       [--first N]       each campaign's best among the first N candidates of each\n"
    "                         pipeline: campaigns compared at an equal budget\n"
    "       [--time D]        ... among the candidates measured in the first D after the\n"
    "                         campaign's submission (7.5m): at an equal wall time\n"
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
    "                         li2018,mullapudi2016,adams2019,libtorch,onnxruntime)\n"
    "       [--layout X]      X the layout the tasks exchange tensors in: channels_last\n"
    "                         (default) or nchw\n"
    "       [--fusion F]      F blocks (default: chains of layers fused into one task\n"
    "                         where that measures faster) or none (one task per layer)\n"
    "       [--model-from M]  what the search starts under (campaign model_from):\n"
    "                         pretrained (default: the shipped model of this host kind,\n"
    "                         else random schedules until the first training, said at\n"
    "                         the end), pretrained:NAME, a campaign, or none\n"
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

// Flags and whether each takes a value.
const std::map<std::string, bool>& KnownFlags() {
  static const std::map<std::string, bool> kFlags = {
      {"--coordinator", true}, {"--json", false},   {"--retry-s", true},  {"--curve-key", true},
      {"--server-key", true},  {"--once", false},   {"--pipeline", true}, {"-k", true},
      {"--format", true},      {"--output", true},  {"--help", false},    {"--workers", true},
      {"--dir", true},         {"--first", true},   {"--into", true},     {"--kind", true},
      {"--budget", true},      {"--time", true},    {"--threads", true},  {"--baselines", true},
      {"--clear", true},       {"--version", true}, {"--layout", true},   {"--model-from", true},
      {"--fusion", true}};
  return kFlags;
}

bool IsGlobalFlag(const std::string& flag) {
  return flag == "--coordinator" || flag == "--json" || flag == "--retry-s" ||
         flag == "--curve-key" || flag == "--server-key" || flag == "--help";
}

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
      {"compare", {"CAMPAIGN"}, {}, {"--first", "--time"}, true, RunCompare, /*repeats_last=*/true},
      {"model", {"ACTION", "CAMPAIGN"}, {}, {"--kind", "--output", "--version"}, true, RunModel},
      {"rounds", {"CAMPAIGN"}, {}, {}, true, RunRounds},
      {"report", {"CAMPAIGN"}, {}, {"--output"}, false, RunReport},
      {"dataset", {"ACTION", "TARGET"}, {}, {"--output", "--into"}, false, RunDataset},
      {"curves", {"CAMPAIGN"}, {}, {"--output"}, false, RunCurves, /*repeats_last=*/true},
      {"local", {"FILE"}, {}, {"--workers", "--dir"}, false, RunLocal, /*repeats_last=*/true},
      {"tune",
       {"MODEL"},
       {},
       {"--budget", "--time", "--threads", "--dir", "--baselines", "--layout", "--model-from",
        "--fusion"},
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
  Runner runner(*inv, streams, kUsage);
  return FindCommand(inv->command)->run(runner);
}

}  // namespace schedfarm
