// ONNX model -> PipelineSpec. Values known at import (initializers, Constant nodes,
// integer inputs given a value, and everything computed from them alone) are kept as
// ConstTensors and folded; the rest become pipeline stages through PipelineBuilder.
// Constants are turned into parameters only where a stage reads them, so integer
// shape subgraphs and weights folded into others leave no trace in the spec.
#include "pipeline/onnx/onnx_import.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "common/files.h"
#include "common/utf8.h"
#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/onnx/onnx_internal.h"

namespace schedfarm {
namespace {

using onnx::AttributeProto;
using onnx::TensorProto;
using onnx_import::AttrSpec;
using onnx_import::ConstTensor;
using onnx_import::ElemTypeName;
using onnx_import::IsFloatType;
using onnx_import::IsIntegerType;
using onnx_import::NodeContext;

constexpr int64_t kMinOpset = 11;  // the range the importer is written for; older
constexpr int64_t kMaxOpset = 17;  // opsets are accepted per operator (OpInfo::min_opset)

// Largest count of slices a Gather or Tile of run-time data expands to.
constexpr int64_t kMaxExpandedSlices = 64;

constexpr auto I = AttributeProto::INT;
constexpr auto F = AttributeProto::FLOAT;
constexpr auto S = AttributeProto::STRING;
constexpr auto T = AttributeProto::TENSOR;
constexpr auto IS = AttributeProto::INTS;
constexpr auto FS = AttributeProto::FLOATS;

// An ONNX value under import.
struct Val {
  int32_t elem_type = TensorProto::FLOAT;
  Shape shape;
  // Values known at import. For a float graph input given a value in the options,
  // `value` is set but `constant` is false: the input stays run-time data and the
  // value is only used where a node needs a constant (Resize scales...).
  std::optional<ConstTensor> value;
  bool constant = false;
  std::string alias_of;  // an Identity-like alias: materialize through this value
  std::string tensor;    // pipeline tensor once materialized
};

class Importer;
using Handler = Status (Importer::*)(const NodeContext&);

// What the importer knows of an operator: the oldest opset whose semantics it
// implements, how many leading inputs it requires, the attributes it reads and its
// handler.
struct OpInfo {
  int64_t min_opset;
  int min_inputs;
  std::vector<AttrSpec> attrs;
  Handler handler;
};

bool IsIntegral(double v) { return std::isfinite(v) && v == std::floor(v); }

class Importer {
 public:
  Importer(const onnx::ModelProto& model, const std::string& what, const OnnxImportOptions& options)
      : model_(model), what_(what), options_(options), b_("onnx") {}

  StatusOr<PipelineSpec> Run();

 private:
  static const std::map<std::string, OpInfo>& Ops();
  static std::string SupportedOps();

  Status Prepare();
  Status ImportNode(const onnx::NodeProto& node, int index);
  Status ImportOutputs();

  // --- values ---
  bool Defined(const std::string& name) const { return vals_.count(name) > 0; }
  const Val& In(const NodeContext& ctx, int k) const { return vals_.at(ctx.input(k)); }
  bool IsConstant(const NodeContext& ctx, int k) const {
    return ctx.HasInput(k) && In(ctx, k).constant;
  }
  // The pipeline tensor of input k: materializes constants as parameters and graph
  // inputs as pipeline inputs. Integer constants are data only where allow_int.
  StatusOr<std::string> Data(const NodeContext& ctx, int k, bool allow_int = false);
  // Same for any value; `where` starts error messages ("node 'x' (op Add)").
  StatusOr<std::string> Materialize(const std::string& where, const std::string& name,
                                    bool allow_int);
  // Input k viewed with `shape` (same element count): a constant becomes a parameter
  // of that shape, run-time data a RESHAPE stage.
  StatusOr<std::string> DataAs(const NodeContext& ctx, int k, const Shape& shape);
  // The value of input k, which must be known at import.
  StatusOr<const ConstTensor*> Const(const NodeContext& ctx, int k, const char* what);
  // Same for an optional input: nullptr when absent.
  StatusOr<const ConstTensor*> OptConst(const NodeContext& ctx, int k, const char* what);
  // A new parameter holding `value` (rounded to the pipeline dtype).
  std::string NewParameter(const std::string& base, const ConstTensor& value);
  Status SetData(const NodeContext& ctx, int k, const std::string& tensor);
  Status SetConst(const NodeContext& ctx, int k, ConstTensor value);
  Status Alias(const NodeContext& ctx, int out, int in);
  bool OutputNamed(const NodeContext& ctx, int k) const {
    return k < ctx.node().output_size() && !ctx.node().output(k).empty();
  }
  // Whether a later node or the graph's outputs read output k.
  bool OutputConsumed(const NodeContext& ctx, int k) const {
    return OutputNamed(ctx, k) && consumed_.count(ctx.node().output(k)) > 0;
  }
  Shape ShapeOfTensor(const std::string& tensor) const { return b_.ShapeOf(tensor); }
  std::string ReshapeTo(const std::string& x, const Shape& shape) {
    return ShapeOfTensor(x) == shape ? x : b_.Reshape(x, shape);
  }
  std::string ScalarParameter(const std::string& base, double v) {
    ConstTensor t = onnx_import::MakeConst(float_type_, {});
    t.f[0] = v;
    return NewParameter(base, t);
  }

  // --- handlers ---
  Status Constant(const NodeContext& ctx);
  Status ConstantOnly(const NodeContext& ctx);
  Status ShapeOp(const NodeContext& ctx);
  Status SizeOp(const NodeContext& ctx);
  Status IdentityOp(const NodeContext& ctx);
  Status DropoutOp(const NodeContext& ctx);
  Status CastOp(const NodeContext& ctx);
  Status ConvOp(const NodeContext& ctx);
  Status GemmOp(const NodeContext& ctx);
  Status MatMulOp(const NodeContext& ctx);
  Status PoolOp(const NodeContext& ctx);
  Status GlobalPoolOp(const NodeContext& ctx);
  Status BatchNormOp(const NodeContext& ctx);
  Status InstanceNormOp(const NodeContext& ctx);
  Status LayerNormOp(const NodeContext& ctx);
  Status SoftmaxOp(const NodeContext& ctx);
  Status UnaryOp(const NodeContext& ctx);
  Status ParamUnaryOp(const NodeContext& ctx);
  Status PReluOp(const NodeContext& ctx);
  Status ClipOp(const NodeContext& ctx);
  Status BinaryOp(const NodeContext& ctx);
  Status VariadicOp(const NodeContext& ctx);
  Status PadOp(const NodeContext& ctx);
  Status ConcatOp(const NodeContext& ctx);
  Status SliceOp(const NodeContext& ctx);
  Status SplitOp(const NodeContext& ctx);
  Status TransposeOp(const NodeContext& ctx);
  Status ReshapeOp(const NodeContext& ctx);
  Status ReduceOp(const NodeContext& ctx);
  Status ResizeOp(const NodeContext& ctx);
  Status ExpandOp(const NodeContext& ctx);
  Status TileOp(const NodeContext& ctx);
  Status GatherOp(const NodeContext& ctx);
  Status DepthSpaceOp(const NodeContext& ctx);

  // Pads of a windowed op (Conv, pools) after auto_pad, begins then ends.
  StatusOr<std::vector<int64_t>> WindowPads(const NodeContext& ctx, const Shape& x,
                                            const std::vector<int64_t>& kernel,
                                            const std::vector<int64_t>& strides,
                                            const std::vector<int64_t>& dilations);
  // A slice of run-time tensor x (ONNX-resolved), or x itself when it is the identity.
  std::string SliceTensor(const std::string& x, const onnx_import::ResolvedSlice& s);

