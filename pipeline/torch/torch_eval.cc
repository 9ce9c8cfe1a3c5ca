// The oracle evaluates each stage with ATen operators on CPU in the stage's dtype,
// following the op semantics of pipeline/ops.h where they differ from torch's own
// (asymmetric pads, ceil-mode pooling windows, count_include_pad): convolutions with
// asymmetric pads and pools pad explicitly, pools take their windows with unfold and count the valid
// positions with a mask.
#include "pipeline/torch/torch_eval.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace schedfarm {
namespace {

// An error raised while evaluating one stage; turned into a Status naming the stage.
struct EvalError {
  std::string message;
};

[[noreturn]] void Fail(std::string message) { throw EvalError{std::move(message)}; }

at::ScalarType ScalarTypeOf(DataType dtype) {
  switch (dtype) {
    case FLOAT32:
      return at::kFloat;
    case FLOAT64:
      return at::kDouble;
    default:
      Fail(std::string("unsupported dtype ") + DataTypeName(dtype));
  }
}

std::vector<int64_t> ToVector(const google::protobuf::RepeatedField<int64_t>& field) {
  return std::vector<int64_t>(field.begin(), field.end());
}

// Argument of at::constant_pad_nd for begin/end pads of the last pads.size()/2 dims
// (ATen lists the last dim first).
std::vector<int64_t> AtenPadArgument(const std::vector<int64_t>& begins,
                                     const std::vector<int64_t>& ends) {
  std::vector<int64_t> result;
  for (size_t i = begins.size(); i-- > 0;) {
    result.push_back(begins[i]);
    result.push_back(ends[i]);
  }
  return result;
}

// The values of `tensor` in its logical order, whatever its memory format.
HostTensor ToHost(const at::Tensor& tensor, DataType dtype) {
  at::Tensor t = tensor.to(at::kDouble).contiguous();
  HostTensor host;
  host.dtype = dtype;
  host.shape = Shape(t.sizes().begin(), t.sizes().end());
  const double* data = t.data_ptr<double>();
  host.data.assign(data, data + t.numel());
  return host;
}

at::Tensor FromHost(const HostTensor& host, DataType dtype) {
  at::Tensor t = at::empty(host.shape, at::TensorOptions().dtype(at::kDouble));
  std::copy(host.data.begin(), host.data.end(), t.data_ptr<double>());
  return t.to(ScalarTypeOf(dtype));
}

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------

at::Tensor EvalConv(const Stage& stage, const std::vector<at::Tensor>& in) {
  const Attributes& a = stage.attrs();
  const at::Tensor& x = in[0];
  const size_t ns = static_cast<size_t>(x.dim()) - 2;
  std::vector<int64_t> strides = ToVector(a.strides());
  std::vector<int64_t> dilations = ToVector(a.dilations());
  std::vector<int64_t> pads = ToVector(a.pads());
  std::vector<int64_t> begins(pads.begin(), pads.begin() + ns);
  std::vector<int64_t> ends(pads.begin() + ns, pads.end());
  c10::optional<at::Tensor> bias;
  if (in.size() > 2) bias = in[2];
  std::vector<int64_t> zeros(ns, 0);
  if (begins == ends) {  // symmetric: torch's own padding, as an eager model runs it
    return at::convolution(x, in[1], bias, strides, begins, dilations, /*transposed=*/false,
                           zeros, a.groups());
  }
  at::Tensor padded = at::constant_pad_nd(x, AtenPadArgument(begins, ends), 0);
  return at::convolution(padded, in[1], bias, strides, zeros, dilations, /*transposed=*/false,
                         zeros, a.groups());
}

at::Tensor EvalMatMul(const Stage& stage, const std::vector<at::Tensor>& in) {
  const Attributes& attrs = stage.attrs();
  at::Tensor a = attrs.trans_a() ? in[0].transpose(-1, -2) : in[0];
  at::Tensor b = attrs.trans_b() ? in[1].transpose(-1, -2) : in[1];
  at::Tensor result = at::matmul(a, b);
  const double alpha = attrs.has_alpha() ? attrs.alpha() : 1.0;
  const double beta = attrs.has_beta() ? attrs.beta() : 1.0;
  if (alpha != 1.0) result = result * alpha;
  if (in.size() > 2) result = result + in[2] * beta;
  return result;
}

// POOL over windows of `out_shape` (the stage's output shape): window o of spatial dim
// s reads input positions o*stride - pad_begin + k*dilation, k < kernel. MAX ignores
// positions outside the input; AVG divides the sum of the positions inside the input
// by their count, or, with count_include_pad, by the count of positions inside the
// padded extent [-pad_begin, S + pad_end).
at::Tensor EvalPool(const Stage& stage, const std::vector<at::Tensor>& in) {
  const Attributes& a = stage.attrs();
  const at::Tensor& x = in[0];
  const int64_t rank = x.dim();
  const size_t ns = static_cast<size_t>(rank) - 2;
  std::vector<int64_t> kernel = ToVector(a.kernel());
  std::vector<int64_t> strides = ToVector(a.strides());
  std::vector<int64_t> dilations = ToVector(a.dilations());
  std::vector<int64_t> pads = ToVector(a.pads());
  const bool is_max = a.pool() == MAX_POOL;
  if (!is_max && a.pool() != AVG_POOL) Fail("unknown pool function");

  // Pad every spatial dim so that all windows fit: begin by pad_begin, end by enough
  // for the last window (at least pad_end, so the padded extent is covered too).
  std::vector<int64_t> begins(ns), ends(ns), spatial(ns), padded_end(ns);
  for (size_t s = 0; s < ns; ++s) {
    const int64_t in_extent = x.size(2 + s);
    const int64_t out_extent = stage.shape(2 + s);
    const int64_t span = dilations[s] * (kernel[s] - 1) + 1;
    begins[s] = pads[s];
    const int64_t needed = (out_extent - 1) * strides[s] + span - pads[s] - in_extent;
    ends[s] = std::max(pads[ns + s], needed);
    spatial[s] = in_extent;
    padded_end[s] = pads[ns + s];
  }
  const double fill = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
  at::Tensor padded = at::constant_pad_nd(x, AtenPadArgument(begins, ends), fill);

  // Windows: unfold each spatial dim (appending a window dim of the full dilated span),
  // then keep every dilation-th element of it.
  auto windows = [&](at::Tensor t, int64_t first_spatial_dim) {
    for (size_t s = 0; s < ns; ++s) {
      const int64_t span = dilations[s] * (kernel[s] - 1) + 1;
      t = t.unfold(first_spatial_dim + s, span, strides[s]);
      t = t.slice(t.dim() - 1, 0, span, dilations[s]);
    }
    // Keep exactly the declared number of windows per dim.
    for (size_t s = 0; s < ns; ++s) {
      t = t.narrow(first_spatial_dim + s, 0, stage.shape(2 + s));
    }
    return t;
  };
  std::vector<int64_t> window_dims;
  for (size_t s = 0; s < ns; ++s) window_dims.push_back(rank + s);

  if (is_max) return at::amax(windows(padded, 2), window_dims);

  at::Tensor sums = at::sum(windows(padded, 2), window_dims);
  // Count of positions in each window that lie inside the input (or the padded extent).
  at::TensorOptions options = at::TensorOptions().dtype(x.scalar_type());
  at::Tensor valid;
  if (a.count_include_pad()) {
    std::vector<int64_t> extended(ns);
    for (size_t s = 0; s < ns; ++s) extended[s] = begins[s] + spatial[s] + padded_end[s];
    valid = at::ones(extended, options);
    std::vector<int64_t> zero_begins(ns, 0), rest(ns);
    for (size_t s = 0; s < ns; ++s) rest[s] = begins[s] + spatial[s] + ends[s] - extended[s];
    valid = at::constant_pad_nd(valid, AtenPadArgument(zero_begins, rest), 0);
  } else {
    valid = at::constant_pad_nd(at::ones(spatial, options), AtenPadArgument(begins, ends), 0);
  }
  std::vector<int64_t> count_dims;
  for (size_t s = 0; s < ns; ++s) count_dims.push_back(ns + s);
  at::Tensor counts = at::sum(windows(valid, 0), count_dims);
  return sums / counts;
}

at::Tensor EvalReduce(const Stage& stage, const std::vector<at::Tensor>& in) {
  const Attributes& a = stage.attrs();
  const at::Tensor& x = in[0];
  const std::vector<int64_t> axes = ToVector(a.axes());
  const bool keep = a.keepdims();
  switch (a.reduce()) {
    case SUM:
      return at::sum(x, axes, keep);
    case MEAN:
      return at::mean(x, axes, keep);
    case REDUCE_MAX:
      return at::amax(x, axes, keep);
    case REDUCE_MIN:
      return at::amin(x, axes, keep);
    case SUM_SQUARE:
      return at::sum(x * x, axes, keep);
    default:
      Fail("unknown reduce function");
  }
}

at::Tensor EvalUnary(const Stage& stage, const at::Tensor& x) {
  const Attributes& a = stage.attrs();
  auto alpha_or = [&](double fallback) { return a.has_alpha() ? a.alpha() : fallback; };
  auto beta_or = [&](double fallback) { return a.has_beta() ? a.beta() : fallback; };
  switch (a.unary()) {
    case RELU:
      return at::relu(x);
    case SIGMOID:
      return at::sigmoid(x);
    case TANH:
      return at::tanh(x);
    case GELU:
      return at::gelu(x, "none");
    case EXP:
      return at::exp(x);
    case LOG:
      return at::log(x);
    case SQRT:
      return at::sqrt(x);
    case RSQRT:
      return at::rsqrt(x);
    case NEG:
      return at::neg(x);
    case ABS:
      return at::abs(x);
    case RECIPROCAL:
      return at::reciprocal(x);
    case ERF:
      return at::erf(x);
    case CLIP:
      return at::clamp(x, a.clip_min(), a.clip_max());
    case LEAKY_RELU:
      return at::leaky_relu(x, alpha_or(0.01));
    case ELU:
      return at::elu(x, alpha_or(1.0));
    case SOFTPLUS:
      // log(1 + exp(x)), evaluated without overflow.
      return at::relu(x) + at::log1p(at::exp(-at::abs(x)));
    case HARD_SIGMOID:
      return at::clamp(x * alpha_or(0.2) + beta_or(0.5), 0.0, 1.0);
    case HARD_SWISH:
      return x * at::clamp(x + 3.0, 0.0, 6.0) / 6.0;
    case SILU:
      return at::silu(x);
    case IDENTITY:
      return x;  // libtorch's identity: no copy
    case SQUARE:
      return x * x;
    case FLOOR:
      return at::floor(x);
    case CEIL:
      return at::ceil(x);
    case SIN:
      return at::sin(x);
    case COS:
      return at::cos(x);
    case SIGN:
      return at::sign(x);
    case SCALE:
      return x * alpha_or(1.0) + beta_or(0.0);
    default:
      Fail("unknown unary function " + std::to_string(a.unary()));
  }
}

at::Tensor EvalBinary(const Stage& stage, const at::Tensor& x, const at::Tensor& y) {
  switch (stage.attrs().binary()) {
    case ADD:
      return x + y;
    case SUB:
      return x - y;
    case MUL:
      return x * y;
    case DIV:
      return x / y;
    case MAX:
      return at::maximum(x, y);
    case MIN:
      return at::minimum(x, y);
    case POW:
      return at::pow(x, y);
    default:
      Fail("unknown binary function " + std::to_string(stage.attrs().binary()));
  }
}

// Index in [0, extent) that position i of the padded dim (i < 0 or i >= extent in the
// padding) reads. REFLECT pads are smaller than the extent (checked by the validator).
int64_t SourceIndex(int64_t i, int64_t extent, PadMode mode) {
  if (mode == EDGE) return std::clamp<int64_t>(i, 0, extent - 1);
  if (i < 0) return -i;
  return i < extent ? i : 2 * (extent - 1) - i;
}

at::Tensor EvalPad(const Stage& stage, const at::Tensor& x) {
  const Attributes& a = stage.attrs();
  const size_t rank = static_cast<size_t>(x.dim());
  std::vector<int64_t> pads = ToVector(a.pads());
  std::vector<int64_t> begins(pads.begin(), pads.begin() + rank);
  std::vector<int64_t> ends(pads.begin() + rank, pads.end());
  if (a.pad_mode() == CONSTANT) {
    return at::constant_pad_nd(x, AtenPadArgument(begins, ends), a.pad_value());
  }
  if (a.pad_mode() != EDGE && a.pad_mode() != REFLECT) Fail("unknown pad mode");
  at::Tensor result = x;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t extent = x.size(d);
    std::vector<int64_t> index;
    for (int64_t i = -begins[d]; i < extent + ends[d]; ++i) {
      index.push_back(SourceIndex(i, extent, a.pad_mode()));
    }
    result = at::index_select(result, d, at::tensor(index, at::kLong));
  }
  return result;
}

