// The correctness contract of the schedule space, CI-sized: random legal schedules
// compile and compute the reference schedule's outputs (RunReference, CompareTensors,
// DefaultTolerance). One ctest case per random pipeline seed (2 complete random
// schedules) and per zoo block at half size (3 random schedules whose first 4
// decisions, from the outputs, are random and the rest the space's defaults: complete
// random schedules of zoo blocks nest many stages at loops of their consumers and take
// from seconds to minutes to compile each). ops/check_random_schedules.sh runs the
// large sweep of complete random schedules.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/zoo.h"
#include "tests/scheduler/halide/schedule_checks.h"
#include "tests/scheduler/halide/test_pipelines.h"

namespace schedfarm {
namespace {

// `decided`: random decisions per schedule (-1: all of them), the rest defaults.
void ExpectSchedulesMatchReference(const StatusOr<PipelineSpec>& pipeline, int schedules,
                                   int decided) {
  const PipelineGraph graph = testing_pipelines::MustBuild(pipeline);
  ASSERT_GT(graph.num_stages(), 0);
  RunOptions options;
  options.timing_samples = 0;  // one run: correctness only
  options.threads = 2;
  StatusOr<RunResult> reference = RunReference(graph, options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  const ScheduleSpace space(graph);
  for (int k = 0; k < schedules; ++k) {
    ScheduleSpec spec = space.RandomSchedule(schedule_checks::ScheduleSeed(graph.spec().name(), k));
    if (decided >= 0 && decided < spec.stages_size()) {
      spec.mutable_stages()->DeleteSubrange(decided, spec.stages_size() - decided);
      spec.set_partial(true);
      spec = space.WithDefaults(spec);
    }
    SCOPED_TRACE("schedule " + std::to_string(k) + ":\n" + spec.DebugString());
    const schedule_checks::RunOutcome outcome =
        schedule_checks::RunAndCompare(space, spec, reference->outputs, options);
    EXPECT_TRUE(outcome.pass) << outcome.message;
  }
}

class ZooSchedules : public testing::TestWithParam<std::string> {};

TEST_P(ZooSchedules, MatchTheReference) {
  ExpectSchedulesMatchReference(schedule_checks::ZooBlock(GetParam()), 3, 4);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooSchedules, testing::ValuesIn(ZooNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// Before rule 4 of docs/SCHEDULES.md, seed 1011 of mnasnet_block at a quarter of its
// spatial size computed batch_norm_1 at relu's d1 loop (d2 and d3 inside it), with relu
// computed at conv_3's rk1 loop and read through conv_3's padding; it failed with
// "Input buffer x is accessed at 12, which is beyond the max (6) in dimension 1".
TEST(RandomSchedules, MnasnetSeedOfTheClampedWindowRuleRuns) {
  ZooOptions zoo;
  zoo.spatial_scale = 0.25;
  zoo.channel_scale = 0.5;
  const PipelineGraph graph = testing_pipelines::MustBuild(MakeZooBlock("mnasnet_block", zoo));
  RunOptions options;
  options.timing_samples = 0;
  options.threads = 2;
  StatusOr<RunResult> reference = RunReference(graph, options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  const ScheduleSpace space(graph);
  const schedule_checks::RunOutcome outcome =
      schedule_checks::RunAndCompare(space, space.RandomSchedule(1011), reference->outputs, options);
  EXPECT_TRUE(outcome.pass) << outcome.message;
}

class RandomPipelineSchedules : public testing::TestWithParam<uint64_t> {};

TEST_P(RandomPipelineSchedules, MatchTheReference) {
  ExpectSchedulesMatchReference(schedule_checks::RandomPipelineCase(GetParam()), 2, -1);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomPipelineSchedules, testing::Range<uint64_t>(1, 21));

}  // namespace
}  // namespace schedfarm
