// The coordinator's rules for workers: registration (a new instance of a known worker
// loses the leases of the old one), credits, leases against them, each result recorded
// exactly once and acknowledged after its durable write, refused leases, liveness from
// heartbeats, retries due, and the campaigns' wall time. No sockets and no clock of its
// own: frames leave through an Outbox, records through PendingWrites and time comes from
// a Clock, so that tests run these rules on simulated time. Hosts' results are audited
// on other hosts (coordinator/host_audit.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "common/clock.h"
#include "coordinator/campaign_run.h"
#include "coordinator/farm_state.h"
#include "coordinator/host_audit.h"
#include "coordinator/pending_writes.h"
#include "schedfarm.pb.h"

namespace schedfarm {

class CoordinatorMetrics;

// Where frames to peers go.
class Outbox {
 public:
  virtual ~Outbox() = default;
  // False when the peer is unreachable or was dropped for not reading.
  virtual bool Send(const std::string& peer, std::string frame) = 0;
  // The peer's worker is dead: frames still waiting for it are dropped.
  virtual void Forget(const std::string& peer) = 0;
};

struct WorkerProtocolOptions {
  int heartbeat_interval_ms = 1000;
  int liveness = 3;  // missed heartbeats before a worker is dead
  RetryPolicy retry;
  AuditOptions audit;
};

class WorkerProtocol {
 public:
  // `metrics` may be null.
  WorkerProtocol(FarmState& farm, PendingWrites& writes, Outbox& outbox, const Clock& clock,
                 const WorkerProtocolOptions& options, CoordinatorMetrics* metrics = nullptr);

  // A worker's message from `peer`: Register, or a message of a registered worker
  // (heartbeat, work request, result, refused lease, disconnect). A peer that is not a
  // registered worker is told to register again.
  void HandleMessage(const std::string& peer, const Envelope& envelope);
  // Campaigns past their wall time are done; once per heartbeat interval, heartbeats go
  // out and workers silent for `liveness` intervals before `caught_up_ms` are dead,
  // their leases requeued. `caught_up_ms`: when the loop last read every peer's waiting
  // messages; while a backlog waits, silence may be the backlog's, not the worker's.
  void Tick(int64_t caught_up_ms);
  // Keeps enough candidates ready for the credits of the connected workers.
  void Propose();
  // Leases ready candidates to workers with free credits, campaigns in turn.
  void Dispatch();
  // A peer that does not read its messages: its worker is dead.
  void PeerDropped(const std::string& peer, const std::string& why);

  // When Tick next has heartbeats to send (the loop's longest wait).
  int64_t next_heartbeat_ms() const { return next_heartbeat_ms_; }
  // Atomics, for Coordinator::stats from any thread; everything else of this class is
  // the loop thread's.
  int64_t results_recorded() const { return results_recorded_.load(); }
  int64_t leases_sent() const { return leases_sent_.load(); }

 private:
  WorkerEntry* WorkerOfPeer(const std::string& peer);
  void HandleRegister(const std::string& peer, const Register& reg);
  void HandleResult(WorkerEntry& worker, const Measurement& measurement);
  void HandleLeaseRefused(WorkerEntry& worker, const ErrorReply& error);
  // A recorded result, for the audits: a sampled OK result gets an audit on another
  // host; an audit's result is judged, or disputed and measured on a third host.
  void AuditResult(CampaignRun& run, const Measurement& measurement, const WorkerEntry& worker);
  void JudgeAuditResult(CampaignRun& run, const Measurement& measurement);
  // Queues `audit` of `audited` when an alive host the audit may go to exists.
  bool QueueAudit(CampaignRun& run, const Candidate& audited, const Audit& audit);
  // A lease ends without a result: the candidate counts a failed attempt.
  void ReleaseLease(const std::string& lease_id, MeasurementStatus status, const std::string& why);
  void WorkerDead(WorkerEntry& worker, const std::string& why);
  bool Send(const std::string& peer, const Envelope& envelope);

  FarmState& farm_;
  PendingWrites& writes_;
  Outbox& outbox_;
  const Clock& clock_;
  WorkerProtocolOptions options_;
  CoordinatorMetrics* metrics_;
  std::string lease_prefix_;  // lease ids are unique across restarts of the coordinator
  uint64_t next_lease_ = 1;
  int64_t last_tick_ms_ = 0;
  int64_t next_heartbeat_ms_ = 0;
  std::atomic<int64_t> results_recorded_{0};
  std::atomic<int64_t> leases_sent_{0};
};

}  // namespace schedfarm
