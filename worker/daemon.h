// WorkerDaemon: the protocol side of farm-worker. It connects a DEALER to the
// coordinator's ROUTER, registers the host's fingerprint, asks for work with credits,
// checks each lease before it runs (a lease whose pipeline or schedule cannot be
// built gets an ErrorReply; a baseline lease, an autoscheduler's origin with an empty
// schedule, is scheduled by that autoscheduler), runs leases in the SandboxPool, sends
// results and keeps each one until the coordinator acknowledges it, exchanges
// heartbeats, reconnects with back-off when the coordinator goes silent, and drains
// on a stop request. A replay worker answers its leases from a recorded dataset
// (worker/replay.h) instead of the sandbox.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "protocol/security.h"
#include "protocol/wire.h"
#include "schedfarm.pb.h"
#include "dataset/dataset.h"
#include "worker/sandbox.h"

namespace schedfarm {

struct WorkerOptions {
  std::string coordinator;  // the coordinator's endpoint: tcp://host:port or ipc://path
  HostFingerprint host;
  SandboxOptions sandbox;
  int prefetch = 1;  // leases held beyond the sandbox's children, so none waits for work
  size_t max_message_bytes = kDefaultMaxMessageBytes;
  int heartbeat_interval_ms = kHeartbeatIntervalMs;
  int liveness = kLiveness;
  int reconnect_initial_ms = kReconnectInitialMs;
  int reconnect_max_ms = kReconnectMaxMs;
  int result_resend_ms = 5000;    // a result not acknowledged in this time is sent again
  int drain_timeout_ms = 600000;  // after a stop request, for in-flight work and its acks
  // Secure mode: this worker's CURVE key pair and the coordinator's public key.
  std::optional<CurveKeyPair> curve_keys;
  std::string server_public_key;
  // Set: a replay worker. No sandbox starts; `host` is the dataset's, with
  // replay_dataset set to its id.
  std::shared_ptr<const LoadedDataset> replay;
  // host.test_time_scale, when set (tests of coordinator/host_audit.h only), multiplies
  // every time this worker reports, as a host that lies would.
};

class WorkerDaemon {
 public:
  // Starts the sandbox pool (or the replay); connects when Run() starts.
  static StatusOr<std::unique_ptr<WorkerDaemon>> Create(WorkerOptions options);
  ~WorkerDaemon();

  // Serves the coordinator until a stop request has drained: every lease in hand is
  // finished, its result acknowledged (or the drain timed out), then a Disconnect is
  // sent. An error if the drain timed out with work or results left.
  Status Run();

  // The first call starts the drain; a second one stops at once (in-flight leases are
  // then abandoned to the coordinator's lease expiry). Async-signal-safe.
  void RequestStop();

  WorkerDaemon(const WorkerDaemon&) = delete;
  WorkerDaemon& operator=(const WorkerDaemon&) = delete;

 private:
  struct State;
  explicit WorkerDaemon(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace schedfarm
