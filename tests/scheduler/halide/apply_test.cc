// ApplySchedule and RunWithSchedule on hand-written ScheduleSpecs: the loop nest
// Halide builds follows each directive (splits, orders, for-types, compute and
// storage locations), undecided stages take the defaults, bad specs and calls Halide
// refuses come back as errors naming the stage and the directive, and scheduled runs
// compute what the reference schedule computes.
#include "scheduler/halide/apply.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/halide/lowering.h"
#include "scheduler/halide/loop_nest.h"
#include "tests/scheduler/halide/test_pipelines.h"

namespace schedfarm {
namespace {

using testing_pipelines::ConvReluPool;
using testing_pipelines::DefinitionLoopsOf;
using testing_pipelines::MatMulTwoOutputs;
using testing_pipelines::MustBuild;
using testing_pipelines::ParseSchedule;
using testing_pipelines::PlacementOf;

// "var[=extent][:type]" for each loop of a definition, outermost first.
std::string Describe(const std::vector<HalideLoop>& loops) {
  std::string out;
  for (const HalideLoop& loop : loops) {
    if (!out.empty()) out += " ";
    out += loop.var;
    if (loop.extent >= 0) out += "=" + std::to_string(loop.extent);
    if (loop.type != "for") out += ":" + loop.type;
  }
  return out;
}

StatusOr<LoopNest> NestOf(const PipelineGraph& graph, const ScheduleSpec& spec) {
  SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
  SCHEDFARM_RETURN_IF_ERROR(ApplySchedule(graph, lowered, spec));
  return ScheduledLoopNest(lowered);
}

TEST(ApplySchedule, LoopNestFollowsTheSpec) {
  const PipelineGraph graph = MustBuild(ConvReluPool());
  StatusOr<LoopNest> nest = NestOf(graph, ParseSchedule(testing_pipelines::kConvReluPoolSchedule));
  ASSERT_TRUE(nest.ok()) << nest.status().ToString();
  // d3 split inner-first by 4 then 2: d3_2 (4) innermost, d3_1 (2), d3_0.
  EXPECT_EQ(Describe(DefinitionLoopsOf(*nest, "max_pool", 0)),
            "d0 d1:parallel d2 d3_0 d3_1=2 d3_2=4:vectorized");
  // Natural order (innermost first) rk1_1 rk1_0 rk0 d3_1 d3_0 d2 d1 d0; the reorder
  // swaps the slots of d3_1 and rk1_1.
  EXPECT_EQ(Describe(DefinitionLoopsOf(*nest, "max_pool", 1)),
            "d0 d1 d2 d3_0 rk1_1=1 rk0:unrolled rk1_0 d3_1=4:vectorized");
  EXPECT_EQ(Describe(DefinitionLoopsOf(*nest, "conv", 0)), "d0 d1 d2 d3");
  EXPECT_EQ(Describe(DefinitionLoopsOf(*nest, "conv", 1)), "d0 d1 d2 d3 rc_0 rc_1=2 rk0 rk1");
  EXPECT_TRUE(DefinitionLoopsOf(*nest, "relu", 0).empty());
  EXPECT_TRUE(PlacementOf(*nest, "relu").func.empty());  // inlined
  const FuncPlacement conv = PlacementOf(*nest, "conv");
  EXPECT_EQ(conv.compute_loop, "max_pool.s1.d2");
  EXPECT_EQ(conv.store_loop, "max_pool.s1.d1");
  const FuncPlacement pool = PlacementOf(*nest, "max_pool");
  EXPECT_EQ(pool.func, "max_pool");
  EXPECT_EQ(pool.compute_loop, "");
  // conv's loops sit inside max_pool's d2 loop of the update.
  for (const HalideLoop& loop : DefinitionLoopsOf(*nest, "conv", 0)) EXPECT_GE(loop.depth, 3);
}

TEST(ApplySchedule, UndecidedStagesTakeTheDefaults) {
  const PipelineGraph graph = MustBuild(ConvReluPool());
  StatusOr<LoopNest> empty = NestOf(graph, ScheduleSpec());
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  // Listed with an unspecified location: the same default.
  StatusOr<LoopNest> unspecified = NestOf(graph, ParseSchedule(R"pb(
                                            partial: true
                                            stages { stage: "max_pool" }
                                            stages { stage: "relu" }
                                            stages { stage: "conv" })pb"));
  ASSERT_TRUE(unspecified.ok()) << unspecified.status().ToString();
  StatusOr<LoopNest> explicit_defaults = NestOf(graph, ParseSchedule(R"pb(
                                                  stages { stage: "max_pool" compute: ROOT }
                                                  stages { stage: "relu" compute: INLINE }
                                                  stages { stage: "conv" compute: ROOT })pb"));
  ASSERT_TRUE(explicit_defaults.ok()) << explicit_defaults.status().ToString();
  EXPECT_EQ(empty->stmt, explicit_defaults->stmt);
  EXPECT_EQ(unspecified->stmt, explicit_defaults->stmt);
  EXPECT_TRUE(PlacementOf(*empty, "relu").func.empty());
  EXPECT_EQ(PlacementOf(*empty, "conv").compute_loop, "");

  // Not the reference schedule, which computes relu at root.
  StatusOr<LoweredPipeline> reference = LowerToHalide(graph);
  ASSERT_TRUE(reference.ok());
  ApplyReferenceSchedule(graph, *reference);
  StatusOr<LoopNest> reference_nest = ScheduledLoopNest(*reference);
  ASSERT_TRUE(reference_nest.ok()) << reference_nest.status().ToString();
  EXPECT_EQ(PlacementOf(*reference_nest, "relu").func, "relu");
  EXPECT_NE(reference_nest->stmt, empty->stmt);
}

TEST(ApplySchedule, SpecErrorsNameStageAndDirective) {
  const PipelineGraph graph = MustBuild(ConvReluPool());
  const struct {
    const char* spec;
    const char* error;
  } cases[] = {
      {R"pb(stages { stage: "nope" compute: ROOT })pb", "no stage named 'nope'"},
      {R"pb(stages { stage: "conv" compute: ROOT }
            stages { stage: "conv" compute: ROOT })pb",
       "stage 'conv': decided twice"},
      {R"pb(stages {
              stage: "conv"
              compute: ROOT
              pure { splits { dim: "d9" factors: 2 } }
            })pb",
       "stage 'conv', pure definition, split: no dim 'd9' (dims: d3, d2, d1, d0)"},
      {R"pb(stages {
              stage: "conv"
              compute: ROOT
              pure { splits { dim: "d3" factors: -2 } }
            })pb",
       "stage 'conv', pure definition, split of dim 'd3': factor -2 is not a positive 32-bit "
       "integer"},
      {R"pb(stages {
              stage: "conv"
              compute: ROOT
              update {
                splits { dim: "rc" factors: 2 }
                splits { dim: "rc" factors: 2 }
              }
            })pb",
       "stage 'conv', update, split: dim 'rc' is split twice"},
      {R"pb(stages {
              stage: "max_pool"
              compute: ROOT
              pure { vectorize { dim: "d3" level: 1 } }
            })pb",
       "stage 'max_pool', pure definition, vectorize: dim 'd3' has 1 level(s), level 1 asked"},
      {R"pb(stages {
              stage: "max_pool"
              compute: ROOT
              pure {
                vectorize { dim: "d3" }
                vector_width: 8
              }
            })pb",
       "stage 'max_pool', pure definition, vectorize: vector width 8 differs from the extent 9 "
       "of loop 'd3'"},
      {R"pb(stages {
              stage: "max_pool"
              compute: ROOT
              pure { vector_width: 8 }
            })pb",
       "vector width 8 without a vectorized loop"},
      {R"pb(stages {
              stage: "max_pool"
              compute: ROOT
              pure { parallel { dim: "d1" update: true } }
            })pb",
       "stage 'max_pool', pure definition, parallel: the loop of dim 'd1' is marked as a loop of "
       "the update"},
      {R"pb(stages {
              stage: "max_pool"
              compute: ROOT
              pure { unroll { stage: "conv" dim: "d1" } }
            })pb",
       "unroll: the loop belongs to stage 'conv', not to this one"},
      {R"pb(stages { stage: "max_pool" compute: INLINE })pb",
       "stage 'max_pool': an output cannot be inlined"},
      {R"pb(stages {
              stage: "max_pool"
              compute: AT
              compute_at { stage: "conv" dim: "d0" }
            })pb",
       "stage 'max_pool': an output is computed at root"},
      {R"pb(stages { stage: "conv" compute: INLINE })pb",
       "stage 'conv': a stage with an update definition cannot be inlined"},
      {R"pb(stages {
              stage: "relu"
              compute: INLINE
              pure { parallel { dim: "d1" } }
            })pb",
       "stage 'relu': inlined, but has storage or loop directives"},
      {R"pb(stages {
              stage: "conv"
              compute: AT
              compute_at { stage: "relu" dim: "d0" }
            })pb",
       "stage 'conv', compute_at: host stage 'relu' is inlined and has no loops"},
      {R"pb(stages {
              stage: "conv"
              compute: AT
              compute_at { stage: "conv" dim: "d0" }
            })pb",
       "stage 'conv', compute_at: a loop of the stage itself"},
      {R"pb(stages {
              stage: "relu"
              compute: ROOT
              update { parallel { dim: "d0" update: true } }
            })pb",
       "stage 'relu': update directives, but the stage has no update"},
      {R"pb(stages {
              stage: "conv"
              compute: AT
              compute_at { stage: "max_pool" dim: "d3" level: 1 update: true }
            })pb",
       "stage 'conv', compute_at (a loop of the update of stage 'max_pool'): dim 'd3' has 1 "
       "level(s), level 1 asked"},
      {R"pb(stages {
              stage: "conv"
              compute: ROOT
              store: AT
              store_at { stage: "relu" dim: "d0" }
            })pb",
       "stage 'conv', store_at: host stage 'relu' is inlined"},
      {R"pb(stages { stage: "conv" compute: ROOT store: INLINE })pb",
       "stage 'conv': storage cannot be INLINE"},
      // Halide refuses the call itself.
      {R"pb(stages {
              stage: "conv"
              compute: ROOT
              update {
                splits { dim: "rc" factors: 3 }
                tail: TAIL_ROUND_UP
              }
            })pb",
       "stage 'conv' (Func conv), update(0), split(rc, rc_0, rc_1, 3, TailStrategy::RoundUp): "
       "Halide refused it"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec);
    StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
    ASSERT_TRUE(lowered.ok());
    const Status status = ApplySchedule(graph, *lowered, ParseSchedule(c.spec));
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.message().find(c.error), std::string::npos) << status.message();
    EXPECT_NE(status.message().find("pipeline 'conv_relu_pool'"), std::string::npos)
        << status.message();
  }
}

