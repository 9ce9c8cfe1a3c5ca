// ONNX import: an ONNX model (opset 11-17) becomes a PipelineSpec. Initializers
// become parameters; static shape computations that exporters emit (Shape, Gather,
// Unsqueeze, Constant, Concat, Reshape targets...) are folded at import. An
// unsupported operator or attribute is an error naming the node, its op type and what
// is supported. Also reads ONNX TensorProto files (the backend test data format).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"

namespace schedfarm {

struct OnnxImportOptions {
  MathMode math = EXACT;
  // Extents for symbolic input dims (e.g. a dynamic batch), by dim_param name; any
  // symbolic dim not listed is an error naming the input and dim.
  std::map<std::string, int64_t> dim_values;
  // Values of graph inputs known at import, by input name, each a serialized
  // onnx.TensorProto (the backend test data format). An integer input given here is
  // folded like an initializer (e.g. the `shape` of a Reshape); a float input stays
  // a pipeline input and its value is used only where a node needs a constant
  // (Resize scales, Pad's constant value, Range bounds...). Shapes of given inputs
  // also resolve their symbolic dims.
  std::map<std::string, std::string> input_values;
};

StatusOr<PipelineSpec> ImportOnnxFile(const std::string& path,
                                      const OnnxImportOptions& options = {});
StatusOr<PipelineSpec> ImportOnnxModel(const std::string& bytes, const std::string& what,
                                       const OnnxImportOptions& options = {});

// Reads a serialized onnx.TensorProto (e.g. test_data_set_0/input_0.pb).
StatusOr<HostTensor> ReadOnnxTensorFile(const std::string& path);

}  // namespace schedfarm
