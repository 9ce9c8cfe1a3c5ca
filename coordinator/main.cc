// farm-coordinator: owns the farm's RocksDB store, runs the campaigns, hands leases
// to workers and records their results (coordinator/coordinator.h). SIGTERM or SIGINT
// stops it after the writes in progress are durable.
#include <signal.h>
#include <sys/resource.h>

#include <atomic>
#include <iostream>
#include <string>

#include "common/flags.h"
#include "common/log.h"
#include "common/memory.h"
#include "coordinator/coordinator.h"

namespace schedfarm {
namespace {

constexpr char kUsage[] =
    "usage: farm-coordinator --store DIR [options]\n"
    "options:\n"
    "  --endpoint ENDPOINT     where workers and clients connect (default tcp://127.0.0.1:5555;\n"
    "                          tcp://0.0.0.0:PORT for every interface, or ipc://PATH)\n"
    "  --store DIR             the RocksDB store (created if absent)\n"
    "  --curve-key BASE        secure mode: this coordinator's key pair BASE.key / BASE.pub\n"
    "                          (farmctl keygen BASE makes one)\n"
    "  --allow-list FILE       secure mode: public keys of the workers and clients allowed in\n"
    "  --max-message-kb N      larger messages are refused unparsed (default 65536); a\n"
    "                          peer can make the coordinator hold three of that size\n"
    "  --max-queued-mb N       replies kept for peers that do not read them, in all (default\n"
    "                          1024); past it the peer with the most is dropped\n"
    "  --max-queued-mb-per-peer N  replies kept for one such peer (default 128, at least\n"
    "                          the largest message); past it the peer is dropped\n"
    "  --heartbeat-ms N        heartbeat interval (default 1000; the workers' must match)\n"
    "  --liveness N            missed heartbeats before a worker is dead (default 3)\n"
    "  --quarantine-after N    failed attempts before a candidate is quarantined (default 3)\n"
    "  --retry-backoff-ms N    wait before the first retry, doubled at each (default 1000)\n"
    "  --audit-every N         measure each host's first OK result and every N-th after it\n"
    "                          again on another host of its CPU model, and flag hosts whose\n"
    "                          times or outputs deviate (default 0: none; 20 costs about 5%\n"
    "                          more benchmarks)\n"
    "  --audit-tolerance-pct P times further apart than P% disagree (default 20)\n"
    "  --audit-min-deviations N  audits a host must deviate in before it is flagged, its\n"
    "                          times off by the tolerance on average or N of them by\n"
    "                          status (default 3)\n"
    "  --metrics-endpoint HOST:PORT\n"
    "                          serve Prometheus metrics at http://HOST:PORT/metrics (port 0:\n"
    "                          any free one, logged as metrics_port at start)\n";

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop = true; }

// Every worker and client holds a connection: as many as the hard limit allows.
void RaiseOpenFileLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

int UsageError(const std::string& message) {
  std::cerr << "farm-coordinator: " << message << "\n" << kUsage;
  return 2;
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv,
                                 {{"--endpoint", true},
                                  {"--store", true},
                                  {"--curve-key", true},
                                  {"--allow-list", true},
                                  {"--max-message-kb", true},
                                  {"--max-queued-mb", true},
                                  {"--max-queued-mb-per-peer", true},
                                  {"--heartbeat-ms", true},
                                  {"--liveness", true},
                                  {"--quarantine-after", true},
                                  {"--retry-backoff-ms", true},
                                  {"--audit-every", true},
                                  {"--audit-tolerance-pct", true},
                                  {"--audit-min-deviations", true},
                                  {"--metrics-endpoint", true},
                                  {"--help", false}});
  if (!flags.error.empty()) return UsageError(flags.error);
  if (flags.has("--help")) {
    std::cout << kUsage;
    return 0;
  }
  CoordinatorOptions options;
  options.endpoint = flags.get("--endpoint", options.endpoint);
  options.store_path = flags.get("--store");
  options.curve_key = flags.get("--curve-key");
  options.allow_list = flags.get("--allow-list");
  options.metrics_endpoint = flags.get("--metrics-endpoint");
  if (options.store_path.empty()) return UsageError("--store is required");
  if (options.curve_key.empty() != options.allow_list.empty()) {
    return UsageError("--curve-key and --allow-list go together (secure mode)");
  }
  long long max_kb, queued_mb, queued_mb_per_peer, heartbeat_ms, liveness, quarantine, backoff,
      audit_every, tolerance_pct, min_deviations;
  std::string error;
  if (!IntFlag(flags, "--max-message-kb", 1, 1 << 20, kDefaultMaxMessageBytes >> 10, &max_kb,
               &error) ||
      !IntFlag(flags, "--max-queued-mb", 1, 1 << 20, options.max_queued_bytes >> 20, &queued_mb,
               &error) ||
      !IntFlag(flags, "--max-queued-mb-per-peer", 1, 1 << 20,
               options.max_queued_bytes_per_peer >> 20, &queued_mb_per_peer, &error) ||
      !IntFlag(flags, "--heartbeat-ms", 10, 60000, kHeartbeatIntervalMs, &heartbeat_ms, &error) ||
      !IntFlag(flags, "--liveness", 1, 100, kLiveness, &liveness, &error) ||
      !IntFlag(flags, "--quarantine-after", 1, 100, 3, &quarantine, &error) ||
      !IntFlag(flags, "--retry-backoff-ms", 0, 3600000, 1000, &backoff, &error) ||
      !IntFlag(flags, "--audit-every", 0, 1000000, 0, &audit_every, &error) ||
      !IntFlag(flags, "--audit-tolerance-pct", 1, 1000, 20, &tolerance_pct, &error) ||
      !IntFlag(flags, "--audit-min-deviations", 1, 1000, 3, &min_deviations, &error)) {
    return UsageError(error);
  }
  options.max_message_bytes = static_cast<size_t>(max_kb) << 10;
  options.max_queued_bytes = static_cast<size_t>(queued_mb) << 20;
  options.max_queued_bytes_per_peer = static_cast<size_t>(queued_mb_per_peer) << 20;
  if (options.max_queued_bytes_per_peer < options.max_message_bytes) {
    return UsageError("--max-queued-mb-per-peer " + std::to_string(queued_mb_per_peer) +
                      " is less than the largest message (--max-message-kb " +
                      std::to_string(max_kb) + ")");
  }
  if (options.max_queued_bytes < options.max_queued_bytes_per_peer) {
    return UsageError("--max-queued-mb " + std::to_string(queued_mb) +
                      " is less than --max-queued-mb-per-peer " +
                      std::to_string(queued_mb_per_peer));
  }
  options.heartbeat_interval_ms = static_cast<int>(heartbeat_ms);
  options.liveness = static_cast<int>(liveness);
  options.retry.quarantine_after = static_cast<int>(quarantine);
  options.retry.backoff_ms = backoff;
  options.audit.every = static_cast<int>(audit_every);
  options.audit.tolerance = tolerance_pct / 100.0;
  options.audit.min_deviations = static_cast<int>(min_deviations);

  RaiseOpenFileLimit();
  KeepFreedMemory();  // replies of megabytes, made and freed again and again
  StatusOr<std::unique_ptr<Coordinator>> coordinator = Coordinator::Start(options);
  if (!coordinator.ok()) {
    LogEvent("error", "start_failed", {{"error", coordinator.status().message()}});
    return 1;
  }
  signal(SIGTERM, OnStopSignal);
  signal(SIGINT, OnStopSignal);
  const Status status = (*coordinator)->Run(g_stop);
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
