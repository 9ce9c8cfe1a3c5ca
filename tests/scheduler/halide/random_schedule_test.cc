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
#include "pipeline/builder.h"
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

// Rule 4 of docs/SCHEDULES.md does not hold at a loop of a consumer's consumer outside
// every reduction (a fused task's strip): a stage read through a convolution's padding
// and computed at a row of the convolution's consumer, beside the convolution, takes a
// producer at its loops, pure loops inside, and computes the reference. At the
// convolution's own loops, the same producer is refused: a search's schedule of
// MobileNetV2's second block, its expansion's host at a loop of the depthwise
// convolution's update with a tail, required the block's input at 220 of 112.
TEST(RandomSchedules, AClampedWindowAtAConsumersConsumerTakesProducersInItsLoops) {
  PipelineBuilder b("padded_chain");
  const std::string x = b.Input("x", {1, 4, 10, 10});
  const std::string p = b.Exp(x);
  const std::string g = b.Relu(p);
  const std::string h = b.Unary(NEG, g);
  const std::string conv = b.Conv2d(h, 8, 3, 1, 1);
  const std::string out = b.Relu(conv);
  b.Output(out);
  const PipelineGraph graph = testing_pipelines::MustBuild(b.Finish());
  RunOptions options;
  options.timing_samples = 0;
  options.threads = 2;
  StatusOr<RunResult> reference = RunReference(graph, options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  const ScheduleSpace space(graph);
  // g at `host`'s d2 (conv's update when `host` is conv), conv at out's d2.
  auto schedule = [&](const std::string& host) {
    ScheduleSpec spec = space.Empty();
    for (const std::string& name : {out, conv, h, g, p}) {
      StageSchedule* s = spec.add_stages();
      s->set_stage(name);
      s->set_compute(name == h ? INLINE : name == out ? ROOT : AT);
      if (name == conv) *s->mutable_compute_at() = MakeLoopRef(out, "d2", 0, false);
      if (name == g) *s->mutable_compute_at() = MakeLoopRef(host, "d2", 0, host == conv);
      if (name == p) *s->mutable_compute_at() = MakeLoopRef(g, "d2", 0, false);
    }
    spec.set_partial(false);
    return spec;
  };
  const schedule_checks::RunOutcome outcome =
      schedule_checks::RunAndCompare(space, schedule(out), reference->outputs, options);
  EXPECT_TRUE(outcome.pass) << outcome.message;
  const Status direct = space.Check(schedule(conv));
  EXPECT_NE(direct.message().find("read through clamped indices"), std::string::npos)
      << direct.ToString();
}

class RandomPipelineSchedules : public testing::TestWithParam<uint64_t> {};

TEST_P(RandomPipelineSchedules, MatchTheReference) {
  ExpectSchedulesMatchReference(schedule_checks::RandomPipelineCase(GetParam()), 2, -1);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomPipelineSchedules, testing::Range<uint64_t>(1, 21));

}  // namespace
}  // namespace schedfarm