  const onnx::ModelProto& model_;
  std::string what_;
  const OnnxImportOptions& options_;
  PipelineBuilder b_;
  int64_t opset_ = 0;
  int32_t float_type_ = TensorProto::FLOAT;
  DataType dtype_ = FLOAT32;
  std::map<std::string, Val> vals_;
  std::set<std::string> non_stage_tensors_;  // pipeline inputs and parameters
  std::set<std::string> consumed_;           // names read by a node or a graph output
};

// --- values -------------------------------------------------------------------------

StatusOr<std::string> Importer::Materialize(const std::string& where, const std::string& name,
                                            bool allow_int) {
  Val& v = vals_.at(name);
  if (!v.alias_of.empty()) return Materialize(where, v.alias_of, allow_int);
  if (!v.tensor.empty()) return v.tensor;
  auto unsupported = [&](const std::string& message) {
    return Status::Error(where + ": unsupported " + message);
  };
  for (int64_t d : v.shape) {
    if (d == 0) return unsupported("zero-size tensor '" + name + "' " + ShapeToString(v.shape));
  }
  if (!v.value) return Status::Error(where + ": value '" + name + "' has no data");
  if (!IsFloatType(v.elem_type) && !allow_int) {
    return unsupported(std::string("use of ") + ElemTypeName(v.elem_type) + " tensor '" + name +
                       "' as data (integer tensors are supported as constant "
                       "shapes, axes and indices only)");
  }
  if (IsFloatType(v.elem_type) && v.elem_type != float_type_) {
    return unsupported(std::string(ElemTypeName(v.elem_type)) + " tensor '" + name + "' in a " +
                       ElemTypeName(float_type_) + " model");
  }
  v.tensor = NewParameter(name, *v.value);
  return v.tensor;
}

StatusOr<std::string> Importer::Data(const NodeContext& ctx, int k, bool allow_int) {
  if (!ctx.HasInput(k)) return ctx.Error("missing input " + std::to_string(k));
  return Materialize(ctx.Label(), ctx.input(k), allow_int);
}

StatusOr<std::string> Importer::DataAs(const NodeContext& ctx, int k, const Shape& shape) {
  if (IsConstant(ctx, k) && IsFloatType(In(ctx, k).elem_type) &&
      NumElements(In(ctx, k).shape) == NumElements(shape) && In(ctx, k).shape != shape) {
    ConstTensor value = *In(ctx, k).value;
    value.shape = shape;
    if (value.elem_type != float_type_) {
      return ctx.Unsupported(std::string(ElemTypeName(value.elem_type)) + " tensor '" +
                             ctx.input(k) + "' in a " + ElemTypeName(float_type_) + " model");
    }
    return NewParameter(ctx.input(k), value);
  }
  SCHEDFARM_ASSIGN_OR_RETURN(std::string t, Data(ctx, k));
  if (NumElements(ShapeOfTensor(t)) != NumElements(shape)) {
    return ctx.Error("input " + std::to_string(k) + " has shape " +
                     ShapeToString(ShapeOfTensor(t)) + ", expected " + ShapeToString(shape) +
                     " elements");
  }
  return ReshapeTo(t, shape);
}

StatusOr<const ConstTensor*> Importer::Const(const NodeContext& ctx, int k, const char* what) {
  if (!ctx.HasInput(k)) {
    return ctx.Error("missing input " + std::to_string(k) + " (" + what + ")");
  }
  const Val& v = In(ctx, k);
  if (!v.value) {
    return ctx.Unsupported("run-time input " + std::to_string(k) + " ('" + ctx.input(k) + "', " +
                           what +
                           "): it must be known at import (an initializer, a "
                           "Constant or a static shape computation)");
  }
  return &*v.value;
}

StatusOr<const ConstTensor*> Importer::OptConst(const NodeContext& ctx, int k, const char* what) {
  if (!ctx.HasInput(k)) return static_cast<const ConstTensor*>(nullptr);
  return Const(ctx, k, what);
}

std::string Importer::NewParameter(const std::string& base, const ConstTensor& value) {
  std::string name = b_.ConstantParameter(base, value.shape, value.Doubles());
  non_stage_tensors_.insert(name);
  return name;
}

Status Importer::SetData(const NodeContext& ctx, int k, const std::string& tensor) {
  if (!OutputNamed(ctx, k)) return Status::Ok();
  if (!b_.ok()) return ctx.Error(b_.error().message());
  Val v;
  v.elem_type = float_type_;
  v.shape = ShapeOfTensor(tensor);
  v.tensor = tensor;
  vals_[ctx.node().output(k)] = std::move(v);
  return Status::Ok();
}

Status Importer::SetConst(const NodeContext& ctx, int k, ConstTensor value) {
  if (!OutputNamed(ctx, k)) return Status::Ok();
  Val v;
  v.elem_type = value.elem_type;
  v.shape = value.shape;
  v.value = std::move(value);
  v.constant = true;
  vals_[ctx.node().output(k)] = std::move(v);
  return Status::Ok();
}

Status Importer::Alias(const NodeContext& ctx, int out, int in) {
  if (!OutputNamed(ctx, out)) return Status::Ok();
  Val v = In(ctx, in);
  if (v.alias_of.empty() && v.tensor.empty()) v.alias_of = ctx.input(in);
  vals_[ctx.node().output(out)] = std::move(v);
  return Status::Ok();
}

// --- the model ----------------------------------------------------------------------

Status Importer::Prepare() {
  // Opset of the default domain (-1 if none: then the graph must not use it).
  opset_ = -1;
  for (const onnx::OperatorSetIdProto& set : model_.opset_import()) {
    if (set.domain().empty() || set.domain() == "ai.onnx") opset_ = set.version();
  }
  if (opset_ != -1 && (opset_ < 1 || opset_ > kMaxOpset)) {
    return Status::Error("unsupported opset version " + std::to_string(opset_) +
                         " of domain '' (supported: " + std::to_string(kMinOpset) + " to " +
                         std::to_string(kMaxOpset) + "; older versions per operator)");
  }
  if (!model_.has_graph()) return Status::Error("has no graph");
  const onnx::GraphProto& graph = model_.graph();
  for (const onnx::NodeProto& node : graph.node())
    consumed_.insert(node.input().begin(), node.input().end());
  for (const onnx::ValueInfoProto& out : graph.output()) consumed_.insert(out.name());
  if (graph.sparse_initializer_size() > 0) {
    return Status::Error("unsupported sparse initializer '" +
                         graph.sparse_initializer(0).values().name() + "'");
  }

  // Initializers.
  for (const TensorProto& init : graph.initializer()) {
    const std::string what = "initializer '" + init.name() + "'";
    if (init.name().empty()) return Status::Error("an initializer has no name");
    if (vals_.count(init.name())) return Status::Error(what + " is defined twice");
    SCHEDFARM_ASSIGN_OR_RETURN(ConstTensor t, onnx_import::DecodeTensor(init, what));
    Val v;
    v.elem_type = t.elem_type;
    v.shape = t.shape;
    v.value = std::move(t);
    v.constant = true;
    vals_[init.name()] = std::move(v);
  }

  // The pipeline's dtype: the float type of the graph inputs and outputs.
  std::set<int32_t> float_types;
  for (const auto* list : {&graph.input(), &graph.output()}) {
    for (const onnx::ValueInfoProto& info : *list) {
      if (vals_.count(info.name())) continue;  // an initializer listed as an input
      const int32_t t = info.type().tensor_type().elem_type();
      if (IsFloatType(t)) float_types.insert(t);
    }
  }
  if (float_types.size() > 1) {
    return Status::Error("unsupported mix of FLOAT and DOUBLE graph inputs and outputs");
  }
  if (float_types.count(TensorProto::DOUBLE)) {
    float_type_ = TensorProto::DOUBLE;
    dtype_ = FLOAT64;
  }
  b_ = PipelineBuilder(graph.name().empty() ? "onnx" : graph.name(), dtype_);
  b_.set_math(options_.math);
  b_.set_source("onnx:" + what_);

  // Graph inputs that are not initializers.
  for (const onnx::ValueInfoProto& info : graph.input()) {
    if (vals_.count(info.name())) continue;
    const std::string what = "input '" + info.name() + "'";
    if (!info.type().has_tensor_type()) {
      return Status::Error(what + ": unsupported type (only tensors are supported)");
    }
    const onnx::TypeProto::Tensor& tt = info.type().tensor_type();
    const int32_t elem = tt.elem_type();
    if (!IsFloatType(elem) && !IsIntegerType(elem)) {
      return Status::Error(what + ": unsupported element type " + ElemTypeName(elem) +
                           " (supported: FLOAT, DOUBLE; integer inputs given a value)");
    }
    std::optional<ConstTensor> given;
    auto it = options_.input_values.find(info.name());
    if (it != options_.input_values.end()) {
      TensorProto proto;
      if (!proto.ParseFromString(it->second)) {
        return Status::Error(what + ": the given value is not a valid TensorProto");
      }
      SCHEDFARM_ASSIGN_OR_RETURN(ConstTensor t,
                                 onnx_import::DecodeTensor(proto, what + " (given value)"));
      if (t.elem_type != elem) {
        return Status::Error(what + ": the given value is " + ElemTypeName(t.elem_type) +
                             ", the input is " + ElemTypeName(elem));
      }
      given = std::move(t);
    }
    if (!tt.has_shape() && !given) return Status::Error(what + " has no shape");
    Shape shape;
    if (tt.has_shape()) {
      if (given && static_cast<int>(given->shape.size()) != tt.shape().dim_size()) {
        return Status::Error(what + ": the given value has shape " + ShapeToString(given->shape) +
                             ", the input has rank " + std::to_string(tt.shape().dim_size()));
      }
      for (int d = 0; d < tt.shape().dim_size(); ++d) {
        const onnx::TensorShapeProto::Dimension& dim = tt.shape().dim(d);
        int64_t extent = -1;
        if (dim.has_dim_value()) {
          extent = dim.dim_value();
        } else if (dim.has_dim_param() && options_.dim_values.count(dim.dim_param())) {
          extent = options_.dim_values.at(dim.dim_param());
        } else if (given) {
          extent = given->shape[d];
        } else if (dim.has_dim_param()) {
          return Status::Error(what + ": dim " + std::to_string(d) + " is symbolic ('" +
                               dim.dim_param() +
                               "'); give its extent in OnnxImportOptions::dim_values");
        } else {
          return Status::Error(what + ": dim " + std::to_string(d) +
                               " has no extent; give the input a static shape");
        }
        if (extent < 0) {
          return Status::Error(what + ": dim " + std::to_string(d) + " has extent " +
                               std::to_string(extent));
        }
        if (given && given->shape[d] != extent) {
          return Status::Error(what + ": the given value has shape " + ShapeToString(given->shape) +
                               ", dim " + std::to_string(d) + " should be " +
                               std::to_string(extent));
        }
        shape.push_back(extent);
      }
    } else {
      shape = given->shape;
    }
    Val v;
    v.elem_type = elem;
    v.shape = shape;
    if (IsIntegerType(elem)) {
      if (!given) {
        return Status::Error(what + ": unsupported run-time " + ElemTypeName(elem) +
                             " input (integer inputs must be given a value in "
                             "OnnxImportOptions::input_values)");
      }
      v.constant = true;
    } else if (elem != float_type_) {
      return Status::Error(what + ": unsupported " + ElemTypeName(elem) + " input in a " +
                           ElemTypeName(float_type_) + " model");
    } else if (NumElements(shape) > 0) {
      // Created first, in graph order, so the pipeline inputs keep the ONNX names.
      v.tensor = b_.Input(info.name(), shape);
      non_stage_tensors_.insert(v.tensor);
    }
    v.value = std::move(given);
    vals_[info.name()] = std::move(v);
  }
  return Status::Ok();
}

Status Importer::ImportNode(const onnx::NodeProto& node, int index) {
  NodeContext ctx(node, index, opset_);
  if (!node.domain().empty() && node.domain() != "ai.onnx") {
    return ctx.Unsupported("operator domain '" + node.domain() +
                           "' (supported: the default domain '')");
  }
  if (opset_ < 0) {
    return ctx.Error("the model imports no version of the default operator set (domain '')");
  }
  auto it = Ops().find(node.op_type());
  if (it == Ops().end()) {
    return ctx.Unsupported("operator; supported: " + SupportedOps());
  }
  const OpInfo& info = it->second;
  if (opset_ < info.min_opset) {
    return ctx.Unsupported("opset " + std::to_string(opset_) + " version of " + node.op_type() +
                           " (its semantics are implemented from opset " +
                           std::to_string(info.min_opset) + ")");
  }
  SCHEDFARM_RETURN_IF_ERROR(onnx_import::CheckAttributes(ctx, info.attrs));
  for (int k = 0; k < info.min_inputs; ++k) {
    if (!ctx.HasInput(k)) {
      return ctx.Error("needs at least " + std::to_string(info.min_inputs) + " inputs, input " +
                       std::to_string(k) + " is missing");
    }
  }
  for (int k = 0; k < node.input_size(); ++k) {
    if (!node.input(k).empty() && !Defined(node.input(k))) {
      return ctx.Error("input '" + node.input(k) +
                       "' is not a graph input, an initializer or the output of an earlier node");
    }
  }
  for (const std::string& out : node.output()) {
    if (!out.empty() && Defined(out)) return ctx.Error("output '" + out + "' is defined twice");
  }

  // Fold nodes whose inputs are all constants.
  bool all_constant = node.input_size() > 0;
  std::vector<const ConstTensor*> inputs;
  for (int k = 0; k < node.input_size(); ++k) {
    if (!ctx.HasInput(k)) {
      inputs.push_back(nullptr);
    } else if (In(ctx, k).constant) {
      inputs.push_back(&*In(ctx, k).value);
    } else {
      all_constant = false;
    }
  }
  if (all_constant && onnx_import::IsFoldable(node.op_type())) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<ConstTensor> outs, onnx_import::FoldNode(ctx, inputs));
    if (!outs.empty()) {
      for (int k = 0; k < node.output_size() && k < static_cast<int>(outs.size()); ++k) {
        SCHEDFARM_RETURN_IF_ERROR(SetConst(ctx, k, std::move(outs[k])));
      }
    } else {
      SCHEDFARM_RETURN_IF_ERROR((this->*info.handler)(ctx));
    }
  } else {
    SCHEDFARM_RETURN_IF_ERROR((this->*info.handler)(ctx));
  }
  if (!b_.ok()) return ctx.Error(b_.error().message());
  for (int k = 0; k < node.output_size(); ++k) {
    if (OutputConsumed(ctx, k) && !Defined(node.output(k))) {
      return ctx.Unsupported("output " + std::to_string(k) + " ('" + node.output(k) + "')");
    }
  }
  return Status::Ok();
}

