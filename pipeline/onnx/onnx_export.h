// ONNX export: a PipelineSpec written as a serialized onnx.ModelProto (opset 17, IR
// version 8) that ONNX Runtime runs, computing the pipeline's function with its
// weights. Parameters become initializers holding the values the farm materializes
// (RandomInit ones too); ops ONNX has no operator for become small composites
// (docs/ONNX.md, "Export"). The model is always the logical graph, 4-D tensors NCHW:
// the pipeline's boundary_layout is how the farm stores them in memory, not part of
// the function. MathMode is not either: transcendental functions are ONNX's own.
#pragma once

#include <string>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The model's bytes, or an error for an invalid pipeline (naming it and what is wrong,
// as PipelineGraph::Build does) or one whose weights exceed protobuf's 2 GiB limit.
StatusOr<std::string> ExportOnnxModel(const PipelineSpec& spec);

}  // namespace schedfarm
