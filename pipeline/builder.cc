#include "pipeline/builder.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {
namespace {

std::vector<int64_t> Repeat(int64_t value, size_t n) { return std::vector<int64_t>(n, value); }

void SetRepeated(google::protobuf::RepeatedField<int64_t>* field, const std::vector<int64_t>& v) {
  field->Clear();
  for (int64_t x : v) field->Add(x);
}

std::string LowerName(const std::string& s) {
  std::string out = s;
  std::transform(out.begin(), out.end(), out.begin(), ::tolower);
  return out;
}

}  // namespace

PipelineBuilder::PipelineBuilder(std::string pipeline_name, DataType dtype, uint64_t weight_seed)
    : dtype_(dtype), weight_seed_(weight_seed) {
  spec_.set_name(std::move(pipeline_name));
}

void PipelineBuilder::Fail(const std::string& error) {
  if (error_.ok()) error_ = Status::Error(error);
}

std::string PipelineBuilder::FreshName(const std::string& base) {
  std::string name = base;
  while (shapes_.count(name)) name = base + "_" + std::to_string(++next_id_);
  return name;
}

Shape PipelineBuilder::ShapeOf(const std::string& tensor) const {
  auto it = shapes_.find(tensor);
  return it == shapes_.end() ? Shape{} : it->second;
}

std::string PipelineBuilder::Input(const std::string& name, const Shape& shape) {
  std::string unique = FreshName(name);
  TensorDecl* t = spec_.add_inputs();
  t->set_name(unique);
  t->set_dtype(dtype_);
  SetRepeated(t->mutable_shape(), shape);
  shapes_[unique] = shape;
  return unique;
}

std::string PipelineBuilder::RandomParameter(const std::string& name, const Shape& shape,
                                             double scale, double offset) {
  std::string unique = FreshName(name);
  Parameter* p = spec_.add_parameters();
  p->mutable_tensor()->set_name(unique);
  p->mutable_tensor()->set_dtype(dtype_);
  SetRepeated(p->mutable_tensor()->mutable_shape(), shape);
  p->mutable_random()->set_seed(weight_seed_ * 1000003ull + static_cast<uint64_t>(spec_.parameters_size()));
  p->mutable_random()->set_scale(scale);
  p->mutable_random()->set_offset(offset);
  shapes_[unique] = shape;
  return unique;
}

std::string PipelineBuilder::ConstantParameter(const std::string& name, const Shape& shape,
                                               const std::vector<double>& values) {
  std::string unique = FreshName(name);
  if (static_cast<int64_t>(values.size()) != NumElements(shape)) {
    Fail("parameter '" + unique + "': " + std::to_string(values.size()) +
         " values for shape " + ShapeToString(shape));
  }
  Parameter* p = spec_.add_parameters();
  p->mutable_tensor()->set_name(unique);
  p->mutable_tensor()->set_dtype(dtype_);
  SetRepeated(p->mutable_tensor()->mutable_shape(), shape);
  p->set_raw_data(EncodeRawData(values, dtype_));
  shapes_[unique] = shape;
  return unique;
}

void PipelineBuilder::Output(const std::string& tensor) {
  if (!ok()) return;
  spec_.add_outputs(tensor);
}

std::string PipelineBuilder::Emit(Stage stage) {
  if (!ok()) return "";
  std::vector<Shape> input_shapes;
  for (const std::string& in : stage.inputs()) {
    auto it = shapes_.find(in);
    if (it == shapes_.end()) {
      Fail("operator " + OpDisplayName(stage) + ": unknown tensor '" + in + "'");
      return "";
    }
    input_shapes.push_back(it->second);
  }
  std::string base = stage.label().empty() ? OpDisplayName(stage) : stage.label();
  std::replace(base.begin(), base.end(), '.', '_');
  stage.set_name(FreshName(base));
  stage.set_dtype(dtype_);
  StatusOr<Shape> shape = InferOutputShape(stage, input_shapes);
  if (!shape.ok()) {
    std::string inputs;
    for (size_t i = 0; i < input_shapes.size(); ++i) {
      inputs += (i ? ", " : "") + ShapeToString(input_shapes[i]);
    }
    Fail("operator " + base + " (" + OpDisplayName(stage) + "): " + shape.status().message() +
         " (input shapes " + inputs + ")");
    return "";
  }
  SetRepeated(stage.mutable_shape(), *shape);
  shapes_[stage.name()] = *shape;
  spec_.add_stages()->Swap(&stage);
  return spec_.stages(spec_.stages_size() - 1).name();
}