at::Tensor EvalSlice(const Stage& stage, const at::Tensor& x) {
  const Attributes& a = stage.attrs();
  at::Tensor result = x;
  for (int i = 0; i < a.axes_size(); ++i) {
    const int64_t axis = a.axes(i);
    const int64_t start = a.starts(i), step = a.steps(i);
    const int64_t last = start + (stage.shape(axis) - 1) * step;
    at::Tensor index = at::arange(start, last + (step > 0 ? 1 : -1), step, at::kLong);
    result = at::index_select(result, axis, index);
  }
  return result;
}

at::Tensor EvalUpsample(const Stage& stage, const at::Tensor& x) {
  const Attributes& a = stage.attrs();
  at::Tensor result = x;
  for (int d = 0; d < a.scales_size(); ++d) {
    if (a.scales(d) > 1) result = at::repeat_interleave(result, a.scales(d), d);
  }
  return result;
}

// Evaluates one stage of a validated graph (input counts and attributes are checked).
at::Tensor EvalStage(const Stage& stage, const std::vector<at::Tensor>& in) {
  switch (stage.op()) {
    case CONV:
      return EvalConv(stage, in);
    case MATMUL:
      return EvalMatMul(stage, in);
    case POOL:
      return EvalPool(stage, in);
    case REDUCE:
      return EvalReduce(stage, in);
    case UNARY:
      return EvalUnary(stage, in[0]);
    case BINARY:
      return EvalBinary(stage, in[0], in[1]);
    case PAD:
      return EvalPad(stage, in[0]);
    case CONCAT:
      return at::cat(in, stage.attrs().axis());
    case SLICE:
      return EvalSlice(stage, in[0]);
    case TRANSPOSE:
      return in[0].permute(ToVector(stage.attrs().perm()));
    case RESHAPE:
      return in[0].reshape(ToVector(stage.shape()));
    case UPSAMPLE:
      return EvalUpsample(stage, in[0]);
    default:
      Fail("unknown op " + std::to_string(stage.op()));
  }
}

