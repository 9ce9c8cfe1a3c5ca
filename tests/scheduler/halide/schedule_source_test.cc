// The exported schedule source, compiled: schedule_source_gen wrote each case's
// ScheduleSource into generated_schedules.h at build time. Each case lowers its
// pipeline twice, schedules one copy with ApplySchedule and the other with the
// compiled source, and expects identical loop nests (Halide's first lowering pass,
// printed). Also: the text's shape, the C++ names of awkward Funcs, errors.
#include "scheduler/schedule_source.h"

#include <string>
#include <vector>

#include "generated_schedules.h"
#include "gtest/gtest.h"
#include "pipeline/halide/lowering.h"
#include "scheduler/halide/apply.h"
#include "scheduler/halide/loop_nest.h"
#include "tests/scheduler/halide/source_cases.h"
#include "tests/scheduler/halide/test_pipelines.h"

namespace schedfarm {
namespace {

using testing_pipelines::MustBuild;
using testing_pipelines::ParseSchedule;

const std::vector<source_cases::SourceCase>& Cases() {
  static const std::vector<source_cases::SourceCase> cases = [] {
    StatusOr<std::vector<source_cases::SourceCase>> c = source_cases::SourceCases();
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? *c : std::vector<source_cases::SourceCase>();
  }();
  return cases;
}

TEST(GeneratedSchedules, AreTheCasesOfThisBuild) {
  const std::vector<schedule_source_generated::GeneratedCase>& generated =
      schedule_source_generated::GeneratedCases();
  ASSERT_EQ(generated.size(), Cases().size());
  for (size_t k = 0; k < generated.size(); ++k) {
    EXPECT_EQ(generated[k].name, Cases()[k].name);
    EXPECT_EQ(generated[k].schedule, Cases()[k].schedule.SerializeAsString()) << Cases()[k].name;
  }
}

class CompiledSource : public testing::TestWithParam<size_t> {};

TEST_P(CompiledSource, BuildsTheLoopNestOfApplySchedule) {
  ASSERT_LT(GetParam(), Cases().size());
  const source_cases::SourceCase& c = Cases()[GetParam()];
  SCOPED_TRACE(c.name);
  const PipelineGraph graph = MustBuild(c.pipeline);
  StatusOr<LoweredPipeline> direct = LowerToHalide(graph);
  StatusOr<LoweredPipeline> from_source = LowerToHalide(graph);
  ASSERT_TRUE(direct.ok() && from_source.ok());
  const Status applied = ApplySchedule(graph, *direct, c.schedule);
  ASSERT_TRUE(applied.ok()) << applied.ToString();
  std::vector<Halide::Func> funcs, padded_inputs;
  for (const LoweredStage& stage : from_source->stages) {
    funcs.push_back(stage.func);
    padded_inputs.push_back(stage.padded_input);
  }
  schedule_source_generated::GeneratedCases()[GetParam()].apply(funcs, padded_inputs);

  StatusOr<LoopNest> direct_nest = ScheduledLoopNest(*direct);
  StatusOr<LoopNest> source_nest = ScheduledLoopNest(*from_source);
  ASSERT_TRUE(direct_nest.ok()) << direct_nest.status().ToString();
  ASSERT_TRUE(source_nest.ok()) << source_nest.status().ToString();
  EXPECT_FALSE(direct_nest->loops.empty());
  EXPECT_EQ(direct_nest->stmt, source_nest->stmt);

  // And not the loop nest of the unscheduled pipeline (the source did something).
  StatusOr<LoweredPipeline> unscheduled = LowerToHalide(graph);
  ASSERT_TRUE(unscheduled.ok());
  StatusOr<LoopNest> unscheduled_nest = ScheduledLoopNest(*unscheduled);
  ASSERT_TRUE(unscheduled_nest.ok()) << unscheduled_nest.status().ToString();
  EXPECT_NE(unscheduled_nest->stmt, source_nest->stmt);
}

INSTANTIATE_TEST_SUITE_P(Cases, CompiledSource,
                         testing::Range<size_t>(0,
                                                schedule_source_generated::GeneratedCases().size()),
                         [](const testing::TestParamInfo<size_t>& info) {
                           return schedule_source_generated::GeneratedCases()[info.param].name;
                         });

TEST(ScheduleSource, OneBlockPerFuncInTheStyleOfHalidesAutoschedulers) {
  const PipelineGraph graph = MustBuild(testing_pipelines::ConvReluPool());
  StatusOr<std::string> source =
      ScheduleSource(graph, ParseSchedule(testing_pipelines::kConvReluPoolSchedule));
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  for (const char* expected :
       {"// stage 'max_pool' (pool.max_pool)\n{\n  Var d3(\"d3\"), d2(\"d2\"), d1(\"d1\"), "
        "d0(\"d0\"), d3_0(\"d3_0\"), d3_2(\"d3_2\"), d3_1(\"d3_1\");\n"
        "  RVar rk1(\"rk1\"), rk1_0(\"rk1_0\"), rk1_1(\"rk1_1\"), rk0(\"rk0\");\n",
        "  max_pool\n      .bound(d3, 0, 9)\n",
        "      .split(d3, d3_0, d3_2, 4, TailStrategy::ShiftInwards)\n"
        "      .split(d3_0, d3_0, d3_1, 2, TailStrategy::ShiftInwards)\n"
        "      .vectorize(d3_2)\n      .parallel(d1);\n",
        "  max_pool.update(0)\n      .split(d3, d3_0, d3_1, 4, TailStrategy::GuardWithIf)\n",
        "      .reorder({d3_1, rk1_1})\n", "// stage 'relu' (unary.relu)\nrelu.compute_inline();\n",
        "  conv\n      .compute_at(max_pool, d2)\n      .store_at(max_pool, d1);\n",
        "  conv.update(0).split(rc, rc_0, rc_1, 2, TailStrategy::GuardWithIf);\n}\n"}) {
    EXPECT_NE(source->find(expected), std::string::npos) << "missing:\n"
                                                         << expected << "\nin:\n"
                                                         << *source;
  }
  // Outputs first: max_pool, then relu, then conv.
  EXPECT_LT(source->find("stage 'max_pool'"), source->find("stage 'relu'"));
  EXPECT_LT(source->find("stage 'relu'"), source->find("stage 'conv'"));
}

TEST(ScheduleSource, RenamesWhatCannotBeACppName) {
  const std::vector<source_cases::SourceCase>& cases = Cases();
  const auto it = std::find_if(cases.begin(), cases.end(), [](const source_cases::SourceCase& c) {
    return c.name == "awkward_names";
  });
  ASSERT_NE(it, cases.end());
  const PipelineGraph graph = MustBuild(it->pipeline);
  EXPECT_EQ(ScheduleSourceFuncNames(graph), (std::vector<std::string>{"new_", "Var_", "d1_0"}));
  StatusOr<std::string> source = ScheduleSource(graph, it->schedule);
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  // In the block of d1_0, and of new_ (which names d1_0 as its host), the Var d1_0
  // takes the C++ name d1_0_.
  EXPECT_NE(source->find("d1_0.update(0)\n      .split(d1, d1_0_, d1_1, 4,"), std::string::npos)
      << *source;
  EXPECT_NE(source->find(".compute_at(d1_0, d2)\n      .reorder_storage({d1, d3, d2, d0});"),
            std::string::npos)
      << *source;
  EXPECT_NE(source->find("// its weights '"), std::string::npos) << "packed: " << *source;
  EXPECT_NE(source->find("d1_0_(\"d1_0\")"), std::string::npos) << *source;
  EXPECT_NE(source->find("Var_.compute_inline();"), std::string::npos) << *source;
}

TEST(ScheduleSource, ErrorsOfSpecsThatDoNotFit) {
  const PipelineGraph graph = MustBuild(testing_pipelines::ConvReluPool());
  StatusOr<std::string> source =
      ScheduleSource(graph, ParseSchedule(R"pb(stages { stage: "conv" compute: INLINE })pb"));
  ASSERT_FALSE(source.ok());
  EXPECT_NE(source.status().message().find("stage 'conv': a stage with an update definition"),
            std::string::npos)
      << source.status().message();
}

}  // namespace
}  // namespace schedfarm
