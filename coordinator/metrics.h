// The coordinator's Prometheus metrics, served at http://ADDRESS/metrics by
// prometheus-cpp's exposer on its own thread when farm-coordinator gets
// --metrics-endpoint ADDRESS. The loop observes events as they happen (leases sent,
// results by status with their lease latency, acknowledgements after the durable
// write, store writes from the group-commit thread, frames it could not deliver, leases
// back in the queue, the duration of each of its turns) and refreshes the gauges from
// its state about once a second. Names follow Prometheus conventions (the README lists
// them). Thread-safe: the exposer and the writer thread read and write it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"

namespace schedfarm {

class CoordinatorMetrics {
 public:
  // Binds `address` ("127.0.0.1:9464"; port 0 picks a free one). An error names the
  // address when it cannot be bound.
  static StatusOr<std::unique_ptr<CoordinatorMetrics>> Start(const std::string& address);
  ~CoordinatorMetrics();
  CoordinatorMetrics(const CoordinatorMetrics&) = delete;
  CoordinatorMetrics& operator=(const CoordinatorMetrics&) = delete;

  int port() const;  // the bound port

  void LeaseSent();
  // A result recorded (status by its MeasurementStatus name), `lease_seconds` after its
  // lease was sent (negative: unknown, not observed).
  void ResultRecorded(const std::string& status, double lease_seconds);
  // A worker's result acknowledged, `seconds` after it arrived (its durable write).
  void ResultAcknowledged(double seconds);
  void StoreWrite(double seconds);
  // Frames not delivered, by why: "unroutable" (the peer's connection is gone),
  // "send_error", "worker_dead" (for a worker declared dead, queued or not yet sent),
  // "peer_dropped" (the queue of a peer dropped, PeerDropped).
  void FramesDropped(const std::string& reason, int64_t frames);
  // A peer dropped for not reading its messages, with the `frames` of its queue.
  void PeerDropped(int64_t frames);
  // A lease ended without a result and its candidate went back to the queue, by why:
  // "unsent" (its send failed: no attempt counted), "worker_lost" (its worker died or
  // restarted), "refused" (by the worker).
  void LeaseRequeued(const std::string& reason);
  // A turn of the loop starts (the poll returned) and ends (its last send): its wall
  // time and the loop thread's CPU time in it. Loop thread only.
  void TurnStarted();
  void TurnEnded();

  struct Campaign {
    std::string id;
    int64_t finished = 0;
    int64_t budget = 0;
    int64_t queued = 0;
    double results_per_second = 0;
  };
  struct Snapshot {
    std::map<std::string, int64_t> campaigns_by_state;  // "running", "done"...
    std::vector<Campaign> campaigns;                    // those running or paused
    int64_t leases_in_flight = 0;
    std::map<std::string, int64_t> workers_by_state;  // "busy", "idle", "draining", "left", "dead"
    int64_t models = 0;                                 // model versions stored
  };
  void Refresh(const Snapshot& snapshot);

 private:
  struct Impl;
  explicit CoordinatorMetrics(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedfarm
