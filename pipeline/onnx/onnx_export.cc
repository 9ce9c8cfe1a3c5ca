// PipelineSpec -> onnx.ModelProto. Each stage becomes one ONNX node, or a short chain
// of nodes where ONNX has no operator of its own; the stage's last node outputs the
// stage's name. Helper values and constants take fresh names that no pipeline tensor
// has, and every node is named after its output.
#include "pipeline/onnx/onnx_export.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/text.h"
#include "google/protobuf/descriptor.h"
#include "pipeline/graph.h"
#include "pipeline/onnx/onnx_internal.h"
#include "pipeline/tensor.h"

namespace schedfarm {
namespace {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

constexpr int64_t kOpset = 17;
constexpr int64_t kIrVersion = 8;
// The largest protobuf message that serializes; the writer does not write ONNX's
// external data.
constexpr double kMaxModelBytes = std::numeric_limits<int32_t>::max();

int32_t ElemType(DataType dtype) {
  return dtype == FLOAT64 ? TensorProto::DOUBLE : TensorProto::FLOAT;
}

std::vector<int64_t> ToVector(const google::protobuf::RepeatedField<int64_t>& field) {
  return std::vector<int64_t>(field.begin(), field.end());
}

bool ExactInFloat(double v) { return static_cast<double>(static_cast<float>(v)) == v; }

void SetValueInfo(onnx::ValueInfoProto* info, const std::string& name, DataType dtype,
                  const Shape& shape) {
  info->set_name(name);
  onnx::TypeProto::Tensor* t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(ElemType(dtype));
  onnx::TensorShapeProto* dims = t->mutable_shape();
  for (int64_t d : shape) dims->add_dim()->set_dim_value(d);
}

AttributeProto* AddAttribute(NodeProto* node, const char* name,
                             AttributeProto::AttributeType type) {
  AttributeProto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(type);
  return a;
}
void SetInt(NodeProto* node, const char* name, int64_t v) {
  AddAttribute(node, name, AttributeProto::INT)->set_i(v);
}
void SetInts(NodeProto* node, const char* name, const std::vector<int64_t>& v) {
  AttributeProto* a = AddAttribute(node, name, AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}
void SetFloat(NodeProto* node, const char* name, double v) {
  AddAttribute(node, name, AttributeProto::FLOAT)->set_f(static_cast<float>(v));
}
void SetString(NodeProto* node, const char* name, const std::string& v) {
  AddAttribute(node, name, AttributeProto::STRING)->set_s(v);
}

// "stage 'act' (UNARY 99)": a stage and its operator (its function by name, or by
// number when the IR does not define it), for errors.
std::string StageLabel(const Stage& stage) {
  static const std::map<OpKind, std::string> kFunctionField = {
      {POOL, "pool"}, {REDUCE, "reduce"}, {UNARY, "unary"}, {BINARY, "binary"}, {PAD, "pad_mode"}};
  std::string label = "stage '" + stage.name() + "' (" + OpKind_Name(stage.op());
  auto it = kFunctionField.find(stage.op());
  if (it != kFunctionField.end()) {
    const auto* field = Attributes::descriptor()->FindFieldByName(it->second);
    const int value = stage.attrs().GetReflection()->GetEnumValue(stage.attrs(), field);
    const auto* named = field->enum_type()->FindValueByNumber(value);
    label += " " + (named != nullptr ? named->name() : std::to_string(value));
  }
  return label + ")";
}

class Exporter {
 public:
  // `weights`: the pipeline's parameters with their values as raw_data.
  Exporter(const PipelineGraph& graph, const PipelineSpec& weights)
      : graph_(graph), weights_(weights) {}

  StatusOr<onnx::ModelProto> Run();

 private:
  // A value name no pipeline tensor and no earlier helper has: `base`, or base_N.
  std::string Fresh(const std::string& base);
  // A node of the current stage computing a fresh helper value.
  NodeProto* Node(const std::string& op, const std::vector<std::string>& inputs);
  // Same for a node without attributes; returns its value.
  std::string Op(const std::string& op, const std::vector<std::string>& inputs) {
    return Node(op, inputs)->output(0);
  }
  // A new initializer of the current stage, named after it and `role`.
  TensorProto* Initializer(const std::string& role, int32_t elem_type, const Shape& shape);
  // Initializers of the current stage: values in its dtype, a scalar of it, INT64
  // vectors and a FLOAT vector of integers (Resize's scales).
  std::string Constant(const std::string& role, const Shape& shape,
                       const std::vector<double>& values);
  std::string Scalar(const std::string& role, double v) { return Constant(role, {}, {v}); }
  std::string Int64s(const std::string& role, const std::vector<int64_t>& values);
  std::string Floats(const std::string& role, const std::vector<int64_t>& values);
  // Whether an ONNX float attribute holds `v` exactly in the current stage's
  // arithmetic: a float32 stage rounds its constants to float anyway.
  bool FloatAttributeExact(double v) const { return dtype_ == FLOAT32 || ExactInFloat(v); }

  // Writes stage s; its value is named after it.
  Status EmitStage(int s);
  // The value computing stage s from its inputs `in` (an input itself when the stage
  // is an identity).
  StatusOr<std::string> Compute(int s, const std::vector<std::string>& in);
  std::string MatMul(const Stage& stage, const std::vector<std::string>& in,
                     const std::vector<Shape>& shapes);
  StatusOr<std::string> Pool(const Stage& stage, const std::string& x, const Shape& xs);
  // x padded with `value` so that every window of POOL `stage` fits.
  std::string PadForWindows(const Stage& stage, const std::string& x, const Shape& xs,
                            double value);
  std::string DilatedAveragePool(const Stage& stage, const std::string& x, const Shape& xs);
  StatusOr<std::string> Unary(const Stage& stage, const std::string& x);
  // alpha * x + beta, leaving out a multiplication by 1 and an addition of 0.
  std::string ScaleShift(const std::string& x, double alpha, double beta);
  // Transpose of the last two dims of a tensor of `rank`.
  std::string TransposeLastTwo(const std::string& x, size_t rank);

  const PipelineGraph& graph_;
  const PipelineSpec& weights_;
  onnx::GraphProto* g_ = nullptr;
  std::set<std::string> taken_;
  std::string stage_;         // the name of the stage being written
  DataType dtype_ = FLOAT32;  // and its dtype
};

std::string Exporter::Fresh(const std::string& base) {
  std::string name = base;
  for (int k = 1; taken_.count(name); ++k) name = base + "_" + std::to_string(k);
  taken_.insert(name);
  return name;
}

NodeProto* Exporter::Node(const std::string& op, const std::vector<std::string>& inputs) {
  NodeProto* node = g_->add_node();
  node->set_op_type(op);
  for (const std::string& in : inputs) node->add_input(in);
  const std::string out = Fresh(stage_ + "_" + Lower(op));
  node->add_output(out);
  node->set_name(out);
  return node;
}

TensorProto* Exporter::Initializer(const std::string& role, int32_t elem_type, const Shape& shape) {
  TensorProto* t = g_->add_initializer();
  t->set_name(Fresh(stage_ + "_" + role));
  t->set_data_type(elem_type);
  for (int64_t d : shape) t->add_dims(d);
  return t;
}

std::string Exporter::Constant(const std::string& role, const Shape& shape,
                               const std::vector<double>& values) {
  TensorProto* t = Initializer(role, ElemType(dtype_), shape);
  t->set_raw_data(EncodeRawData(values, dtype_));
  return t->name();
}

std::string Exporter::Int64s(const std::string& role, const std::vector<int64_t>& values) {
  TensorProto* t = Initializer(role, TensorProto::INT64, {static_cast<int64_t>(values.size())});
  for (int64_t v : values) t->add_int64_data(v);
  return t->name();
}

std::string Exporter::Floats(const std::string& role, const std::vector<int64_t>& values) {
  TensorProto* t = Initializer(role, TensorProto::FLOAT, {static_cast<int64_t>(values.size())});
  for (int64_t v : values) t->add_float_data(static_cast<float>(v));
  return t->name();
}

StatusOr<onnx::ModelProto> Exporter::Run() {
  const PipelineSpec& spec = graph_.spec();
  onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("schedfarm");
  onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  g_ = model.mutable_graph();
  g_->set_name(spec.name());
  for (const Value& v : graph_.values()) taken_.insert(v.name);

  for (const TensorDecl& input : spec.inputs()) {
    SetValueInfo(g_->add_input(), input.name(), input.dtype(), ToVector(input.shape()));
  }
  for (const Parameter& p : weights_.parameters()) {
    TensorProto* t = g_->add_initializer();
    t->set_name(p.tensor().name());
    t->set_data_type(ElemType(p.tensor().dtype()));
    for (int64_t d : p.tensor().shape()) t->add_dims(d);
    t->set_raw_data(p.raw_data());
  }
  for (int s : graph_.topological_order()) SCHEDFARM_RETURN_IF_ERROR(EmitStage(s));
  for (int s : graph_.output_stages()) {
    const Stage& st = graph_.stage(s);
    SetValueInfo(g_->add_output(), st.name(), st.dtype(), ToVector(st.shape()));
  }
  return model;
}

Status Exporter::EmitStage(int s) {
  const Stage& st = graph_.stage(s);
  stage_ = st.name();
  dtype_ = st.dtype();
  const int first_node = g_->node_size();
  SCHEDFARM_ASSIGN_OR_RETURN(
      std::string value,
      Compute(s, std::vector<std::string>(st.inputs().begin(), st.inputs().end())));
  NodeProto* last = g_->node_size() > first_node ? g_->mutable_node(g_->node_size() - 1) : nullptr;
  if (last == nullptr || last->output(0) != value) last = Node("Identity", {value});
  last->set_output(0, st.name());
  last->set_name(st.name());
  return Status::Ok();
}

StatusOr<std::string> Exporter::Compute(int s, const std::vector<std::string>& in) {
  const Stage& st = graph_.stage(s);
  const Attributes& a = st.attrs();
  const std::vector<Shape> shapes = graph_.input_shapes(s);
  switch (st.op()) {
    case CONV: {
      NodeProto* n = Node("Conv", in);
      SetInts(n, "kernel_shape", Shape(shapes[1].begin() + 2, shapes[1].end()));
      SetInts(n, "strides", ToVector(a.strides()));
      SetInts(n, "pads", ToVector(a.pads()));
      SetInts(n, "dilations", ToVector(a.dilations()));
      SetInt(n, "group", a.groups());
      return n->output(0);
    }
    case MATMUL:
      return MatMul(st, in, shapes);
    case POOL:
      return Pool(st, in[0], shapes[0]);
    case REDUCE: {
      static const std::map<ReduceFn, std::string> kOps = {{SUM, "ReduceSum"},
                                                           {MEAN, "ReduceMean"},
                                                           {REDUCE_MAX, "ReduceMax"},
                                                           {REDUCE_MIN, "ReduceMin"},
                                                           {SUM_SQUARE, "ReduceSumSquare"}};
      auto it = kOps.find(a.reduce());
      if (it == kOps.end()) return Status::Error(StageLabel(st) + ": unknown reduce function");
      // ReduceSum takes its axes as an input from opset 13, the others from opset 18.
      const std::vector<int64_t> axes = ToVector(a.axes());
      NodeProto* n = a.reduce() == SUM ? Node(it->second, {in[0], Int64s("axes", axes)})
                                       : Node(it->second, in);
      if (a.reduce() != SUM) SetInts(n, "axes", axes);
      SetInt(n, "keepdims", a.keepdims() ? 1 : 0);
      return n->output(0);
    }
    case UNARY:
      return Unary(st, in[0]);
    case BINARY: {
      static const std::map<BinaryFn, std::string> kOps = {{ADD, "Add"}, {SUB, "Sub"}, {MUL, "Mul"},
                                                           {DIV, "Div"}, {MAX, "Max"}, {MIN, "Min"},
                                                           {POW, "Pow"}};
      auto it = kOps.find(a.binary());
      if (it == kOps.end()) return Status::Error(StageLabel(st) + ": unknown binary function");
      return Op(it->second, in);
    }
    case PAD: {
      static const std::map<PadMode, std::string> kModes = {
          {CONSTANT, "constant"}, {EDGE, "edge"}, {REFLECT, "reflect"}};
      auto it = kModes.find(a.pad_mode());
      if (it == kModes.end()) return Status::Error(StageLabel(st) + ": unknown pad mode");
      std::vector<std::string> inputs = {in[0], Int64s("pads", ToVector(a.pads()))};
      if (a.pad_mode() == CONSTANT && a.pad_value() != 0) {
        inputs.push_back(Scalar("value", a.pad_value()));
      }
      NodeProto* n = Node("Pad", inputs);
      SetString(n, "mode", it->second);
      return n->output(0);
    }
    case CONCAT: {
      NodeProto* n = Node("Concat", in);
      SetInt(n, "axis", a.axis());
      return n->output(0);
    }
    case SLICE: {
      // ONNX Slice takes ends: one step past the last index the output reads, and for
      // a negative step that reaches index 0, an end before the first element (-1
      // would count from the back).
      std::vector<int64_t> ends;
      for (int i = 0; i < a.axes_size(); ++i) {
        const int64_t axis = a.axes(i), step = a.steps(i);
        const int64_t last = a.starts(i) + (st.shape(axis) - 1) * step;
        const int64_t end = last + (step > 0 ? 1 : -1);
        ends.push_back(end >= 0 ? end : -shapes[0][axis] - 1);
      }
      return Op("Slice",
                {in[0], Int64s("starts", ToVector(a.starts())), Int64s("ends", ends),
                 Int64s("axes", ToVector(a.axes())), Int64s("steps", ToVector(a.steps()))});
    }
    case TRANSPOSE: {
      NodeProto* n = Node("Transpose", in);
      SetInts(n, "perm", ToVector(a.perm()));
      return n->output(0);
    }
    case RESHAPE:
      return Op("Reshape", {in[0], Int64s("shape", ToVector(st.shape()))});
    case UPSAMPLE: {
      // Nearest neighbour with asymmetric coordinates and floor: out[i] = x[floor(i / s)].
      NodeProto* n = Node("Resize", {in[0], "", Floats("scales", ToVector(a.scales()))});
      SetString(n, "mode", "nearest");
      SetString(n, "coordinate_transformation_mode", "asymmetric");
      SetString(n, "nearest_mode", "floor");
      return n->output(0);
    }
    default:
      return Status::Error(StageLabel(st) + ": unknown op");
  }
}

std::string Exporter::TransposeLastTwo(const std::string& x, size_t rank) {
  std::vector<int64_t> perm;
  for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(d));
  std::swap(perm[rank - 1], perm[rank - 2]);
  NodeProto* n = Node("Transpose", {x});
  SetInts(n, "perm", perm);
  return n->output(0);
}

std::string Exporter::MatMul(const Stage& stage, const std::vector<std::string>& in,
                             const std::vector<Shape>& shapes) {
  const Attributes& a = stage.attrs();
  const double alpha = EffectiveAlpha(stage), beta = EffectiveBeta(stage);
  const bool with_c = in.size() > 2;
  const bool plain = !a.trans_a() && !a.trans_b() && alpha == 1.0 && !with_c;
  if (plain) return Op("MatMul", {in[0], in[1]});
  if (shapes[0].size() == 2 && shapes[1].size() == 2 && FloatAttributeExact(alpha) &&
      FloatAttributeExact(beta)) {
    NodeProto* n = Node("Gemm", in);
    SetFloat(n, "alpha", alpha);
    SetFloat(n, "beta", beta);
    SetInt(n, "transA", a.trans_a() ? 1 : 0);
    SetInt(n, "transB", a.trans_b() ? 1 : 0);
    return n->output(0);
  }
  // Batched (ONNX Gemm is 2-D), or a float64 alpha or beta a float attribute would
  // round: transposes, MatMul, then the scalings as tensors of the stage's dtype.
  const std::string x = a.trans_a() ? TransposeLastTwo(in[0], shapes[0].size()) : in[0];
  const std::string w = a.trans_b() ? TransposeLastTwo(in[1], shapes[1].size()) : in[1];
  std::string y = Op("MatMul", {x, w});
  if (alpha != 1.0) y = Op("Mul", {y, Scalar("alpha", alpha)});
  if (!with_c) return y;
  const std::string c = beta != 1.0 ? Op("Mul", {in[2], Scalar("beta", beta)}) : in[2];
  return Op("Add", {y, c});
}

StatusOr<std::string> Exporter::Pool(const Stage& stage, const std::string& x, const Shape& xs) {
  const Attributes& a = stage.attrs();
  const std::vector<int64_t> dilations = ToVector(a.dilations());
  const bool dilated =
      std::any_of(dilations.begin(), dilations.end(), [](int64_t d) { return d != 1; });
  // ONNX Runtime refuses pads as large as the kernel (the IR: the dilated kernel).
  bool wide_pads = false;
  for (int p = 0; p < a.pads_size(); ++p) wide_pads |= a.pads(p) >= a.kernel(p % a.kernel_size());
  NodeProto* n;
  if (a.pool() == MAX_POOL && wide_pads) {
    // Padding with -inf first, which the maximum ignores, then a pool without pads.
    n = Node("MaxPool", {PadForWindows(stage, x, xs, -std::numeric_limits<double>::infinity())});
  } else if (a.pool() == MAX_POOL) {
    n = Node("MaxPool", {x});
    SetInts(n, "pads", ToVector(a.pads()));
    SetInt(n, "ceil_mode", a.ceil_mode() ? 1 : 0);
  } else if (a.pool() == AVG_POOL && dilated) {
    return DilatedAveragePool(stage, x, xs);  // AveragePool has dilations from opset 19
  } else if (a.pool() == AVG_POOL) {
    n = Node("AveragePool", {x});
    SetInts(n, "pads", ToVector(a.pads()));
    SetInt(n, "ceil_mode", a.ceil_mode() ? 1 : 0);
    SetInt(n, "count_include_pad", a.count_include_pad() ? 1 : 0);
  } else {
    return Status::Error(StageLabel(stage) + ": unknown pool function");
  }
  SetInts(n, "kernel_shape", ToVector(a.kernel()));
  SetInts(n, "strides", ToVector(a.strides()));
  if (a.pool() == MAX_POOL) SetInts(n, "dilations", dilations);
  return n->output(0);
}

// x padded in front by pad_begin and behind by pad_end, or more where the last window
// of ceil_mode reaches further: a pooling without pads and with floor rounding over
// the result has the windows of the stage.
std::string Exporter::PadForWindows(const Stage& stage, const std::string& x, const Shape& xs,
                                    double value) {
  const Attributes& a = stage.attrs();
  const size_t rank = xs.size(), spatial = rank - 2;
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t s = 0; s < spatial; ++s) {
    const int64_t span = a.dilations(s) * (a.kernel(s) - 1) + 1;
    const int64_t last_end = (stage.shape(2 + s) - 1) * a.strides(s) + span - a.pads(s);
    pads[2 + s] = a.pads(s);
    pads[rank + 2 + s] = std::max(a.pads(spatial + s), last_end - xs[2 + s]);
  }
  if (std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; })) return x;
  return Op("Pad", {x, Int64s("pads", pads), Scalar("pad_value", value)});
}

