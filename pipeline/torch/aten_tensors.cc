#include "pipeline/torch/aten_tensors.h"

#include <algorithm>
#include <exception>
#include <stdexcept>

namespace schedfarm {

at::ScalarType ScalarTypeOf(DataType dtype) {
  switch (dtype) {
    case FLOAT32:
      return at::kFloat;
    case FLOAT64:
      return at::kDouble;
    default:
      throw std::invalid_argument(std::string("unsupported dtype ") + DataTypeName(dtype));
  }
}

at::Tensor ToAten(const HostTensor& host, DataType dtype) {
  at::Tensor t = at::empty(host.shape, at::TensorOptions().dtype(at::kDouble));
  std::copy(host.data.begin(), host.data.end(), t.data_ptr<double>());
  return t.to(ScalarTypeOf(dtype));
}

HostTensor ToHost(const at::Tensor& tensor, DataType dtype) {
  at::Tensor t = tensor.to(at::kDouble).contiguous();
  HostTensor host;
  host.dtype = dtype;
  host.shape = Shape(t.sizes().begin(), t.sizes().end());
  const double* data = t.data_ptr<double>();
  host.data.assign(data, data + t.numel());
  return host;
}

StatusOr<std::vector<at::Tensor>> AtenValues(const PipelineGraph& graph,
                                             const std::vector<HostTensor>& inputs,
                                             const std::string& where) {
  const PipelineSpec& spec = graph.spec();
  if (static_cast<int>(inputs.size()) != spec.inputs_size()) {
    return Status::Error(where + ": " + std::to_string(inputs.size()) +
                         " input tensors given, the pipeline has " +
                         std::to_string(spec.inputs_size()));
  }
  std::vector<at::Tensor> values(graph.values().size());
  for (size_t id = 0; id < values.size(); ++id) {
    const Value& value = graph.value(static_cast<int>(id));
    try {
      if (value.kind == Value::Kind::kInput) {
        const HostTensor& input = inputs[value.index];
        if (input.shape != value.shape || input.size() != NumElements(value.shape)) {
          return Status::Error(where + ", input '" + value.name + "': given " +
                               ShapeToString(input.shape) + " with " +
                               std::to_string(input.size()) + " values, expected " +
                               ShapeToString(value.shape));
        }
        values[id] = ToAten(input, value.dtype);
      } else if (value.kind == Value::Kind::kParameter) {
        StatusOr<HostTensor> param = MaterializeParameter(spec.parameters(value.index));
        if (!param.ok()) {
          return param.status().WithContext(where + ", parameter '" + value.name + "'");
        }
        values[id] = ToAten(*param, value.dtype);
      }
    } catch (const std::exception& e) {
      return Status::Error(where + ", tensor '" + value.name + "': " + e.what());
    }
  }
  return values;
}

}  // namespace schedfarm
