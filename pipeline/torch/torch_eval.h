// Evaluates a pipeline with libtorch (ATen) operators, one stage at a time: the
// independent oracle the Halide lowering is checked against, and later the
// libtorch baseline. Torch-free header.
#pragma once

#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

// Outputs of `graph` (spec.outputs order) for `inputs` (spec order). Transcendental
// functions are computed exactly whatever the stage's math mode.
StatusOr<std::vector<HostTensor>> EvaluateWithTorch(const PipelineGraph& graph,
                                                    const std::vector<HostTensor>& inputs);

}  // namespace schedfarm
