// Small pipelines for the autoschedule tests, and helpers to find their stages.
#pragma once

#include <string>

#include "pipeline/graph.h"

namespace schedfarm {
namespace autoschedule_test {

// x [32, 48] -> linear to 32 (one MATMUL stage with its bias) -> relu (output).
PipelineGraph Mlp();
// x [1, 8, 10, 10] -> 3x3 conv, pad 1, 8 channels -> relu (output): the conv reads its
// input through a boundary-condition helper Func.
PipelineGraph ConvRelu();
// A zoo block at a quarter of its default spatial size and channel counts.
PipelineGraph SmallZoo(const std::string& name);
// The index of the first stage with op `op`; fails the test if there is none.
int StageWithOp(const PipelineGraph& graph, OpKind op);

}  // namespace autoschedule_test
}  // namespace schedfarm
