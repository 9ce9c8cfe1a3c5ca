// farm-worker: the benchmark daemon of a host. It registers with the coordinator,
// then compiles, checks and times the candidates it leases in sandbox processes
// (worker/daemon.h, worker/sandbox.h). SIGTERM drains: leases in hand are finished
// and their results acknowledged before it exits; a second SIGTERM stops at once.
#include <google/protobuf/util/json_util.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "common/flags.h"
#include "common/log.h"
#include "common/memory.h"
#include "common/programs.h"
#include "protocol/security.h"
#include "worker/daemon.h"
#include "worker/fingerprint.h"
#include "worker/sandbox.h"
#include "worker/sandbox_check.h"

namespace schedfarm {
namespace {

constexpr char kUsage[] =
    "usage: farm-worker --coordinator ENDPOINT [options]   serve a coordinator\n"
    "       farm-worker --fingerprint [--id ID]            print this host's fingerprint (JSON)\n"
    "       farm-worker --check-sandbox [options]          check that the sandbox classifies\n"
    "                                                      crashes, hangs, floods, OOM\n"
    "options:\n"
    "  --coordinator ENDPOINT  tcp://host:port or ipc://path of farm-coordinator\n"
    "  --id ID                 stable worker id (default: hostname-machine hash)\n"
    "  --labels A,B            labels campaigns can require of their workers\n"
    "  --compile-slots N       candidates compiled at once (default: cores - 1, at least 1)\n"
    "  --children N            sandbox processes (default: compile slots + 1)\n"
    "  --prefetch N            leases held beyond the children (default 1)\n"
    "  --memory-limit-mb N     address space of each sandbox process (default: the\n"
    "                          memory it may use, RAM or its cgroup's limit, / children)\n"
    "  --output-limit-kb N     output a candidate may write per job (default 1024)\n"
    "  --cache-dir DIR         where reference outputs are cached (default: in memory)\n"
    "  --adams2019-beam N      Adams2019's beam width in baseline leases (default 32,\n"
    "                          Halide's; 1 is its fast greedy search)\n"
    "  --max-message-kb N      larger messages are refused unparsed (default 65536)\n"
    "  --heartbeat-ms N        heartbeat interval (default 1000; the coordinator's must match)\n"
    "  --drain-timeout-s N     on SIGTERM, how long to finish work (default 600)\n"
    "  --result-resend-ms N    resend a result not acknowledged in this time (default 5000)\n"
    "  --curve-key BASE        secure mode: this worker's key pair BASE.key / BASE.pub\n"
    "                          (farmctl keygen BASE; its .pub goes on the coordinator's\n"
    "                          allow-list)\n"
    "  --server-key FILE       secure mode: the coordinator's public key\n"
    "  --test-time-scale F     tests of the coordinator's audits only: report every time\n"
    "                          multiplied by F, as a host that lies would; recorded in the\n"
    "                          worker's fingerprint, so in every result it reports\n"
    "  --replay FILE           answer leases from a recorded dataset instead of compiling\n"
    "                          and timing (docs/DATASETS.md): the worker registers as the\n"
    "                          dataset's host and serves only replay campaigns of that\n"
    "                          dataset; --prefetch defaults to 16\n";

WorkerDaemon* g_daemon = nullptr;

void OnStopSignal(int) {
  if (g_daemon) g_daemon->RequestStop();
}

int UsageError(const std::string& message) {
  std::cerr << "farm-worker: " << message << "\n" << kUsage;
  return 2;
}

// Every flag of farm-worker and whether it takes a value.
const std::map<std::string, bool> kFlags = {{"--coordinator", true},
                                            {"--id", true},
                                            {"--labels", true},
                                            {"--compile-slots", true},
                                            {"--children", true},
                                            {"--prefetch", true},
                                            {"--memory-limit-mb", true},
                                            {"--output-limit-kb", true},
                                            {"--cache-dir", true},
                                            {"--max-message-kb", true},
                                            {"--adams2019-beam", true},
                                            {"--heartbeat-ms", true},
                                            {"--drain-timeout-s", true},
                                            {"--result-resend-ms", true},
                                            {"--curve-key", true},
                                            {"--server-key", true},
                                            {"--replay", true},
                                            {"--test-time-scale", true},
                                            {"--fingerprint", false},
                                            {"--check-sandbox", false},
                                            {"--help", false}};

// "threads:figure" pairs of a figure by thread count, as the start-up log gives them.
std::string ByThreadsText(const google::protobuf::Map<int32_t, double>& by_threads) {
  std::string text;
  for (const auto& [threads, figure] :
       std::map<int, double>(by_threads.begin(), by_threads.end())) {
    char number[32];
    std::snprintf(number, sizeof(number), "%.1f", figure);
    text += (text.empty() ? "" : ",") + std::to_string(threads) + ":" + number;
  }
  return text;
}

// The host's fp32 peak and memory bandwidth into its fingerprint, logged (peak_measured,
// bandwidth_measured), or not (peak_unmeasured, bandwidth_unmeasured, with why: its
// results then have no share of that roof).
void MeasureAndLogRoofs(HostFingerprint* host) {
  if (const Status peak = MeasureHostPeak(host); !peak.ok()) {
    LogEvent("warn", "peak_unmeasured", {{"error", peak.message()}});
  } else {
    LogEvent(
        "info", "peak_measured",
        {{"isa", host->peak_isa()}, {"gflops_by_threads", ByThreadsText(host->peak_gflops())}});
  }
  if (const Status bandwidth = MeasureHostBandwidth(host); !bandwidth.ok()) {
    LogEvent("warn", "bandwidth_unmeasured", {{"error", bandwidth.message()}});
  } else {
    LogEvent("info", "bandwidth_measured",
             {{"gbps_by_threads", ByThreadsText(host->bandwidth_gbps())}});
  }
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv, kFlags);
  if (!flags.error.empty()) return UsageError(flags.error);
  if (flags.values.count("--help")) {
    std::cout << kUsage;
    return 0;
  }
  HostFingerprint host =
      DetectHostFingerprint(flags.values.count("--id") ? flags.values.at("--id") : "");
  if (flags.values.count("--labels")) {
    std::stringstream labels(flags.values.at("--labels"));
    for (std::string label; std::getline(labels, label, ',');) {
      if (label.empty()) {
        return UsageError("--labels: empty label in '" + flags.values.at("--labels") + "'");
      }
      host.add_labels(label);
    }
  }
  std::shared_ptr<const LoadedDataset> replay;
  if (flags.values.count("--replay")) {
    StatusOr<LoadedDataset> loaded = ReadDataset(flags.values.at("--replay"));
    if (!loaded.ok()) {
      std::cerr << "farm-worker: --replay: " << loaded.status().message() << "\n";
      return 1;
    }
    replay = std::make_shared<const LoadedDataset>(std::move(loaded).value());
    HostFingerprint recorded = replay->data.host();
    recorded.set_worker_id(host.worker_id());
    *recorded.mutable_labels() = host.labels();
    recorded.set_replay_dataset(replay->id);
    host = std::move(recorded);
  }
  if (flags.values.count("--fingerprint")) {
    if (!replay) MeasureAndLogRoofs(&host);
    std::string json;
    google::protobuf::util::JsonPrintOptions options;
    options.add_whitespace = true;
    (void)google::protobuf::util::MessageToJsonString(host, &json, options);
    std::cout << json;
    return 0;
  }