std::string PipelineBuilder::AddStage(OpKind op, const std::vector<std::string>& inputs,
                                      const Attributes& attrs, const std::string& label) {
  Stage stage;
  stage.set_op(op);
  for (const std::string& in : inputs) stage.add_inputs(in);
  *stage.mutable_attrs() = attrs;
  stage.set_label(label);
  return Emit(std::move(stage));
}

std::string PipelineBuilder::AddStageWithShape(OpKind op, const std::vector<std::string>& inputs,
                                               const Attributes& attrs, const Shape& shape,
                                               const std::string& label) {
  Stage stage;
  stage.set_op(op);
  for (const std::string& in : inputs) stage.add_inputs(in);
  *stage.mutable_attrs() = attrs;
  stage.set_label(label);
  SetRepeated(stage.mutable_shape(), shape);
  return Emit(std::move(stage));
}

// --- convolution and matmul ---------------------------------------------------------

std::string PipelineBuilder::Conv(const std::string& x, const std::string& w,
                                  const std::string& bias, const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& pads,
                                  const std::vector<int64_t>& dilations, int64_t groups) {
  Attributes a;
  SetRepeated(a.mutable_strides(), strides);
  SetRepeated(a.mutable_pads(), pads);
  SetRepeated(a.mutable_dilations(), dilations);
  a.set_groups(groups);
  std::vector<std::string> inputs = {x, w};
  if (!bias.empty()) inputs.push_back(bias);
  return AddStage(CONV, inputs, a, "conv");
}

namespace {
// Uniform bound that keeps the output variance near the input variance.
double WeightScale(int64_t fan_in) { return std::sqrt(3.0 / static_cast<double>(fan_in)); }
}  // namespace

std::string PipelineBuilder::Conv2d(const std::string& x, int64_t out_channels, int64_t kernel,
                                    int64_t stride, int64_t pad, int64_t groups,
                                    int64_t dilation, bool bias) {
  Shape xs = ShapeOf(x);
  if (xs.size() != 4) {
    Fail("conv2d: input '" + x + "' must be [N, C, H, W], is " + ShapeToString(xs));
    return "";
  }
  if (groups < 1 || xs[1] % groups != 0) {
    Fail("conv2d: " + std::to_string(xs[1]) + " input channels not divisible by groups " +
         std::to_string(groups));
    return "";
  }
  int64_t fan_in = xs[1] / groups * kernel * kernel;
  std::string w = RandomParameter("w", {out_channels, xs[1] / groups, kernel, kernel},
                                  WeightScale(fan_in));
  std::string b = bias ? RandomParameter("b", {out_channels}, 0.1) : "";
  return Conv(x, w, b, {stride, stride}, Repeat(pad, 4), {dilation, dilation}, groups);
}

std::string PipelineBuilder::DepthwiseConv2d(const std::string& x, int64_t kernel, int64_t stride,
                                             int64_t pad, int64_t dilation) {
  Shape xs = ShapeOf(x);
  int64_t channels = xs.size() == 4 ? xs[1] : 1;
  return Conv2d(x, channels, kernel, stride, pad, channels, dilation, true);
}

std::string PipelineBuilder::Conv1d(const std::string& x, int64_t out_channels, int64_t kernel,
                                    int64_t stride, int64_t pad_begin, int64_t pad_end,
                                    int64_t dilation, bool bias) {
  Shape xs = ShapeOf(x);
  if (xs.size() != 3) {
    Fail("conv1d: input '" + x + "' must be [N, C, L], is " + ShapeToString(xs));
    return "";
  }
  std::string w = RandomParameter("w", {out_channels, xs[1], kernel}, WeightScale(xs[1] * kernel));
  std::string b = bias ? RandomParameter("b", {out_channels}, 0.1) : "";
  return Conv(x, w, b, {stride}, {pad_begin, pad_end}, {dilation}, 1);
}