Status Importer::ImportOutputs() {
  const onnx::GraphProto& graph = model_.graph();
  if (graph.output_size() == 0) return Status::Error("graph has no outputs");
  std::set<std::string> used;
  for (const onnx::ValueInfoProto& info : graph.output()) {
    const std::string what = "output '" + info.name() + "'";
    auto it = vals_.find(info.name());
    if (it == vals_.end()) {
      return Status::Error(what + " is not a graph input, an initializer or a node output");
    }
    const Val& v = it->second;
    if (!IsFloatType(v.elem_type)) {
      return Status::Error(what + ": unsupported element type " + ElemTypeName(v.elem_type) +
                           " (outputs must be FLOAT or DOUBLE)");
    }
    SCHEDFARM_ASSIGN_OR_RETURN(std::string tensor, Materialize(what, info.name(), false));
    if (non_stage_tensors_.count(tensor) || used.count(tensor)) {
      tensor = b_.Unary(IDENTITY, tensor);
    }
    used.insert(tensor);
    b_.Output(tensor);
  }
  if (!b_.ok()) return b_.error();
  return Status::Ok();
}

StatusOr<PipelineSpec> Importer::Run() {
  SCHEDFARM_RETURN_IF_ERROR(Prepare());
  const onnx::GraphProto& graph = model_.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    SCHEDFARM_RETURN_IF_ERROR(ImportNode(graph.node(i), i));
  }
  SCHEDFARM_RETURN_IF_ERROR(ImportOutputs());
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec spec, b_.Finish());

  // Drop inputs and parameters that no stage reads: inputs used only for their
  // shape or as constants, operands the operator library folded (batch norm
  // statistics...).
  std::set<std::string> read;
  for (const Stage& s : spec.stages()) read.insert(s.inputs().begin(), s.inputs().end());
  std::vector<TensorDecl> inputs;
  for (const TensorDecl& t : spec.inputs()) {
    if (read.count(t.name())) inputs.push_back(t);
  }
  spec.clear_inputs();
  for (TensorDecl& t : inputs) *spec.add_inputs() = std::move(t);
  std::vector<Parameter> params;
  for (const Parameter& p : spec.parameters()) {
    if (read.count(p.tensor().name())) params.push_back(p);
  }
  spec.clear_parameters();
  for (Parameter& p : params) *spec.add_parameters() = std::move(p);
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph checked, PipelineGraph::Build(spec));
  return checked.spec();
}

// --- handlers: constants and aliases -----------------------------------------------

Status Importer::Constant(const NodeContext& ctx) {
  const AttributeProto* attr = nullptr;
  for (const char* name : {"value", "value_float", "value_floats", "value_int", "value_ints"}) {
    if (const AttributeProto* a = ctx.Find(name)) {
      if (attr != nullptr) return ctx.Error("has more than one value attribute");
      attr = a;
    }
  }
  if (attr == nullptr) return ctx.Error("has no value attribute");
  ConstTensor t;
  if (attr->name() == "value") {
    SCHEDFARM_ASSIGN_OR_RETURN(t, onnx_import::DecodeTensor(attr->t(), ctx.Label() + " value"));
  } else if (attr->name() == "value_float") {
    t = onnx_import::MakeConst(TensorProto::FLOAT, {});
    t.f[0] = attr->f();
  } else if (attr->name() == "value_floats") {
    t = onnx_import::MakeConst(TensorProto::FLOAT, {attr->floats_size()});
    for (int k = 0; k < attr->floats_size(); ++k) t.f[k] = attr->floats(k);
  } else if (attr->name() == "value_int") {
    t = onnx_import::MakeConst(TensorProto::INT64, {});
    t.i[0] = attr->i();
  } else {
    t = onnx_import::IntVector({attr->ints().begin(), attr->ints().end()});
  }
  return SetConst(ctx, 0, std::move(t));
}

// Ops supported on values known at import only (Range, Equal, Where...): they are
// folded with the values of float graph inputs given in the options, if any.
Status Importer::ConstantOnly(const NodeContext& ctx) {
  std::vector<const ConstTensor*> inputs;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* t, OptConst(ctx, k, "operand"));
    inputs.push_back(t);
  }
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<ConstTensor> outs, onnx_import::FoldNode(ctx, inputs));
  if (outs.empty()) {
    return ctx.Unsupported("result: over " + std::to_string(onnx_import::kMaxFoldElements) +
                           " elements to fold, and the op has no pipeline form");
  }
  for (int k = 0; k < ctx.node().output_size() && k < static_cast<int>(outs.size()); ++k) {
    SCHEDFARM_RETURN_IF_ERROR(SetConst(ctx, k, std::move(outs[k])));
  }
  return Status::Ok();
}

Status Importer::ShapeOp(const NodeContext& ctx) {
  const Shape& shape = In(ctx, 0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  int64_t start = ctx.Int("start", 0), end = ctx.Int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::min(std::max<int64_t>(start, 0), rank);
  end = std::min(std::max<int64_t>(end, 0), rank);
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(shape[d]);
  return SetConst(ctx, 0, onnx_import::IntVector(dims));
}

Status Importer::SizeOp(const NodeContext& ctx) {
  ConstTensor t = onnx_import::MakeConst(TensorProto::INT64, {});
  t.i[0] = NumElements(In(ctx, 0).shape);
  return SetConst(ctx, 0, std::move(t));
}

Status Importer::IdentityOp(const NodeContext& ctx) { return Alias(ctx, 0, 0); }

Status Importer::DropoutOp(const NodeContext& ctx) {
  if (OutputConsumed(ctx, 1)) return ctx.Unsupported("output 1 ('mask')");
  if (ctx.opset() < 7 && ctx.Int("is_test", 0) == 0 && ctx.Float("ratio", 0.5) != 0) {
    return ctx.Unsupported("is_test = 0 (training) with a non-zero ratio");
  }
  if (ctx.HasInput(2)) {
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* training, Const(ctx, 2, "training_mode"));
    if (training->size() != 1) return ctx.Error("training_mode must be a scalar");
    if (training->AsDouble(0) != 0) {
      // Training-mode dropout is random unless the ratio is 0.
      SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* ratio, OptConst(ctx, 1, "ratio"));
      if (ratio == nullptr || ratio->size() != 1 || ratio->AsDouble(0) != 0) {
        return ctx.Unsupported("training_mode = true with a non-zero ratio");
      }
    }
  }
  return Alias(ctx, 0, 0);
}

Status Importer::CastOp(const NodeContext& ctx) {
  const int32_t to =
      ctx.op() == "CastLike" ? In(ctx, 1).elem_type : static_cast<int32_t>(ctx.Int("to", 0));
  const Val& x = In(ctx, 0);
  if (x.elem_type != to) {
    return ctx.Unsupported(std::string("cast of run-time ") + ElemTypeName(x.elem_type) +
                           " data to " + ElemTypeName(to));
  }
  return Alias(ctx, 0, 0);
}

// --- handlers: convolution, matmul, pooling --------------------------------------

StatusOr<std::vector<int64_t>> Importer::WindowPads(const NodeContext& ctx, const Shape& x,
                                                    const std::vector<int64_t>& kernel,
                                                    const std::vector<int64_t>& strides,
                                                    const std::vector<int64_t>& dilations) {
  const size_t spatial = kernel.size();
  const std::string auto_pad = ctx.String("auto_pad", "NOTSET");
  std::vector<int64_t> pads = ctx.Ints("pads");
  if (auto_pad == "NOTSET") {
    if (pads.empty()) pads.assign(2 * spatial, 0);
    if (pads.size() != 2 * spatial) {
      return ctx.Error("attribute 'pads' has " + std::to_string(pads.size()) +
                       " values, expected " + std::to_string(2 * spatial));
    }
    for (int64_t p : pads) {
      if (p < 0) return ctx.Unsupported("negative pads " + ShapeToString(pads));
    }
    return pads;
  }
  pads.assign(2 * spatial, 0);
  if (auto_pad == "VALID") return pads;
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") {
    return ctx.Unsupported("value '" + auto_pad +
                           "' of attribute 'auto_pad' (supported: "
                           "NOTSET, VALID, SAME_UPPER, SAME_LOWER)");
  }
  for (size_t s = 0; s < spatial; ++s) {
    const int64_t in = x[2 + s];
    const int64_t out = (in + strides[s] - 1) / strides[s];
    const int64_t total =
        std::max<int64_t>(0, (out - 1) * strides[s] + (kernel[s] - 1) * dilations[s] + 1 - in);
    const int64_t small = total / 2;
    pads[s] = auto_pad == "SAME_UPPER" ? small : total - small;
    pads[spatial + s] = total - pads[s];
  }
  return pads;
}

