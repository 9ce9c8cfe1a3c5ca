// farm-worker --replay as a process, driven by a stand-in coordinator: it registers as
// the dataset's host with the dataset's id, answers leases of recorded schedules with
// their recorded measurements (a schedule recorded twice, its records in turn), answers
// any other schedule with NOT_IN_DATASET, starts no sandbox, and refuses a bad dataset
// file at start with the file's name.
#include <gtest/gtest.h>

#include "common/files.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/stand_in_coordinator.h"
#include "tests/support/synthetic_dataset.h"

namespace schedfarm {
namespace {

using testing_support::StandInCoordinator;
using testing_support::SyntheticDataset;
using testing_support::WorkerProcess;

bool IsResult(const StandInCoordinator::Received& r) { return r.envelope.has_result(); }

Lease LeaseOf(const Dataset& dataset, const Candidate& candidate, const std::string& id) {
  Lease lease;
  lease.set_lease_id(id);
  *lease.mutable_candidate() = candidate;
  for (const PipelineSpec& spec : dataset.pipelines()) {
    if (PipelineId(PipelineGraph::Build(spec).value()) == candidate.pipeline_id()) {
      *lease.mutable_pipeline() = spec;
    }
  }
  lease.mutable_settings()->set_samples(5);
  return lease;
}

class ReplayWorker : public testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(WriteDataset(path_, dataset_).ok()); }

  // Sends the lease and returns the measurement that answers it.
  Measurement Run(const std::string& peer, const Lease& lease) {
    Envelope envelope;
    *envelope.mutable_lease() = lease;
    coordinator_.Send(peer, envelope);
    auto result = coordinator_.ReceiveUntil(IsResult, 10000);
    EXPECT_TRUE(result);
    if (!result) return {};
    Envelope ack;
    ack.mutable_ack()->set_lease_id(lease.lease_id());
    coordinator_.Send(peer, ack);
    return result->envelope.result().measurement();
  }

  ScratchDir dir_;
  const std::string path_ = dir_.Sub("replay.sfds");
  const Dataset dataset_ = SyntheticDataset(2, 3);
  StandInCoordinator coordinator_;
};

TEST_F(ReplayWorker, AnswersFromTheDatasetAsItsHost) {
  WorkerProcess worker(FARM_WORKER_BIN, {"--coordinator", coordinator_.endpoint(), "--id",
                                         "replayer", "--replay", path_});
  coordinator_.set_keep_registrations(true);
  auto reg = coordinator_.ReceiveUntil(
      [](const StandInCoordinator::Received& r) { return r.envelope.has_register_(); }, 20000);
  coordinator_.set_keep_registrations(false);
  ASSERT_TRUE(reg) << worker.Log();
  const HostFingerprint& host = reg->envelope.register_().host();
  EXPECT_EQ(host.worker_id(), "replayer");
  EXPECT_EQ(host.cpu_model(), "Test CPU 9000");
  EXPECT_EQ(host.replay_dataset(), ReadDataset(path_).value().id);
  EXPECT_EQ(reg->envelope.register_().credits(), 2 + 16);  // 2 children + prefetch 16
  EXPECT_EQ(worker.Log().find("sandbox_started"), std::string::npos) << worker.Log();

  // The schedule recorded twice: its records in the order taken, then the first again,
  // each campaign on its own.
  const Measurement& first = dataset_.measurements(0);
  const Measurement& second = dataset_.measurements(1);
  ASSERT_EQ(first.candidate().schedule_hash(), second.candidate().schedule_hash());
  Candidate other_campaign = first.candidate();
  other_campaign.set_campaign("other");
  for (int turn = 0; turn < 4; ++turn) {
    const Candidate& candidate = turn == 1 ? other_campaign : first.candidate();
    const Measurement m =
        Run(reg->peer, LeaseOf(dataset_, candidate, "lease-" + std::to_string(turn)));
    const Measurement& expected = turn == 2 ? second : first;
    EXPECT_EQ(m.status(), OK) << m.error();
    EXPECT_EQ(m.lease_id(), "lease-" + std::to_string(turn));
    EXPECT_EQ(m.stats().median_seconds(), expected.stats().median_seconds()) << turn;
    EXPECT_EQ(m.samples_seconds_size(), expected.samples_seconds_size());
    EXPECT_EQ(m.compile_seconds(), expected.compile_seconds());
    EXPECT_EQ(m.host().replay_dataset(), host.replay_dataset());
    EXPECT_EQ(m.candidate().schedule_hash(), first.candidate().schedule_hash());
  }

  // A schedule of the pipeline that the dataset does not hold.
  Candidate unknown = first.candidate();
  const PipelineGraph graph = PipelineGraph::Build(LeaseOf(dataset_, unknown, "x").pipeline()).value();
  const ScheduleSpace space(graph);
  const std::set<std::string> recorded = [&] {
    std::set<std::string> hashes;
    for (const Measurement& m : dataset_.measurements()) hashes.insert(m.candidate().schedule_hash());
    return hashes;
  }();
  for (uint64_t seed = 1000;; ++seed) {
    *unknown.mutable_schedule() = space.RandomSchedule(seed);
    if (!recorded.count(ScheduleHash(space, unknown.schedule()))) break;
  }
  const Measurement m = Run(reg->peer, LeaseOf(dataset_, unknown, "lease-unknown"));
  EXPECT_EQ(m.status(), NOT_IN_DATASET);
  EXPECT_NE(m.error().find("is not in dataset " + host.replay_dataset()), std::string::npos)
      << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
  EXPECT_EQ(m.stats().median_seconds(), 0);
}

TEST_F(ReplayWorker, RefusesATruncatedDatasetAtStart) {
  const std::string bytes = ReadFileBytes(path_).value();
  ASSERT_TRUE(WriteFileAtomically(path_, bytes.substr(0, bytes.size() / 2)).ok());
  WorkerProcess worker(FARM_WORKER_BIN,
                       {"--coordinator", coordinator_.endpoint(), "--replay", path_});
  const std::optional<int> status = worker.Wait(20000);
  ASSERT_TRUE(status);
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1);
  EXPECT_NE(worker.Log().find("--replay: dataset '" + path_ + "': truncated or corrupt"),
            std::string::npos)
      << worker.Log();
}

}  // namespace
}  // namespace schedfarm