std::string PipelineBuilder::Conv3d(const std::string& x, int64_t out_channels, int64_t kernel,
                                    int64_t stride, int64_t pad, bool bias) {
  Shape xs = ShapeOf(x);
  if (xs.size() != 5) {
    Fail("conv3d: input '" + x + "' must be [N, C, D, H, W], is " + ShapeToString(xs));
    return "";
  }
  std::string w = RandomParameter("w", {out_channels, xs[1], kernel, kernel, kernel},
                                  WeightScale(xs[1] * kernel * kernel * kernel));
  std::string b = bias ? RandomParameter("b", {out_channels}, 0.1) : "";
  return Conv(x, w, b, Repeat(stride, 3), Repeat(pad, 6), Repeat(1, 3), 1);
}

std::string PipelineBuilder::MatMul(const std::string& a, const std::string& b, bool trans_a,
                                    bool trans_b) {
  Attributes attrs;
  attrs.set_trans_a(trans_a);
  attrs.set_trans_b(trans_b);
  return AddStage(MATMUL, {a, b}, attrs, "matmul");
}

std::string PipelineBuilder::Gemm(const std::string& a, const std::string& b, const std::string& c,
                                  double alpha, double beta, bool trans_a, bool trans_b) {
  Attributes attrs;
  attrs.set_trans_a(trans_a);
  attrs.set_trans_b(trans_b);
  if (alpha != 1.0) attrs.set_alpha(alpha);
  std::vector<std::string> inputs = {a, b};
  if (!c.empty()) {
    inputs.push_back(c);
    if (beta != 1.0) attrs.set_beta(beta);
  }
  return AddStage(MATMUL, inputs, attrs, "gemm");
}

std::string PipelineBuilder::Linear(const std::string& x, int64_t out_features, bool bias) {
  Shape xs = ShapeOf(x);
  if (xs.size() < 2) {
    Fail("linear: input '" + x + "' must have rank >= 2, is " + ShapeToString(xs));
    return "";
  }
  int64_t in_features = xs.back();
  std::string w = RandomParameter("w", {in_features, out_features}, WeightScale(in_features));
  std::vector<std::string> inputs = {x, w};
  if (bias) inputs.push_back(RandomParameter("b", {out_features}, 0.1));
  return AddStage(MATMUL, inputs, Attributes(), "linear");
}

// --- pooling ---------------------------------------------------------------------------

std::string PipelineBuilder::MaxPool(const std::string& x, const std::vector<int64_t>& kernel,
                                     const std::vector<int64_t>& strides,
                                     const std::vector<int64_t>& pads, bool ceil_mode,
                                     const std::vector<int64_t>& dilations) {
  Attributes a;
  a.set_pool(MAX_POOL);
  SetRepeated(a.mutable_kernel(), kernel);
  SetRepeated(a.mutable_strides(), strides);
  SetRepeated(a.mutable_pads(), pads);
  SetRepeated(a.mutable_dilations(), dilations.empty() ? Repeat(1, kernel.size()) : dilations);
  a.set_ceil_mode(ceil_mode);
  return AddStage(POOL, {x}, a, "max_pool");
}

std::string PipelineBuilder::AvgPool(const std::string& x, const std::vector<int64_t>& kernel,
                                     const std::vector<int64_t>& strides,
                                     const std::vector<int64_t>& pads, bool count_include_pad,
                                     bool ceil_mode) {
  Attributes a;
  a.set_pool(AVG_POOL);
  SetRepeated(a.mutable_kernel(), kernel);
  SetRepeated(a.mutable_strides(), strides);
  SetRepeated(a.mutable_pads(), pads);
  SetRepeated(a.mutable_dilations(), Repeat(1, kernel.size()));
  a.set_count_include_pad(count_include_pad);
  a.set_ceil_mode(ceil_mode);
  return AddStage(POOL, {x}, a, "avg_pool");
}

std::string PipelineBuilder::MaxPool2d(const std::string& x, int64_t kernel, int64_t stride,
                                       int64_t pad) {
  return MaxPool(x, {kernel, kernel}, {stride, stride}, Repeat(pad, 4));
}