// Reads strides/dilations defaulting to 1 per spatial dim.
StatusOr<std::vector<int64_t>> PerSpatial(const NodeContext& ctx, const char* name,
                                          size_t spatial) {
  std::vector<int64_t> v = ctx.Ints(name);
  if (v.empty()) v.assign(spatial, 1);
  if (v.size() != spatial) {
    return ctx.Error(std::string("attribute '") + name + "' has " + std::to_string(v.size()) +
                     " values, expected " + std::to_string(spatial));
  }
  for (int64_t s : v) {
    if (s < 1) return ctx.Error(std::string("attribute '") + name + "' must be positive");
  }
  return v;
}

Status Importer::ConvOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  SCHEDFARM_ASSIGN_OR_RETURN(std::string w, Data(ctx, 1));
  std::string bias;
  if (ctx.HasInput(2)) {
    SCHEDFARM_ASSIGN_OR_RETURN(bias, Data(ctx, 2));
  }
  const Shape xs = ShapeOfTensor(x), ws = ShapeOfTensor(w);
  if (xs.size() < 3 || xs.size() > 5 || ws.size() != xs.size()) {
    return ctx.Unsupported("input shapes " + ShapeToString(xs) + " and weights " +
                           ShapeToString(ws) + " (1 to 3 spatial dims)");
  }
  const size_t spatial = xs.size() - 2;
  std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
  if (ctx.Has("kernel_shape") && ctx.Ints("kernel_shape") != kernel) {
    return ctx.Error("attribute 'kernel_shape' " + ShapeToString(ctx.Ints("kernel_shape")) +
                     " does not match the weights " + ShapeToString(ws));
  }
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, PerSpatial(ctx, "strides", spatial));
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, PerSpatial(ctx, "dilations", spatial));
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                             WindowPads(ctx, xs, kernel, strides, dilations));
  return SetData(ctx, 0, b_.Conv(x, w, bias, strides, pads, dilations, ctx.Int("group", 1)));
}

Status Importer::GemmOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string a, Data(ctx, 0));
  SCHEDFARM_ASSIGN_OR_RETURN(std::string b, Data(ctx, 1));
  const double alpha = ctx.Float("alpha", 1.0), beta = ctx.Float("beta", 1.0);
  // Before opset 7, C broadcasts only with broadcast = 1; without it C is already
  // [M, N] in a valid model, and numpy broadcasting leaves it as it is.
  std::string c;
  if (ctx.HasInput(2) && beta != 0.0) {
    SCHEDFARM_ASSIGN_OR_RETURN(c, Data(ctx, 2));
  }
  if (ShapeOfTensor(a).size() != 2 || ShapeOfTensor(b).size() != 2) {
    return ctx.Error("A and B must be matrices, got " + ShapeToString(ShapeOfTensor(a)) + " and " +
                     ShapeToString(ShapeOfTensor(b)));
  }
  return SetData(
      ctx, 0, b_.Gemm(a, b, c, alpha, beta, ctx.Int("transA", 0) != 0, ctx.Int("transB", 0) != 0));
}

Status Importer::MatMulOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string a, Data(ctx, 0));
  SCHEDFARM_ASSIGN_OR_RETURN(std::string b, Data(ctx, 1));
  Shape as = ShapeOfTensor(a), bs = ShapeOfTensor(b);
  if (as.empty() || bs.empty()) return ctx.Error("MatMul operands must have rank >= 1");
  // numpy.matmul: a 1-D operand gains a dim of 1 that the result drops again.
  const bool a_vector = as.size() == 1, b_vector = bs.size() == 1;
  if (a_vector) a = b_.Reshape(a, {1, as[0]});
  if (b_vector) b = b_.Reshape(b, {bs[0], 1});
  std::string y = b_.MatMul(a, b);
  if (!b_.ok()) return ctx.Error(b_.error().message());
  if (a_vector || b_vector) {
    Shape ys = ShapeOfTensor(y);
    Shape out(ys.begin(), ys.end() - 2);
    if (!a_vector) out.push_back(ys[ys.size() - 2]);
    if (!b_vector) out.push_back(ys.back());
    y = b_.Reshape(y, out);
  }
  return SetData(ctx, 0, y);
}

Status Importer::PoolOp(const NodeContext& ctx) {
  const bool max_pool = ctx.op() == "MaxPool";
  if (max_pool && OutputConsumed(ctx, 1)) return ctx.Unsupported("output 1 ('Indices')");
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  if (xs.size() < 3 || xs.size() > 5) {
    return ctx.Unsupported("input shape " + ShapeToString(xs) + " (1 to 3 spatial dims)");
  }
  const size_t spatial = xs.size() - 2;
  const std::vector<int64_t> kernel = ctx.Ints("kernel_shape");
  if (kernel.size() != spatial) {
    return ctx.Error("attribute 'kernel_shape' " + ShapeToString(kernel) + " must have " +
                     std::to_string(spatial) + " values");
  }
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> strides, PerSpatial(ctx, "strides", spatial));
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> dilations, PerSpatial(ctx, "dilations", spatial));
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> pads,
                             WindowPads(ctx, xs, kernel, strides, dilations));
  for (size_t s = 0; s < spatial; ++s) {
    const int64_t effective = dilations[s] * (kernel[s] - 1) + 1;
    if (pads[s] >= effective || pads[spatial + s] >= effective) {
      return ctx.Unsupported("pads " + ShapeToString(pads) + " as large as the window " +
                             ShapeToString(kernel) + " (windows entirely in the padding)");
    }
  }
  const bool same = ctx.String("auto_pad", "NOTSET").rfind("SAME", 0) == 0;
  const bool ceil_mode = !same && ctx.Int("ceil_mode", 0) != 0;
  if (max_pool) {
    return SetData(ctx, 0, b_.MaxPool(x, kernel, strides, pads, ceil_mode, dilations));
  }
  return SetData(
      ctx, 0,
      b_.AvgPool(x, kernel, strides, pads, ctx.Int("count_include_pad", 0) != 0, ceil_mode));
}

Status Importer::GlobalPoolOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  if (ShapeOfTensor(x).size() < 3) {
    return ctx.Error("input must be [N, C, S...], got " + ShapeToString(ShapeOfTensor(x)));
  }
  return SetData(ctx, 0,
                 ctx.op() == "GlobalAveragePool" ? b_.GlobalAvgPool(x) : b_.GlobalMaxPool(x));
}

// --- handlers: normalization --------------------------------------------------------

Status Importer::BatchNormOp(const NodeContext& ctx) {
  if (ctx.Int("training_mode", 0) != 0) return ctx.Unsupported("training_mode = 1");
  if (ctx.opset() < 7 && ctx.Int("is_test", 0) == 0) return ctx.Unsupported("is_test = 0");
  if (ctx.Int("spatial", 1) != 1) return ctx.Unsupported("spatial = 0");
  for (int k = 1; k < ctx.node().output_size(); ++k) {
    if (OutputConsumed(ctx, k)) return ctx.Unsupported("training output " + std::to_string(k));
  }
  std::vector<std::string> in;
  for (int k = 0; k < 5; ++k) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string t, Data(ctx, k));
    in.push_back(t);
  }
  const Shape xs = ShapeOfTensor(in[0]);
  if (xs.size() < 2) return ctx.Error("input must be [N, C, ...]");
  for (int k = 1; k < 5; ++k) {
    if (ShapeOfTensor(in[k]) != Shape{xs[1]}) {
      return ctx.Error("input " + std::to_string(k) + " has shape " +
                       ShapeToString(ShapeOfTensor(in[k])) + ", expected [" +
                       std::to_string(xs[1]) + "]");
    }
  }
  return SetData(ctx, 0,
                 b_.BatchNorm(in[0], in[1], in[2], in[3], in[4], ctx.Float("epsilon", 1e-5)));
}

Status Importer::InstanceNormOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  if (xs.size() < 3) return ctx.Error("input must be [N, C, S...]");
  Shape per_channel = {xs[1]};
  std::vector<int64_t> axes;
  for (size_t d = 2; d < xs.size(); ++d) {
    per_channel.push_back(1);
    axes.push_back(static_cast<int64_t>(d));
  }
  SCHEDFARM_ASSIGN_OR_RETURN(std::string scale, DataAs(ctx, 1, per_channel));
  SCHEDFARM_ASSIGN_OR_RETURN(std::string bias, DataAs(ctx, 2, per_channel));
  // (x - mean) / sqrt(var + epsilon) * scale + bias, statistics per (n, c).
  const std::string mean = b_.Reduce(MEAN, x, axes, true);
  const std::string centered = b_.Sub(x, mean);
  const std::string var = b_.Reduce(MEAN, b_.Mul(centered, centered), axes, true);
  const std::string var_eps = b_.UnaryWithParams(SCALE, var, 1.0, ctx.Float("epsilon", 1e-5));
  std::string y = b_.Mul(centered, b_.Unary(RSQRT, var_eps));
  y = b_.Add(b_.Mul(y, scale), bias);
  return SetData(ctx, 0, y);
}

