// The coordinator's worker rules on simulated time: WorkerProtocol with a manual clock,
// an outbox that records what it would send, and a real store that commits each turn's
// writes. Every lease state transition (leased, recorded, lost to liveness, lost to a
// restart, refused, undeliverable, retried after its back-off, quarantined), duplicate
// and late results, re-registration with the same or a new instance, and the
// campaigns' wall time, each stepped in milliseconds that no test waits for.
#include "coordinator/worker_protocol.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "protocol/wire.h"
#include "storage/keys.h"
#include "storage/store.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

constexpr int kHeartbeatMs = 1000;
constexpr int kLiveness = 3;
constexpr int64_t kBackoffMs = 1000;

class ManualClock final : public Clock {
 public:
  int64_t NowMs() const override { return now_ms_; }
  void Advance(int64_t ms) { now_ms_ += ms; }

 private:
  int64_t now_ms_ = 1'700'000'000'000;
};

// Decodes what the protocol sends, by peer; peers in `unreachable` refuse every frame.
class RecordingOutbox final : public Outbox {
 public:
  bool Send(const std::string& peer, std::string frame) override {
    if (unreachable.count(peer)) return false;
    DecodedFrame decoded = DecodeEnvelope(frame);
    EXPECT_TRUE(decoded.ok()) << decoded.error;
    sent[peer].push_back(decoded.envelope);
    return true;
  }
  void Forget(const std::string& peer) override { forgotten.insert(peer); }

  // The envelopes of `kind` sent to `peer` since the last call, taken out.
  std::vector<Envelope> Take(const std::string& peer, Envelope::BodyCase kind) {
    std::vector<Envelope> taken;
    std::vector<Envelope>& all = sent[peer];
    for (auto it = all.begin(); it != all.end();) {
      if (it->body_case() == kind) {
        taken.push_back(*it);
        it = all.erase(it);
      } else {
        ++it;
      }
    }
    return taken;
  }

  std::map<std::string, std::vector<Envelope>> sent;
  std::set<std::string> unreachable;
  std::set<std::string> forgotten;
};

class WorkerProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StatusOr<std::unique_ptr<Store>> store = Store::Open(dir_.Sub("store"));
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    WorkerProtocolOptions options;
    options.heartbeat_interval_ms = kHeartbeatMs;
    options.liveness = kLiveness;
    options.retry.quarantine_after = 3;
    options.retry.backoff_ms = kBackoffMs;
    protocol_ = std::make_unique<WorkerProtocol>(farm_, writes_, outbox_, clock_, options);
  }

  // A running campaign proposing its own random schedules of one small block, within
  // `budget` benchmarks and `wall_time` (empty: no limit).
  CampaignRun& AddCampaign(int budget, const std::string& wall_time = "") {
    const std::string yaml =
        "name: rules\n"
        "pipelines:\n"
        "  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}\n"
        "budget: {benchmarks: " + std::to_string(budget) +
        (wall_time.empty() ? "" : ", wall_time: " + wall_time) + "}\n";
    StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, "rules.yaml");
    EXPECT_TRUE(config.ok()) << config.status().message();
    StatusOr<PipelineSpec> spec = BuildZooPipeline(config->pipelines(0).zoo());
    EXPECT_TRUE(spec.ok());
    Campaign campaign;
    campaign.set_id("rules-" + std::to_string(farm_.campaigns.size()));
    campaign.set_state(CAMPAIGN_RUNNING);
    campaign.set_budget(budget);
    StatusOr<std::unique_ptr<CampaignRun>> run = CampaignRun::Create(campaign, *config, {*spec});
    EXPECT_TRUE(run.ok()) << run.status().message();
    CampaignRun& added = **run;
    farm_.AddCampaign(std::move(*run));
    return added;
  }

  void Receive(const std::string& peer, const Envelope& envelope) {
    protocol_->HandleMessage(peer, envelope);
  }

  void Register(const std::string& peer, const std::string& worker_id, const std::string& instance,
                int credits) {
    Envelope envelope;
    schedfarm::Register* reg = envelope.mutable_register_();
    reg->mutable_host()->set_worker_id(worker_id);
    reg->mutable_host()->set_hostname("host-" + worker_id);
    reg->mutable_host()->set_cores(2);
    reg->set_instance(instance);
    reg->set_credits(credits);
    Receive(peer, envelope);
  }

  void Heartbeat(const std::string& peer) { Receive(peer, MakeHeartbeat()); }

  Envelope ResultOf(const Lease& lease, MeasurementStatus status, double median = 0.002) {
    Envelope envelope;
    Measurement* m = envelope.mutable_result()->mutable_measurement();
    m->set_lease_id(lease.lease_id());
    *m->mutable_candidate() = lease.candidate();
    m->set_status(status);
    m->mutable_stats()->set_median_seconds(median);
    return envelope;
  }

  // One turn of the loop as the coordinator runs it, with the turn's writes committed
  // and the replies they released collected in released_.
  void Turn(bool socket_drained = true) {
    protocol_->Tick(socket_drained);
    protocol_->Dispatch();
    protocol_->Propose();
    protocol_->Dispatch();
    Store::Batch batch;
    std::vector<DeferredReply> replies;
    if (!writes_.Take(farm_, &batch, &replies)) return;
    StatusOr<Store::Committed> committed = store_->Commit(batch);
    ASSERT_TRUE(committed.ok()) << committed.status().message();
    for (DeferredReply& reply : replies) released_.push_back(std::move(reply));
  }

  std::vector<Lease> Leases(const std::string& peer) {
    std::vector<Lease> leases;
    for (const Envelope& e : outbox_.Take(peer, Envelope::kLease)) leases.push_back(e.lease());
    return leases;
  }

  // The Acks released to `worker_id` since the last call, by lease id.
  std::vector<std::string> AcksTo(const std::string& worker_id) {
    std::vector<std::string> acks;
    for (auto it = released_.begin(); it != released_.end();) {
      if (it->to_worker && it->to == worker_id) {
        DecodedFrame decoded = DecodeEnvelope(it->frame);
        EXPECT_TRUE(decoded.ok() && decoded.envelope.has_ack());
        acks.push_back(decoded.envelope.ack().lease_id());
        it = released_.erase(it);
      } else {
        ++it;
      }
    }
    return acks;
  }

  // The record of a candidate not final yet (a lease is not written: a restart
  // requeues it).
  CandidateRecord Live(const CampaignRun& run, const Candidate& candidate) {
    const CandidateRecord* record = run.LiveRecord(
        candidate.pipeline_id(), store_keys::CandidateSlot(candidate.schedule_hash(), candidate.repeat()));
    EXPECT_NE(record, nullptr);
    return record == nullptr ? CandidateRecord() : *record;
  }

  // The candidate's stored record.
  CandidateRecord Stored(const CampaignRun& run, const Candidate& candidate) {
    StatusOr<std::optional<CandidateRecord>> record =
        store_->GetCandidate(run.id(), candidate.pipeline_id(), candidate.schedule_hash());
    EXPECT_TRUE(record.ok() && record->has_value());
    return record.ok() && record->has_value() ? **record : CandidateRecord();
  }

  std::vector<Measurement> StoredMeasurements(const CampaignRun& run) {
    std::vector<Measurement> all;
    EXPECT_TRUE(store_->ScanMeasurements(run.id(), 0, [&](const StoredMeasurement& m) {
                  all.push_back(m.measurement);
                  return true;
                }).ok());
    return all;
  }

  // The stored events of `kind`, oldest first.
  std::vector<Event> Events(const std::string& kind) {
    std::vector<Event> events;
    EXPECT_TRUE(store_->ScanEvents(0, [&](const Event& e) {
                  if (e.kind() == kind) events.push_back(e);
                  return true;
                }).ok());
    return events;
  }

  ScratchDir dir_;
  std::unique_ptr<Store> store_;
  ManualClock clock_;
  RecordingOutbox outbox_;
  FarmState farm_;
  PendingWrites writes_;
  std::unique_ptr<WorkerProtocol> protocol_;
  std::vector<DeferredReply> released_;
};