std::string PipelineBuilder::AvgPool2d(const std::string& x, int64_t kernel, int64_t stride,
                                       int64_t pad) {
  return AvgPool(x, {kernel, kernel}, {stride, stride}, Repeat(pad, 4));
}

std::string PipelineBuilder::GlobalAvgPool(const std::string& x) {
  Shape xs = ShapeOf(x);
  std::vector<int64_t> axes;
  for (size_t d = 2; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  return Reduce(MEAN, x, axes, true);
}

std::string PipelineBuilder::GlobalMaxPool(const std::string& x) {
  Shape xs = ShapeOf(x);
  std::vector<int64_t> axes;
  for (size_t d = 2; d < xs.size(); ++d) axes.push_back(static_cast<int64_t>(d));
  return Reduce(REDUCE_MAX, x, axes, true);
}

// --- normalization ---------------------------------------------------------------------

const Parameter* PipelineBuilder::FindParameter(const std::string& name) const {
  for (const Parameter& p : spec_.parameters()) {
    if (p.tensor().name() == name) return &p;
  }
  return nullptr;
}

std::vector<double> PipelineBuilder::ParameterValues(const std::string& name) const {
  const Parameter* p = FindParameter(name);
  if (p == nullptr) return {};
  StatusOr<HostTensor> t = MaterializeParameter(*p);
  return t.ok() ? t->data : std::vector<double>{};
}

std::string PipelineBuilder::BatchNorm(const std::string& x, const std::string& gamma,
                                       const std::string& beta, const std::string& mean,
                                       const std::string& var, double epsilon) {
  Shape xs = ShapeOf(x);
  if (xs.size() < 2) {
    Fail("batch_norm: input '" + x + "' must be [N, C, ...], is " + ShapeToString(xs));
    return "";
  }
  const int64_t channels = xs[1];
  Shape per_channel = {channels};
  for (size_t d = 2; d < xs.size(); ++d) per_channel.push_back(1);
  std::vector<double> g = ParameterValues(gamma), b = ParameterValues(beta);
  std::vector<double> m = ParameterValues(mean), v = ParameterValues(var);
  const size_t c = static_cast<size_t>(channels);
  if (g.size() == c && b.size() == c && m.size() == c && v.size() == c) {
    std::vector<double> scale(c), shift(c);
    for (size_t i = 0; i < c; ++i) {
      scale[i] = g[i] / std::sqrt(v[i] + epsilon);
      shift[i] = b[i] - m[i] * scale[i];
    }
    std::string s = ConstantParameter("bn_scale", per_channel, scale);
    std::string t = ConstantParameter("bn_shift", per_channel, shift);
    return ScaleShift(x, s, t);
  }
  // Parameters computed by the pipeline itself: evaluate the formula with stages.
  auto per_channel_view = [&](const std::string& t) { return Reshape(t, per_channel); };
  Attributes scale_attrs;
  scale_attrs.set_unary(SCALE);
  scale_attrs.set_beta(epsilon);
  std::string var_eps = AddStage(UNARY, {per_channel_view(var)}, scale_attrs, "batch_norm");
  std::string inv_std = Unary(RSQRT, var_eps);
  std::string scale = Mul(per_channel_view(gamma), inv_std);
  return Add(Mul(Sub(x, per_channel_view(mean)), scale), per_channel_view(beta));
}

std::string PipelineBuilder::BatchNorm(const std::string& x) {
  Shape xs = ShapeOf(x);
  if (xs.size() < 2) {
    Fail("batch_norm: input '" + x + "' must be [N, C, ...], is " + ShapeToString(xs));
    return "";
  }
  Shape per_channel = {xs[1]};
  for (size_t d = 2; d < xs.size(); ++d) per_channel.push_back(1);
  std::string scale = RandomParameter("bn_scale", per_channel, 0.1, 1.0);
  std::string shift = RandomParameter("bn_shift", per_channel, 0.1);
  return ScaleShift(x, scale, shift);
}

std::string PipelineBuilder::ScaleShift(const std::string& x, const std::string& scale,
                                        const std::string& shift) {
  Attributes mul, add;
  mul.set_binary(MUL);
  add.set_binary(ADD);
  return AddStage(BINARY, {AddStage(BINARY, {x, scale}, mul, "batch_norm"), shift}, add,
                  "batch_norm");
}

std::string PipelineBuilder::LayerNorm(const std::string& x, const std::string& gamma,
                                       const std::string& beta, int normalized_dims,
                                       double epsilon) {
  Shape xs = ShapeOf(x);
  if (normalized_dims < 1 || normalized_dims > static_cast<int>(xs.size())) {
    Fail("layer_norm: cannot normalize the last " + std::to_string(normalized_dims) +
         " dims of " + ShapeToString(xs));
    return "";
  }
  std::vector<int64_t> axes;
  int64_t count = 1;
  for (size_t d = xs.size() - normalized_dims; d < xs.size(); ++d) {
    axes.push_back(static_cast<int64_t>(d));
    count *= xs[d];
  }
  std::string mean = Reduce(MEAN, x, axes, true);
  std::string centered = Sub(x, mean);
  std::string sum_sq = Reduce(SUM_SQUARE, centered, axes, true);
  Attributes var_attrs;
  var_attrs.set_unary(SCALE);
  var_attrs.set_alpha(1.0 / static_cast<double>(count));
  var_attrs.set_beta(epsilon);
  std::string var_eps = AddStage(UNARY, {sum_sq}, var_attrs, "layer_norm");
  std::string y = Mul(centered, Unary(RSQRT, var_eps));
  if (!gamma.empty()) y = Mul(y, gamma);
  if (!beta.empty()) y = Add(y, beta);
  return y;
}

std::string PipelineBuilder::LayerNorm(const std::string& x, double epsilon) {
  Shape xs = ShapeOf(x);
  if (xs.empty()) {
    Fail("layer_norm: input '" + x + "' is unknown or rank 0");
    return "";
  }
  std::string gamma = RandomParameter("ln_gamma", {xs.back()}, 0.1, 1.0);
  std::string beta = RandomParameter("ln_beta", {xs.back()}, 0.1);
  return LayerNorm(x, gamma, beta, 1, epsilon);
}

std::string PipelineBuilder::Softmax(const std::string& x, int64_t axis) {
  std::string shifted = Sub(x, Reduce(REDUCE_MAX, x, {axis}, true));
  std::string e = Exp(shifted);
  return Div(e, Reduce(SUM, e, {axis}, true));
}

std::string PipelineBuilder::LogSoftmax(const std::string& x, int64_t axis) {
  std::string shifted = Sub(x, Reduce(REDUCE_MAX, x, {axis}, true));
  return Sub(shifted, Unary(LOG, Reduce(SUM, Exp(shifted), {axis}, true)));
}

// --- elementwise -----------------------------------------------------------------------

std::string PipelineBuilder::Unary(UnaryFn fn, const std::string& x) {
  Attributes a;
  a.set_unary(fn);
  if (IsTranscendental(fn)) a.set_math(math_);
  return AddStage(UNARY, {x}, a, LowerName(UnaryFn_Name(fn)));
}

std::string PipelineBuilder::Clip(const std::string& x, double lo, double hi) {
  Attributes a;
  a.set_unary(CLIP);
  a.set_clip_min(lo);
  a.set_clip_max(hi);
  return AddStage(UNARY, {x}, a, "clip");
}

std::string PipelineBuilder::UnaryWithParams(UnaryFn fn, const std::string& x, double alpha,
                                             double beta) {
  Attributes a;
  a.set_unary(fn);
  if (IsTranscendental(fn)) a.set_math(math_);
  a.set_alpha(alpha);
  if (fn == HARD_SIGMOID || fn == SCALE) a.set_beta(beta);
  return AddStage(UNARY, {x}, a, LowerName(UnaryFn_Name(fn)));
}

std::string PipelineBuilder::Binary(BinaryFn fn, const std::string& a, const std::string& b) {
  Attributes attrs;
  attrs.set_binary(fn);
  return AddStage(BINARY, {a, b}, attrs, LowerName(BinaryFn_Name(fn)));
}

// --- data movement ---------------------------------------------------------------------

std::string PipelineBuilder::Reduce(ReduceFn fn, const std::string& x, std::vector<int64_t> axes,
                                    bool keepdims) {
  const int64_t rank = static_cast<int64_t>(ShapeOf(x).size());
  for (int64_t& axis : axes) {
    if (axis < 0) axis += rank;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  Attributes a;
  a.set_reduce(fn);
  SetRepeated(a.mutable_axes(), axes);
  a.set_keepdims(keepdims);
  std::string label = LowerName(ReduceFn_Name(fn));
  if (label.rfind("reduce_", 0) != 0) label = "reduce_" + label;
  return AddStage(REDUCE, {x}, a, label);
}

std::string PipelineBuilder::Pad(const std::string& x, const std::vector<int64_t>& pads,
                                 PadMode mode, double value) {
  Attributes a;
  SetRepeated(a.mutable_pads(), pads);
  a.set_pad_mode(mode);
  a.set_pad_value(value);
  return AddStage(PAD, {x}, a, "pad");
}

std::string PipelineBuilder::Concat(const std::vector<std::string>& xs, int64_t axis) {
  const int64_t rank = xs.empty() ? 0 : static_cast<int64_t>(ShapeOf(xs[0]).size());
  Attributes a;
  a.set_axis(axis < 0 ? axis + rank : axis);
  return AddStage(CONCAT, xs, a, "concat");
}

std::string PipelineBuilder::Slice(const std::string& x, int64_t axis, int64_t start, int64_t end,
                                   int64_t step) {
  Shape xs = ShapeOf(x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank || step == 0) {
    Fail("slice of '" + x + "': axis " + std::to_string(axis) + " or step " +
         std::to_string(step) + " invalid for shape " + ShapeToString(xs));
    return "";
  }
  const int64_t dim = xs[axis];
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  int64_t n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    n = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    n = start > end ? (start - end - step - 1) / (-step) : 0;
  }
  if (n < 1) {
    Fail("slice of '" + x + "' along axis " + std::to_string(axis) + " is empty");
    return "";
  }
  Attributes a;
  a.add_axes(axis);
  a.add_starts(start);
  a.add_steps(step);
  Shape out = xs;
  out[axis] = n;
  return AddStageWithShape(SLICE, {x}, a, out, "slice");
}

std::vector<std::string> PipelineBuilder::Split(const std::string& x, int64_t axis,
                                                const std::vector<int64_t>& sizes) {
  std::vector<std::string> parts;
  int64_t offset = 0;
  for (int64_t size : sizes) {
    parts.push_back(Slice(x, axis, offset, offset + size, 1));
    offset += size;
  }
  return parts;
}

std::string PipelineBuilder::Transpose(const std::string& x, const std::vector<int64_t>& perm) {
  Attributes a;
  SetRepeated(a.mutable_perm(), perm);
  return AddStage(TRANSPOSE, {x}, a, "transpose");
}

std::string PipelineBuilder::Reshape(const std::string& x, const Shape& shape) {
  Shape target = shape;
  const int64_t total = NumElements(ShapeOf(x));
  int64_t known = 1;
  int inferred = -1;
  for (size_t d = 0; d < target.size(); ++d) {
    if (target[d] == -1 && inferred < 0) {
      inferred = static_cast<int>(d);
    } else {
      known *= target[d];
    }
  }
  if (inferred >= 0 && known > 0 && total % known == 0) target[inferred] = total / known;
  return AddStageWithShape(RESHAPE, {x}, Attributes(), target, "reshape");
}

std::string PipelineBuilder::Flatten(const std::string& x, int64_t axis) {
  Shape xs = ShapeOf(x);
  if (axis < 0) axis += static_cast<int64_t>(xs.size());
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    (static_cast<int64_t>(d) < axis ? outer : inner) *= xs[d];
  }
  return Reshape(x, {outer, inner});
}

std::string PipelineBuilder::Upsample(const std::string& x, const std::vector<int64_t>& scales) {
  Attributes a;
  SetRepeated(a.mutable_scales(), scales);
  return AddStage(UPSAMPLE, {x}, a, "upsample");
}

StatusOr<PipelineSpec> PipelineBuilder::Finish() {
  if (!error_.ok()) return error_.WithContext("pipeline '" + spec_.name() + "'");
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec_);
  if (!graph.ok()) return graph.status();
  return spec_;
}

}  // namespace schedfarm
