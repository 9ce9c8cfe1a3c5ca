// Pipelines and helpers shared by the tests of scheduler/halide: small hand-built
// pipelines with every kind of definition, schedules written as protobuf text, and
// the loops of one Func definition in Halide's loop nest.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "schedfarm.pb.h"
#include "scheduler/halide/loop_nest.h"

namespace schedfarm {
namespace testing_pipelines {

// conv (3x3, pad 1, 4 -> 8 channels) -> relu -> 2x2 max pool: stages "conv", "relu",
// "max_pool"; conv and max_pool have updates.
StatusOr<PipelineSpec> ConvReluPool();

// matmul [20, 36] x [36, 28] -> add bias -> tanh (output), and the column sums of
// the matmul (output): stages "matmul", "add", "tanh" (Func "tanh_"), "reduce_sum".
StatusOr<PipelineSpec> MatMulTwoOutputs();

// A schedule of ConvReluPool with every kind of directive: 3-level splits, a reorder,
// vectorize, unroll, parallel, compute and store at loops of an update, RVar splits.
inline constexpr char kConvReluPoolSchedule[] = R"pb(
  stages {
    stage: "max_pool"
    compute: ROOT
    pure {
      splits { dim: "d3" factors: 4 factors: 2 }
      vectorize { stage: "max_pool" dim: "d3" level: 2 }
      parallel { stage: "max_pool" dim: "d1" }
    }
    update {
      splits { dim: "d3" factors: 4 }
      splits { dim: "rk1" factors: 1 }
      loop_order { stage: "max_pool" dim: "d3" level: 1 update: true }
      loop_order { stage: "max_pool" dim: "rk1" level: 1 update: true }
      vectorize { stage: "max_pool" dim: "d3" level: 1 update: true }
      vector_width: 4
      unroll { stage: "max_pool" dim: "rk0" update: true }
      tail: TAIL_GUARD_WITH_IF
    }
  }
  stages { stage: "relu" compute: INLINE }
  stages {
    stage: "conv"
    compute: AT
    compute_at { stage: "max_pool" dim: "d2" update: true }
    store: AT
    store_at { stage: "max_pool" dim: "d1" update: true }
    update {
      splits { dim: "rc" factors: 2 }
      tail: TAIL_GUARD_WITH_IF
    }
  }
)pb";

// A schedule of MatMulTwoOutputs: a stage stored at root and computed at a loop, every
// tail strategy Halide accepts on each kind of split.
inline constexpr char kMatMulTwoOutputsSchedule[] = R"pb(
  stages {
    stage: "reduce_sum"
    compute: ROOT
    update {
      splits { dim: "r0" factors: 8 }
      vectorize { stage: "reduce_sum" dim: "d0" update: true }
      loop_order { stage: "reduce_sum" dim: "d0" update: true }
      loop_order { stage: "reduce_sum" dim: "r0" level: 1 update: true }
      tail: TAIL_GUARD_WITH_IF
    }
  }
  stages {
    stage: "tanh"
    compute: ROOT
    pure {
      splits { dim: "d1" factors: 8 }
      vectorize { stage: "tanh" dim: "d1" level: 1 }
      parallel { stage: "tanh" dim: "d1" level: 0 }
      tail: TAIL_SHIFT_INWARDS
    }
  }
  stages {
    stage: "add"
    compute: AT
    compute_at { stage: "tanh" dim: "d0" }
    store: ROOT
  }
  stages {
    stage: "matmul"
    compute: ROOT
    pure {
      splits { dim: "d1" factors: 8 factors: 2 }
      vectorize { stage: "matmul" dim: "d1" level: 2 }
      unroll { stage: "matmul" dim: "d1" level: 1 }
      tail: TAIL_ROUND_UP
    }
    update {
      splits { dim: "d1" factors: 16 }
      splits { dim: "rk" factors: 4 }
      loop_order { stage: "matmul" dim: "d1" level: 1 update: true }
      loop_order { stage: "matmul" dim: "rk" level: 1 update: true }
      loop_order { stage: "matmul" dim: "rk" level: 0 update: true }
      vectorize { stage: "matmul" dim: "d1" level: 1 update: true }
      parallel { stage: "matmul" dim: "d0" update: true }
      tail: TAIL_GUARD_WITH_IF
    }
  }
)pb";

// The spec with stages renamed (references and outputs follow).
PipelineSpec RenameStages(PipelineSpec spec, const std::map<std::string, std::string>& names);

// A validated graph, or a failed test and an empty graph.
PipelineGraph MustBuild(const StatusOr<PipelineSpec>& spec);

// A ScheduleSpec from protobuf text format, or a failed test.
ScheduleSpec ParseSchedule(const std::string& text);

// The loops of one definition of `func` in the nest, outermost first.
std::vector<HalideLoop> DefinitionLoopsOf(const LoopNest& nest, const std::string& func,
                                          int definition);

// The placement of `func`, or a placement with an empty func if it is not produced.
FuncPlacement PlacementOf(const LoopNest& nest, const std::string& func);

}  // namespace testing_pipelines
}  // namespace schedfarm