Status Importer::LayerNormOp(const NodeContext& ctx) {
  if (ctx.Int("stash_type", 1) != 1) return ctx.Unsupported("stash_type other than 1");
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  SCHEDFARM_ASSIGN_OR_RETURN(std::string scale, Data(ctx, 1));
  std::string bias;
  if (ctx.HasInput(2)) {
    SCHEDFARM_ASSIGN_OR_RETURN(bias, Data(ctx, 2));
  }
  const Shape xs = ShapeOfTensor(x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  StatusOr<int64_t> axis = onnx_import::NormalizeAxis(ctx.Int("axis", -1), rank);
  if (!axis.ok()) return ctx.Error(axis.status().message());
  const Shape normalized(xs.begin() + *axis, xs.end());
  const double epsilon = ctx.Float("epsilon", 1e-5);
  const bool stats_used = OutputConsumed(ctx, 1) || OutputConsumed(ctx, 2);
  if (!stats_used && ShapeOfTensor(scale) == normalized &&
      (bias.empty() || ShapeOfTensor(bias) == normalized)) {
    return SetData(ctx, 0, b_.LayerNorm(x, scale, bias, static_cast<int>(rank - *axis), epsilon));
  }
  // Expanded form that also yields the statistics (Mean, InvStdDev outputs).
  std::vector<int64_t> axes;
  for (int64_t d = *axis; d < rank; ++d) axes.push_back(d);
  const std::string mean = b_.Reduce(MEAN, x, axes, true);
  const std::string centered = b_.Sub(x, mean);
  const std::string var = b_.Reduce(MEAN, b_.Mul(centered, centered), axes, true);
  const std::string inv_std = b_.Unary(RSQRT, b_.UnaryWithParams(SCALE, var, 1.0, epsilon));
  std::string y = b_.Mul(b_.Mul(centered, inv_std), scale);
  if (!bias.empty()) y = b_.Add(y, bias);
  SCHEDFARM_RETURN_IF_ERROR(SetData(ctx, 0, y));
  SCHEDFARM_RETURN_IF_ERROR(SetData(ctx, 1, mean));
  return SetData(ctx, 2, inv_std);
}

Status Importer::SoftmaxOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  const int64_t rank = static_cast<int64_t>(xs.size());
  StatusOr<int64_t> axis =
      onnx_import::NormalizeAxis(ctx.Int("axis", ctx.opset() < 13 ? 1 : -1), rank);
  if (!axis.ok()) return ctx.Error(axis.status().message());
  const bool log = ctx.op() == "LogSoftmax";
  if (ctx.opset() >= 13 || *axis == rank - 1) {
    return SetData(ctx, 0, log ? b_.LogSoftmax(x, *axis) : b_.Softmax(x, *axis));
  }
  // Before opset 13 the input is coerced to 2-D at `axis` and normalized over dim 1.
  int64_t outer = 1;
  for (int64_t d = 0; d < *axis; ++d) outer *= xs[d];
  const std::string flat = ReshapeTo(x, {outer, NumElements(xs) / outer});
  const std::string y = log ? b_.LogSoftmax(flat, 1) : b_.Softmax(flat, 1);
  return SetData(ctx, 0, ReshapeTo(y, xs));
}

// --- handlers: elementwise ------------------------------------------------------------

Status Importer::UnaryOp(const NodeContext& ctx) {
  static const std::map<std::string, UnaryFn> kFns(onnx_import::UnaryOperators().begin(),
                                                   onnx_import::UnaryOperators().end());
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  return SetData(ctx, 0, b_.Unary(kFns.at(ctx.op()), x));
}

Status Importer::ParamUnaryOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const std::string& op = ctx.op();
  std::string y;
  if (op == "LeakyRelu") {
    y = b_.UnaryWithParams(LEAKY_RELU, x, ctx.Float("alpha", 0.01), 0);
  } else if (op == "Elu") {
    y = b_.UnaryWithParams(ELU, x, ctx.Float("alpha", 1.0), 0);
  } else if (op == "HardSigmoid") {
    y = b_.UnaryWithParams(HARD_SIGMOID, x, ctx.Float("alpha", 0.2), ctx.Float("beta", 0.5));
  } else if (op == "Selu") {
    // gamma * elu(x, alpha): x > 0 gives gamma * x, else gamma * alpha * (exp(x) - 1).
    const double alpha = ctx.Float("alpha", 1.67326319217681884765625);
    const double gamma = ctx.Float("gamma", 1.05070102214813232421875);
    y = b_.UnaryWithParams(SCALE, b_.UnaryWithParams(ELU, x, alpha, 0), gamma, 0);
  } else {  // Softsign: x / (1 + |x|)
    y = b_.Div(x, b_.UnaryWithParams(SCALE, b_.Unary(ABS, x), 1.0, 1.0));
  }
  return SetData(ctx, 0, y);
}

Status Importer::PReluOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  const Shape& ss = In(ctx, 1).shape;
  std::string slope;
  if (ctx.opset() < 7 && ss.size() == 1 && xs.size() >= 2 && ss[0] == xs[1] && ss[0] > 1) {
    // Before opset 7 a 1-D slope holds one value per channel (dim 1).
    Shape per_channel(xs.size() - 1, 1);
    per_channel[0] = xs[1];
    SCHEDFARM_ASSIGN_OR_RETURN(slope, DataAs(ctx, 1, per_channel));
  } else {
    SCHEDFARM_ASSIGN_OR_RETURN(slope, Data(ctx, 1));
  }
  // relu(x) + slope * (x - relu(x)); x - relu(x) is min(x, 0) exactly.
  const std::string pos = b_.Relu(x);
  return SetData(ctx, 0, b_.Add(pos, b_.Mul(slope, b_.Sub(x, pos))));
}

Status Importer::ClipOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  if (ctx.opset() < 11) {
    const double lowest = -std::numeric_limits<float>::max();
    const double highest = std::numeric_limits<float>::max();
    const bool defaults = ctx.opset() >= 6;  // before opset 6 a missing bound is no bound
    if (!defaults && !ctx.Has("min") && !ctx.Has("max")) return Alias(ctx, 0, 0);
    double lo = ctx.Float("min", lowest), hi = ctx.Float("max", highest);
    if (!defaults && !ctx.Has("min")) lo = -std::numeric_limits<double>::infinity();
    if (!defaults && !ctx.Has("max")) hi = std::numeric_limits<double>::infinity();
    return SetData(ctx, 0, b_.Clip(x, std::min(lo, hi), hi));
  }
  const bool has_min = ctx.HasInput(1), has_max = ctx.HasInput(2);
  if (!has_min && !has_max) return Alias(ctx, 0, 0);
  for (int k = 1; k <= 2; ++k) {
    if (ctx.HasInput(k) && NumElements(In(ctx, k).shape) != 1) {
      return ctx.Error("input " + std::to_string(k) + " must be a scalar");
    }
  }
  if (has_min && has_max && IsConstant(ctx, 1) && IsConstant(ctx, 2)) {
    const double lo = In(ctx, 1).value->AsDouble(0), hi = In(ctx, 2).value->AsDouble(0);
    // min(max(x, lo), hi) is hi everywhere when lo > hi.
    return SetData(ctx, 0, b_.Clip(x, std::min(lo, hi), hi));
  }
  // One bound, or bounds computed at run time: max and min with the bound tensors.
  std::string y = x;
  if (has_min) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string lo, Data(ctx, 1));
    y = b_.Max(y, lo);
  }
  if (has_max) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string hi, Data(ctx, 2));
    y = b_.Binary(MIN, y, hi);
  }
  return SetData(ctx, 0, y);
}

Status Importer::BinaryOp(const NodeContext& ctx) {
  static const std::map<std::string, BinaryFn> kFns = {
      {"Add", ADD}, {"Sub", SUB}, {"Mul", MUL}, {"Div", DIV}, {"Pow", POW}};
  const bool pow = ctx.op() == "Pow";
  SCHEDFARM_ASSIGN_OR_RETURN(std::string a, Data(ctx, 0));
  // Pow's exponent may be an integer tensor: its values are used as floats.
  SCHEDFARM_ASSIGN_OR_RETURN(std::string b, Data(ctx, 1, /*allow_int=*/pow && IsConstant(ctx, 1)));
  if (ctx.opset() >= 7 && (ctx.Has("broadcast") || ctx.Has("axis"))) {
    return ctx.Unsupported("attribute '" + std::string(ctx.Has("axis") ? "axis" : "broadcast") +
                           "' (legacy broadcasting exists before opset 7 only)");
  }
  if (ctx.opset() < 7) {
    const Shape as = ShapeOfTensor(a), bs = ShapeOfTensor(b);
    if (ctx.Int("broadcast", 0) != 0) {
      StatusOr<Shape> aligned =
          onnx_import::LegacyBroadcastShape(as, bs, ctx.Has("axis"), ctx.Int("axis", 0));
      if (!aligned.ok()) return ctx.Error(aligned.status().message());
      b = ReshapeTo(b, *aligned);
    } else if (as != bs) {
      return ctx.Error("shapes " + ShapeToString(as) + " and " + ShapeToString(bs) +
                       " differ and broadcast is 0 (opset " + std::to_string(ctx.opset()) + ")");
    }
  }
  return SetData(ctx, 0, b_.Binary(kFns.at(ctx.op()), a, b));
}

Status Importer::VariadicOp(const NodeContext& ctx) {
  const std::string& op = ctx.op();
  if (ctx.num_inputs() == 0) return ctx.Error("needs at least one input");
  if (ctx.num_inputs() == 1) return Alias(ctx, 0, 0);
  const BinaryFn fn = op == "Max" ? MAX : op == "Min" ? MIN : ADD;
  SCHEDFARM_ASSIGN_OR_RETURN(std::string acc, Data(ctx, 0));
  for (int k = 1; k < ctx.num_inputs(); ++k) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string t, Data(ctx, k));
    acc = b_.Binary(fn, acc, t);
  }
  if (op == "Mean") acc = b_.Div(acc, ScalarParameter("count", ctx.num_inputs()));
  return SetData(ctx, 0, acc);
}

// --- handlers: data movement ----------------------------------------------------------

std::string Importer::SliceTensor(const std::string& x, const onnx_import::ResolvedSlice& s) {
  const Shape xs = ShapeOfTensor(x);
  Attributes attrs;
  for (size_t k = 0; k < s.axes.size(); ++k) {
    const int64_t axis = s.axes[k];
    if (s.starts[k] == 0 && s.steps[k] == 1 && s.output[axis] == xs[axis]) continue;
    attrs.add_axes(axis);
    attrs.add_starts(s.starts[k]);
    attrs.add_steps(s.steps[k]);
  }
  if (attrs.axes_size() == 0) return x;
  return b_.AddStageWithShape(SLICE, {x}, attrs, s.output, "slice");
}