  std::string error;
  long long compile_slots, children, prefetch, memory_mb, output_kb, message_kb, heartbeat_ms,
      drain_s, resend_ms, beam;
  const long long default_slots = std::max(1, host.cores() - 1);
  if (!IntFlag(flags, "--compile-slots", 1, 1024, default_slots, &compile_slots, &error) ||
      !IntFlag(flags, "--children", 1, 1024, compile_slots + 1, &children, &error) ||
      !IntFlag(flags, "--prefetch", 0, 1024, replay ? 16 : 1, &prefetch, &error) ||
      !IntFlag(flags, "--memory-limit-mb", 64, 1LL << 30, UsableMemoryBytes() / children >> 20,
               &memory_mb, &error) ||
      !IntFlag(flags, "--output-limit-kb", 1, 1LL << 30, 1024, &output_kb, &error) ||
      !IntFlag(flags, "--max-message-kb", 1, 1LL << 22, 65536, &message_kb, &error) ||
      !IntFlag(flags, "--heartbeat-ms", 10, 60000, kHeartbeatIntervalMs, &heartbeat_ms, &error) ||
      !IntFlag(flags, "--drain-timeout-s", 1, 86400, 600, &drain_s, &error) ||
      !IntFlag(flags, "--result-resend-ms", 10, 3600000, 5000, &resend_ms, &error) ||
      !IntFlag(flags, "--adams2019-beam", 1, 4096, 32, &beam, &error)) {
    return UsageError(error);
  }