TEST_F(WorkerProtocolTest, LeasesAgainstCreditsAndAcknowledgesEachResultAfterItsWrite) {
  CampaignRun& run = AddCampaign(4);
  Register("peer-a", "a", "i1", 2);
  ASSERT_EQ(outbox_.Take("peer-a", Envelope::kWelcome).size(), 1u);
  Turn();
  std::vector<Lease> leases = Leases("peer-a");
  ASSERT_EQ(leases.size(), 2u) << "as many leases as credits";
  EXPECT_EQ(run.leased(), 2u);
  EXPECT_EQ(Live(run, leases[0].candidate()).state(), CANDIDATE_LEASED);

  Receive("peer-a", ResultOf(leases[0], OK));
  EXPECT_TRUE(AcksTo("a").empty()) << "no Ack before the write";
  Turn();
  EXPECT_EQ(AcksTo("a"), std::vector<std::string>{leases[0].lease_id()});
  EXPECT_EQ(Stored(run, leases[0].candidate()).state(), CANDIDATE_MEASURED);
  ASSERT_EQ(StoredMeasurements(run).size(), 1u);
  EXPECT_EQ(StoredMeasurements(run)[0].host().worker_id(), "a") << "the host is the worker's";
  ASSERT_EQ(Leases("peer-a").size(), 1u) << "the freed credit gets the next candidate";
  StatusOr<std::optional<WorkerRecord>> worker = store_->GetWorker("a");
  ASSERT_TRUE(worker.ok() && worker->has_value());
  EXPECT_EQ((*worker)->results_ok(), 1) << "counts are written with their results";
}

TEST_F(WorkerProtocolTest, ADuplicateResultIsAcknowledgedAndNotRecordedTwice) {
  CampaignRun& run = AddCampaign(2);
  Register("peer-a", "a", "i1", 1);
  Turn();
  const Lease lease = Leases("peer-a").at(0);
  Receive("peer-a", ResultOf(lease, OK));
  Turn();
  EXPECT_EQ(AcksTo("a").size(), 1u);
  // The worker did not get the Ack in time and sends the result again.
  Receive("peer-a", ResultOf(lease, OK));
  Turn();
  EXPECT_EQ(AcksTo("a"), std::vector<std::string>{lease.lease_id()}) << "acknowledged again";
  EXPECT_EQ(StoredMeasurements(run).size(), 1u);
  EXPECT_EQ(Events("duplicate_result").size(), 1u);
  EXPECT_EQ(run.campaign().counters().results(), 1);
}

TEST_F(WorkerProtocolTest, ASilentWorkerIsDeadAfterItsLivenessAndItsLeasesAreRequeued) {
  CampaignRun& run = AddCampaign(3);
  Register("peer-a", "a", "i1", 1);
  Turn();
  const Lease lease = Leases("peer-a").at(0);
  // Heard from within the limit: alive, at every heartbeat interval.
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(kHeartbeatMs);
    Heartbeat("peer-a");
    Turn();
  }
  EXPECT_TRUE(farm_.workers["a"].alive);
  EXPECT_GE(outbox_.Take("peer-a", Envelope::kHeartbeat).size(), 5u);
  // Silent for exactly the limit: still alive; one interval more: dead.
  clock_.Advance(kHeartbeatMs * kLiveness);
  Turn();
  EXPECT_TRUE(farm_.workers["a"].alive);
  clock_.Advance(kHeartbeatMs);
  Turn();
  EXPECT_FALSE(farm_.workers["a"].alive);
  EXPECT_EQ(outbox_.forgotten.count("peer-a"), 1u) << "frames queued for it are dropped";
  EXPECT_EQ(Events("worker_dead").size(), 1u);
  ASSERT_EQ(Events("lease_lost").size(), 1u);
  EXPECT_EQ(Events("lease_lost")[0].lease_id(), lease.lease_id());
  const CandidateRecord record = Stored(run, lease.candidate());
  EXPECT_EQ(record.state(), CANDIDATE_RETRY);
  EXPECT_EQ(record.failures(), 1);
  EXPECT_EQ(record.last_status(), WORKER_LOST);
  // Its messages are answered with a request to register again.
  Heartbeat("peer-a");
  EXPECT_EQ(outbox_.Take("peer-a", Envelope::kDisconnect).size(), 1u);
}

TEST_F(WorkerProtocolTest, NobodyIsDeclaredDeadWhileMessagesWaitInTheSocket) {
  AddCampaign(2);
  Register("peer-a", "a", "i1", 1);
  Turn();
  clock_.Advance(kHeartbeatMs * (kLiveness + 2));
  Turn(/*socket_drained=*/false);
  EXPECT_TRUE(farm_.workers["a"].alive) << "the silence may be the backlog's";
  clock_.Advance(kHeartbeatMs);
  Turn(/*socket_drained=*/true);
  EXPECT_FALSE(farm_.workers["a"].alive);
}

TEST_F(WorkerProtocolTest, ALostLeaseIsRetriedOnlyAfterItsBackoffAndQuarantinedAfterThree) {
  CampaignRun& run = AddCampaign(1);
  Candidate candidate;
  for (int attempt = 1; attempt <= 3; ++attempt) {
    const std::string instance = "i" + std::to_string(attempt);
    Register("peer-" + instance, "a", instance, 1);
    Turn();
    std::vector<Lease> leases = Leases("peer-" + instance);
    if (leases.empty()) {
      // Not before the back-off of the previous failure (1 s, then 2 s), and at the
      // first heartbeat tick after it.
      const int64_t backoff = kBackoffMs << (attempt - 2);
      clock_.Advance(backoff - 1);
      Turn();
      ASSERT_TRUE(Leases("peer-" + instance).empty()) << "attempt " << attempt << " came early";
      clock_.Advance(kHeartbeatMs);
      Turn();
      leases = Leases("peer-" + instance);
    }
    ASSERT_EQ(leases.size(), 1u) << "attempt " << attempt;
    candidate = leases[0].candidate();
    // The worker restarts: a Register with a new instance loses the old one's leases.
    Register("peer-x" + instance, "a", "restarted-" + instance, 0);
    Turn();
    EXPECT_EQ(Stored(run, candidate).failures(), attempt);
  }
  EXPECT_EQ(Stored(run, candidate).state(), CANDIDATE_QUARANTINED);
  EXPECT_EQ(Events("quarantined").size(), 1u);
  EXPECT_EQ(run.campaign().state(), CAMPAIGN_DONE) << "the only candidate is final";
}

TEST_F(WorkerProtocolTest, ReRegisteringWithTheSameInstanceKeepsItsLeases) {
  CampaignRun& run = AddCampaign(2);
  Register("peer-a", "a", "i1", 1);
  Turn();
  const Lease lease = Leases("peer-a").at(0);
  // The same process reconnects (a new socket after a network fault).
  Register("peer-b", "a", "i1", 1);
  Turn();
  EXPECT_TRUE(Events("lease_lost").empty());
  EXPECT_EQ(Live(run, lease.candidate()).state(), CANDIDATE_LEASED);
  EXPECT_TRUE(Leases("peer-b").empty()) << "its one credit still holds the lease";
  Receive("peer-b", ResultOf(lease, OK));
  Turn();
  EXPECT_EQ(AcksTo("a"), std::vector<std::string>{lease.lease_id()});
  EXPECT_EQ(Stored(run, lease.candidate()).state(), CANDIDATE_MEASURED);
  // The old connection is no longer the worker's.
  Heartbeat("peer-a");
  EXPECT_EQ(outbox_.Take("peer-a", Envelope::kDisconnect).size(), 1u);
}

TEST_F(WorkerProtocolTest, ALateResultOfALostLeaseIsRecordedAndTheSecondLeasesResultIsADuplicate) {
  CampaignRun& run = AddCampaign(1);
  Register("peer-a", "a", "i1", 1);
  Turn();
  const Lease first = Leases("peer-a").at(0);
  clock_.Advance(kHeartbeatMs * (kLiveness + 1));
  Turn();  // a is dead, its lease lost
  Register("peer-b", "b", "j1", 1);
  clock_.Advance(kBackoffMs);
  Turn();
  const Lease second = Leases("peer-b").at(0);
  EXPECT_EQ(second.candidate().schedule_hash(), first.candidate().schedule_hash());
  // a comes back with the same process and delivers the first lease's result.
  Register("peer-a2", "a", "i1", 1);
  Receive("peer-a2", ResultOf(first, OK, 0.003));
  Turn();
  EXPECT_EQ(AcksTo("a"), std::vector<std::string>{first.lease_id()});
  EXPECT_EQ(Stored(run, first.candidate()).state(), CANDIDATE_MEASURED);
  Receive("peer-b", ResultOf(second, OK, 0.004));
  Turn();
  EXPECT_EQ(AcksTo("b"), std::vector<std::string>{second.lease_id()});
  ASSERT_EQ(StoredMeasurements(run).size(), 1u) << "one result per candidate";
  EXPECT_DOUBLE_EQ(StoredMeasurements(run)[0].stats().median_seconds(), 0.003);
  EXPECT_EQ(Events("duplicate_result").size(), 1u);
}

TEST_F(WorkerProtocolTest, ARefusedLeaseCountsAnAttemptAndFreesTheCredit) {
  CampaignRun& run = AddCampaign(3);
  Register("peer-a", "a", "i1", 1);
  Turn();
  const Lease lease = Leases("peer-a").at(0);
  Receive("peer-a", MakeErrorReply("cannot build the pipeline", lease.lease_id()));
  Turn();
  EXPECT_EQ(Stored(run, lease.candidate()).state(), CANDIDATE_RETRY);
  EXPECT_EQ(Leases("peer-a").size(), 1u) << "the credit took another candidate";
}

TEST_F(WorkerProtocolTest, AnUndeliverableLeaseGoesBackToTheQueueWithoutAnAttempt) {
  CampaignRun& run = AddCampaign(2);
  outbox_.unreachable.insert("peer-a");
  Register("peer-a", "a", "i1", 1);
  Turn();
  EXPECT_EQ(run.leased(), 0u);
  EXPECT_TRUE(farm_.leases.empty());
  outbox_.unreachable.clear();
  farm_.dispatch_needed = true;
  Turn();
  const std::vector<Lease> leases = Leases("peer-a");
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(Stored(run, leases[0].candidate()).failures(), 0);
}

TEST_F(WorkerProtocolTest, ADrainedWorkerLeavesAndAWorkRequestRestoresCredits) {
  AddCampaign(4);
  Register("peer-a", "a", "i1", 1);
  Turn();
  ASSERT_EQ(Leases("peer-a").size(), 1u);
  Envelope more;
  more.mutable_work_request()->set_credits(3);
  Receive("peer-a", more);
  Turn();
  EXPECT_EQ(Leases("peer-a").size(), 2u);
  Receive("peer-a", MakeDisconnect("drained"));
  EXPECT_FALSE(farm_.workers["a"].alive);
  EXPECT_TRUE(farm_.workers["a"].left);
  Turn();
  EXPECT_EQ(Events("worker_left").size(), 1u);
  EXPECT_EQ(Events("lease_lost").size(), 3u);
}

TEST_F(WorkerProtocolTest, ACampaignEndsWhenItsWallTimeIsUsed) {
  CampaignRun& run = AddCampaign(100, "10s");
  Turn();
  clock_.Advance(9'000);
  Turn();
  EXPECT_EQ(run.campaign().state(), CAMPAIGN_RUNNING);
  clock_.Advance(1'000);
  Turn();
  EXPECT_EQ(run.campaign().state(), CAMPAIGN_DONE);
  ASSERT_EQ(Events("campaign_done").size(), 1u);
  EXPECT_EQ(Events("campaign_done")[0].text(), "wall time used");
  StatusOr<std::optional<Campaign>> stored = store_->GetCampaign(run.id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->state(), CAMPAIGN_DONE);
  EXPECT_DOUBLE_EQ((*stored)->running_seconds(), 10.0);
}

}  // namespace
}  // namespace schedfarm
