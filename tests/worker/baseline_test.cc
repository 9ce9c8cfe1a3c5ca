// Baseline jobs: Halide's autoschedulers (Adams2019 with beam 1 to stay fast, Li2018,
// Mullapudi2016) measured in process and through a real farm-worker driven by the
// stand-in coordinator: the schedule source and its import come back with the
// samples, a short compile timeout covers the autoscheduler, and a lease with an
// empty schedule is refused unless its origin is a baseline; a baseline whose shifted
// tails read outside the tensors runs on buffers that cover them. The runtime
// contenders run through the worker in programs of their own (farm-torch-baseline,
// farm-onnxruntime-baseline).
#include <gtest/gtest.h>

#include <cctype>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"
#include "scheduler/autoschedule/autoschedulers.h"
#include "scheduler/autoscheduler_names.h"
#include "scheduler/schedule_space.h"
#include "tests/support/stand_in_coordinator.h"
#include "tests/worker/worker_test_pipelines.h"
#include "worker/measure.h"
#include "worker/sandbox.h"

namespace schedfarm {
namespace {

using testing_support::StandInCoordinator;
using testing_support::WorkerProcess;
using worker_testing::MustBuild;
using worker_testing::TinyMatMul;

MeasurementSettings QuickSettings() {
  MeasurementSettings s;
  s.set_samples(3);
  s.set_max_samples(5);
  s.set_min_sample_seconds(0.001);
  s.set_target_cv(0.5);
  return s;
}

// A small zoo block every autoscheduler schedules correctly (Adams2019 at beam 1 too):
// the VGG block at a quarter of its spatial size and half its channels.
PipelineSpec SmallBlock() {
  ZooOptions options;
  options.spatial_scale = 0.25;
  options.channel_scale = 0.5;
  StatusOr<PipelineSpec> spec = MakeZooBlock("vgg_block", options);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : PipelineSpec();
}

// Whether `source` names a Func of `graph` (a stage's name as a whole word).
bool MentionsAStage(const std::string& source, const PipelineGraph& graph) {
  const auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (const Stage& stage : graph.spec().stages()) {
    const std::string& name = stage.name();
    for (size_t at = source.find(name); at != std::string::npos; at = source.find(name, at + 1)) {
      const size_t end = at + name.size();
      if ((at == 0 || !word_char(source[at - 1])) &&
          (end == source.size() || !word_char(source[end]))) {
        return true;
      }
    }
  }
  return false;
}

TEST(BaselineInProcess, CompilesRunsAndRecordsTheSchedule) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache cache;
  StatusOr<std::shared_ptr<const ReferenceOutputs>> reference = cache.Get(graph);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  BaselineSchedule chosen;
  MeasurementStatus failure = OK;
  StatusOr<CompiledCandidate> candidate = CompiledCandidate::CompileBaseline(
      graph, BaselineRequest{"mullapudi2016", 32}, QuickSettings(), &failure, &chosen);
  ASSERT_TRUE(candidate.ok()) << candidate.status().ToString();
  const BaselineSchedule* baseline = candidate->baseline();
  ASSERT_NE(baseline, nullptr);
  EXPECT_TRUE(MentionsAStage(baseline->schedule_source, graph)) << baseline->schedule_source;
  EXPECT_EQ(chosen.schedule_source, baseline->schedule_source);
  EXPECT_GT(baseline->autoschedule_seconds, 0);
  EXPECT_LT(baseline->autoschedule_seconds, candidate->compile_seconds());
  ASSERT_TRUE(baseline->imported) << baseline->import_note;
  EXPECT_TRUE(ScheduleSpace(graph).Check(baseline->imported_spec).ok());

  const Measurement m = candidate->Run(**reference);
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_EQ(m.schedule_source(), baseline->schedule_source);
  EXPECT_EQ(m.candidate().schedule().SerializeAsString(),
            baseline->imported_spec.SerializeAsString());
  EXPECT_GE(m.compile_seconds(), baseline->autoschedule_seconds);
}

// Li2018 splits the 2-channel convolutions of inception_module (a quarter of its
// spatial size, half its channels) by 8 with shifted tails, which read their biases
// at channel -6, outside the tensors (a runtime error on the tensors themselves, see
// HalideRunner.CoverScheduleReadsRunsShiftedTailsOnTheReferenceValues): on buffers
// that cover those reads the baseline runs and matches the reference.
TEST(BaselineInProcess, ShiftedTailsThatReadOutsideTheTensorsRunAndMatch) {
  ZooOptions options;
  options.spatial_scale = 0.25;
  options.channel_scale = 0.5;
  StatusOr<PipelineSpec> spec = MakeZooBlock("inception_module", options);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const PipelineGraph graph = MustBuild(*spec);
  ReferenceCache cache;
  StatusOr<std::shared_ptr<const ReferenceOutputs>> reference = cache.Get(graph);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  MeasurementStatus failure = OK;
  StatusOr<CompiledCandidate> candidate = CompiledCandidate::CompileBaseline(
      graph, BaselineRequest{"li2018", 32}, QuickSettings(), &failure);
  ASSERT_TRUE(candidate.ok()) << candidate.status().ToString();
  const std::string& source = candidate->baseline()->schedule_source;
  EXPECT_NE(source.find(",8,ShiftInwards)"), std::string::npos) << source;
  const Measurement m = candidate->Run(**reference);
  EXPECT_EQ(m.status(), OK) << m.error();
}

TEST(BaselineInProcess, UnknownAutoschedulerIsACompileError) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  BaselineSchedule chosen;
  MeasurementStatus failure = OK;
  StatusOr<CompiledCandidate> candidate = CompiledCandidate::CompileBaseline(
      graph, BaselineRequest{"tvm_ansor", 32}, QuickSettings(), &failure, &chosen);
  ASSERT_FALSE(candidate.ok());
  EXPECT_EQ(failure, COMPILE_ERROR);
  EXPECT_NE(candidate.status().message().find("unknown autoscheduler 'tvm_ansor'"),
            std::string::npos)
      << candidate.status().message();
  EXPECT_TRUE(chosen.schedule_source.empty());
}

// --- through farm-worker ---------------------------------------------------------

Lease BaselineLease(const std::string& lease_id, const std::string& origin,
                    const PipelineSpec& pipeline) {
  Lease lease;
  lease.set_lease_id(lease_id);
  *lease.mutable_pipeline() = pipeline;
  Candidate& candidate = *lease.mutable_candidate();
  candidate.set_campaign("baseline-campaign");
  candidate.set_pipeline_id(PipelineId(MustBuild(pipeline)));
  candidate.set_schedule_hash("baseline-" + origin);
  candidate.set_origin(origin);
  *lease.mutable_settings() = QuickSettings();
  return lease;
}

Envelope LeaseEnvelope(const Lease& lease) {
  Envelope envelope;
  *envelope.mutable_lease() = lease;
  return envelope;
}

std::vector<std::string> WorkerArgs(const StandInCoordinator& coordinator) {
  return {"--coordinator",
          coordinator.endpoint(),
          "--id",
          "baseline-worker",
          "--children",
          "1",
          "--compile-slots",
          "1",
          "--memory-limit-mb",
          "4096",
          "--adams2019-beam",
          "1"};
}

// Waits for the worker to register and returns its routing id.
std::string AwaitRegistration(StandInCoordinator& coordinator) {
  coordinator.set_keep_registrations(true);
  auto reg = coordinator.ReceiveUntil(
      [](const StandInCoordinator::Received& r) { return r.envelope.has_register_(); }, 20000);
  coordinator.set_keep_registrations(false);
  return reg ? reg->peer : "";
}

bool IsResult(const StandInCoordinator::Received& r) { return r.envelope.has_result(); }
bool IsError(const StandInCoordinator::Received& r) { return r.envelope.has_error(); }

class BaselineLeases : public ::testing::TestWithParam<std::string> {};

TEST_P(BaselineLeases, AreMeasuredWithTheirScheduleSource) {
  const std::string autoscheduler = GetParam();
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator));
  const std::string peer = AwaitRegistration(coordinator);
  ASSERT_FALSE(peer.empty()) << worker.Log();
  const PipelineSpec pipeline = SmallBlock();
  const PipelineGraph graph = MustBuild(pipeline);
  const Lease lease = BaselineLease("base-" + autoscheduler, autoscheduler, pipeline);
  coordinator.Send(peer, LeaseEnvelope(lease));

  auto result = coordinator.ReceiveUntil(IsResult, 120000);
  ASSERT_TRUE(result) << worker.Log();
  const Measurement& m = result->envelope.result().measurement();
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_TRUE(m.error().empty()) << m.error();
  EXPECT_EQ(m.lease_id(), lease.lease_id());
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_GT(m.stats().min_seconds(), 0);
  EXPECT_GT(m.compile_seconds(), 0);
  EXPECT_FALSE(m.output_checksum().empty());
  EXPECT_TRUE(MentionsAStage(m.schedule_source(), graph)) << m.schedule_source();
  // The candidate is the leased one, with the imported schedule when there is one.
  EXPECT_EQ(m.candidate().origin(), autoscheduler);
  EXPECT_EQ(m.candidate().schedule_hash(), lease.candidate().schedule_hash());
  EXPECT_EQ(m.candidate().pipeline_id(), lease.candidate().pipeline_id());
  // Each autoscheduler's schedule of this block imports (with constructs left out:
  // the log says which); the import passes the checks of the daemon and of this host.
  ASSERT_GT(m.candidate().schedule().stages_size(), 0) << worker.Log();
  const Status checked = ScheduleSpace(graph).Check(m.candidate().schedule());
  EXPECT_TRUE(checked.ok()) << checked.ToString();
  const Status checked_here =
      ScheduleSpace(graph, HalideTargetParams(1)).Check(m.candidate().schedule());
  EXPECT_TRUE(checked_here.ok()) << checked_here.ToString();
  const std::string log = worker.Log();
  EXPECT_NE(log.find("event=baseline_schedule lease=" + lease.lease_id() +
                     " autoscheduler=" + autoscheduler + " imported=yes"),
            std::string::npos)
      << log;
}

INSTANTIATE_TEST_SUITE_P(EveryAutoscheduler, BaselineLeases,
                         ::testing::ValuesIn(AutoschedulerNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// Each runtime contender runs in its own program beside the worker, timed by the
// protocol; ONNX Runtime's test skips where node or its package is not installed.
class RuntimeContenderLeases : public ::testing::TestWithParam<std::string> {};

TEST_P(RuntimeContenderLeases, RunInTheirOwnProcessAndAreTimedByTheProtocol) {
  const std::string origin = GetParam();
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator));
  const std::string peer = AwaitRegistration(coordinator);
  ASSERT_FALSE(peer.empty()) << worker.Log();
  const Lease lease = BaselineLease("base-" + origin, origin, SmallBlock());
  coordinator.Send(peer, LeaseEnvelope(lease));
  auto result = coordinator.ReceiveUntil(IsResult, 120000);
  ASSERT_TRUE(result) << worker.Log();
  const Measurement& m = result->envelope.result().measurement();
  if (m.error().find("unavailable on this worker") != std::string::npos) {
    GTEST_SKIP() << m.error();
  }
  ASSERT_EQ(m.status(), OK) << m.error() << "\n" << worker.Log();
  EXPECT_EQ(m.lease_id(), lease.lease_id());
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_GT(m.stats().min_seconds(), 0);
  EXPECT_GE(m.repeats_per_sample(), 1);
  EXPECT_EQ(m.compile_seconds(), 0) << origin << " compiles nothing in the compile phase";
  EXPECT_FALSE(m.output_checksum().empty()) << "its outputs were checked";
  EXPECT_EQ(m.settings().samples(), QuickSettings().samples());
  EXPECT_EQ(m.candidate().origin(), origin);
  EXPECT_EQ(m.candidate().schedule().stages_size(), 0);
  EXPECT_TRUE(m.schedule_source().empty());
  EXPECT_EQ(m.runtime_version().rfind(origin + " ", 0), 0u) << m.runtime_version();
}

INSTANTIATE_TEST_SUITE_P(EveryRuntime, RuntimeContenderLeases,
                         ::testing::ValuesIn(RuntimeContenderNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(BaselineLease, ShortCompileTimeoutCoversTheAutoscheduler) {
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator));
  const std::string peer = AwaitRegistration(coordinator);
  ASSERT_FALSE(peer.empty()) << worker.Log();
  Lease lease = BaselineLease("base-timeout", "adams2019", SmallBlock());
  lease.mutable_settings()->set_compile_timeout_ms(50);
  coordinator.Send(peer, LeaseEnvelope(lease));
  auto result = coordinator.ReceiveUntil(IsResult, 60000);
  ASSERT_TRUE(result) << worker.Log();
  const Measurement& m = result->envelope.result().measurement();
  EXPECT_EQ(m.status(), COMPILE_TIMEOUT) << m.error();
  EXPECT_NE(m.error().find("compile timeout of 50 ms"), std::string::npos) << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
  EXPECT_EQ(m.candidate().origin(), "adams2019");
}

TEST(BaselineLease, EmptyScheduleNeedsAnAutoschedulerOrigin) {
  StandInCoordinator coordinator;
  WorkerProcess worker(FARM_WORKER_BIN, WorkerArgs(coordinator));
  const std::string peer = AwaitRegistration(coordinator);
  ASSERT_FALSE(peer.empty()) << worker.Log();
  const PipelineSpec pipeline = TinyMatMul();
  for (const std::string origin : {"random", "halide_autotuner"}) {
    coordinator.Send(peer, LeaseEnvelope(BaselineLease("empty-" + origin, origin, pipeline)));
    auto refused = coordinator.ReceiveUntil(IsError, 5000);
    ASSERT_TRUE(refused) << worker.Log();
    EXPECT_EQ(refused->envelope.error().lease_id(), "empty-" + origin);
    const std::string& error = refused->envelope.error().error();
    EXPECT_NE(error.find("origin '" + origin + "'"), std::string::npos) << error;
    EXPECT_NE(error.find("empty schedule"), std::string::npos) << error;
  }

  // An autoscheduler's origin with a schedule is an ordinary candidate: its schedule
  // is checked (an output computed inline is refused).
  Lease scheduled = BaselineLease("scheduled-adams", "adams2019", pipeline);
  const PipelineGraph graph = MustBuild(pipeline);
  *scheduled.mutable_candidate()->mutable_schedule() = ScheduleSpace(graph).RandomSchedule(3);
  scheduled.mutable_candidate()->mutable_schedule()->mutable_stages(0)->set_compute(INLINE);
  coordinator.Send(peer, LeaseEnvelope(scheduled));
  auto refused = coordinator.ReceiveUntil(IsError, 5000);
  ASSERT_TRUE(refused) << worker.Log();
  EXPECT_EQ(refused->envelope.error().lease_id(), "scheduled-adams");
  EXPECT_NE(refused->envelope.error().error().find("schedule refused"), std::string::npos);
  // No result came for any of them.
  EXPECT_FALSE(coordinator.ReceiveUntil(IsResult, 500));
}

}  // namespace
}  // namespace schedfarm
