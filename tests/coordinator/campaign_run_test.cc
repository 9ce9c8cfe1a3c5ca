// CampaignRun, the coordinator's campaign in memory: proposals within the budget,
// leases, results recorded exactly once (late, repeated, or racing a second lease),
// retries with back-off, quarantine, final failures, and restoring after a restart;
// a network campaign's baselines on the network and on every task, and the progress
// its task table reads (the farm's own best, libtorch's layouts, FLOPs, weights).
#include "coordinator/campaign_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "dataset/dataset.h"
#include "network/tasks.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "scheduler/autoscheduler_names.h"
#include "scheduler/templates.h"
#include "storage/keys.h"
#include "storage/throughput.h"
#include "tests/network/test_networks.h"

namespace schedfarm {
namespace {

constexpr int64_t kNow = 1'000'000;

// The vector width of the hosts these tests lease to (a fingerprint without a Halide
// target).
const int kWidth = VectorBytesOfHalideTarget("");

// The records Propose adds, the campaign served by workers of kWidth.
std::vector<CandidateRecord> Propose(CampaignRun& run, size_t ready_target) {
  std::vector<CandidateRecord> added;
  run.Propose(ready_target, kNow, {kWidth}, [&](const CandidateRecord& r) { added.push_back(r); });
  return added;
}

// A run of the unit campaign; `campaign` is its stored record (a restart) or a new one.
std::unique_ptr<CampaignRun> MakeRun(int budget, const std::string& baselines = "",
                                     std::optional<Campaign> stored = std::nullopt) {
  const std::string yaml =
      "name: unit\n"
      "pipelines:\n"
      "  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}\n"
      "budget: {benchmarks: " +
      std::to_string(budget) + "}\n" + baselines +
      // The random stream's candidates only, unless a test asks for the template.
      (baselines.find("templates:") == std::string::npos ? "templates: false\n" : "");
  StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, "unit.yaml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  StatusOr<PipelineSpec> spec = BuildZooPipeline(config->pipelines(0).zoo());
  EXPECT_TRUE(spec.ok());
  Campaign campaign;
  campaign.set_id("unit-1");
  campaign.set_state(CAMPAIGN_RUNNING);
  StatusOr<std::unique_ptr<CampaignRun>> run =
      CampaignRun::Create(stored ? *stored : campaign, *config, {*spec});
  EXPECT_TRUE(run.ok()) << run.status().message();
  return std::move(*run);
}

Measurement ResultOf(const CandidateRecord& record, const std::string& lease,
                     MeasurementStatus status, double median = 0.001) {
  Measurement m;
  *m.mutable_candidate() = record.candidate();
  m.set_lease_id(lease);
  m.set_status(status);
  m.mutable_stats()->set_median_seconds(median);
  return m;
}

TEST(CampaignRunTest, ProposesDistinctCandidatesWithinTheBudget) {
  std::unique_ptr<CampaignRun> run = MakeRun(10, "baselines: [li2018]\n");
  std::vector<CandidateRecord> proposed = Propose(*run, 100);
  ASSERT_EQ(proposed.size(), 10u);
  EXPECT_EQ(proposed[0].candidate().origin(), "li2018");
  EXPECT_EQ(proposed[0].candidate().schedule().stages_size(), 0);
  std::set<std::string> hashes;
  for (const CandidateRecord& record : proposed) {
    EXPECT_EQ(record.state(), CANDIDATE_QUEUED);
    EXPECT_TRUE(hashes.insert(record.candidate().schedule_hash()).second);
  }
  EXPECT_TRUE(Propose(*run, 100).empty()) << "the budget is spoken for";
  EXPECT_EQ(run->waiting(), 10u);
  EXPECT_EQ(run->campaign().counters().proposed(), 10);
}

TEST(CampaignRunTest, TheTemplateIsProposedAfterTheBaselines) {
  std::unique_ptr<CampaignRun> run = MakeRun(10, "baselines: [li2018]\ntemplates: true\n");
  const std::vector<CandidateRecord> proposed = Propose(*run, 100);
  ASSERT_GE(proposed.size(), 2u);
  const Candidate& t = proposed[1].candidate();
  EXPECT_EQ(t.origin(), kTemplateOrigin);
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(run->pipelines()[0]);
  ASSERT_TRUE(graph.ok());
  const ScheduleSpace space(*graph);
  ASSERT_TRUE(space.Check(t.schedule()).ok()) << space.Check(t.schedule()).message();
  EXPECT_EQ(t.schedule_hash(), ScheduleHash(space, t.schedule()));
  bool packed = false;
  for (const StageSchedule& s : t.schedule().stages()) packed |= s.pack_weights();
  EXPECT_TRUE(packed) << "vgg_block's convolution reads its weights packed";
  for (size_t i = 2; i < proposed.size(); ++i) {
    EXPECT_EQ(proposed[i].candidate().origin(), "random");
  }

  std::unique_ptr<CampaignRun> without = MakeRun(10, "baselines: [li2018]\ntemplates: false\n");
  for (const CandidateRecord& r : Propose(*without, 100)) {
    EXPECT_NE(r.candidate().origin(), kTemplateOrigin);
  }
}

TEST(CampaignRunTest, ProposalsAreDeterministic) {
  std::unique_ptr<CampaignRun> a = MakeRun(5);
  std::unique_ptr<CampaignRun> b = MakeRun(5);
  std::vector<CandidateRecord> pa = Propose(*a, 5);
  std::vector<CandidateRecord> pb = Propose(*b, 5);
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_EQ(pa[i].candidate().schedule_hash(), pb[i].candidate().schedule_hash());
  }
}

// The random stream's position is part of the campaign's record: a run restored from it
// proposes what the uninterrupted run proposes next.
TEST(CampaignRunTest, ARestoredRunGoesOnWithTheSameRandomSchedules) {
  std::unique_ptr<CampaignRun> whole = MakeRun(6);
  const std::vector<CandidateRecord> all = Propose(*whole, 6);
  ASSERT_EQ(all.size(), 6u);
  std::unique_ptr<CampaignRun> before = MakeRun(6);
  const std::vector<CandidateRecord> first = Propose(*before, 3);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_EQ(before->campaign().widths_size(), 1);
  ASSERT_EQ(before->campaign().widths(0).random_positions_size(), 1);
  EXPECT_GE(before->campaign().widths(0).random_positions(0), 3u);
  std::unique_ptr<CampaignRun> after = MakeRun(6, "", before->campaign());
  for (const CandidateRecord& record : first) after->Restore(record);
  const std::vector<CandidateRecord> rest = Propose(*after, 6);
  ASSERT_EQ(rest.size(), 3u);
  for (size_t i = 0; i < rest.size(); ++i) {
    EXPECT_EQ(rest[i].candidate().schedule_hash(), all[3 + i].candidate().schedule_hash());
    EXPECT_EQ(rest[i].candidate().origin(), "random");
  }
}

TEST(CampaignRunTest, ResultIsRecordedOnceAndDuplicatesAreRecognized) {
  std::unique_ptr<CampaignRun> run = MakeRun(2);
  Propose(*run, 2);
  const CandidateRecord leased = *run->Lease("L1", kNow);
  EXPECT_EQ(run->leased(), 1u);
  CandidateRecord record;
  EXPECT_EQ(run->RecordResult(ResultOf(leased, "L1", OK), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  EXPECT_EQ(record.state(), CANDIDATE_MEASURED);
  EXPECT_EQ(run->RecordResult(ResultOf(leased, "L1", OK), {}, kNow, &record),
            CampaignRun::ResultOutcome::kDuplicate);
  EXPECT_EQ(run->leased(), 0u);
  EXPECT_EQ(run->campaign().counters().measured(), 1);
  EXPECT_EQ(run->campaign().counters().results(), 1);
  Measurement stranger = ResultOf(leased, "L9", OK);
  stranger.mutable_candidate()->set_schedule_hash("no-such-schedule");
  EXPECT_EQ(run->RecordResult(stranger, {}, kNow, &record), CampaignRun::ResultOutcome::kUnknown);
}

TEST(CampaignRunTest, LateResultOfALostLeaseWinsAndTheSecondLeaseIsADuplicate) {
  std::unique_ptr<CampaignRun> run = MakeRun(1);
  Propose(*run, 1);
  const CandidateRecord first = *run->Lease("L1", kNow);
  RetryPolicy policy;
  policy.backoff_ms = 0;
  std::optional<CandidateRecord> lost =
      run->FailLease(first.candidate().pipeline_id(), first.candidate().schedule_hash(), "L1",
                     WORKER_LOST, "worker died", policy, kNow);
  ASSERT_TRUE(lost.has_value());
  EXPECT_EQ(lost->state(), CANDIDATE_RETRY);
  EXPECT_EQ(lost->failures(), 1);
  const CandidateRecord* second = run->Lease("L2", kNow);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->candidate().schedule_hash(), first.candidate().schedule_hash());
  CandidateRecord record;
  // The stopped worker comes back with its result while L2 is out.
  EXPECT_EQ(run->RecordResult(ResultOf(first, "L1", OK), policy, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  EXPECT_EQ(record.state(), CANDIDATE_MEASURED);
  EXPECT_EQ(run->leased(), 0u);
  EXPECT_EQ(run->RecordResult(ResultOf(first, "L2", OK), policy, kNow, &record),
            CampaignRun::ResultOutcome::kDuplicate);
  EXPECT_NE(run->DoneReason(), nullptr);
}

TEST(CampaignRunTest, RetriesWithBackoffThenQuarantines) {
  std::unique_ptr<CampaignRun> run = MakeRun(1);
  Propose(*run, 1);
  RetryPolicy policy;
  policy.quarantine_after = 3;
  policy.backoff_ms = 1000;
  CandidateRecord record;
  const CandidateRecord first = *run->Lease("L1", kNow);
  run->RecordResult(ResultOf(first, "L1", CRASH), policy, kNow, &record);
  EXPECT_EQ(record.state(), CANDIDATE_RETRY);
  EXPECT_EQ(record.next_attempt_unix_ms(), kNow + 1000);
  EXPECT_EQ(run->Lease("L2", kNow + 999), nullptr) << "not before the back-off";
  ASSERT_NE(run->Lease("L2", kNow + 1000), nullptr);
  run->RecordResult(ResultOf(first, "L2", OUT_OF_MEMORY), policy, kNow + 1000, &record);
  EXPECT_EQ(record.next_attempt_unix_ms(), kNow + 1000 + 2000) << "the back-off doubles";
  ASSERT_NE(run->Lease("L3", kNow + 3000), nullptr);
  run->RecordResult(ResultOf(first, "L3", CRASH), policy, kNow + 3000, &record);
  EXPECT_EQ(record.state(), CANDIDATE_QUARANTINED);
  EXPECT_EQ(record.failures(), 3);
  EXPECT_EQ(run->campaign().counters().quarantined(), 1);
  EXPECT_NE(run->DoneReason(), nullptr);
  EXPECT_EQ(run->failures_by_status().at("CRASH"), 2);
}

TEST(CampaignRunTest, DeterministicFailureIsFinalAtOnce) {
  std::unique_ptr<CampaignRun> run = MakeRun(2);
  Propose(*run, 2);
  CandidateRecord record;
  const CandidateRecord first = *run->Lease("L1", kNow);
  run->RecordResult(ResultOf(first, "L1", WRONG_ANSWER), {}, kNow, &record);
  EXPECT_EQ(record.state(), CANDIDATE_FAILED);
  EXPECT_EQ(run->campaign().counters().failed(), 1);
  EXPECT_EQ(run->campaign().counters().finished(), 1);
  EXPECT_EQ(run->DoneReason(), nullptr);
}

// A run timeout during which the candidate had the CPU is final at once; one that was
// starved of it is tried again.
TEST(CampaignRunTest, ConclusiveRunTimeoutIsFinalAtOnce) {
  std::unique_ptr<CampaignRun> run = MakeRun(2);
  Propose(*run, 2);
  CandidateRecord record;
  const CandidateRecord first = *run->Lease("L1", kNow);
  const CandidateRecord second = *run->Lease("L2", kNow);
  Measurement conclusive = ResultOf(first, "L1", RUN_TIMEOUT);
  conclusive.set_conclusive(true);
  run->RecordResult(conclusive, {}, kNow, &record);
  EXPECT_EQ(record.state(), CANDIDATE_FAILED);
  EXPECT_EQ(record.failures(), 1);
  run->RecordResult(ResultOf(second, "L2", RUN_TIMEOUT), {}, kNow, &record);
  EXPECT_EQ(record.state(), CANDIDATE_RETRY);
  EXPECT_EQ(run->campaign().counters().failed(), 1);
  EXPECT_EQ(run->campaign().counters().finished(), 1);
}

TEST(CampaignRunTest, UndeliveredLeaseGoesBackToTheFront) {
  std::unique_ptr<CampaignRun> run = MakeRun(3);
  Propose(*run, 3);
  const CandidateRecord first = *run->Lease("L1", kNow);
  run->Unlease(first.candidate().pipeline_id(), first.candidate().schedule_hash(), "L1");
  EXPECT_EQ(run->waiting(), 3u);
  const CandidateRecord* again = run->Lease("L2", kNow);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->candidate().schedule_hash(), first.candidate().schedule_hash());
  EXPECT_EQ(again->attempts(), 1);
}

// A candidate marked `ahead` (a network's assembly) is leased before those queued
// earlier, and so is one restored after a restart; the others keep their order.
TEST(CampaignRunTest, ACandidateAheadIsLeasedBeforeThoseQueuedEarlier) {
  std::unique_ptr<CampaignRun> run =
      MakeRun(5, "baselines: [li2018, mullapudi2016]\nstrategy: {name: model-guided}\n");
  ASSERT_EQ(Propose(*run, 100).size(), 2u) << "the baselines";
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(run->pipelines()[0]);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  const ScheduleSpace space(*graph);
  std::vector<CandidateRecord> added;
  auto keep = [&](const CandidateRecord& r) { added.push_back(r); };
  std::string why;
  Candidate candidate;
  candidate.set_pipeline_id(space.pipeline_id());
  candidate.set_origin("model-guided");
  *candidate.mutable_schedule() = space.RandomSchedule(1);
  ASSERT_EQ(run->AddProposal(candidate, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  *candidate.mutable_schedule() = space.RandomSchedule(2);
  candidate.set_ahead(true);
  ASSERT_EQ(run->AddProposal(candidate, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  const std::string ahead = added.back().candidate().schedule_hash();
  std::vector<std::string> order;
  while (const CandidateRecord* leased = run->Lease("L" + std::to_string(order.size()), kNow)) {
    order.push_back(leased->candidate().origin() + (leased->candidate().ahead() ? " ahead" : ""));
  }
  EXPECT_EQ(order, (std::vector<std::string>{"model-guided ahead", "li2018", "mullapudi2016",
                                             "model-guided"}));

  std::unique_ptr<CampaignRun> restored = MakeRun(5);
  for (const CandidateRecord& record : added) restored->Restore(record);
  const CandidateRecord* first = restored->Lease("R1", kNow);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->candidate().schedule_hash(), ahead);
}

TEST(CampaignRunTest, RestoreRequeuesLeasedAndRemembersFinal) {
  std::unique_ptr<CampaignRun> before = MakeRun(3);
  std::vector<CandidateRecord> proposed = Propose(*before, 3);
  const CandidateRecord leased = *before->Lease("L1", kNow);
  CandidateRecord measured;
  before->RecordResult(ResultOf(leased, "L1", OK, 0.002), {}, kNow, &measured);
  const CandidateRecord in_flight = *before->Lease("L2", kNow);

  Campaign campaign = before->campaign();
  std::unique_ptr<CampaignRun> after = MakeRun(3);
  after->campaign() = campaign;
  for (CandidateRecord record : proposed) {
    if (record.candidate().schedule_hash() == measured.candidate().schedule_hash())
      record = measured;
    if (record.candidate().schedule_hash() == in_flight.candidate().schedule_hash()) {
      record = in_flight;
    }
    after->Restore(record);
  }
  after->RestoreMeasurement(ResultOf(leased, "L1", OK, 0.002));
  EXPECT_EQ(after->waiting(), 2u) << "the leased candidate is queued again";
  EXPECT_EQ(after->leased(), 0u);
  CandidateRecord record;
  EXPECT_EQ(after->RecordResult(ResultOf(leased, "L1", OK), {}, kNow, &record),
            CampaignRun::ResultOutcome::kDuplicate);
  EXPECT_TRUE(Propose(*after, 10).empty()) << "nothing beyond the budget";
  ASSERT_EQ(after->Progress().size(), 1u);
  EXPECT_DOUBLE_EQ(after->Progress()[0].best_seconds(), 0.002);
  // The lease that was in flight at the restart still delivers its result.
  EXPECT_EQ(after->RecordResult(ResultOf(in_flight, "L2", OK), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
}

TEST(CampaignRunTest, LearnerStrategyProposesOnlyBaselinesAndTakesCheckedProposals) {
  std::unique_ptr<CampaignRun> run =
      MakeRun(3, "baselines: [li2018]\nstrategy: {name: model-guided}\n");
  EXPECT_FALSE(run->ProposesItself());
  std::vector<CandidateRecord> own = Propose(*run, 100);
  ASSERT_EQ(own.size(), 1u) << "the baseline only";
  EXPECT_EQ(own[0].candidate().origin(), "li2018");

  const PipelineSpec& spec = run->pipelines()[0];
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  ASSERT_TRUE(graph.ok());
  ScheduleSpace space(*graph);
  Candidate candidate;
  candidate.set_pipeline_id(space.pipeline_id());
  *candidate.mutable_schedule() = space.RandomSchedule(5);
  candidate.set_schedule_hash("made-up");
  candidate.set_origin("model-guided");
  std::vector<CandidateRecord> added;
  auto keep = [&](const CandidateRecord& r) { added.push_back(r); };
  std::string why;
  EXPECT_EQ(run->AddProposal(candidate, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].candidate().schedule_hash(), ScheduleHash(space, candidate.schedule()))
      << "the hash is the coordinator's";
  EXPECT_EQ(added[0].candidate().campaign(), run->id());
  EXPECT_EQ(run->AddProposal(candidate, kNow, keep, &why),
            CampaignRun::ProposalOutcome::kDuplicate);

  Candidate illegal = candidate;
  illegal.mutable_schedule()->mutable_stages(0)->set_compute(INLINE);  // an output inlined
  EXPECT_EQ(run->AddProposal(illegal, kNow, keep, &why), CampaignRun::ProposalOutcome::kRefused);
  EXPECT_FALSE(why.empty());
  Candidate stranger = candidate;
  stranger.set_pipeline_id("0123");
  EXPECT_EQ(run->AddProposal(stranger, kNow, keep, &why), CampaignRun::ProposalOutcome::kRefused);
  EXPECT_NE(why.find("not one of the campaign's"), std::string::npos) << why;

  *candidate.mutable_schedule() = space.RandomSchedule(6);
  EXPECT_EQ(run->AddProposal(candidate, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  *candidate.mutable_schedule() = space.RandomSchedule(7);
  EXPECT_EQ(run->AddProposal(candidate, kNow, keep, &why),
            CampaignRun::ProposalOutcome::kOverBudget)
      << "1 baseline + 2 proposals fill the budget of 3";
}

// A re-measurement is a candidate of its own (the schedule's repeat N), accepted once
// measurement N-1 is final; the pipeline's best is the geometric mean of a schedule's
// medians.
TEST(CampaignRunTest, ReMeasurementsAreCandidatesOfTheirOwnAndPoolIntoTheBest) {
  std::unique_ptr<CampaignRun> run = MakeRun(5, "strategy: {name: model-guided}\n");
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(run->pipelines()[0]);
  ASSERT_TRUE(graph.ok());
  ScheduleSpace space(*graph);
  std::vector<CandidateRecord> added;
  auto keep = [&](const CandidateRecord& r) { added.push_back(r); };
  std::string why;
  Candidate first;
  first.set_pipeline_id(space.pipeline_id());
  *first.mutable_schedule() = space.RandomSchedule(5);
  Candidate second = first;
  *second.mutable_schedule() = space.RandomSchedule(6);
  Candidate again = first;
  again.set_repeat(1);
  EXPECT_EQ(run->AddProposal(again, kNow, keep, &why), CampaignRun::ProposalOutcome::kRefused);
  EXPECT_NE(why.find("measurement 0 is not final"), std::string::npos) << why;
  ASSERT_EQ(run->AddProposal(first, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  ASSERT_EQ(run->AddProposal(second, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  CandidateRecord record;
  const CandidateRecord leased_first = *run->Lease("L1", kNow);
  const CandidateRecord leased_second = *run->Lease("L2", kNow);
  ASSERT_EQ(run->RecordResult(ResultOf(leased_first, "L1", OK, 1.00e-3), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  ASSERT_EQ(run->RecordResult(ResultOf(leased_second, "L2", OK, 1.02e-3), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  EXPECT_EQ(run->Progress()[0].best_schedule_hash(), leased_first.candidate().schedule_hash());

  // Repeat 1 of the first schedule: accepted, leased and measured like any candidate.
  again.set_origin("remeasure");
  ASSERT_EQ(run->AddProposal(again, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded) << why;
  EXPECT_EQ(run->AddProposal(again, kNow, keep, &why), CampaignRun::ProposalOutcome::kDuplicate);
  Candidate skipped = first;
  skipped.set_repeat(3);
  EXPECT_EQ(run->AddProposal(skipped, kNow, keep, &why), CampaignRun::ProposalOutcome::kRefused);
  Candidate negative = first;
  negative.set_repeat(-1);
  EXPECT_EQ(run->AddProposal(negative, kNow, keep, &why), CampaignRun::ProposalOutcome::kRefused);
  const CandidateRecord leased_again = *run->Lease("L3", kNow);
  EXPECT_EQ(leased_again.candidate().repeat(), 1);
  EXPECT_EQ(leased_again.candidate().schedule_hash(), leased_first.candidate().schedule_hash());
  ASSERT_EQ(run->RecordResult(ResultOf(leased_again, "L3", OK, 1.10e-3), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  EXPECT_EQ(run->RecordResult(ResultOf(leased_first, "L1", OK, 1.00e-3), {}, kNow, &record),
            CampaignRun::ResultOutcome::kDuplicate)
      << "the first measurement is still final on its own";
  EXPECT_TRUE(run->Finished(
      space.pipeline_id(), store_keys::CandidateSlot(leased_first.candidate().schedule_hash(), 1)));
  // The first schedule now stands for sqrt(1.00 x 1.10) = 1.049 ms: the second is best.
  PipelineProgress progress = run->Progress()[0];
  EXPECT_EQ(progress.best_schedule_hash(), leased_second.candidate().schedule_hash());
  EXPECT_NEAR(progress.best_seconds(), 1.02e-3, 1e-15);
  // Repeat 1 of the second, faster: it stays the best, with its own origin.
  Candidate second_again = leased_second.candidate();
  second_again.set_repeat(1);
  second_again.set_origin("remeasure");
  ASSERT_EQ(run->AddProposal(second_again, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  const CandidateRecord leased_second_again = *run->Lease("L4", kNow);
  ASSERT_EQ(run->RecordResult(ResultOf(leased_second_again, "L4", OK, 0.98e-3), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  progress = run->Progress()[0];
  EXPECT_EQ(progress.best_schedule_hash(), leased_second.candidate().schedule_hash());
  EXPECT_NEAR(progress.best_seconds(), std::sqrt(1.02e-3 * 0.98e-3), 1e-15);
  EXPECT_EQ(progress.best_origin(), leased_second.candidate().origin());
  EXPECT_EQ(progress.measured(), 4);
  EXPECT_EQ(run->campaign().counters().measured(), 4);
}

// The status's best carries its pipeline's FLOPs and bytes, and the fp32 peak and memory
// bandwidth, at the campaign's thread count, of the hosts that measured it (the geometric
// mean when several did, as for its runtime); a host without a peak at that count leaves
// the best without one.
TEST(CampaignRunTest, TheBestCarriesItsPipelinesFlopsAndItsHostsPeak) {
  std::unique_ptr<CampaignRun> run =
      MakeRun(5, "strategy: {name: model-guided}\nmeasurement: {threads: 2}\n");
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(run->pipelines()[0]);
  ASSERT_TRUE(graph.ok());
  const double flops = graph->total_cost().flops;
  ASSERT_GT(flops, 0);
  ScheduleSpace space(*graph);
  auto keep = [](const CandidateRecord&) {};
  std::string why;
  Candidate first;
  first.set_pipeline_id(space.pipeline_id());
  *first.mutable_schedule() = space.RandomSchedule(5);
  Candidate second = first;
  *second.mutable_schedule() = space.RandomSchedule(6);
  ASSERT_EQ(run->AddProposal(first, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  ASSERT_EQ(run->AddProposal(second, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  const CandidateRecord leased_first = *run->Lease("L1", kNow);
  const CandidateRecord leased_second = *run->Lease("L2", kNow);
  // A result of a host with these peaks (and a tenth of each as its memory bandwidth in
  // GB/s), measured at the campaign's 2 threads.
  auto on_host = [](Measurement m, const std::string& worker, const std::map<int, double>& peaks) {
    m.mutable_host()->set_worker_id(worker);
    for (const auto& [threads, gflops] : peaks) {
      (*m.mutable_host()->mutable_peak_gflops())[threads] = gflops;
      (*m.mutable_host()->mutable_bandwidth_gbps())[threads] = gflops / 10;
    }
    m.mutable_settings()->set_threads(2);
    return m;
  };
  CandidateRecord record;
  ASSERT_EQ(run->RecordResult(
                on_host(ResultOf(leased_first, "L1", OK, 1.0e-3), "a", {{1, 100}, {2, 190}}), {},
                kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  PipelineProgress progress = run->Progress()[0];
  EXPECT_EQ(progress.flops(), flops);
  EXPECT_EQ(progress.best_peak_gflops(), 190) << "the peak at 2 threads, not at 1";
  EXPECT_EQ(progress.farm_best_peak_gflops(), 190) << "the best is the farm's";
  Throughput best = FarmBestThroughput(progress);
  ASSERT_TRUE(best.gflops && best.peak_share);
  EXPECT_NEAR(*best.gflops, flops / 1.0e-3 / 1e9, 1e-9 * *best.gflops);
  EXPECT_NEAR(*best.peak_share, *best.gflops / 190, 1e-12);
  EXPECT_EQ(progress.bytes(), graph->compulsory_bytes());
  EXPECT_GT(progress.bytes(), 0);
  EXPECT_DOUBLE_EQ(progress.best_bandwidth_gbps(), 19);
  EXPECT_DOUBLE_EQ(progress.farm_best_bandwidth_gbps(), 19);
  ASSERT_TRUE(best.gbps && best.bandwidth_share);
  EXPECT_NEAR(*best.gbps, progress.bytes() / 1.0e-3 / 1e9, 1e-9 * *best.gbps);
  EXPECT_NEAR(*best.bandwidth_share, *best.gbps / 19, 1e-12);

  // A faster schedule from a host that measured its peak on 1 thread only: the best
  // has GFLOP/s, and no share.
  ASSERT_EQ(run->RecordResult(on_host(ResultOf(leased_second, "L2", OK, 0.9e-3), "b", {{1, 90}}),
                              {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  progress = run->Progress()[0];
  EXPECT_EQ(progress.best_schedule_hash(), leased_second.candidate().schedule_hash());
  EXPECT_EQ(progress.best_peak_gflops(), 0);
  EXPECT_EQ(progress.farm_best_peak_gflops(), 0);
  best = FarmBestThroughput(progress);
  ASSERT_TRUE(best.gflops);
  EXPECT_NEAR(*best.gflops, flops / 0.9e-3 / 1e9, 1e-9 * *best.gflops);
  EXPECT_FALSE(best.peak_share);
  EXPECT_FALSE(best.peak_gflops);
  EXPECT_FALSE(best.bandwidth_share);

  // The first schedule measured again on a third host, faster: it is the best again, at
  // the geometric mean of its runtimes and of its two hosts' peaks.
  Candidate again = leased_first.candidate();
  again.set_repeat(1);
  again.set_origin("remeasure");
  ASSERT_EQ(run->AddProposal(again, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded) << why;
  const CandidateRecord leased_again = *run->Lease("L3", kNow);
  ASSERT_EQ(run->RecordResult(on_host(ResultOf(leased_again, "L3", OK, 0.5e-3), "c", {{2, 160}}),
                              {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  progress = run->Progress()[0];
  EXPECT_EQ(progress.best_schedule_hash(), leased_first.candidate().schedule_hash());
  EXPECT_NEAR(progress.best_seconds(), std::sqrt(1.0e-3 * 0.5e-3), 1e-15);
  EXPECT_NEAR(progress.best_peak_gflops(), std::sqrt(190.0 * 160.0), 1e-9);
  EXPECT_NEAR(progress.farm_best_peak_gflops(), std::sqrt(190.0 * 160.0), 1e-9);
  EXPECT_NEAR(progress.farm_best_bandwidth_gbps(), std::sqrt(19.0 * 16.0), 1e-9);
  // Without host c's results the first schedule is back at 1 ms, the second is best, and
  // the best has no peak.
  const PipelineProgress trusted = run->Progress({"c"})[0];
  EXPECT_EQ(trusted.best_schedule_hash(), leased_second.candidate().schedule_hash());
  EXPECT_EQ(trusted.best_peak_gflops(), 0);
  EXPECT_EQ(trusted.flops(), flops);
}

// A network campaign of TinyResNet (tests/network/test_networks.h): the network, its
// assembly and its distinct tasks, as farmctl submits them. CampaignRun takes the
// submitted pipelines as they are (the control API checks them against the config).
std::unique_ptr<CampaignRun> MakeNetworkRun(int budget, const std::string& baselines,
                                            NetworkPartition* partition) {
  const std::string yaml =
      "name: net\n"
      "network: {zoo: {block: resnet18_basic}}\n"
      "strategy: {name: random}\n"
      "budget: {benchmarks: " +
      std::to_string(budget) + "}\n" + baselines + "templates: false\nfusion: none\n";
  StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, "net.yaml");
  EXPECT_TRUE(config.ok()) << config.status().message();
  StatusOr<PipelineSpec> network = test_networks::TinyResNet();
  EXPECT_TRUE(network.ok());
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*network);
  EXPECT_TRUE(graph.ok());
  StatusOr<NetworkPartition> split = PartitionNetwork(*graph, config->fusion());
  EXPECT_TRUE(split.ok()) << split.status().message();
  *partition = *split;
  Campaign campaign;
  campaign.set_id("net-1");
  campaign.set_state(CAMPAIGN_RUNNING);
  StatusOr<std::unique_ptr<CampaignRun>> run =
      CampaignRun::Create(campaign, *config, NetworkCampaignPipelines(*network, *partition));
  EXPECT_TRUE(run.ok()) << run.status().message();
  return std::move(*run);
}

// The network gets every baseline and its reference schedule, the reference last (the
// slowest to measure); each distinct task gets libtorch and the cheap autoschedulers, not
// Adams2019; the assembly gets none.
TEST(CampaignRunTest, ANetworkCampaignRunsTheCheapBaselinesOnEveryTask) {
  NetworkPartition partition;
  std::unique_ptr<CampaignRun> run =
      MakeNetworkRun(100, "baselines: [adams2019, li2018, libtorch]\n", &partition);
  ASSERT_EQ(partition.distinct.size(), 6u);
  const std::vector<CandidateRecord> added = Propose(*run, 1000);
  const std::vector<PipelineProgress> progress = run->Progress();
  ASSERT_EQ(progress.size(), 8u);
  std::map<std::string, std::vector<std::string>> origins;  // pipeline id -> origins
  for (const CandidateRecord& r : added) {
    origins[r.candidate().pipeline_id()].push_back(r.candidate().origin());
  }
  EXPECT_EQ(origins[progress[0].pipeline_id()],
            (std::vector<std::string>{"adams2019", "li2018", "libtorch", "reference"}));
  ASSERT_FALSE(added.empty());
  EXPECT_EQ(added.back().candidate().origin(), "reference") << "after every task's baselines";
  EXPECT_EQ(origins.count(progress[1].pipeline_id()), 0u) << "the assembly is the learner's";
  for (size_t d = 0; d < partition.distinct.size(); ++d) {
    EXPECT_EQ(origins[partition.distinct[d].pipeline_id],
              (std::vector<std::string>{"li2018", "libtorch"}))
        << "task " << d;
  }
  EXPECT_EQ(added.size(), 4 + 2 * partition.distinct.size());
  EXPECT_TRUE(RunsOnEveryTask("libtorch"));
  EXPECT_TRUE(RunsOnEveryTask("mullapudi2016"));
  EXPECT_FALSE(RunsOnEveryTask("adams2019"));

  // Each task's weight, FLOPs and kind, for the task table; the network's FLOPs are its
  // tasks'.
  double task_flops = 0;
  for (size_t d = 0; d < partition.distinct.size(); ++d) {
    const PipelineProgress& p = progress[2 + d];
    EXPECT_EQ(p.pipeline_id(), partition.distinct[d].pipeline_id);
    EXPECT_EQ(p.task_weight(), partition.distinct[d].weight());
    EXPECT_GT(p.flops(), 0);
    StatusOr<PipelineGraph> task = PipelineGraph::Build(partition.distinct[d].spec);
    ASSERT_TRUE(task.ok());
    EXPECT_EQ(p.kind(), TaskKind(*task)) << "task " << d;
    EXPECT_FALSE(p.kind().empty());
    task_flops += p.task_weight() * p.flops();
  }
  EXPECT_EQ(progress[0].task_weight(), 0);
  EXPECT_EQ(progress[0].kind(), "") << "the network is no task";
  EXPECT_NEAR(task_flops, progress[0].flops(), 1e-6 * progress[0].flops());
  int weight_two = 0;
  for (const PipelineProgress& p : progress) weight_two += p.task_weight() == 2;
  EXPECT_EQ(weight_two, 2) << "TinyResNet's two blocks repeat two tasks";
}

TEST(CampaignRunTest, TaskBaselinesStopAtTheBudget) {
  NetworkPartition partition;
  std::unique_ptr<CampaignRun> run =
      MakeNetworkRun(5, "baselines: [li2018, libtorch]\n", &partition);
  const std::vector<CandidateRecord> added = Propose(*run, 1000);
  ASSERT_EQ(added.size(), 5u);
  EXPECT_EQ(added[3].candidate().pipeline_id(), partition.distinct[0].pipeline_id)
      << "the network's three first, then the first task's";
}

// The best of a pipeline counts every origin; the farm's best only the farm's
// schedules. libtorch's measurement keeps the best of each layout it ran in.
TEST(CampaignRunTest, TheFarmsBestLeavesTheBaselinesOutAndLibtorchKeepsEachLayout) {
  std::unique_ptr<CampaignRun> run =
      MakeRun(10, "baselines: [libtorch]\nstrategy: {name: model-guided}\n");
  ASSERT_EQ(Propose(*run, 100).size(), 1u);
  CandidateRecord record;
  const CandidateRecord libtorch = *run->Lease("L0", kNow);
  ASSERT_EQ(libtorch.candidate().origin(), kLibtorchBaseline);
  Measurement m = ResultOf(libtorch, "L0", OK, 1.0e-3);
  m.set_torch_layout("channels_last");
  TorchLayoutRun* nchw = m.add_torch_layouts();
  nchw->set_layout("nchw");
  nchw->set_status(OK);
  nchw->mutable_stats()->set_median_seconds(2.0e-3);
  TorchLayoutRun* cl = m.add_torch_layouts();
  cl->set_layout("channels_last");
  cl->set_status(OK);
  cl->mutable_stats()->set_median_seconds(1.0e-3);
  ASSERT_EQ(run->RecordResult(m, {}, kNow, &record), CampaignRun::ResultOutcome::kRecorded);
  PipelineProgress progress = run->Progress()[0];
  EXPECT_EQ(progress.baseline_seconds().at(kLibtorchBaseline), 1.0e-3);
  EXPECT_EQ(progress.libtorch_layout_seconds().at("nchw"), 2.0e-3);
  EXPECT_EQ(progress.libtorch_layout_seconds().at("channels_last"), 1.0e-3);
  EXPECT_EQ(progress.farm_best_seconds(), 0) << "no schedule of the farm yet";
  EXPECT_GT(progress.flops(), 0);

  StatusOr<PipelineGraph> graph = PipelineGraph::Build(run->pipelines()[0]);
  ASSERT_TRUE(graph.ok());
  ScheduleSpace space(*graph);
  std::vector<CandidateRecord> added;
  auto keep = [&](const CandidateRecord& r) { added.push_back(r); };
  std::string why;
  Candidate first;
  first.set_pipeline_id(space.pipeline_id());
  first.set_origin("model-guided");
  *first.mutable_schedule() = space.RandomSchedule(5);
  Candidate second = first;
  *second.mutable_schedule() = space.RandomSchedule(6);
  ASSERT_EQ(run->AddProposal(first, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  ASSERT_EQ(run->AddProposal(second, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded);
  const CandidateRecord leased_first = *run->Lease("L1", kNow);
  const CandidateRecord leased_second = *run->Lease("L2", kNow);
  ASSERT_EQ(run->RecordResult(ResultOf(leased_first, "L1", OK, 1.5e-3), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  ASSERT_EQ(run->RecordResult(ResultOf(leased_second, "L2", OK, 1.6e-3), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  progress = run->Progress()[0];
  EXPECT_DOUBLE_EQ(progress.best_seconds(), 1.0e-3);
  EXPECT_EQ(progress.best_origin(), kLibtorchBaseline);
  EXPECT_DOUBLE_EQ(progress.farm_best_seconds(), 1.5e-3);
  EXPECT_EQ(progress.farm_best_origin(), "model-guided");

  // The first schedule measured again, slower: it stands for sqrt(1.5 x 2.0) = 1.73 ms,
  // and the farm's best is the second's 1.6 ms.
  Candidate again = leased_first.candidate();
  again.set_repeat(1);
  again.set_origin("remeasure");
  ASSERT_EQ(run->AddProposal(again, kNow, keep, &why), CampaignRun::ProposalOutcome::kAdded) << why;
  const CandidateRecord leased_again = *run->Lease("L3", kNow);
  ASSERT_EQ(run->RecordResult(ResultOf(leased_again, "L3", OK, 2.0e-3), {}, kNow, &record),
            CampaignRun::ResultOutcome::kRecorded);
  progress = run->Progress()[0];
  EXPECT_DOUBLE_EQ(progress.farm_best_seconds(), 1.6e-3);
  EXPECT_EQ(progress.farm_best_origin(), "model-guided");
  EXPECT_DOUBLE_EQ(progress.best_seconds(), 1.0e-3);
}

TEST(CampaignRunTest, WorkerRequirements) {
  const std::string yaml =
      "name: req\npipelines:\n  - zoo: {block: vgg_block, spatial_scale: 0.25}\n"
      "budget: {benchmarks: 1}\nworkers: {isa: [avx2], min_cores: 2, labels: [rack1]}\n";
  StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, "req.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  StatusOr<std::unique_ptr<CampaignRun>> run =
      CampaignRun::Create(Campaign(), *config, {*BuildZooPipeline(config->pipelines(0).zoo())});
  ASSERT_TRUE(run.ok());
  HostFingerprint host;
  host.set_cores(4);
  host.add_isa_flags("avx2");
  host.add_labels("rack1");
  EXPECT_TRUE((*run)->Accepts(host));
  host.set_cores(1);
  EXPECT_FALSE((*run)->Accepts(host));
  host.set_cores(4);
  host.clear_labels();
  EXPECT_FALSE((*run)->Accepts(host));
  host.add_labels("rack1");
  host.set_replay_dataset("0123abcd");
  EXPECT_FALSE((*run)->Accepts(host)) << "a replay worker serves replay campaigns only";
}

TEST(CampaignRunTest, ReplayCampaignsGoToReplayWorkersOfTheirDataset) {
  CampaignConfig config;
  config.set_name("replay");
  config.mutable_budget()->set_benchmarks(5);
  config.mutable_strategy()->set_name("random");
  const PipelineSpec spec = *BuildZooPipeline(
      ParseCampaignYaml("name: z\npipelines:\n  - zoo: {block: vgg_block, spatial_scale: 0.25}\n"
                        "budget: {benchmarks: 1}\n",
                        "z.yaml")
          ->pipelines(0)
          .zoo());
  config.mutable_replay()->set_dataset_id("0123abcd");
  config.mutable_replay()->add_pipeline_ids(PipelineId(PipelineGraph::Build(spec).value()));
  StatusOr<std::unique_ptr<CampaignRun>> run = CampaignRun::Create(Campaign(), config, {spec});
  ASSERT_TRUE(run.ok()) << run.status().message();
  HostFingerprint host;
  host.set_cores(2);
  EXPECT_FALSE((*run)->Accepts(host)) << "a measuring worker";
  host.set_replay_dataset("ffff0000");
  EXPECT_FALSE((*run)->Accepts(host)) << "a replay worker of another dataset";
  host.set_replay_dataset("0123abcd");
  EXPECT_TRUE((*run)->Accepts(host));
  EXPECT_FALSE((*run)->ProposesItself()) << "the learner proposes from the dataset";
  EXPECT_TRUE(IsDeterministicFailure(NOT_IN_DATASET));
}

// A replay campaign proposes measured schedules, and takes one that a rule of the
// space added after its measurement refuses (the repository's dataset has such
// schedules: rules 4 to 7 of docs/SCHEDULES.md); a measuring campaign refuses it.
TEST(CampaignRunTest, ReplayCampaignsTakeMeasuredSchedulesOfAnOlderSpace) {
  StatusOr<LoadedDataset> dataset =
      ReadDataset(std::string(SCHEDFARM_SOURCE_DIR) + "/data/datasets/dataset-amd-epyc.sfds");
  ASSERT_TRUE(dataset.ok()) << dataset.status().ToString();
  for (const Measurement& m : dataset->data.measurements()) {
    const auto at = std::find(dataset->pipeline_ids.begin(), dataset->pipeline_ids.end(),
                              m.candidate().pipeline_id());
    ASSERT_NE(at, dataset->pipeline_ids.end());
    const PipelineSpec& spec = dataset->data.pipelines(at - dataset->pipeline_ids.begin());
    const PipelineGraph graph = PipelineGraph::Build(spec).value();
    const ScheduleSpace space(graph);
    if (m.status() != OK || space.Check(m.candidate().schedule()).ok()) continue;

    CampaignConfig config;
    config.set_name("replay");
    config.mutable_budget()->set_benchmarks(5);
    config.mutable_strategy()->set_name("random");
    config.mutable_replay()->set_dataset_id(dataset->id);
    config.mutable_replay()->add_pipeline_ids(m.candidate().pipeline_id());
    Candidate candidate;
    candidate.set_pipeline_id(m.candidate().pipeline_id());
    *candidate.mutable_schedule() = m.candidate().schedule();
    candidate.set_origin("random");
    auto ignore = [](const CandidateRecord&) {};
    std::string why;
    StatusOr<std::unique_ptr<CampaignRun>> replay = CampaignRun::Create(Campaign(), config, {spec});
    ASSERT_TRUE(replay.ok()) << replay.status().message();
    EXPECT_EQ((*replay)->AddProposal(candidate, kNow, ignore, &why),
              CampaignRun::ProposalOutcome::kAdded)
        << why;
    config.clear_replay();
    StatusOr<std::unique_ptr<CampaignRun>> measuring =
        CampaignRun::Create(Campaign(), config, {spec});
    ASSERT_TRUE(measuring.ok()) << measuring.status().message();
    EXPECT_EQ((*measuring)->AddProposal(candidate, kNow, ignore, &why),
              CampaignRun::ProposalOutcome::kRefused);
    EXPECT_TRUE(why.find("clamped indices") != std::string::npos ||
                why.find("a split larger than the window") != std::string::npos ||
                why.find("nested splits with tails") != std::string::npos ||
                why.find("loads with a stride") != std::string::npos)
        << why;
    return;
  }
  FAIL() << "the dataset has no schedule that rules 4 to 7 refuse";
}

}  // namespace
}  // namespace schedfarm
