// farm-learner: follows the coordinator's campaigns, trains and evaluates the
// performance models on their measurements, stores every model version, and proposes
// the candidates of campaigns whose search strategy uses a model
// (learner_daemon/learner_daemon.h). SIGTERM or SIGINT stops it.
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "common/cpus.h"
#include "common/flags.h"
#include "common/log.h"
#include "learner_daemon/learner_daemon.h"
#include "protocol/security.h"

namespace schedfarm {
namespace {

constexpr char kUsage[] =
    "usage: farm-learner --coordinator ENDPOINT [options]\n"
    "options:\n"
    "  --coordinator ENDPOINT  the coordinator (tcp://host:port or ipc://path)\n"
    "  --train CAMPAIGN        train every kind once on all of CAMPAIGN's measurements\n"
    "                          (any state: a finished dataset, say), store the models,\n"
    "                          print their held-out metrics and exit\n"
    "  --models A,B            kinds trained side by side at each retraining (default\n"
    "                          gcn,gcn0,lann,gbt,roofline)\n"
    "  --held-out F            share of a campaign's pipelines held out for the metrics\n"
    "                          (default 0.2)\n"
    "  --train-samples N       train on N of the training samples, drawn with the seed\n"
    "                          (default all; with --train, a point of a learning curve)\n"
    "  --ensemble N            members of each model's ensemble (default: each kind's\n"
    "                          own: 5, bilstm 1, gbt 3; the roofline has none)\n"
    "  --epochs N              training epochs (default: each model's own)\n"
    "  --threads N             threads a model trains and scores on, every kind (default:\n"
    "                          the cpus the learner may use); one campaign trains at a time\n"
    "  --early-stopping        the GCN kinds and sage stop on a validation split of the\n"
    "                          training pipelines (faster; docs/MODELS.md)\n"
    "  --drop-features P,Q     with --train: zero the feature columns whose names start\n"
    "                          with P or Q in every sample, an ablation (docs/FEATURES.md)\n"
    "  --test-learning-rate-scale F   tests only: every kind's learning rate times F\n"
    "                          (1e36 makes training diverge: the model is not stored);\n"
    "                          recorded in every model stored (farmctl model list)\n"
    "  --pretrained-dir DIR    where model_from: pretrained looks for models (default\n"
    "                          $SCHEDFARM_PRETRAINED_DIR, else the source tree's\n"
    "                          data/models)\n"
    "  --seed N                seed of the split and of training (default 1)\n"
    "  --retrain-every N       cadence of campaigns that set none (default 64 results)\n"
    "  --min-samples N         OK measurements a campaign needs before its first\n"
    "                          training (default 16)\n"
    "  --poll-ms N             how often the coordinator is asked for news (default 1000)\n"
    "  --nice N                lower the learner's CPU priority by N (0-19), to leave a\n"
    "                          worker on the same host its cores; a learner that leads\n"
    "                          its session (setsid) also lowers its scheduler autogroup,\n"
    "                          without which nice does not count against other sessions\n"
    "                          (such as a worker's sandbox)\n"
    "  --curve-key BASE        secure mode: this learner's key pair BASE.key / BASE.pub\n"
    "  --server-key FILE       secure mode: the coordinator's public key\n";

std::atomic<bool> g_stop{false};
void OnStopSignal(int) { g_stop = true; }

// With scheduler autogroups (Linux's default) the CPU is first shared between sessions,
// and nice only orders the processes within one; so a learner that leads its session
// also lowers its autogroup by `nice`. True when it did.
bool LowerAutogroup(int nice) {
  if (getsid(0) != getpid()) return false;
  std::ofstream autogroup("/proc/self/autogroup");
  if (!autogroup) return false;  // a kernel without autogroups
  autogroup << nice;
  autogroup.flush();
  return static_cast<bool>(autogroup);
}

int UsageError(const std::string& message) {
  std::cerr << "farm-learner: " << message << "\n" << kUsage;
  return 2;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv,
                                 {{"--coordinator", true},
                                  {"--train", true},
                                  {"--models", true},
                                  {"--held-out", true},
                                  {"--ensemble", true},
                                  {"--epochs", true},
                                  {"--threads", true},
                                  {"--seed", true},
                                  {"--retrain-every", true},
                                  {"--min-samples", true},
                                  {"--train-samples", true},
                                  {"--early-stopping", false},
                                  {"--pretrained-dir", true},
                                  {"--drop-features", true},
                                  {"--test-learning-rate-scale", true},
                                  {"--poll-ms", true},
                                  {"--nice", true},
                                  {"--curve-key", true},
                                  {"--server-key", true},
                                  {"--help", false}});
  if (!flags.error.empty()) return UsageError(flags.error);
  if (flags.has("--help")) {
    std::cout << kUsage;
    return 0;
  }
  if (!flags.has("--coordinator")) return UsageError("--coordinator is required");
  LearnerOptions options;
  options.client.endpoint = flags.get("--coordinator");
  options.client.total_timeout_ms = 10000;
  if (flags.has("--models")) {
    options.kinds.clear();
    std::stringstream list(flags.get("--models"));
    for (std::string kind; std::getline(list, kind, ',');) options.kinds.push_back(kind);
  }
  if (flags.has("--held-out")) {
    char* end = nullptr;
    const std::string text = flags.get("--held-out");
    options.held_out_fraction = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(options.held_out_fraction >= 0) ||
        options.held_out_fraction >= 1) {
      return UsageError("--held-out must be a number in [0, 1), got '" + text + "'");
    }
  }
  long long ensemble, epochs, threads, seed, every, min_samples, train_samples, poll, nice;
  std::string error;
  if (!IntFlag(flags, "--ensemble", 0, 64, 0, &ensemble, &error) ||
      !IntFlag(flags, "--epochs", 0, 1000000, 0, &epochs, &error) ||
      !IntFlag(flags, "--threads", 0, 1024, 0, &threads, &error) ||
      !IntFlag(flags, "--seed", 0, 1LL << 62, 1, &seed, &error) ||
      !IntFlag(flags, "--retrain-every", 1, 1000000, 64, &every, &error) ||
      !IntFlag(flags, "--min-samples", 2, 1000000, 16, &min_samples, &error) ||
      !IntFlag(flags, "--train-samples", 0, 100000000, 0, &train_samples, &error) ||
      !IntFlag(flags, "--poll-ms", 10, 600000, 1000, &poll, &error) ||
      !IntFlag(flags, "--nice", 0, 19, 0, &nice, &error)) {
    return UsageError(error);
  }
  options.train.ensemble = static_cast<int>(ensemble);
  options.train.epochs = static_cast<int>(epochs);
  options.train.threads = static_cast<int>(threads);
  options.train.seed = static_cast<uint64_t>(seed);
  options.train.early_stopping = flags.has("--early-stopping");
  options.pretrained_dir = flags.get("--pretrained-dir");
  if (flags.has("--test-learning-rate-scale")) {
    char* end = nullptr;
    const std::string text = flags.get("--test-learning-rate-scale");
    options.train.learning_rate_scale = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(options.train.learning_rate_scale > 0) ||
        !std::isfinite(options.train.learning_rate_scale)) {
      return UsageError("--test-learning-rate-scale must be a positive number, got '" + text + "'");
    }
    LogEvent("warn", "test_learning_rate_scale", {{"factor", text}});
  }
  if (flags.has("--drop-features")) {
    if (!flags.has("--train")) return UsageError("--drop-features is for --train");
    std::stringstream list(flags.get("--drop-features"));
    for (std::string prefix; std::getline(list, prefix, ',');) {
      if (prefix.empty()) return UsageError("--drop-features: an empty prefix");
      options.drop_feature_prefixes.push_back(prefix);
    }
  }
  options.seed = static_cast<uint64_t>(seed);
  options.default_retrain_every = static_cast<int>(every);
  options.min_training_samples = static_cast<int>(min_samples);
  options.train_samples = train_samples;
  options.poll_interval_ms = static_cast<int>(poll);
  bool autogroup_lowered = false;
  if (nice > 0) {
    if (setpriority(PRIO_PROCESS, 0, static_cast<int>(nice)) != 0) {
      LogEvent("warn", "nice_failed", {{"nice", std::to_string(nice)}});
    }
    autogroup_lowered = LowerAutogroup(static_cast<int>(nice));
  }
  StatusOr<std::optional<CurveClientKeys>> keys = ReadCurveClientKeys(
      flags.get("--curve-key"), flags.get("--server-key"), "--curve-key", "--server-key");
  if (!keys.ok()) return UsageError(keys.status().message());
  if (*keys) {
    options.client.own_keys = (*keys)->own;
    options.client.server_public_key = (*keys)->server_public_key;
  }
  StatusOr<std::unique_ptr<LearnerDaemon>> daemon = LearnerDaemon::Create(options);
  if (!daemon.ok()) return UsageError(daemon.status().message());
  if (flags.has("--train")) {
    StatusOr<std::vector<NamedMetrics>> table = (*daemon)->TrainCampaign(flags.get("--train"));
    if (!table.ok()) {
      std::cerr << "farm-learner: " << table.status().message() << "\n";
      return 1;
    }
    std::cout << FormatMetricsTable(*table);
    return 0;
  }
  signal(SIGTERM, OnStopSignal);
  signal(SIGINT, OnStopSignal);
  LogEvent("info", "learner_started",
           {{"coordinator", options.client.endpoint},
            {"nice", std::to_string(nice)},
            {"autogroup", autogroup_lowered ? "lowered" : "shared"},
            {"cpus", CpuList(AllowedCpus())}});
  const Status status = (*daemon)->Run(g_stop);
  if (!status.ok()) {
    LogEvent("error", "stopped", {{"error", status.message()}});
    return 1;
  }
  LogEvent("info", "stopped", {});
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) { return schedfarm::Main(argc, argv); }