// The memory format `layout` keeps a tensor of `rank` dims in.
at::MemoryFormat FormatOf(TorchLayout layout, int64_t rank) {
  return layout == TorchLayout::kChannelsLast && rank == 4 ? at::MemoryFormat::ChannelsLast
                                                           : at::MemoryFormat::Contiguous;
}

}  // namespace

const char* TorchLayoutName(TorchLayout layout) {
  return layout == TorchLayout::kChannelsLast ? "channels_last" : "nchw";
}

bool HasFourDimTensors(const PipelineGraph& graph) {
  for (const Value& value : graph.values()) {
    if (value.shape.size() == 4) return true;
  }
  return false;
}

struct TorchProgram::Impl {
  const PipelineGraph* graph = nullptr;
  TorchLayout layout = TorchLayout::kAsImported;
  std::string where;
  std::vector<at::Tensor> prepared;  // inputs and parameters by value id
  std::vector<at::Tensor> outputs;   // of the last run, spec.outputs order
  TorchLayoutCensus census;          // of the last run
};

TorchProgram::TorchProgram(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TorchProgram::TorchProgram(TorchProgram&&) noexcept = default;
TorchProgram& TorchProgram::operator=(TorchProgram&&) noexcept = default;
TorchProgram::~TorchProgram() = default;

StatusOr<TorchProgram> TorchProgram::Prepare(const PipelineGraph& graph,
                                             const std::vector<HostTensor>& inputs,
                                             TorchLayout layout) {
  const PipelineSpec& spec = graph.spec();
  auto impl = std::make_unique<Impl>();
  impl->graph = &graph;
  impl->layout = layout;
  impl->where = "pipeline '" + spec.name() + "'";
  const std::string& where = impl->where;
  if (static_cast<int>(inputs.size()) != spec.inputs_size()) {
    return Status::Error(where + ": " + std::to_string(inputs.size()) +
                         " input tensors given, the pipeline has " +
                         std::to_string(spec.inputs_size()));
  }
  std::vector<at::Tensor>& values = impl->prepared;
  values.resize(graph.values().size());
  for (size_t id = 0; id < graph.values().size(); ++id) {
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
        values[id] = FromHost(input, value.dtype);
      } else if (value.kind == Value::Kind::kParameter) {
        StatusOr<HostTensor> param = MaterializeParameter(spec.parameters(value.index));
        if (!param.ok()) {
          return param.status().WithContext(where + ", parameter '" + value.name + "'");
        }
        values[id] = FromHost(*param, value.dtype);
      }
      if (values[id].defined())
        values[id] = values[id].contiguous(FormatOf(layout, values[id].dim()));
    } catch (const EvalError& e) {
      return Status::Error(where + ", tensor '" + value.name + "': " + e.message);
    } catch (const std::exception& e) {
      return Status::Error(where + ", tensor '" + value.name + "': " + e.what());
    }
  }
  return TorchProgram(std::move(impl));
}