// A dilated AVG_POOL as ONNX Conv: the input padded with zeros for every window, a
// depthwise convolution with ones summing each window, divided by a constant of each
// window's tap count (ops.h: the taps inside [0, S), or [-pad_begin, S + pad_end) with
// count_include_pad).
std::string Exporter::DilatedAveragePool(const Stage& stage, const std::string& x,
                                         const Shape& xs) {
  const Attributes& a = stage.attrs();
  const size_t spatial = xs.size() - 2;
  Shape count_shape = {1, 1};
  std::vector<double> counts = {1};
  for (size_t s = 0; s < spatial; ++s) {
    const int64_t extent = xs[2 + s], out = stage.shape(2 + s);
    const int64_t stride = a.strides(s), dilation = a.dilations(s), kernel = a.kernel(s);
    const int64_t begin = a.pads(s), end = a.pads(spatial + s);
    const int64_t lo = a.count_include_pad() ? -begin : 0;
    const int64_t hi = a.count_include_pad() ? extent + end : extent;
    std::vector<double> next;
    for (double c : counts) {
      for (int64_t o = 0; o < out; ++o) {
        int64_t taps = 0;
        for (int64_t k = 0; k < kernel; ++k) {
          const int64_t p = o * stride - begin + k * dilation;
          if (p >= lo && p < hi) ++taps;
        }
        next.push_back(c * static_cast<double>(taps));
      }
    }
    counts = std::move(next);
    count_shape.push_back(out);
  }
  const std::string source = PadForWindows(stage, x, xs, 0.0);
  Shape ones_shape = {xs[1], 1};
  ones_shape.insert(ones_shape.end(), a.kernel().begin(), a.kernel().end());
  NodeProto* conv = Node(
      "Conv",
      {source, Constant("ones", ones_shape, std::vector<double>(NumElements(ones_shape), 1.0))});
  SetInts(conv, "kernel_shape", ToVector(a.kernel()));
  SetInts(conv, "strides", ToVector(a.strides()));
  SetInts(conv, "dilations", ToVector(a.dilations()));
  SetInt(conv, "group", xs[1]);
  return Op("Div", {conv->output(0), Constant("counts", count_shape, counts)});
}