Status Importer::PadOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  const size_t rank = xs.size();
  std::vector<int64_t> pads;
  double value = 0;
  if (ctx.opset() < 11) {
    pads = ctx.Ints("pads");
    value = ctx.Float("value", 0.0);
  } else {
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* p, Const(ctx, 1, "pads"));
    pads = p->Ints();
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* v, OptConst(ctx, 2, "constant_value"));
    if (v != nullptr) {
      if (v->size() != 1) return ctx.Error("constant_value must be a scalar");
      value = v->AsDouble(0);
    }
  }
  if (pads.size() != 2 * rank) {
    return ctx.Error("pads has " + std::to_string(pads.size()) + " values, expected " +
                     std::to_string(2 * rank));
  }
  const std::string mode = ctx.String("mode", "constant");
  PadMode pad_mode;
  if (mode == "constant") {
    pad_mode = CONSTANT;
  } else if (mode == "reflect") {
    pad_mode = REFLECT;
  } else if (mode == "edge") {
    pad_mode = EDGE;
  } else {
    return ctx.Unsupported("value '" + mode +
                           "' of attribute 'mode' (supported: constant, "
                           "reflect, edge)");
  }
  // Negative pads crop: slice first, then pad by the rest.
  std::vector<int64_t> starts, ends, axes;
  bool crop = false, pad = false;
  for (size_t d = 0; d < rank; ++d) {
    const int64_t begin = pads[d], end = pads[rank + d];
    if (begin < 0 || end < 0) crop = true;
    if (begin > 0 || end > 0) pad = true;
    starts.push_back(std::max<int64_t>(0, -begin));
    ends.push_back(xs[d] - std::max<int64_t>(0, -end));
    axes.push_back(static_cast<int64_t>(d));
    if (ends.back() <= starts.back()) return ctx.Unsupported("pads that crop away a whole dim");
  }
  std::string y = x;
  if (crop) {
    StatusOr<onnx_import::ResolvedSlice> s = onnx_import::ResolveSlice(xs, starts, ends, axes, {});
    if (!s.ok()) return ctx.Error(s.status().message());
    y = SliceTensor(x, *s);
  }
  if (pad) {
    std::vector<int64_t> positive;
    for (int64_t p : pads) positive.push_back(std::max<int64_t>(p, 0));
    y = b_.Pad(y, positive, pad_mode, pad_mode == CONSTANT ? value : 0.0);
  }
  return SetData(ctx, 0, y);
}

Status Importer::ConcatOp(const NodeContext& ctx) {
  std::vector<std::string> parts;
  int64_t rank = -1;
  for (int k = 0; k < ctx.num_inputs(); ++k) {
    if (!ctx.HasInput(k)) continue;
    const Shape& s = In(ctx, k).shape;
    rank = static_cast<int64_t>(s.size());
    if (NumElements(s) == 0) continue;  // empty tensors add nothing
    SCHEDFARM_ASSIGN_OR_RETURN(std::string t, Data(ctx, k));
    parts.push_back(t);
  }
  if (parts.empty()) return ctx.Unsupported("concatenation of zero-size tensors only");
  StatusOr<int64_t> axis = onnx_import::NormalizeAxis(ctx.Int("axis", 1), rank);
  if (!axis.ok()) return ctx.Error(axis.status().message());
  if (parts.size() == 1) return SetData(ctx, 0, parts[0]);
  return SetData(ctx, 0, b_.Concat(parts, *axis));
}

Status Importer::SliceOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.Ints("starts");
    ends = ctx.Ints("ends");
    axes = ctx.Ints("axes");
  } else {
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* s, Const(ctx, 1, "starts"));
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* e, Const(ctx, 2, "ends"));
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* a, OptConst(ctx, 3, "axes"));
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* st, OptConst(ctx, 4, "steps"));
    starts = s->Ints();
    ends = e->Ints();
    if (a) axes = a->Ints();
    if (st) steps = st->Ints();
  }
  StatusOr<onnx_import::ResolvedSlice> s =
      onnx_import::ResolveSlice(ShapeOfTensor(x), starts, ends, axes, steps);
  if (!s.ok()) return ctx.Error(s.status().message());
  if (NumElements(s->output) == 0) {
    return ctx.Unsupported("zero-size result " + ShapeToString(s->output));
  }
  return SetData(ctx, 0, SliceTensor(x, *s));
}

Status Importer::SplitOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  StatusOr<int64_t> axis =
      onnx_import::NormalizeAxis(ctx.Int("axis", 0), static_cast<int64_t>(xs.size()));
  if (!axis.ok()) return ctx.Error(axis.status().message());
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13) {
    sizes = ctx.Ints("split");
  } else {
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* split, OptConst(ctx, 1, "split"));
    if (split) sizes = split->Ints();
  }
  const int64_t parts = ctx.node().output_size();
  if (sizes.empty()) {
    if (parts < 1 || xs[*axis] % parts != 0) {
      return ctx.Error("cannot split extent " + std::to_string(xs[*axis]) + " into " +
                       std::to_string(parts) + " equal parts");
    }
    sizes.assign(parts, xs[*axis] / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts) {
    return ctx.Error("split has " + std::to_string(sizes.size()) + " sizes for " +
                     std::to_string(parts) + " outputs");
  }
  int64_t offset = 0;
  for (int64_t k = 0; k < parts; ++k) {
    if (sizes[k] < 1) return ctx.Unsupported("zero-size part " + std::to_string(k));
    const int64_t begin = offset;
    offset += sizes[k];
    if (!OutputConsumed(ctx, static_cast<int>(k))) continue;
    if (offset > xs[*axis]) return ctx.Error("split sizes exceed the extent");
    StatusOr<onnx_import::ResolvedSlice> s =
        onnx_import::ResolveSlice(xs, {begin}, {offset}, {*axis}, {});
    if (!s.ok()) return ctx.Error(s.status().message());
    SCHEDFARM_RETURN_IF_ERROR(SetData(ctx, static_cast<int>(k), SliceTensor(x, *s)));
  }
  if (offset != xs[*axis]) {
    return ctx.Error("split sizes sum to " + std::to_string(offset) + ", the extent is " +
                     std::to_string(xs[*axis]));
  }
  return Status::Ok();
}

Status Importer::TransposeOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const int64_t rank = static_cast<int64_t>(ShapeOfTensor(x).size());
  std::vector<int64_t> perm = ctx.Ints("perm");
  if (!ctx.Has("perm")) {
    for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  }
  bool identity = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t k = 0; identity && k < rank; ++k) identity = perm[k] == k;
  if (identity) return SetData(ctx, 0, x);
  return SetData(ctx, 0, b_.Transpose(x, perm));
}

Status Importer::ReshapeOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  const std::string& op = ctx.op();
  StatusOr<Shape> shape = Shape{};
  if (op == "Reshape") {
    std::vector<int64_t> target;
    if (ctx.opset() < 5) {
      target = ctx.Ints("shape");
    } else {
      SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* t, Const(ctx, 1, "shape"));
      target = t->Ints();
    }
    shape = onnx_import::ReshapeTarget(xs, target, ctx.Int("allowzero", 0) != 0);
  } else if (op == "Flatten") {
    const int64_t rank = static_cast<int64_t>(xs.size());
    int64_t axis = ctx.Int("axis", 1);
    if (axis < -rank || axis > rank) {
      return ctx.Error("axis " + std::to_string(axis) + " is out of range for rank " +
                       std::to_string(rank));
    }
    if (axis < 0) axis += rank;
    int64_t outer = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= xs[d];
    shape = Shape{outer, NumElements(xs) / outer};
  } else {
    std::vector<int64_t> axes;
    if (ctx.opset() < 13) {
      axes = ctx.Ints("axes");
    } else {
      SCHEDFARM_ASSIGN_OR_RETURN(
          const ConstTensor* a, op == "Squeeze" ? OptConst(ctx, 1, "axes") : Const(ctx, 1, "axes"));
      if (a) axes = a->Ints();
    }
    shape = op == "Squeeze" ? onnx_import::SqueezeShape(xs, axes)
                            : onnx_import::UnsqueezeShape(xs, axes);
  }
  if (!shape.ok()) return ctx.Error(shape.status().message());
  if (NumElements(*shape) == 0) return ctx.Unsupported("zero-size result " + ShapeToString(*shape));
  return SetData(ctx, 0, ReshapeTo(x, *shape));
}

Status Importer::ReduceOp(const NodeContext& ctx) {
  // Each reduction as an optional elementwise function before, a primitive
  // reduction and an optional function after (ReduceL2 = sqrt(sum of squares)...).
  struct Form {
    UnaryFn before;
    ReduceFn reduce;
    UnaryFn after;
  };
  constexpr UnaryFn kNone = UNARY_FN_UNSPECIFIED;
  static const std::map<std::string, Form> kForms = {
      {"ReduceSum", {kNone, SUM, kNone}},
      {"ReduceMean", {kNone, MEAN, kNone}},
      {"ReduceMax", {kNone, REDUCE_MAX, kNone}},
      {"ReduceMin", {kNone, REDUCE_MIN, kNone}},
      {"ReduceSumSquare", {kNone, SUM_SQUARE, kNone}},
      {"ReduceL1", {ABS, SUM, kNone}},
      {"ReduceL2", {kNone, SUM_SQUARE, SQRT}},
      {"ReduceLogSum", {kNone, SUM, LOG}},
      {"ReduceLogSumExp", {EXP, SUM, LOG}}};
  const Form& form = kForms.at(ctx.op());
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const int64_t rank = static_cast<int64_t>(ShapeOfTensor(x).size());
  std::vector<int64_t> axes;
  if (ctx.op() == "ReduceSum" && ctx.opset() >= 13) {
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* a, OptConst(ctx, 1, "axes"));
    if (a) axes = a->Ints();
  } else {
    axes = ctx.Ints("axes");
  }
  if (axes.empty()) {
    if (ctx.Int("noop_with_empty_axes", 0) != 0) return SetData(ctx, 0, x);
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  StatusOr<std::vector<int64_t>> norm = onnx_import::NormalizeAxes(axes, rank);
  if (!norm.ok()) return ctx.Error(norm.status().message());
  if (norm->empty()) return SetData(ctx, 0, x);  // a rank-0 input
  if (form.before != kNone) x = b_.Unary(form.before, x);
  std::string y = b_.Reduce(form.reduce, x, *norm, ctx.Int("keepdims", 1) != 0);
  if (form.after != kNone) y = b_.Unary(form.after, y);
  return SetData(ctx, 0, y);
}

// DepthToSpace and SpaceToDepth: a reshape to rank 6, a transpose and a reshape.
Status Importer::DepthSpaceOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  const int64_t b = ctx.Int("blocksize", 0);
  if (xs.size() != 4) return ctx.Error("input must be [N, C, H, W]");
  if (b < 1) return ctx.Error("attribute 'blocksize' must be positive");
  const int64_t n = xs[0], c = xs[1], h = xs[2], w = xs[3];
  Shape split, out;
  std::vector<int64_t> perm;
  if (ctx.op() == "DepthToSpace") {
    if (c % (b * b) != 0) return ctx.Error("channels not divisible by blocksize^2");
    const std::string mode = ctx.String("mode", "DCR");
    if (mode == "DCR") {
      split = {n, b, b, c / (b * b), h, w};
      perm = {0, 3, 4, 1, 5, 2};
    } else if (mode == "CRD") {
      split = {n, c / (b * b), b, b, h, w};
      perm = {0, 1, 4, 2, 5, 3};
    } else {
      return ctx.Unsupported("value '" + mode + "' of attribute 'mode' (supported: DCR, CRD)");
    }
    out = {n, c / (b * b), h * b, w * b};
  } else {
    if (h % b != 0 || w % b != 0) return ctx.Error("spatial dims not divisible by blocksize");
    split = {n, c, h / b, b, w / b, b};
    perm = {0, 3, 5, 1, 2, 4};
    out = {n, c * b * b, h / b, w / b};
  }
  return SetData(ctx, 0, ReshapeTo(b_.Transpose(ReshapeTo(x, split), perm), out));
}

Status Importer::ResizeOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  const Shape xs = ShapeOfTensor(x);
  const std::string mode = ctx.String("mode", "nearest");
  if (mode != "nearest") {
    return ctx.Unsupported("value '" + mode +
                           "' of attribute 'mode' (supported: nearest "
                           "with integer scales)");
  }
  const bool resize = ctx.op() == "Resize";
  // The coordinate mapping must reduce to x[floor(i / scale)] for integer scales.
  if (resize && ctx.opset() >= 11) {
    const std::string coord = ctx.String("coordinate_transformation_mode", "half_pixel");
    const std::string nearest = ctx.String("nearest_mode", "round_prefer_floor");
    const bool centered = coord == "half_pixel" || coord == "pytorch_half_pixel";
    const bool rounding = nearest == "round_prefer_floor" || nearest == "round_prefer_ceil";
    const bool corner = coord == "asymmetric" || coord == "tf_half_pixel_for_nn";
    if (!((centered && rounding) || (corner && nearest == "floor"))) {
      return ctx.Unsupported("coordinate_transformation_mode '" + coord + "' with nearest_mode '" +
                             nearest +
                             "' (supported: half_pixel "
                             "or pytorch_half_pixel with round_prefer_floor/ceil, asymmetric or "
                             "tf_half_pixel_for_nn with floor)");
    }
  }
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (!resize && ctx.opset() < 9) {
    scales = ctx.Floats("scales");
  } else {
    const int scales_input = resize && ctx.opset() >= 11 ? 2 : 1;
    SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* s, OptConst(ctx, scales_input, "scales"));
    if (s) scales = s->Doubles();
    if (resize && ctx.opset() >= 11) {
      SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* z, OptConst(ctx, 3, "sizes"));
      if (z) sizes = z->Ints();
    }
  }
  std::vector<int64_t> factors;
  if (!scales.empty()) {
    if (scales.size() != xs.size()) return ctx.Error("scales must have one value per dim");
    for (double s : scales) {
      if (!IsIntegral(s) || s < 1) {
        return ctx.Unsupported("scale " + std::to_string(s) + " (supported: integers >= 1)");
      }
      factors.push_back(static_cast<int64_t>(s));
    }
  } else {
    if (sizes.size() != xs.size()) {
      return ctx.Error("needs scales or sizes with one value per dim");
    }
    for (size_t d = 0; d < xs.size(); ++d) {
      if (sizes[d] < xs[d] || sizes[d] % xs[d] != 0) {
        return ctx.Unsupported("size " + std::to_string(sizes[d]) + " for extent " +
                               std::to_string(xs[d]) + " (supported: integer multiples)");
      }
      factors.push_back(sizes[d] / xs[d]);
    }
  }
  if (std::all_of(factors.begin(), factors.end(), [](int64_t f) { return f == 1; })) {
    return SetData(ctx, 0, x);
  }
  return SetData(ctx, 0, b_.Upsample(x, factors));
}

Status Importer::ExpandOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* shape, Const(ctx, 1, "shape"));
  const Shape xs = ShapeOfTensor(x);
  StatusOr<Shape> out = onnx_import::BroadcastShapes(xs, shape->Ints());
  if (!out.ok()) return ctx.Error(out.status().message());
  // Broadcasting a dim of 1 to n is a nearest upsampling by n.
  Shape padded(out->size() - xs.size(), 1);
  padded.insert(padded.end(), xs.begin(), xs.end());
  std::vector<int64_t> factors;
  for (size_t d = 0; d < out->size(); ++d) factors.push_back((*out)[d] / padded[d]);
  std::string y = ReshapeTo(x, padded);
  if (std::any_of(factors.begin(), factors.end(), [](int64_t f) { return f != 1; })) {
    y = b_.Upsample(y, factors);
  }
  return SetData(ctx, 0, y);
}

Status Importer::TileOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* repeats, Const(ctx, 1, "repeats"));
  const std::vector<int64_t> reps = repeats->Ints();
  const Shape xs = ShapeOfTensor(x);
  if (reps.size() != xs.size()) return ctx.Error("repeats must have one value per dim");
  std::string y = x;
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 1) return ctx.Unsupported("repeat " + std::to_string(reps[d]));
    if (reps[d] > kMaxExpandedSlices) {
      return ctx.Unsupported("repeat " + std::to_string(reps[d]) + " (at most " +
                             std::to_string(kMaxExpandedSlices) + ")");
    }
    if (reps[d] > 1) y = b_.Concat(std::vector<std::string>(reps[d], y), static_cast<int64_t>(d));
  }
  return SetData(ctx, 0, y);
}

Status Importer::GatherOp(const NodeContext& ctx) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string x, Data(ctx, 0));
  SCHEDFARM_ASSIGN_OR_RETURN(const ConstTensor* indices, Const(ctx, 1, "indices"));
  const Shape xs = ShapeOfTensor(x);
  StatusOr<int64_t> axis =
      onnx_import::NormalizeAxis(ctx.Int("axis", 0), static_cast<int64_t>(xs.size()));
  if (!axis.ok()) return ctx.Error(axis.status().message());
  const int64_t dim = xs[*axis];
  std::vector<int64_t> idx = indices->Ints();
  for (int64_t& i : idx) {
    if (i < -dim || i >= dim) {
      return ctx.Error("index " + std::to_string(i) + " is out of range for extent " +
                       std::to_string(dim));
    }
    if (i < 0) i += dim;
  }
  if (idx.empty()) return ctx.Unsupported("empty indices");
  Shape out(xs.begin(), xs.begin() + *axis);
  out.insert(out.end(), indices->shape.begin(), indices->shape.end());
  out.insert(out.end(), xs.begin() + *axis + 1, xs.end());
  // Indices in arithmetic progression are one strided slice; others a concatenation
  // of single-index slices.
  const int64_t n = static_cast<int64_t>(idx.size());
  const int64_t step = n > 1 ? idx[1] - idx[0] : 1;
  bool progression = step != 0;
  for (int64_t k = 1; progression && k < n; ++k) progression = idx[k] - idx[k - 1] == step;
  std::string y;
  if (progression) {
    onnx_import::ResolvedSlice s;
    s.axes = {*axis};
    s.starts = {idx[0]};
    s.steps = {step};
    s.output = xs;
    s.output[*axis] = n;
    y = SliceTensor(x, s);
  } else {
    if (n > kMaxExpandedSlices) {
      return ctx.Unsupported(std::to_string(n) + " scattered indices (at most " +
                             std::to_string(kMaxExpandedSlices) + ")");
    }
    std::vector<std::string> parts;
    for (int64_t i : idx) {
      StatusOr<onnx_import::ResolvedSlice> s =
          onnx_import::ResolveSlice(xs, {i}, {i + 1}, {*axis}, {});
      if (!s.ok()) return ctx.Error(s.status().message());
      parts.push_back(SliceTensor(x, *s));
    }
    y = b_.Concat(parts, *axis);
  }
  return SetData(ctx, 0, ReshapeTo(y, out));
}

// --- the operator table -------------------------------------------------------------

