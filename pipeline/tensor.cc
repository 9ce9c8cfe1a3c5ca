#include "pipeline/tensor.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "common/random.h"
#include "common/sha256.h"

namespace schedfarm {
double DeterministicUniform(uint64_t seed, uint64_t index) {
  uint64_t bits = SplitMix64(SplitMix64(seed) ^ index);
  double unit = static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);  // [0, 1)
  return 2.0 * unit - 1.0;
}

double RoundToDtype(double v, DataType dtype) {
  return dtype == FLOAT32 ? static_cast<double>(static_cast<float>(v)) : v;
}

HostTensor DeterministicInput(const TensorDecl& decl, int input_index) {
  HostTensor t;
  t.dtype = decl.dtype();
  t.shape.assign(decl.shape().begin(), decl.shape().end());
  const uint64_t seed = 0x5eed000000000000ull + static_cast<uint64_t>(input_index);
  t.data.resize(static_cast<size_t>(NumElements(t.shape)));
  for (size_t i = 0; i < t.data.size(); ++i) {
    t.data[i] = RoundToDtype(DeterministicUniform(seed, i), t.dtype);
  }
  return t;
}

std::vector<HostTensor> DeterministicInputs(const PipelineSpec& spec) {
  std::vector<HostTensor> inputs;
  for (int i = 0; i < spec.inputs_size(); ++i) inputs.push_back(DeterministicInput(spec.inputs(i), i));
  return inputs;
}

StatusOr<HostTensor> MaterializeParameter(const Parameter& param) {
  HostTensor t;
  t.dtype = param.tensor().dtype();
  t.shape.assign(param.tensor().shape().begin(), param.tensor().shape().end());
  const size_t n = static_cast<size_t>(NumElements(t.shape));
  t.data.resize(n);
  if (param.init_case() == Parameter::kRandom) {
    const RandomInit& r = param.random();
    for (size_t i = 0; i < n; ++i) {
      t.data[i] = RoundToDtype(r.offset() + r.scale() * DeterministicUniform(r.seed(), i), t.dtype);
    }
    return t;
  }
  const std::string& raw = param.raw_data();
  const size_t width = static_cast<size_t>(BytesPerElement(t.dtype));
  if (width == 0 || raw.size() != n * width) {
    return Status::Error("parameter '" + param.tensor().name() + "': raw_data has " +
                         std::to_string(raw.size()) + " bytes, expected " +
                         std::to_string(n * width));
  }
  for (size_t i = 0; i < n; ++i) {
    if (t.dtype == FLOAT32) {
      float v;
      std::memcpy(&v, raw.data() + i * 4, 4);
      t.data[i] = v;
    } else {
      double v;
      std::memcpy(&v, raw.data() + i * 8, 8);
      t.data[i] = v;
    }
  }
  return t;
}

std::string EncodeRawData(const std::vector<double>& values, DataType dtype) {
  std::string raw;
  raw.reserve(values.size() * static_cast<size_t>(BytesPerElement(dtype)));
  for (double v : values) {
    if (dtype == FLOAT32) {
      const float f = static_cast<float>(v);
      raw.append(reinterpret_cast<const char*>(&f), sizeof(f));
    } else {
      raw.append(reinterpret_cast<const char*>(&v), sizeof(v));
    }
  }
  return raw;
}

PipelineSpec WithMaterializedParameters(const PipelineSpec& spec) {
  PipelineSpec result = spec;
  for (Parameter& param : *result.mutable_parameters()) {
    if (param.init_case() != Parameter::kRandom) continue;
    const HostTensor values = *MaterializeParameter(param);  // random values never fail
    param.set_raw_data(EncodeRawData(values.data, values.dtype));
  }
  return result;
}

Tolerance DefaultTolerance(DataType dtype) {
  if (dtype == FLOAT64) return {1e-9, 1e-10};
  return {1e-3, 1e-4};
}

Comparison CompareTensors(const HostTensor& actual, const HostTensor& expected,
                          const Tolerance& tolerance) {
  Comparison c;
  if (actual.shape != expected.shape || actual.data.size() != expected.data.size()) {
    c.match = false;
    c.message = "shape " + ShapeToString(actual.shape) + " differs from the expected " +
                ShapeToString(expected.shape);
    return c;
  }
  double scale = 1;
  for (double e : expected.data) {
    if (std::isfinite(e)) scale = std::max(scale, std::fabs(e));
  }
  double worst_excess = 0;
  for (size_t i = 0; i < actual.data.size(); ++i) {
    double a = actual.data[i], e = expected.data[i];
    bool ok;
    double err;
    if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
      err = ok ? 0 : INFINITY;
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = a == e;
      err = ok ? 0 : INFINITY;
    } else {
      err = std::fabs(a - e);
      ok = err <= tolerance.atol * scale + tolerance.rtol * std::fabs(e);
    }
    if (err > c.max_abs_error) c.max_abs_error = err;
    if (!ok) {
      ++c.mismatches;
      double excess = err - (tolerance.atol * scale + tolerance.rtol * std::fabs(e));
      if (c.worst_index < 0 || excess > worst_excess || std::isnan(excess)) {
        worst_excess = excess;
        c.worst_index = static_cast<int64_t>(i);
      }
    }
  }
  if (c.mismatches > 0) {
    c.match = false;
    std::ostringstream msg;
    msg.precision(9);
    msg << c.mismatches << " of " << actual.data.size() << " values differ; worst at flat index "
        << c.worst_index << ": got " << actual.data[c.worst_index] << ", expected "
        << expected.data[c.worst_index] << " (rtol " << tolerance.rtol << ", atol "
        << tolerance.atol << " x " << scale << ")";
    c.message = msg.str();
  }
  return c;
}

std::string TensorChecksum(const HostTensor& tensor) {
  Sha256 hasher;
  for (double v : tensor.data) {
    if (tensor.dtype == FLOAT32) {
      float f = static_cast<float>(v);
      hasher.Update(std::string_view(reinterpret_cast<const char*>(&f), sizeof(f)));
    } else {
      hasher.Update(std::string_view(reinterpret_cast<const char*>(&v), sizeof(v)));
    }
  }
  return hasher.HexDigest().substr(0, 16);
}

}  // namespace schedfarm