std::string Exporter::ScaleShift(const std::string& x, double alpha, double beta) {
  std::string y = x;
  if (alpha != 1.0) y = Op("Mul", {y, Scalar("alpha", alpha)});
  if (beta != 0.0) y = Op("Add", {y, Scalar("beta", beta)});
  return y;
}

StatusOr<std::string> Exporter::Unary(const Stage& stage, const std::string& x) {
  const Attributes& a = stage.attrs();
  for (const auto& [op, fn] : onnx_import::UnaryOperators()) {
    if (fn == a.unary()) return Op(op, {x});
  }
  const double alpha = EffectiveAlpha(stage), beta = EffectiveBeta(stage);
  switch (a.unary()) {
    case IDENTITY:
      return x;
    case GELU: {
      // x * 0.5 * (1 + erf(x / sqrt(2))), the form ONNX Runtime fuses into one kernel.
      const std::string erf = Op("Erf", {Op("Div", {x, Scalar("sqrt2", std::sqrt(2.0))})});
      const std::string y = Op("Mul", {x, Op("Add", {erf, Scalar("one", 1.0)})});
      return Op("Mul", {y, Scalar("half", 0.5)});
    }
    case RSQRT:
      return Op("Reciprocal", {Op("Sqrt", {x})});
    case SILU:
      return Op("Mul", {x, Op("Sigmoid", {x})});
    case SQUARE:
      return Op("Mul", {x, x});
    case SCALE:
      return ScaleShift(x, alpha, beta);
    case CLIP:
      return Op("Clip", {x, Scalar("min", a.clip_min()), Scalar("max", a.clip_max())});
    case LEAKY_RELU:
    case ELU: {
      const bool leaky = a.unary() == LEAKY_RELU;
      if (FloatAttributeExact(alpha)) {
        NodeProto* n = Node(leaky ? "LeakyRelu" : "Elu", {x});
        SetFloat(n, "alpha", alpha);
        return n->output(0);
      }
      // max(x, 0) + alpha * min(x, 0), or for ELU alpha * (exp(min(x, 0)) - 1), with
      // alpha in the stage's dtype.
      const std::string zero = Scalar("zero", 0.0);
      std::string negative = Op("Min", {x, zero});
      if (!leaky) negative = Op("Sub", {Op("Exp", {negative}), Scalar("one", 1.0)});
      return Op("Add", {Op("Max", {x, zero}), Op("Mul", {negative, Scalar("alpha", alpha)})});
    }
    case HARD_SIGMOID: {
      if (FloatAttributeExact(alpha) && FloatAttributeExact(beta)) {
        NodeProto* n = Node("HardSigmoid", {x});
        SetFloat(n, "alpha", alpha);
        SetFloat(n, "beta", beta);
        return n->output(0);
      }
      return Op("Clip", {ScaleShift(x, alpha, beta), Scalar("min", 0.0), Scalar("max", 1.0)});
    }
    default:
      return Status::Error(StageLabel(stage) + ": unknown unary function");
  }
}

}  // namespace

