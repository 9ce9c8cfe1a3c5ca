// farm-coordinator's process: one ROUTER socket for workers and clients, the RocksDB
// store, the campaigns and their dispatch queues, the worker registry with liveness,
// leases against credits, exactly-once results acknowledged after a group-committed
// durable write, and the control API farmctl speaks. One thread runs the loop; a
// second one writes to the store (coordinator/group_commit.h). The rules live in
// coordinator/worker_protocol.h and coordinator/control_api.h; this is the process
// around them.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "coordinator/campaign_run.h"
#include "coordinator/host_audit.h"
#include "protocol/wire.h"

namespace schedfarm {

// Frames ZMQ's pipe to one peer holds before the coordinator keeps the rest itself,
// counted (CoordinatorOptions' queue bounds): with one more being written to the peer's
// connection, ZMQ holds at most three frames per peer.
inline constexpr int kSendHighWaterMark = 2;

struct CoordinatorOptions {
  std::string endpoint = "tcp://127.0.0.1:5555";  // where workers and clients connect
  std::string store_path;                         // the RocksDB directory
  // Secure mode (both set): the coordinator's key pair (<base>.key and <base>.pub) and
  // the allow-list of worker and client public keys.
  std::string curve_key;
  std::string allow_list;
  // The largest frame a peer may send. Before the loop reads them, the coordinator
  // holds at most three per peer (two waiting, one arriving): a peer that floods it
  // waits on its own TCP connection, and the memory it can take is three times this.
  size_t max_message_bytes = kDefaultMaxMessageBytes;
  int heartbeat_interval_ms = kHeartbeatIntervalMs;
  int liveness = kLiveness;  // missed heartbeats before a worker is dead
  RetryPolicy retry;
  AuditOptions audit;  // hosts that lie (coordinator/host_audit.h)
  // What the coordinator keeps for peers that do not read: past ZMQ's pipe to a peer
  // (kSendHighWaterMark frames), the frames wait in the coordinator's queue for it. A
  // peer whose queue passes either bound of its own is dropped, and while the queues in
  // all pass max_queued_bytes, so is the peer with the most bytes queued.
  size_t max_queued_frames_per_peer = 10000;
  size_t max_queued_bytes_per_peer = size_t{128} << 20;
  size_t max_queued_bytes = size_t{1} << 30;
  // "HOST:PORT" (port 0: any free one): serve Prometheus metrics there over HTTP
  // (coordinator/metrics.h); empty: none.
  std::string metrics_endpoint;
};

// Figures for logs and the benchmark.
struct CoordinatorStats {
  int64_t results_recorded = 0;
  int64_t leases_sent = 0;
  int64_t store_writes = 0;
  int64_t store_records = 0;
};

class Coordinator {
 public:
  // Opens the store, restores the campaigns (leases in flight go back to the queue),
  // binds the endpoint and, in secure mode, starts the allow-list handler and refuses
  // to start unless a self-test proves unknown keys are rejected.
  static StatusOr<std::unique_ptr<Coordinator>> Start(const CoordinatorOptions& options);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  // The bound endpoint ("tcp://127.0.0.1:*" resolved to its port).
  const std::string& endpoint() const;
  // The port the metrics are served on; 0 without --metrics-endpoint.
  int metrics_port() const;
  // Serves until `stop` is set (checked at least every 100 ms). An error when the store
  // fails: nothing is acknowledged after that.
  Status Run(const std::atomic<bool>& stop);
  CoordinatorStats stats() const;  // from any thread, while Run serves on another

 private:
  class Impl;
  explicit Coordinator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedfarm
