// The coordinator's worker rules on simulated time: WorkerProtocol with a manual clock,
// an outbox that records what it would send, and a real store that commits each turn's
// writes. Every lease state transition (leased, recorded, lost to liveness, lost to a
// restart, refused, undeliverable, retried after its back-off, quarantined), duplicate
// and late results, re-registration with the same or a new instance, and the
// campaigns' wall time, each stepped in milliseconds that no test waits for.
#include "coordinator/worker_protocol.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "coordinator/control_api.h"
#include "coordinator/host_audit.h"
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
    MakeProtocol(options);
  }

  void MakeProtocol(const WorkerProtocolOptions& options) {
    protocol_ = std::make_unique<WorkerProtocol>(farm_, writes_, outbox_, clock_, options);
  }

  // A running campaign proposing its own random schedules of one small block, within
  // `budget` benchmarks and `wall_time` (empty: no limit).
  // A budget of 0 benchmarks: the wall time alone bounds the campaign.
  CampaignRun& AddCampaign(int budget, const std::string& wall_time = "") {
    const std::string yaml =
        "name: rules\n"
        "pipelines:\n"
        "  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}\n"
        "budget: {" + (budget > 0 ? "benchmarks: " + std::to_string(budget) : "") +
        (wall_time.empty() ? "" : (budget > 0 ? ", " : "") + ("wall_time: " + wall_time)) + "}\n";
    StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, "rules.yaml");
    EXPECT_TRUE(config.ok()) << config.status().message();
    StatusOr<PipelineSpec> spec = BuildZooPipeline(config->pipelines(0).zoo());
    EXPECT_TRUE(spec.ok());
    Campaign campaign;
    campaign.set_id("rules-" + std::to_string(farm_.campaigns.size()));
    campaign.set_state(CAMPAIGN_RUNNING);
    campaign.set_budget(BenchmarkLimit(config->budget()));
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
                int credits, const std::string& cpu_model = "") {
    Envelope envelope;
    schedfarm::Register* reg = envelope.mutable_register_();
    reg->mutable_host()->set_worker_id(worker_id);
    reg->mutable_host()->set_hostname("host-" + worker_id);
    reg->mutable_host()->set_cores(2);
    reg->mutable_host()->set_cpu_model(cpu_model);
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
    m->mutable_stats()->set_min_seconds(median * 0.9);
    return envelope;
  }

  // One turn of the loop as the coordinator runs it, with the turn's writes committed
  // and the replies they released collected in released_.
  // `caught_up`: the loop read every peer's waiting messages in this turn.
  void Turn(bool caught_up = true) {
    if (caught_up) caught_up_ms_ = clock_.NowMs();
    protocol_->Tick(caught_up_ms_);
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

  // Runs turns until every campaign is finished, each worker of `peers` (peer -> worker
  // id) answering its leases at once with what `answer` says of (worker, lease); one
  // simulated second per turn, with a heartbeat from each. False after `max_turns`.
  using Answer = std::function<std::pair<MeasurementStatus, double>(const std::string&, const Lease&)>;
  bool RunToTheEnd(const std::map<std::string, std::string>& peers, const Answer& answer,
                   int max_turns = 500) {
    for (int turn = 0; turn < max_turns; ++turn) {
      Turn();
      bool running = false;
      for (const auto& [id, run] : farm_.campaigns) running |= Active(run->campaign().state());
      if (!running) return true;
      for (const auto& [peer, worker_id] : peers) {
        for (const Lease& lease : Leases(peer)) {
          const auto [status, median] = answer(worker_id, lease);
          Envelope result = ResultOf(lease, status, median);
          result.mutable_result()->mutable_measurement()->mutable_host()->set_worker_id(worker_id);
          Receive(peer, result);
        }
        Heartbeat(peer);
      }
      clock_.Advance(kHeartbeatMs);
    }
    return false;
  }

  WorkerRecord RecordOf(const std::string& worker_id) { return farm_.workers[worker_id].record; }

  ScratchDir dir_;
  std::unique_ptr<Store> store_;
  ManualClock clock_;
  RecordingOutbox outbox_;
  FarmState farm_;
  PendingWrites writes_;
  std::unique_ptr<WorkerProtocol> protocol_;
  std::vector<DeferredReply> released_;
  int64_t caught_up_ms_ = 0;
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

// A status asked in the turn that recorded a campaign's last result shows the campaign
// done before its write; its reply is released with that write, so a client that reads
// the export next finds the result.
TEST_F(WorkerProtocolTest, AStatusIsAnsweredOnlyOnceWhatItShowsIsDurable) {
  CampaignRun& run = AddCampaign(1);
  Register("peer-a", "a", "i1", 1);
  Turn();
  Receive("peer-a", ResultOf(Leases("peer-a").at(0), OK));
  ControlApi control(farm_, writes_, *store_, clock_);
  ClientRequest request;
  request.mutable_status()->set_campaign(run.id());
  bool deferred = false;
  Envelope reply;
  *reply.mutable_client_reply() = control.Handle(request, &deferred);
  ASSERT_EQ(reply.client_reply().status().campaigns_size(), 1);
  EXPECT_EQ(reply.client_reply().status().campaigns(0).campaign().state(), CAMPAIGN_DONE);
  EXPECT_TRUE(StoredMeasurements(run).empty()) << "the result is not written yet";
  EXPECT_TRUE(deferred) << "a status must wait for the write of what it shows";
  writes_.DeferToClient("client", reply);
  Turn();
  ASSERT_EQ(released_.size(), 2u) << "the worker's Ack and the client's status";
  EXPECT_EQ(released_[1].to, "client");
  EXPECT_EQ(StoredMeasurements(run).size(), 1u);
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
  Turn(/*caught_up=*/false);
  EXPECT_TRUE(farm_.workers["a"].alive) << "the silence may be the backlog's";
  clock_.Advance(kHeartbeatMs);
  Turn(/*caught_up=*/true);
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
  // Not offered another lease until it is heard from.
  farm_.dispatch_needed = true;
  Turn();
  EXPECT_TRUE(farm_.leases.empty());
  // It comes back on a new connection.
  Register("peer-a2", "a", "i1", 1);
  Turn();
  const std::vector<Lease> leases = Leases("peer-a2");
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
  EXPECT_EQ(StateOf(farm_.workers["a"]), WORKER_LEFT) << "left, not dead";
  Turn();
  EXPECT_EQ(Events("worker_left").size(), 1u);
  EXPECT_EQ(Events("lease_lost").size(), 3u);
}

// A campaign of a 10 s wall time: running at 9 s, done at 10 s for its wall time, and
// stored so. A budget of a wall time alone (no benchmarks) hands out leases and ends
// the same way, not at once for a budget of zero benchmarks.
TEST_F(WorkerProtocolTest, ACampaignEndsWhenItsWallTimeIsUsed) {
  for (const int benchmarks : {100, 0}) {
    CampaignRun& run = AddCampaign(benchmarks, "10s");
    EXPECT_EQ(run.campaign().budget(), benchmarks > 0 ? benchmarks : kMaxBenchmarks);
    const std::string peer = "peer-" + std::to_string(benchmarks);
    Register(peer, "w" + std::to_string(benchmarks), "i1", 2);
    Turn();
    EXPECT_EQ(Leases(peer).size(), 2u) << benchmarks;
    clock_.Advance(9'000);
    Turn();
    EXPECT_EQ(run.campaign().state(), CAMPAIGN_RUNNING) << benchmarks;
    clock_.Advance(1'000);
    Turn();
    EXPECT_EQ(run.campaign().state(), CAMPAIGN_DONE) << benchmarks;
    StatusOr<std::optional<Campaign>> stored = store_->GetCampaign(run.id());
    ASSERT_TRUE(stored.ok() && stored->has_value());
    EXPECT_EQ((*stored)->state(), CAMPAIGN_DONE);
    EXPECT_DOUBLE_EQ((*stored)->running_seconds(), 10.0);
  }
  const std::vector<Event> done = Events("campaign_done");
  ASSERT_EQ(done.size(), 2u);
  for (const Event& event : done) EXPECT_EQ(event.text(), "wall time used");
}

// --- Hosts that lie -------------------------------------------------------------

class HostAuditTest : public WorkerProtocolTest {
 protected:
  void SetUp() override {
    WorkerProtocolTest::SetUp();
    WorkerProtocolOptions options;
    options.heartbeat_interval_ms = kHeartbeatMs;
    options.liveness = kLiveness;
    options.audit.every = 1;
    options.audit.min_deviations = 2;
    MakeProtocol(options);
  }

  // An honest host's time of a schedule: the same on every host within +-5%, from
  // the schedule's hash and the host's name; 1 to 1.49 ms, so that a host reporting
  // half of it is always the fastest, whichever schedules it measured.
  static double HonestSeconds(const std::string& worker_id, const Lease& lease) {
    const size_t h = std::hash<std::string>()(lease.candidate().schedule_hash());
    const size_t w = std::hash<std::string>()(worker_id + lease.candidate().schedule_hash());
    return 0.001 * (1 + (h % 50) / 100.0) * (0.95 + 0.1 * (w % 101) / 100.0);
  }
};

TEST_F(HostAuditTest, AHostReportingHalfTheTimesIsFlaggedAndLeavesTheBest) {
  CampaignRun& run = AddCampaign(12);
  for (const char* id : {"a", "b", "liar"}) Register(std::string("peer-") + id, id, "i", 1, "cpu");
  ASSERT_TRUE(RunToTheEnd({{"peer-a", "a"}, {"peer-b", "b"}, {"peer-liar", "liar"}},
                          [](const std::string& worker, const Lease& lease) {
                            const double seconds = HonestSeconds(worker, lease);
                            return std::make_pair(OK, worker == "liar" ? seconds / 2 : seconds);
                          }));
  const WorkerRecord liar = RecordOf("liar");
  EXPECT_TRUE(liar.flagged()) << liar.ShortDebugString();
  EXPECT_GE(liar.audits_deviated(), 2);
  EXPECT_EQ(liar.audits_agreed(), 0);
  EXPECT_NEAR(AuditTimeRatio(liar), 0.5, 0.05);
  // About half: 0.45x to 0.55x, as the honest hosts' times differ by up to 5%.
  EXPECT_NE(liar.flag_reason().find("its times 0."), std::string::npos) << liar.flag_reason();
  for (const char* honest : {"a", "b"}) {
    const WorkerRecord record = RecordOf(honest);
    EXPECT_FALSE(record.flagged()) << honest << ": " << record.ShortDebugString();
    EXPECT_EQ(record.audits_deviated(), 0) << honest;
    EXPECT_GT(record.audits_agreed(), 0) << honest;
    EXPECT_NEAR(AuditTimeRatio(record), 1.0, 0.05) << honest;
  }
  EXPECT_GT(run.campaign().counters().audits(), 0);
  EXPECT_EQ(run.campaign().counters().finished(), 12) << "audits are beyond the budget";
  EXPECT_EQ(run.campaign().counters().proposed(), 12);
  ASSERT_EQ(Events("host_flagged").size(), 1u);
  EXPECT_EQ(Events("host_flagged")[0].worker_id(), "liar");
  StatusOr<std::optional<WorkerRecord>> stored = store_->GetWorker("liar");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_TRUE((*stored)->flagged()) << "the flag is durable";

  // The liar's halved times were the fastest; without them the best is an honest one.
  const std::vector<PipelineProgress> with_liar = run.Progress();
  const std::vector<PipelineProgress> trusted = run.Progress(farm_.FlaggedHosts());
  ASSERT_EQ(trusted.size(), 1u);
  EXPECT_LT(with_liar[0].best_seconds(), trusted[0].best_seconds());
  EXPECT_LT(trusted[0].measured(), with_liar[0].measured());
  std::vector<Measurement> honest_ok;
  for (const Measurement& m : StoredMeasurements(run)) {
    if (m.status() == OK && m.host().worker_id() != "liar") honest_ok.push_back(m);
  }
  double fastest_honest = 1e9;
  for (const Measurement& m : honest_ok) {
    fastest_honest = std::min(fastest_honest, m.stats().median_seconds());
  }
  EXPECT_GE(trusted[0].best_seconds(), fastest_honest * 0.999);
}

TEST_F(HostAuditTest, AnAuditGoesOnlyToAnotherHostOfTheSameCpuModel) {
  CampaignRun& run = AddCampaign(8);
  Register("peer-a", "a", "i", 1, "cpu");
  Register("peer-other", "other", "i", 1, "another cpu");
  Turn();
  // No other host of a's model: a's result is not audited.
  std::vector<Lease> leases = Leases("peer-a");
  ASSERT_EQ(leases.size(), 1u);
  Receive("peer-a", ResultOf(leases[0], OK));
  Turn();
  EXPECT_EQ(run.campaign().counters().audits(), 0);
  Register("peer-b", "b", "i", 1, "cpu");
  Turn();
  leases = Leases("peer-a");
  ASSERT_EQ(leases.size(), 1u);
  Receive("peer-a", ResultOf(leases[0], OK));
  Turn();
  EXPECT_EQ(run.campaign().counters().audits(), 1) << "b can audit it";
  for (int turn = 0; turn < 10; ++turn) {
    for (const Lease& lease : Leases("peer-other")) {
      EXPECT_FALSE(lease.candidate().has_audit()) << "another CPU model";
      Receive("peer-other", ResultOf(lease, OK));
    }
    for (const Lease& lease : Leases("peer-a")) {
      if (lease.candidate().has_audit()) {
        EXPECT_NE(lease.candidate().audit().results(0).worker_id(), "a") << "its own result";
      }
      Receive("peer-a", ResultOf(lease, OK));
    }
    for (const Lease& lease : Leases("peer-b")) {
      if (lease.candidate().has_audit() && lease.candidate().audit().results(0).worker_id() == "a") {
        EXPECT_GE(lease.candidate().repeat(), kAuditRepeatBase);
        EXPECT_EQ(lease.candidate().audit().cpu_model(), "cpu");
        return;
      }
      Receive("peer-b", ResultOf(lease, OK));
    }
    Turn();
  }
  ADD_FAILURE() << "b never got the audit of a's result";
}

TEST_F(HostAuditTest, TwoHostsThatDisagreeWithNoThirdAreInconclusive) {
  AddCampaign(4);
  Register("peer-a", "a", "i", 1, "cpu");
  Register("peer-liar", "liar", "i", 1, "cpu");
  ASSERT_TRUE(RunToTheEnd({{"peer-a", "a"}, {"peer-liar", "liar"}},
                          [](const std::string& worker, const Lease& lease) {
                            const double seconds = HonestSeconds(worker, lease);
                            return std::make_pair(OK, worker == "liar" ? seconds / 2 : seconds);
                          }));
  for (const char* id : {"a", "liar"}) {
    const WorkerRecord record = RecordOf(id);
    EXPECT_FALSE(record.flagged()) << id << ": two hosts cannot tell which one lies";
    EXPECT_GT(record.audits_inconclusive(), 0) << id;
    EXPECT_EQ(record.audits_deviated(), 0) << id;
  }
}

TEST_F(HostAuditTest, AHostThatPassesWrongOutputsIsOutvoted) {
  AddCampaign(30);
  for (const char* id : {"a", "b", "careless"}) Register(std::string("peer-") + id, id, "i", 1, "cpu");
  // Every schedule whose hash ends in an even digit computes wrong outputs; the
  // careless host does not check them.
  ASSERT_TRUE(RunToTheEnd({{"peer-a", "a"}, {"peer-b", "b"}, {"peer-careless", "careless"}},
                          [](const std::string& worker, const Lease& lease) {
                            const char last = lease.candidate().schedule_hash().back();
                            const bool wrong = (last - '0') % 2 == 0;
                            const double seconds = HonestSeconds(worker, lease);
                            if (wrong && worker != "careless") return std::make_pair(WRONG_ANSWER, 0.0);
                            return std::make_pair(OK, seconds);
                          }));
  const WorkerRecord careless = RecordOf("careless");
  const WorkerRecord a = RecordOf("a");
  EXPECT_GE(careless.audits_deviated_status(), 2) << careless.ShortDebugString();
  EXPECT_TRUE(careless.flagged()) << careless.ShortDebugString();
  EXPECT_NE(careless.flag_reason().find("by status"), std::string::npos) << careless.flag_reason();
  EXPECT_EQ(a.audits_deviated(), 0) << a.ShortDebugString();
  EXPECT_FALSE(a.flagged());
  EXPECT_EQ(RecordOf("b").audits_deviated(), 0);
  EXPECT_FALSE(RecordOf("b").flagged());
}

}  // namespace
}  // namespace schedfarm