TEST(RunWithSchedule, MatchesTheReferenceSchedule) {
  for (const auto& [pipeline, schedule] :
       {std::make_pair(ConvReluPool(), testing_pipelines::kConvReluPoolSchedule),
        std::make_pair(MatMulTwoOutputs(), testing_pipelines::kMatMulTwoOutputsSchedule)}) {
    const PipelineGraph graph = MustBuild(pipeline);
    SCOPED_TRACE(graph.spec().name());
    RunOptions options;
    options.timing_samples = 2;
    options.threads = 2;
    StatusOr<RunResult> reference = RunReference(graph, options);
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    StatusOr<RunResult> scheduled = RunWithSchedule(graph, ParseSchedule(schedule), options);
    ASSERT_TRUE(scheduled.ok()) << scheduled.status().ToString();
    EXPECT_GT(scheduled->compile_seconds, 0);
    EXPECT_EQ(scheduled->sample_seconds.size(), 2u);
    ASSERT_EQ(scheduled->outputs.size(), reference->outputs.size());
    for (size_t i = 0; i < reference->outputs.size(); ++i) {
      const Comparison c = CompareTensors(scheduled->outputs[i], reference->outputs[i],
                                          DefaultTolerance(reference->outputs[i].dtype));
      EXPECT_TRUE(c.match) << "output " << i << ": " << c.message;
    }
  }
}

TEST(RunWithSchedule, HalideRejectionsAtCompileTimeAreErrors) {
  const PipelineGraph graph = MustBuild(ConvReluPool());
  // d3_0 exists only in max_pool's pure definition, which does not read conv.
  const ScheduleSpec spec = ParseSchedule(R"pb(
    stages {
      stage: "max_pool"
      compute: ROOT
      pure { splits { dim: "d3" factors: 2 } }
    }
    stages {
      stage: "conv"
      compute: AT
      compute_at { stage: "max_pool" dim: "d3" level: 0 }
    })pb");
  RunOptions options;
  options.timing_samples = 0;
  StatusOr<RunResult> run = RunWithSchedule(graph, spec, options);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("pipeline 'conv_relu_pool'"), std::string::npos)
      << run.status().message();
  EXPECT_NE(run.status().message().find("conv.compute_at(max_pool, d3_0)"), std::string::npos)
      << run.status().message();
  // The loop nest reports the same error without compiling.
  StatusOr<LoopNest> nest = NestOf(graph, spec);
  ASSERT_FALSE(nest.ok());
  EXPECT_NE(nest.status().message().find("conv"), std::string::npos) << nest.status().message();
}

}  // namespace
}  // namespace schedfarm
