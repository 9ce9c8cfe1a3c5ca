// HostTensor: a dense tensor in host memory, the currency between the Halide
// runner, the libtorch oracle, the ONNX test data and the CLI; plus the
// deterministic pseudo-random data every part uses for inputs and parameters, and
// the tolerance-based comparison of outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/ops.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// Values are held as doubles whatever the dtype; `dtype` says what they represent
// (float32 tensors hold values exactly representable as float).
struct HostTensor {
  DataType dtype = FLOAT32;
  Shape shape;
  std::vector<double> data;  // row-major

  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

// Uniform value in [-1, 1) for (seed, index): a counter-based generator (SplitMix64
// finaliser), identical on every machine.
double DeterministicUniform(uint64_t seed, uint64_t index);

// Deterministic input tensor number `input_index` of a pipeline: uniform in [-1, 1),
// rounded to the dtype.
HostTensor DeterministicInput(const TensorDecl& decl, int input_index);
// All inputs of a pipeline, in spec order.
std::vector<HostTensor> DeterministicInputs(const PipelineSpec& spec);

// The values of a parameter (random or raw data), or an error if raw_data has the
// wrong length.
StatusOr<HostTensor> MaterializeParameter(const Parameter& param);

// Parameter.raw_data of `values` in `dtype`: little-endian, float32 values rounded.
std::string EncodeRawData(const std::vector<double>& values, DataType dtype);

// `spec` with every RandomInit parameter replaced by raw_data of the values
// MaterializeParameter gives it: the same function, as a reader of the parameters'
// values (an exported ONNX model's initializers) sees it. Raw data is kept as it is.
PipelineSpec WithMaterializedParameters(const PipelineSpec& spec);

// Rounds v to the precision of dtype (float32: nearest float).
double RoundToDtype(double v, DataType dtype);

// Tolerance for comparing an output against a reference: element-wise
// |actual - expected| <= atol * max(1, max|expected|) + rtol * |expected|.
struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
// Default tolerance per dtype: f32 rtol 1e-3, atol 1e-4; f64 rtol 1e-9, atol 1e-10.
Tolerance DefaultTolerance(DataType dtype);

struct Comparison {
  bool match = true;
  int64_t mismatches = 0;
  double max_abs_error = 0;
  int64_t worst_index = -1;  // flat index of the largest violation (or error)
  std::string message;       // empty on match; otherwise says where and by how much
};
Comparison CompareTensors(const HostTensor& actual, const HostTensor& expected,
                          const Tolerance& tolerance);

// Hex digest of the values rounded to the dtype, for logs and measurements.
std::string TensorChecksum(const HostTensor& tensor);

}  // namespace schedfarm
