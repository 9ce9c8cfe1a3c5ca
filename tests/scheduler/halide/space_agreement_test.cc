// The schedule space and Halide agree on sampled schedules: for random legal specs of
// every zoo block and of random pipelines, the loop nest Halide builds (its first
// lowering pass, no JIT compile) has, per definition, the loops
// ScheduleSpace::DefinitionLoops lists (names, order, vectorized / parallel / unrolled,
// known extents), and every stage is computed and stored where the spec says. Also:
// a partial spec applied as is equals the spec completed by WithDefaults.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/halide/lowering.h"
#include "pipeline/zoo.h"
#include "scheduler/halide/apply.h"
#include "scheduler/halide/loop_nest.h"
#include "tests/scheduler/halide/schedule_checks.h"
#include "tests/scheduler/halide/test_pipelines.h"

namespace schedfarm {
namespace {

using schedule_checks::CheckLoopNest;
using schedule_checks::ScheduleSeed;

constexpr int kSchedulesPerZooBlock = 12;
constexpr int kSchedulesPerRandomPipeline = 4;

void ExpectAgreement(const PipelineGraph& graph, int schedules) {
  const ScheduleSpace space(graph);
  for (int k = 0; k < schedules; ++k) {
    const ScheduleSpec spec = space.RandomSchedule(ScheduleSeed(graph.spec().name(), k));
    SCOPED_TRACE("schedule " + std::to_string(k) + ":\n" + spec.DebugString());
    ASSERT_TRUE(space.Check(spec).ok()) << space.Check(spec).ToString();
    const std::vector<std::string> differences = CheckLoopNest(space, spec);
    std::string text;
    for (const std::string& d : differences) text += "\n  " + d;
    EXPECT_TRUE(differences.empty()) << differences.size() << " difference(s):" << text;
  }
}

class ZooAgreement : public testing::TestWithParam<std::string> {};

TEST_P(ZooAgreement, LoopNestsMatchTheSpace) {
  StatusOr<PipelineSpec> spec = MakeZooBlock(GetParam());
  const PipelineGraph graph = testing_pipelines::MustBuild(spec);
  ExpectAgreement(graph, kSchedulesPerZooBlock);
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooAgreement, testing::ValuesIn(ZooNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

class RandomPipelineAgreement : public testing::TestWithParam<uint64_t> {};

TEST_P(RandomPipelineAgreement, LoopNestsMatchTheSpace) {
  const PipelineGraph graph =
      testing_pipelines::MustBuild(schedule_checks::RandomPipelineCase(GetParam()));
  ExpectAgreement(graph, kSchedulesPerRandomPipeline);
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomPipelineAgreement, testing::Range<uint64_t>(1, 31));

TEST(LoopNestDifferences, SeeAScheduleThatWasNotApplied) {
  const PipelineGraph graph =
      testing_pipelines::MustBuild(MakeZooBlock("mobilenetv2_inverted_residual"));
  const ScheduleSpace space(graph);
  const ScheduleSpec applied_spec = space.RandomSchedule(1);
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  ASSERT_TRUE(ApplySchedule(graph, *lowered, applied_spec).ok());
  StatusOr<LoopNest> nest = ScheduledLoopNest(*lowered);
  ASSERT_TRUE(nest.ok()) << nest.status().ToString();
  EXPECT_TRUE(schedule_checks::LoopNestDifferences(space, applied_spec, *lowered, *nest).empty());
  int differing = 0;
  for (uint64_t seed = 2; seed < 6; ++seed) {
    const ScheduleSpec other = space.RandomSchedule(seed);
    differing += !schedule_checks::LoopNestDifferences(space, other, *lowered, *nest).empty();
  }
  EXPECT_EQ(differing, 4);
}

TEST(PartialSchedules, UndecidedStagesGetTheSpaceDefaults) {
  const PipelineGraph graph = testing_pipelines::MustBuild(MakeZooBlock("resnet18_basic"));
  const ScheduleSpace space(graph);
  const ScheduleSpec full = space.RandomSchedule(7);
  for (int decided : {0, 1, graph.num_stages() / 2}) {
    SCOPED_TRACE(decided);
    ScheduleSpec partial = full;
    partial.set_partial(true);
    partial.mutable_stages()->DeleteSubrange(decided, partial.stages_size() - decided);
    ASSERT_TRUE(space.Check(partial).ok()) << space.Check(partial).ToString();
    std::string texts[2];
    const ScheduleSpec specs[2] = {partial, space.WithDefaults(partial)};
    for (int i = 0; i < 2; ++i) {
      StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
      ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
      const Status applied = ApplySchedule(graph, *lowered, specs[i]);
      ASSERT_TRUE(applied.ok()) << applied.ToString();
      StatusOr<LoopNest> nest = ScheduledLoopNest(*lowered);
      ASSERT_TRUE(nest.ok()) << nest.status().ToString();
      texts[i] = nest->stmt;
    }
    EXPECT_EQ(texts[0], texts[1]);
  }
}

}  // namespace
}  // namespace schedfarm