  SandboxOptions sandbox;
  const std::string self = ThisProgram();
  sandbox.child_executable = self.empty() ? "farm-worker" : self;
  sandbox.children = static_cast<int>(children);
  sandbox.compile_slots = static_cast<int>(std::min(compile_slots, children));
  sandbox.memory_limit_bytes = memory_mb << 20;
  sandbox.output_limit_bytes = output_kb << 10;
  if (flags.values.count("--cache-dir")) sandbox.cache_dir = flags.values.at("--cache-dir");
  sandbox.adams2019_beam = static_cast<int>(beam);

  if (flags.values.count("--check-sandbox")) {
    const SandboxCheckReport report = CheckSandbox(sandbox);
    std::cout << report.table;
    return report.ok ? 0 : 1;
  }

  if (!flags.values.count("--coordinator")) return UsageError("--coordinator is required");
  // Before the sandbox children start, so that the peak's threads have the cores. A
  // replay worker reports its dataset's host, peak included.
  if (!replay) MeasureAndLogRoofs(&host);
  WorkerOptions options;
  options.coordinator = flags.values.at("--coordinator");
  options.host = host;
  options.sandbox = sandbox;
  options.prefetch = static_cast<int>(prefetch);
  options.max_message_bytes = static_cast<size_t>(message_kb) << 10;
  options.heartbeat_interval_ms = static_cast<int>(heartbeat_ms);
  options.drain_timeout_ms = static_cast<int>(drain_s * 1000);
  options.result_resend_ms = static_cast<int>(resend_ms);
  options.replay = replay;
  if (flags.values.count("--test-time-scale")) {
    const std::string& value = flags.values.at("--test-time-scale");
    char* end = nullptr;
    const double scale = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(scale > 0) || scale > 100) {
      return UsageError("--test-time-scale: '" + value + "' is not a number in (0, 100]");
    }
    // In the fingerprint, so every result says its times are not real ones.
    options.host.set_test_time_scale(scale);
    LogEvent("warn", "test_time_scale", {{"factor", value}});
  }
  StatusOr<std::optional<CurveClientKeys>> keys = ReadCurveClientKeys(
      flags.get("--curve-key"), flags.get("--server-key"), "--curve-key", "--server-key");
  if (!keys.ok()) return UsageError(keys.status().message());
  if (*keys) {
    options.curve_keys = (*keys)->own;
    options.server_public_key = (*keys)->server_public_key;
  }

  StatusOr<std::unique_ptr<WorkerDaemon>> daemon = WorkerDaemon::Create(options);
  if (!daemon.ok()) {
    std::cerr << "farm-worker: " << daemon.status().message() << "\n";
    return 1;
  }
  g_daemon = daemon->get();
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);
  LogEvent("info", "started",
           {{"worker", host.worker_id()},
            {"coordinator", options.coordinator},
            {"children", std::to_string(children)},
            {"compile_slots", std::to_string(sandbox.compile_slots)},
            {"replay", replay ? replay->id : "no"}});
  const Status status = (*daemon)->Run();
  g_daemon = nullptr;
  if (!status.ok()) {
    LogEvent("error", "exit", {{"error", status.message()}});
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--sandbox-child") == 0) {
    return schedfarm::RunSandboxChild(argc, argv);
  }
  return schedfarm::Main(argc, argv);
}
