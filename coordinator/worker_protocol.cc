#include "coordinator/worker_protocol.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <set>
#include <vector>

#include "common/log.h"
#include "coordinator/metrics.h"
#include "protocol/wire.h"
#include "storage/keys.h"

namespace schedfarm {

namespace {

// Candidates kept ready per credit of the connected workers (and at least this many).
constexpr size_t kReadyPerCredit = 2;
constexpr size_t kMinReady = 32;
constexpr int kMaxCredits = 1024;

// The encoded Envelope of a Lease. The candidate, pipeline and settings are lent to
// the envelope for its serialization instead of copied: this runs for every result.
std::string EncodeLease(const std::string& lease_id, const Candidate& candidate,
                        const PipelineSpec& pipeline, const MeasurementSettings& settings) {
  Envelope envelope;
  envelope.set_version(kProtocolVersion);
  Lease* lease = envelope.mutable_lease();
  lease->set_lease_id(lease_id);
  lease->unsafe_arena_set_allocated_candidate(const_cast<Candidate*>(&candidate));
  lease->unsafe_arena_set_allocated_pipeline(const_cast<PipelineSpec*>(&pipeline));
  lease->unsafe_arena_set_allocated_settings(const_cast<MeasurementSettings*>(&settings));
  std::string frame = envelope.SerializeAsString();
  lease->unsafe_arena_release_candidate();
  lease->unsafe_arena_release_pipeline();
  lease->unsafe_arena_release_settings();
  return frame;
}

}  // namespace

WorkerProtocol::WorkerProtocol(FarmState& farm, PendingWrites& writes, Outbox& outbox,
                               const Clock& clock, const WorkerProtocolOptions& options,
                               CoordinatorMetrics* metrics)
    : farm_(farm), writes_(writes), outbox_(outbox), clock_(clock), options_(options),
      metrics_(metrics) {
  const int64_t now = clock_.NowMs();
  char prefix[32];
  snprintf(prefix, sizeof(prefix), "%llx-", static_cast<unsigned long long>(now));
  lease_prefix_ = prefix;
  last_tick_ms_ = now;
}

bool WorkerProtocol::Send(const std::string& peer, const Envelope& envelope) {
  return outbox_.Send(peer, EncodeEnvelope(envelope));
}

WorkerEntry* WorkerProtocol::WorkerOfPeer(const std::string& peer) {
  auto it = farm_.worker_of_peer.find(peer);
  if (it == farm_.worker_of_peer.end()) return nullptr;
  return &farm_.workers[it->second];
}

void WorkerProtocol::HandleMessage(const std::string& peer, const Envelope& envelope) {
  if (envelope.body_case() == Envelope::kRegister) {
    HandleRegister(peer, envelope.register_());
    return;
  }
  WorkerEntry* worker = WorkerOfPeer(peer);
  if (worker == nullptr) {
    // A worker this process does not know (it restarted, or declared it dead).
    if (envelope.body_case() != Envelope::kDisconnect && envelope.body_case() != Envelope::kError) {
      Send(peer, MakeDisconnect("unknown worker: register again"));
    }
    return;
  }
  worker->last_heard_ms = clock_.NowMs();
  switch (envelope.body_case()) {
    case Envelope::kHeartbeat:
      return;
    case Envelope::kWorkRequest:
      worker->credits = std::clamp(envelope.work_request().credits(), 0, kMaxCredits);
      if (static_cast<int>(worker->leases.size()) < worker->credits) {
        farm_.hungry.insert(worker->id);
        farm_.dispatch_needed = true;
      }
      return;
    case Envelope::kResult:
      HandleResult(*worker, envelope.result().measurement());
      return;
    case Envelope::kError:
      HandleLeaseRefused(*worker, envelope.error());
      return;
    case Envelope::kDisconnect:
      worker->left = true;
      WorkerDead(*worker, "disconnected: " + envelope.disconnect().reason());
      return;
    default:
      Send(peer, MakeErrorReply(std::string("a coordinator does not take ") + BodyName(envelope)));
      return;
  }
}

void WorkerProtocol::HandleRegister(const std::string& peer, const Register& reg) {
  const std::string& id = reg.host().worker_id();
  if (id.empty()) {
    Send(peer, MakeErrorReply("register: host.worker_id is empty"));
    return;
  }
  const int64_t now = clock_.NowMs();
  WorkerEntry& worker = farm_.workers[id];
  const bool restarted = !worker.instance.empty() && worker.instance != reg.instance();
  if (restarted && !worker.leases.empty()) {
    // Its leases died with the previous process.
    const std::vector<std::string> lost(worker.leases.begin(), worker.leases.end());
    for (const std::string& lease : lost) {
      ReleaseLease(lease, WORKER_LOST, "worker " + id + " restarted");
    }
  }
  if (!worker.peer.empty() && worker.peer != peer) farm_.worker_of_peer.erase(worker.peer);
  worker.id = id;
  worker.peer = peer;
  worker.instance = reg.instance();
  worker.credits = std::clamp(reg.credits(), 0, kMaxCredits);
  worker.last_heard_ms = now;
  worker.alive = true;
  worker.left = false;
  *worker.record.mutable_host() = reg.host();
  worker.record.set_registered_unix_ms(now);
  worker.record.set_last_seen_unix_ms(now);
  farm_.worker_of_peer[peer] = id;
  writes_.WorkerChanged(id);
  if (static_cast<int>(worker.leases.size()) < worker.credits) farm_.hungry.insert(id);
  farm_.dispatch_needed = true;
  writes_.AddEvent(now, "worker_registered", "", id, "",
                   reg.host().hostname() + " cores=" + std::to_string(reg.host().cores()) +
                       " credits=" + std::to_string(worker.credits));
  LogEvent("info", "worker_registered",
           {{"worker", id},
            {"credits", std::to_string(worker.credits)},
            {"leases", std::to_string(worker.leases.size())}});
  Envelope welcome;
  welcome.mutable_welcome()->set_worker_id(id);
  welcome.mutable_welcome()->set_heartbeat_interval_ms(options_.heartbeat_interval_ms);
  Send(peer, welcome);
}

void WorkerProtocol::HandleResult(WorkerEntry& worker, const Measurement& measurement) {
  const std::string& lease_id = measurement.lease_id();
  Envelope ack;
  ack.mutable_ack()->set_lease_id(lease_id);
  ack.mutable_ack()->set_durable(true);
  // The lease is done for this worker whatever becomes of the result.
  const int64_t now = clock_.NowMs();
  double lease_seconds = -1;
  if (worker.leases.erase(lease_id) > 0) {
    auto lease = farm_.leases.find(lease_id);
    if (lease != farm_.leases.end()) lease_seconds = (now - lease->second.sent_ms) / 1000.0;
    farm_.leases.erase(lease_id);
    farm_.hungry.insert(worker.id);
    farm_.dispatch_needed = true;
  }
  CampaignRun* run = farm_.FindCampaign(measurement.candidate().campaign());
  if (run == nullptr) {
    LogEvent("warn", "result_for_unknown_campaign",
             {{"worker", worker.id},
              {"lease", lease_id},
              {"campaign", measurement.candidate().campaign()}});
    writes_.DeferToWorker(worker.id, ack);  // nothing to record: the worker may forget it
    return;
  }
  // A result names its host; one that does not is the worker's (copied only then: this
  // runs for every result).
  Measurement with_host;
  if (measurement.host().worker_id().empty()) {
    with_host = measurement;
    *with_host.mutable_host() = worker.record.host();
  }
  const Measurement& stored = with_host.has_host() ? with_host : measurement;
  CandidateRecord record;
  const CampaignRun::ResultOutcome outcome = run->RecordResult(stored, options_.retry, now, &record);
  if (outcome == CampaignRun::ResultOutcome::kRecorded) {
    writes_.batch().AddMeasurement(stored);
    writes_.batch().PutCandidate(record);
    writes_.CampaignChanged(run->id());
    if (stored.status() == OK) {
      worker.record.set_results_ok(worker.record.results_ok() + 1);
    } else {
      (*worker.record.mutable_failures_by_status())[MeasurementStatus_Name(stored.status())]++;
    }
    worker.record.set_last_seen_unix_ms(now);
    writes_.WorkerChanged(worker.id);
    ++results_recorded_;
    if (metrics_) metrics_->ResultRecorded(MeasurementStatus_Name(stored.status()), lease_seconds);
    if (record.state() == CANDIDATE_QUARANTINED) {
      writes_.AddEvent(now, "quarantined", run->id(), worker.id, lease_id,
                       record.candidate().pipeline_id() + " " + record.candidate().schedule_hash() +
                           " after " + std::to_string(record.failures()) + " failures, last " +
                           MeasurementStatus_Name(record.last_status()));
    }
    AuditResult(*run, stored, worker);
    FinishIfDone(*run, now, writes_);
  } else {
    writes_.AddEvent(now,
                     outcome == CampaignRun::ResultOutcome::kDuplicate
                         ? "duplicate_result"
                         : "result_for_unknown_candidate",
                     run->id(), worker.id, lease_id,
                     stored.candidate().pipeline_id() + " " + stored.candidate().schedule_hash() +
                         " " + MeasurementStatus_Name(stored.status()));
  }
  writes_.DeferToWorker(worker.id, ack, now);
}

void WorkerProtocol::AuditResult(CampaignRun& run, const Measurement& measurement,
                                 const WorkerEntry& worker) {
  if (!AuditComparable(measurement.status())) return;  // a failed attempt is retried
  if (measurement.candidate().has_audit()) {
    JudgeAuditResult(run, measurement);
    return;
  }
  if (measurement.status() != OK || !AuditsResult(options_.audit, worker.record.results_ok())) {
    return;
  }
  Audit audit;
  audit.set_cpu_model(worker.record.host().cpu_model());
  AuditedResult* first = audit.add_results();
  first->set_worker_id(worker.id);
  first->set_status(OK);
  first->set_seconds(measurement.stats().min_seconds());
  QueueAudit(run, measurement.candidate(), audit);
}

bool WorkerProtocol::QueueAudit(CampaignRun& run, const Candidate& audited, const Audit& audit) {
  if (run.campaign().state() != CAMPAIGN_RUNNING) return false;
  Candidate probe;
  *probe.mutable_audit() = audit;
  const bool host = std::any_of(farm_.workers.begin(), farm_.workers.end(), [&](const auto& entry) {
    const WorkerEntry& worker = entry.second;
    return worker.alive && run.Accepts(worker.record.host()) &&
           CampaignRun::ServesCandidate(probe, worker.record.host());
  });
  if (!host) return false;
  const bool added = run.AddAudit(audited, audit, clock_.NowMs(), [&](const CandidateRecord& record) {
    writes_.batch().PutCandidate(record);
  });
  if (!added) return false;
  writes_.CampaignChanged(run.id());
  farm_.dispatch_needed = true;
  return true;
}

void WorkerProtocol::JudgeAuditResult(CampaignRun& run, const Measurement& measurement) {
  const int64_t now = clock_.NowMs();
  Audit audit = measurement.candidate().audit();
  AuditedResult* latest = audit.add_results();
  latest->set_worker_id(measurement.host().worker_id());
  latest->set_status(measurement.status());
  latest->set_seconds(measurement.stats().min_seconds());
  AuditVerdict verdict = JudgeAudit(audit, options_.audit.tolerance);
  if (verdict.needs_another_host) {
    if (QueueAudit(run, measurement.candidate(), audit)) return;
    for (const AuditedResult& r : audit.results()) verdict.inconclusive.push_back(r.worker_id());
  }
  std::string text = measurement.candidate().pipeline_id() + " " +
                     measurement.candidate().schedule_hash() + ":";
  for (const AuditedResult& r : audit.results()) {
    text += " " + r.worker_id() + "=" +
            (r.status() == OK ? std::to_string(r.seconds()) + "s"
                              : MeasurementStatus_Name(r.status()));
  }
  writes_.AddEvent(now, "audit", run.id(), "", "",
                   text + " (agreed " + std::to_string(verdict.agreed.size()) + ", deviated " +
                       std::to_string(verdict.deviated.size()) + ")");
  for (const AuditedResult& r : audit.results()) {
    auto found = farm_.workers.find(r.worker_id());
    if (found == farm_.workers.end()) continue;
    WorkerRecord& record = found->second.record;
    const bool flagged = CountAudit(options_.audit, verdict, r.worker_id(), now, &record);
    writes_.WorkerChanged(r.worker_id());
    if (!flagged) continue;
    writes_.AddEvent(now, "host_flagged", run.id(), r.worker_id(), "", record.flag_reason());
    LogEvent("warn", "host_flagged", {{"worker", r.worker_id()}, {"why", record.flag_reason()}});
  }
}

void WorkerProtocol::HandleLeaseRefused(WorkerEntry& worker, const ErrorReply& error) {
  LogEvent("warn", "lease_refused",
           {{"worker", worker.id}, {"lease", error.lease_id()}, {"error", error.error()}});
  if (error.lease_id().empty() || worker.leases.erase(error.lease_id()) == 0) return;
  farm_.hungry.insert(worker.id);
  farm_.dispatch_needed = true;
  ReleaseLease(error.lease_id(), MEASUREMENT_STATUS_UNSPECIFIED,
               "worker " + worker.id + " refused the lease: " + error.error());
}

void WorkerProtocol::ReleaseLease(const std::string& lease_id, MeasurementStatus status,
                                  const std::string& why) {
  auto it = farm_.leases.find(lease_id);
  if (it == farm_.leases.end()) return;
  const LeaseInfo lease = it->second;
  farm_.leases.erase(it);
  auto holder = farm_.workers.find(lease.worker_id);
  if (holder != farm_.workers.end()) holder->second.leases.erase(lease_id);
  CampaignRun* run = farm_.FindCampaign(lease.campaign);
  if (run == nullptr) return;
  const int64_t now = clock_.NowMs();
  std::optional<CandidateRecord> record =
      run->FailLease(lease.pipeline_id, lease.slot, lease_id, status, why, options_.retry, now);
  if (!record) return;
  if (metrics_ && record->state() != CANDIDATE_QUARANTINED) {
    metrics_->LeaseRequeued(status == WORKER_LOST ? "worker_lost" : "refused");
  }
  writes_.batch().PutCandidate(*record);
  writes_.CampaignChanged(run->id());
  writes_.AddEvent(now, record->state() == CANDIDATE_QUARANTINED ? "quarantined" : "lease_lost",
                   run->id(), lease.worker_id, lease_id, why);
  farm_.dispatch_needed = true;
  FinishIfDone(*run, now, writes_);
}

void WorkerProtocol::WorkerDead(WorkerEntry& worker, const std::string& why) {
  if (!worker.alive) return;
  worker.alive = false;
  farm_.worker_of_peer.erase(worker.peer);
  outbox_.Forget(worker.peer);
  worker.peer.clear();
  farm_.hungry.erase(worker.id);
  const std::vector<std::string> lost(worker.leases.begin(), worker.leases.end());
  for (const std::string& lease : lost) {
    ReleaseLease(lease, WORKER_LOST, "worker " + worker.id + " " + why);
  }
  writes_.AddEvent(clock_.NowMs(), worker.left ? "worker_left" : "worker_dead", "", worker.id, "",
                   why);
  LogEvent(worker.left ? "info" : "warn", worker.left ? "worker_left" : "worker_dead",
           {{"worker", worker.id}, {"why", why}, {"leases_requeued", std::to_string(lost.size())}});
}

void WorkerProtocol::PeerDropped(const std::string& peer, const std::string& why) {
  if (WorkerEntry* worker = WorkerOfPeer(peer)) WorkerDead(*worker, why);
}

void WorkerProtocol::Tick(int64_t caught_up_ms) {
  const int64_t now = clock_.NowMs();
  const int64_t elapsed = std::max<int64_t>(0, now - last_tick_ms_);
  last_tick_ms_ = now;
  for (auto& [id, run] : farm_.campaigns) {
    Campaign& campaign = run->campaign();
    if (campaign.state() != CAMPAIGN_RUNNING) continue;
    campaign.set_running_seconds(campaign.running_seconds() + elapsed / 1000.0);
    const double limit = run->config().budget().wall_time_seconds();
    if (limit > 0 && campaign.running_seconds() >= limit) {
      FinishCampaign(*run, CAMPAIGN_DONE, "wall time used", now, writes_);
    } else {
      FinishIfDone(*run, now, writes_);
    }
  }
  if (now < next_heartbeat_ms_) return;
  next_heartbeat_ms_ = now + options_.heartbeat_interval_ms;
  farm_.dispatch_needed = true;  // retries may have come due
  const int64_t silent_limit =
      static_cast<int64_t>(options_.heartbeat_interval_ms) * options_.liveness;
  const std::string heartbeat = EncodeEnvelope(MakeHeartbeat());
  for (auto& [id, worker] : farm_.workers) {
    if (!worker.alive) continue;
    if (caught_up_ms - worker.last_heard_ms > silent_limit) {
      WorkerDead(worker, "silent for " + std::to_string(now - worker.last_heard_ms) + " ms");
      continue;
    }
    outbox_.Send(worker.peer, heartbeat);
  }
  for (auto& [id, run] : farm_.campaigns) {
    if (run->campaign().state() == CAMPAIGN_RUNNING) writes_.CampaignChanged(id);
  }
}

void WorkerProtocol::Propose() {
  size_t credits = 0;
  for (const std::string& id : farm_.hungry) credits += farm_.workers[id].credits;
  for (const auto& [id, worker] : farm_.workers) {
    if (worker.alive) credits += worker.leases.size();
  }
  const size_t target = std::max(kMinReady, credits * kReadyPerCredit);
  const int64_t now = clock_.NowMs();
  for (auto& [id, run] : farm_.campaigns) {
    if (run->campaign().state() != CAMPAIGN_RUNNING) continue;
    // The vector widths of the live workers it accepts: a space each.
    std::set<int> widths;
    for (const auto& [worker_id, worker] : farm_.workers) {
      if (worker.alive && run->Accepts(worker.record.host())) {
        widths.insert(VectorBytesOfHalideTarget(worker.record.host().halide_target()));
      }
    }
    bool any = false;
    run->Propose(target, now, widths, [&](const CandidateRecord& record) {
      writes_.batch().PutCandidate(record);
      any = true;
    });
    if (!any) continue;
    writes_.CampaignChanged(id);
    farm_.dispatch_needed = true;
  }
}

void WorkerProtocol::Dispatch() {
  if (!farm_.dispatch_needed || farm_.hungry.empty() || farm_.campaign_order.empty()) return;
  farm_.dispatch_needed = false;
  const int64_t now = clock_.NowMs();
  const std::vector<std::string>& order = farm_.campaign_order;
  std::vector<std::string> fed;
  // A copy: a worker found dead while sending leaves hungry.
  const std::vector<std::string> hungry(farm_.hungry.begin(), farm_.hungry.end());
  for (const std::string& worker_id : hungry) {
    WorkerEntry& worker = farm_.workers[worker_id];
    bool out_of_work = !worker.alive;
    while (static_cast<int>(worker.leases.size()) < worker.credits && !out_of_work) {
      out_of_work = true;
      for (size_t k = 0; k < order.size(); ++k) {
        const std::string& campaign_id = order[(farm_.next_campaign + k) % order.size()];
        CampaignRun& run = *farm_.campaigns[campaign_id];
        if (run.campaign().state() != CAMPAIGN_RUNNING || run.waiting() == 0 ||
            !run.Accepts(worker.record.host())) {
          continue;
        }
        const std::string lease_id = lease_prefix_ + std::to_string(next_lease_++);
        const CandidateRecord* record = run.Lease(lease_id, now, worker.record.host());
        if (record == nullptr) continue;
        farm_.next_campaign = (farm_.next_campaign + k + 1) % order.size();
        std::string frame = EncodeLease(lease_id, record->candidate(),
                                        *run.pipeline(record->candidate().pipeline_id()),
                                        run.config().measurement());
        const std::string slot = store_keys::CandidateSlot(record->candidate().schedule_hash(),
                                                           record->candidate().repeat());
        farm_.leases[lease_id] =
            LeaseInfo{campaign_id, record->candidate().pipeline_id(), slot, worker_id, now};
        if (!outbox_.Send(worker.peer, std::move(frame))) {
          farm_.leases.erase(lease_id);
          run.Unlease(record->candidate().pipeline_id(), slot, lease_id);
          if (metrics_) metrics_->LeaseRequeued("unsent");
          // The worker is gone; its liveness settles it. Not fed again until heard from.
          farm_.hungry.erase(worker_id);
          break;
        }
        worker.leases.insert(lease_id);
        ++leases_sent_;
        if (metrics_) metrics_->LeaseSent();
        out_of_work = false;
        break;
      }
    }
    if (static_cast<int>(worker.leases.size()) >= worker.credits) fed.push_back(worker_id);
  }
  for (const std::string& id : fed) farm_.hungry.erase(id);
}

}  // namespace schedfarm