StatusOr<std::string> ExportOnnxModel(const PipelineSpec& spec) {
  const std::string what = "ONNX export of pipeline '" + spec.name() + "'";
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  if (!graph.ok()) return graph.status().WithContext("ONNX export");
  double weight_bytes = 0;
  for (const Value& v : graph->values()) {
    if (v.kind == Value::Kind::kParameter) {
      weight_bytes += static_cast<double>(NumElements(v.shape)) * BytesPerElement(v.dtype);
    }
  }
  if (weight_bytes > kMaxModelBytes) {
    return Status::Error(what + ": its parameters hold " +
                         std::to_string(static_cast<int64_t>(weight_bytes)) +
                         " bytes, over the 2 GiB a protobuf message holds (ONNX external "
                         "data is not written)");
  }
  const PipelineSpec weights = WithMaterializedParameters(graph->spec());
  StatusOr<onnx::ModelProto> model = Exporter(*graph, weights).Run();
  if (!model.ok()) return model.status().WithContext(what);
  std::string bytes;
  if (!model->SerializeToString(&bytes)) {
    return Status::Error(what + ": the model of " + std::to_string(model->ByteSizeLong()) +
                         " bytes does not serialize (protobuf messages hold at most 2 GiB)");
  }
  return bytes;
}

}  // namespace schedfarm