Status TorchProgram::Run() {
  const PipelineGraph& graph = *impl_->graph;
  const std::string& where = impl_->where;
  std::vector<at::Tensor> values = impl_->prepared;
  // Reads left per value, so that intermediate tensors are freed after their last use.
  std::vector<int> reads_left(graph.values().size(), 0);
  for (int s = 0; s < graph.num_stages(); ++s) {
    for (int id : graph.stage_inputs(s)) ++reads_left[id];
  }
  for (int s : graph.output_stages()) ++reads_left[graph.stage_value(s)];
  TorchLayoutCensus census;

  for (int s : graph.topological_order()) {
    const Stage& stage = graph.stage(s);
    const std::string stage_where =
        where + ", stage '" + stage.name() + "' (" + OpDisplayName(stage) + ")";
    try {
      const at::ScalarType type = ScalarTypeOf(stage.dtype());
      std::vector<at::Tensor> in;
      for (int id : graph.stage_inputs(s)) in.push_back(values[id].to(type));
      at::Tensor out = EvalStage(stage, in).to(type);
      if (out.dim() == 4) {
        ++census.four_d_stages;
        census.channels_last_stages +=
            out.is_contiguous(at::MemoryFormat::ChannelsLast) && !out.is_contiguous();
      }
      out = out.contiguous(FormatOf(impl_->layout, out.dim()));
      const Shape declared(stage.shape().begin(), stage.shape().end());
      const Shape got(out.sizes().begin(), out.sizes().end());
      if (got != declared) {
        return Status::Error(stage_where + ": evaluates to shape " + ShapeToString(got) +
                             ", declared " + ShapeToString(declared));
      }
      values[graph.stage_value(s)] = std::move(out);
      for (int id : graph.stage_inputs(s)) {
        if (--reads_left[id] == 0) values[id].reset();
      }
    } catch (const EvalError& e) {
      return Status::Error(stage_where + ": " + e.message);
    } catch (const c10::Error& e) {
      return Status::Error(stage_where + ": libtorch: " + e.what_without_backtrace());
    } catch (const std::exception& e) {
      return Status::Error(stage_where + ": " + e.what());
    }
  }

  impl_->outputs.clear();
  for (int s : graph.output_stages()) {
    const at::Tensor& out = values[graph.stage_value(s)];
    census.channels_last_outputs +=
        out.dim() == 4 && out.is_contiguous(at::MemoryFormat::ChannelsLast) && !out.is_contiguous();
    impl_->outputs.push_back(out);
  }
  impl_->census = census;
  return Status::Ok();
}

TorchLayoutCensus TorchProgram::Census() const { return impl_->census; }

std::vector<HostTensor> TorchProgram::Outputs() const {
  std::vector<HostTensor> outputs;
  const PipelineGraph& graph = *impl_->graph;
  for (size_t i = 0; i < impl_->outputs.size(); ++i) {
    outputs.push_back(ToHost(impl_->outputs[i], graph.stage(graph.output_stages()[i]).dtype()));
  }
  return outputs;
}

StatusOr<std::vector<HostTensor>> EvaluateWithTorch(const PipelineGraph& graph,
                                                    const std::vector<HostTensor>& inputs) {
  SCHEDFARM_ASSIGN_OR_RETURN(TorchProgram program, TorchProgram::Prepare(graph, inputs));
  SCHEDFARM_RETURN_IF_ERROR(program.Run());
  return program.Outputs();
}

}  // namespace schedfarm