const std::map<std::string, OpInfo>& Importer::Ops() {
  static const auto* ops = [] {
    const std::vector<AttrSpec> pool_attrs = {
        {"auto_pad", S}, {"ceil_mode", I}, {"kernel_shape", IS}, {"pads", IS}, {"strides", IS}};
    std::vector<AttrSpec> max_pool_attrs = pool_attrs;
    max_pool_attrs.push_back({"dilations", IS});
    max_pool_attrs.push_back({"storage_order", I});
    std::vector<AttrSpec> avg_pool_attrs = pool_attrs;
    avg_pool_attrs.push_back({"count_include_pad", I});
    const std::vector<AttrSpec> reduce_attrs = {{"axes", IS}, {"keepdims", I}};
    const std::vector<AttrSpec> legacy_broadcast = {{"axis", I}, {"broadcast", I}};
    return new std::map<std::string, OpInfo>{
        {"Constant",
         {1,
          0,
          {{"value", T},
           {"value_float", F},
           {"value_floats", FS},
           {"value_int", I},
           {"value_ints", IS}},
          &Importer::Constant}},
        {"ConstantOfShape", {9, 1, {{"value", T}}, &Importer::ConstantOnly}},
        {"Range", {11, 3, {}, &Importer::ConstantOnly}},
        {"Equal", {7, 2, {}, &Importer::ConstantOnly}},
        {"Less", {7, 2, {}, &Importer::ConstantOnly}},
        {"Greater", {7, 2, {}, &Importer::ConstantOnly}},
        {"LessOrEqual", {12, 2, {}, &Importer::ConstantOnly}},
        {"GreaterOrEqual", {12, 2, {}, &Importer::ConstantOnly}},
        {"Not", {1, 1, {}, &Importer::ConstantOnly}},
        {"And", {7, 2, {}, &Importer::ConstantOnly}},
        {"Or", {7, 2, {}, &Importer::ConstantOnly}},
        {"Where", {9, 3, {}, &Importer::ConstantOnly}},
        {"Shape", {1, 1, {{"start", I}, {"end", I}}, &Importer::ShapeOp}},
        {"Size", {1, 1, {}, &Importer::SizeOp}},
        {"Identity", {1, 1, {}, &Importer::IdentityOp}},
        {"Dropout", {6, 1, {{"ratio", F}, {"seed", I}, {"is_test", I}}, &Importer::DropoutOp}},
        {"Cast", {6, 1, {{"to", I}}, &Importer::CastOp}},
        {"CastLike", {15, 2, {}, &Importer::CastOp}},
        {"Conv",
         {1,
          2,
          {{"auto_pad", S},
           {"dilations", IS},
           {"group", I},
           {"kernel_shape", IS},
           {"pads", IS},
           {"strides", IS}},
          &Importer::ConvOp}},
        {"Gemm",
         {6,
          2,
          {{"alpha", F}, {"beta", F}, {"transA", I}, {"transB", I}, {"broadcast", I}},
          &Importer::GemmOp}},
        {"MatMul", {1, 2, {}, &Importer::MatMulOp}},
        {"MaxPool", {1, 1, max_pool_attrs, &Importer::PoolOp}},
        {"AveragePool", {1, 1, avg_pool_attrs, &Importer::PoolOp}},
        {"GlobalAveragePool", {1, 1, {}, &Importer::GlobalPoolOp}},
        {"GlobalMaxPool", {1, 1, {}, &Importer::GlobalPoolOp}},
        {"BatchNormalization",
         {6,
          5,
          {{"epsilon", F}, {"momentum", F}, {"spatial", I}, {"is_test", I}, {"training_mode", I}},
          &Importer::BatchNormOp}},
        {"InstanceNormalization", {6, 3, {{"epsilon", F}}, &Importer::InstanceNormOp}},
        {"LayerNormalization",
         {17, 2, {{"axis", I}, {"epsilon", F}, {"stash_type", I}}, &Importer::LayerNormOp}},
        {"Softmax", {1, 1, {{"axis", I}}, &Importer::SoftmaxOp}},
        {"LogSoftmax", {1, 1, {{"axis", I}}, &Importer::SoftmaxOp}},
        {"Relu", {1, 1, {}, &Importer::UnaryOp}},
        {"Sigmoid", {1, 1, {}, &Importer::UnaryOp}},
        {"Tanh", {1, 1, {}, &Importer::UnaryOp}},
        {"Exp", {1, 1, {}, &Importer::UnaryOp}},
        {"Log", {1, 1, {}, &Importer::UnaryOp}},
        {"Sqrt", {1, 1, {}, &Importer::UnaryOp}},
        {"Reciprocal", {1, 1, {}, &Importer::UnaryOp}},
        {"Neg", {1, 1, {}, &Importer::UnaryOp}},
        {"Abs", {1, 1, {}, &Importer::UnaryOp}},
        {"Erf", {9, 1, {}, &Importer::UnaryOp}},
        {"Floor", {1, 1, {}, &Importer::UnaryOp}},
        {"Ceil", {1, 1, {}, &Importer::UnaryOp}},
        {"Sin", {7, 1, {}, &Importer::UnaryOp}},
        {"Cos", {7, 1, {}, &Importer::UnaryOp}},
        {"Sign", {9, 1, {}, &Importer::UnaryOp}},
        {"Softplus", {1, 1, {}, &Importer::UnaryOp}},
        {"HardSwish", {14, 1, {}, &Importer::UnaryOp}},
        {"LeakyRelu", {1, 1, {{"alpha", F}}, &Importer::ParamUnaryOp}},
        {"Elu", {1, 1, {{"alpha", F}}, &Importer::ParamUnaryOp}},
        {"HardSigmoid", {1, 1, {{"alpha", F}, {"beta", F}}, &Importer::ParamUnaryOp}},
        {"Selu", {1, 1, {{"alpha", F}, {"gamma", F}}, &Importer::ParamUnaryOp}},
        {"Softsign", {1, 1, {}, &Importer::ParamUnaryOp}},
        {"PRelu", {6, 2, {}, &Importer::PReluOp}},
        {"Clip", {1, 1, {{"min", F}, {"max", F}}, &Importer::ClipOp}},
        {"Add", {1, 2, legacy_broadcast, &Importer::BinaryOp}},
        {"Sub", {1, 2, legacy_broadcast, &Importer::BinaryOp}},
        {"Mul", {1, 2, legacy_broadcast, &Importer::BinaryOp}},
        {"Div", {1, 2, legacy_broadcast, &Importer::BinaryOp}},
        {"Pow", {1, 2, legacy_broadcast, &Importer::BinaryOp}},
        {"Max", {6, 1, {}, &Importer::VariadicOp}},
        {"Min", {6, 1, {}, &Importer::VariadicOp}},
        {"Sum", {6, 1, {}, &Importer::VariadicOp}},
        {"Mean", {6, 1, {}, &Importer::VariadicOp}},
        {"Pad", {2, 1, {{"mode", S}, {"pads", IS}, {"value", F}}, &Importer::PadOp}},
        {"Concat", {1, 1, {{"axis", I}}, &Importer::ConcatOp}},
        {"Slice", {1, 1, {{"starts", IS}, {"ends", IS}, {"axes", IS}}, &Importer::SliceOp}},
        {"Split", {2, 1, {{"axis", I}, {"split", IS}}, &Importer::SplitOp}},
        {"Transpose", {1, 1, {{"perm", IS}}, &Importer::TransposeOp}},
        {"Reshape", {1, 1, {{"shape", IS}, {"allowzero", I}}, &Importer::ReshapeOp}},
        {"Flatten", {1, 1, {{"axis", I}}, &Importer::ReshapeOp}},
        {"Squeeze", {1, 1, {{"axes", IS}}, &Importer::ReshapeOp}},
        {"Unsqueeze", {1, 1, {{"axes", IS}}, &Importer::ReshapeOp}},
        {"ReduceSum",
         {1, 1, {{"axes", IS}, {"keepdims", I}, {"noop_with_empty_axes", I}}, &Importer::ReduceOp}},
        {"ReduceMean", {1, 1, reduce_attrs, &Importer::ReduceOp}},
        {"ReduceMax", {1, 1, reduce_attrs, &Importer::ReduceOp}},
        {"ReduceMin", {1, 1, reduce_attrs, &Importer::ReduceOp}},
        {"ReduceSumSquare", {1, 1, reduce_attrs, &Importer::ReduceOp}},
        {"ReduceL1", {1, 1, reduce_attrs, &Importer::ReduceOp}},
        {"ReduceL2", {1, 1, reduce_attrs, &Importer::ReduceOp}},
        {"ReduceLogSum", {1, 1, reduce_attrs, &Importer::ReduceOp}},
        {"ReduceLogSumExp", {1, 1, reduce_attrs, &Importer::ReduceOp}},
        {"DepthToSpace", {1, 1, {{"blocksize", I}, {"mode", S}}, &Importer::DepthSpaceOp}},
        {"SpaceToDepth", {1, 1, {{"blocksize", I}}, &Importer::DepthSpaceOp}},
        {"Resize",
         {10,
          1,
          {{"mode", S},
           {"coordinate_transformation_mode", S},
           {"nearest_mode", S},
           {"cubic_coeff_a", F},
           {"exclude_outside", I},
           {"extrapolation_value", F}},
          &Importer::ResizeOp}},
        {"Upsample", {7, 1, {{"mode", S}, {"scales", FS}}, &Importer::ResizeOp}},
        {"Expand", {8, 2, {}, &Importer::ExpandOp}},
        {"Tile", {6, 2, {}, &Importer::TileOp}},
        {"Gather", {1, 2, {{"axis", I}}, &Importer::GatherOp}},
    };
  }();
  return *ops;
}

std::string Importer::SupportedOps() {
  std::string names;
  for (const auto& [name, info] : Ops()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

// The first string field of `message` or of a message in it that is not UTF-8 (as
// "onnx.NodeProto.name"), or "" when all are. Names become PipelineSpec strings, which
// protobuf refuses to parse unless they are UTF-8.
std::string FieldNotUtf8(const google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int k = 0; k < count; ++k) {
      if (field->type() == FieldDescriptor::TYPE_STRING) {
        const std::string value = field->is_repeated()
                                      ? reflection->GetRepeatedString(message, field, k)
                                      : reflection->GetString(message, field);
        if (!IsValidUtf8(value)) return field->full_name();
      } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        const std::string inner =
            FieldNotUtf8(field->is_repeated() ? reflection->GetRepeatedMessage(message, field, k)
                                              : reflection->GetMessage(message, field));
        if (!inner.empty()) return inner;
      }
    }
  }
  return "";
}

}  // namespace

StatusOr<PipelineSpec> ImportOnnxModel(const std::string& bytes, const std::string& what,
                                       const OnnxImportOptions& options) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes)) {
    return Status::Error("ONNX model '" + what +
                         "': not a valid ModelProto (truncated or "
                         "corrupt protobuf, " +
                         std::to_string(bytes.size()) + " bytes)");
  }
  const std::string not_utf8 = FieldNotUtf8(model);
  if (!not_utf8.empty()) {
    return Status::Error("ONNX model '" + what + "': field " + not_utf8 +
                         " is not UTF-8 text (ONNX strings are UTF-8)");
  }
  Importer importer(model, what, options);
  StatusOr<PipelineSpec> spec = importer.Run();
  if (!spec.ok()) return spec.status().WithContext("ONNX model '" + what + "'");
  return spec;
}

StatusOr<PipelineSpec> ImportOnnxFile(const std::string& path, const OnnxImportOptions& options) {
  StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status().WithContext("cannot read ONNX file");
  return ImportOnnxModel(*bytes, path, options);
}

StatusOr<HostTensor> ReadOnnxTensorFile(const std::string& path) {
  StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status().WithContext("cannot read ONNX tensor file");
  TensorProto proto;
  if (!proto.ParseFromString(*bytes)) {
    return Status::Error("ONNX tensor file '" + path +
                         "': not a valid TensorProto (truncated "
                         "or corrupt protobuf)");
  }
  if (!IsFloatType(proto.data_type())) {
    return Status::Error("ONNX tensor file '" + path + "': element type " +
                         ElemTypeName(proto.data_type()) + " (supported: FLOAT, DOUBLE)");
  }
  StatusOr<ConstTensor> t = onnx_import::DecodeTensor(proto, "ONNX tensor file '" + path + "'");
  if (!t.ok()) return t.status();
  HostTensor out;
  out.dtype = proto.data_type() == TensorProto::DOUBLE ? FLOAT64 : FLOAT32;
  out.shape = t->shape;
  out.data = std::move(t->f);
  return out;
}

}  // namespace schedfarm
