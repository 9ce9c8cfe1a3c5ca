// The oracle evaluates each stage with ATen's native operators on CPU in the stage's
// dtype, under inference mode, making the calls of native_calls.h (the TorchScript
// generator writes the same ones): convolutions with their own padding when it is
// symmetric, torch's pools where their semantics are those of pipeline/ops.h and a
// padded input or unfolded windows where they are not, linear or addmm for a matmul
// with a bias.
#include "pipeline/torch/torch_eval.h"

#include <ATen/ATen.h>
#include <c10/core/InferenceMode.h>

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "pipeline/torch/aten_tensors.h"
#include "pipeline/torch/native_calls.h"

namespace schedfarm {
namespace {

// An error raised while evaluating one stage; turned into a Status naming the stage.
struct EvalError {
  std::string message;
};

[[noreturn]] void Fail(std::string message) { throw EvalError{std::move(message)}; }

Shape ShapeOf(const at::Tensor& t) { return Shape(t.sizes().begin(), t.sizes().end()); }

// A repeated int attribute as ATen reads it, without a copy.
at::IntArrayRef Ints(const google::protobuf::RepeatedField<int64_t>& field) {
  return at::IntArrayRef(field.data(), static_cast<size_t>(field.size()));
}

// ---------------------------------------------------------------------------
// Ops
// ---------------------------------------------------------------------------

at::Tensor EvalConv(const Stage& stage, const std::vector<at::Tensor>& in) {
  const ConvCall call = PlanConv(stage);
  const at::Tensor x =
      call.pad_first.empty() ? in[0] : at::constant_pad_nd(in[0], call.pad_first, 0);
  c10::optional<at::Tensor> bias;
  if (in.size() > 2) bias = in[2];
  const std::vector<int64_t> no_output_padding(call.strides.size(), 0);
  return at::convolution(x, in[1], bias, call.strides, call.padding, call.dilations,
                         /*transposed=*/false, no_output_padding, call.groups);
}

at::Tensor EvalMatMul(const Stage& stage, const std::vector<at::Tensor>& in) {
  const Attributes& attrs = stage.attrs();
  const at::Tensor a = attrs.trans_a() ? in[0].transpose(-1, -2) : in[0];
  const double alpha = attrs.has_alpha() ? attrs.alpha() : 1.0;
  const double beta = attrs.has_beta() ? attrs.beta() : 1.0;
  std::vector<Shape> shapes;
  for (const at::Tensor& t : in) shapes.push_back(ShapeOf(t));
  switch (PlanMatMul(stage, shapes)) {
    case MatMulForm::kLinear:
      return at::linear(a, attrs.trans_b() ? in[1] : in[1].t(), in[2]);
    case MatMulForm::kAddmm:
      return at::addmm(in[2], a, attrs.trans_b() ? in[1].t() : in[1], beta, alpha);
    case MatMulForm::kMatmul:
      break;
  }
  at::Tensor result = at::matmul(a, attrs.trans_b() ? in[1].transpose(-1, -2) : in[1]);
  if (alpha != 1.0) result = result * alpha;
  if (in.size() > 2) result = result + (beta != 1.0 ? in[2] * beta : in[2]);
  return result;
}

// torch's pooling operator of `call`'s kind and rank.
at::Tensor NativePool(const at::Tensor& x, const PoolCall& call, const Attributes& a) {
  const bool ceil = a.ceil_mode(), include_pad = a.count_include_pad();
  switch (call.kernel.size()) {
    case 1:
      return call.max
                 ? at::max_pool1d(x, call.kernel, call.strides, call.padding, call.dilations, ceil)
                 : at::avg_pool1d(x, call.kernel, call.strides, call.padding, ceil, include_pad);
    case 2:
      return call.max
                 ? at::max_pool2d(x, call.kernel, call.strides, call.padding, call.dilations, ceil)
                 : at::avg_pool2d(x, call.kernel, call.strides, call.padding, ceil, include_pad);
    default:
      return call.max
                 ? at::max_pool3d(x, call.kernel, call.strides, call.padding, call.dilations, ceil)
                 : at::avg_pool3d(x, call.kernel, call.strides, call.padding, ceil, include_pad);
  }
}

at::Tensor EvalPool(const Stage& stage, const at::Tensor& x) {
  const PoolCall call = PlanPool(stage, ShapeOf(x));
  at::Tensor t =
      call.pad_first.empty() ? x : at::constant_pad_nd(x, call.pad_first, call.pad_value);
  const int64_t ns = static_cast<int64_t>(call.kernel.size());
  if (call.form == PoolForm::kWindows) {
    // Each spatial dim unfolded (a window dim of the dilated span appended, every
    // dilation-th element of it kept), the declared number of windows kept, then each
    // window's sum divided by its count of taps.
    std::vector<int64_t> window_dims;
    for (int64_t d = 0; d < ns; ++d) {
      t = t.unfold(2 + d, call.spans[d], call.strides[d]);
      t = t.slice(t.dim() - 1, 0, call.spans[d], call.dilations[d]);
      window_dims.push_back(2 + ns + d);
    }
    for (int64_t d = 0; d < ns; ++d) t = t.narrow(2 + d, 0, call.windows[d]);
    return at::sum(t, window_dims) / ToAten(call.counts, call.counts.dtype);
  }
  t = NativePool(t, call, stage.attrs());
  if (call.form == PoolForm::kPadFirst) {
    for (int64_t d = 0; d < ns; ++d) t = t.narrow(2 + d, 0, call.windows[d]);
  }
  return t;
}

at::Tensor EvalReduce(const Stage& stage, const std::vector<at::Tensor>& in) {
  const Attributes& a = stage.attrs();
  const at::Tensor& x = in[0];
  const at::IntArrayRef axes = Ints(a.axes());
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
      return at::hardswish(x);
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

at::Tensor EvalPad(const Stage& stage, const at::Tensor& x) {
  const Attributes& a = stage.attrs();
  if (a.pad_mode() == CONSTANT) {
    const std::vector<int64_t> pads(a.pads().begin(), a.pads().end());
    const size_t rank = pads.size() / 2;
    return at::constant_pad_nd(
        x, AtenPadArgument({pads.begin(), pads.begin() + rank}, {pads.begin() + rank, pads.end()}),
        a.pad_value());
  }
  if (a.pad_mode() != EDGE && a.pad_mode() != REFLECT) Fail("unknown pad mode");
  const bool edge = a.pad_mode() == EDGE;
  at::Tensor result = x;
  for (const EdgePadCall& call : PlanEdgePad(stage, ShapeOf(x))) {
    auto copies = [&](int64_t start, int64_t count) {
      const at::Tensor slice = result.narrow(call.dim, start, edge ? 1 : count);
      return edge ? at::repeat_interleave(slice, count, call.dim) : slice.flip(call.dim);
    };
    std::vector<at::Tensor> parts;
    if (call.begin > 0) parts.push_back(copies(call.before_start, call.begin));
    parts.push_back(result);
    if (call.end > 0) parts.push_back(copies(call.after_start, call.end));
    result = at::cat(parts, call.dim);
  }
  return result;
}

at::Tensor EvalSlice(const Stage& stage, const at::Tensor& x) {
  at::Tensor result = x;
  for (const SliceCall& call : PlanSlice(stage, ShapeOf(x))) {
    if (call.flip) result = result.flip(call.axis);
    result = result.slice(call.axis, call.start, call.end, call.step);
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
      return EvalPool(stage, in[0]);
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
      return in[0].permute(Ints(stage.attrs().perm()));
    case RESHAPE:
      return in[0].reshape(Ints(stage.shape()));
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
  // By value id: the inputs and parameters, converted once; during a run, each stage's
  // result until its last reader has run.
  std::vector<at::Tensor> values;
  std::vector<int> reads;            // by value id: its stages' reads and output uses
  std::vector<at::Tensor> in;        // the inputs of the stage being run
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
  auto impl = std::make_unique<Impl>();
  impl->graph = &graph;
  impl->layout = layout;
  impl->where = "pipeline '" + graph.spec().name() + "'";
  SCHEDFARM_ASSIGN_OR_RETURN(impl->values, AtenValues(graph, inputs, impl->where));
  for (at::Tensor& value : impl->values) {
    if (value.defined()) value = value.contiguous(FormatOf(layout, value.dim()));
  }
  impl->reads.assign(graph.values().size(), 0);
  for (int s = 0; s < graph.num_stages(); ++s) {
    for (int id : graph.stage_inputs(s)) ++impl->reads[id];
  }
  for (int s : graph.output_stages()) ++impl->reads[graph.stage_value(s)];
  return TorchProgram(std::move(impl));
}

Status TorchProgram::Run() {
  c10::InferenceMode inference;
  Impl& p = *impl_;
  const PipelineGraph& graph = *p.graph;
  std::vector<int> reads_left = p.reads;
  TorchLayoutCensus census;
  // Stage results are dropped after their last read, and the rest after the run.
  auto drop_results = [&] {
    p.in.clear();
    for (int s = 0; s < graph.num_stages(); ++s) p.values[graph.stage_value(s)].reset();
  };

  for (int s : graph.topological_order()) {
    const Stage& stage = graph.stage(s);
    auto error = [&](const std::string& message) {
      drop_results();
      return Status::Error(p.where + ", stage '" + stage.name() + "' (" + OpDisplayName(stage) +
                           "): " + message);
    };
    try {
      p.in.clear();
      for (int id : graph.stage_inputs(s)) p.in.push_back(p.values[id]);
      at::Tensor out = EvalStage(stage, p.in);
      if (out.dim() == 4) {
        ++census.four_d_stages;
        census.channels_last_stages +=
            out.is_contiguous(at::MemoryFormat::ChannelsLast) && !out.is_contiguous();
      }
      out = out.contiguous(FormatOf(p.layout, out.dim()));
      bool declared_shape = out.dim() == stage.shape_size();
      for (int64_t d = 0; declared_shape && d < out.dim(); ++d) {
        declared_shape = out.size(d) == stage.shape(d);
      }
      if (!declared_shape) {
        return error("evaluates to shape " + ShapeToString(ShapeOf(out)) + ", declared " +
                     ShapeToString(Shape(stage.shape().begin(), stage.shape().end())));
      }
      p.values[graph.stage_value(s)] = std::move(out);
      for (int id : graph.stage_inputs(s)) {
        if (--reads_left[id] == 0 && graph.value(id).kind == Value::Kind::kStage) {
          p.values[id].reset();
        }
      }
    } catch (const EvalError& e) {
      return error(e.message);
    } catch (const c10::Error& e) {
      return error(std::string("libtorch: ") + e.what_without_backtrace());
    } catch (const std::exception& e) {
      return error(e.what());
    }
  }

  p.outputs.clear();
  for (int s : graph.output_stages()) {
    const at::Tensor& out = p.values[graph.stage_value(s)];
    census.channels_last_outputs +=
        out.dim() == 4 && out.is_contiguous(at::MemoryFormat::ChannelsLast) && !out.is_contiguous();
    p.outputs.push_back(out);
  }
  drop_results();
  p.census = census;
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
