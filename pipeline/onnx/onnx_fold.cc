// The constant folder: evaluates ONNX nodes whose inputs are all known at import,
// as exporters emit them for static shapes (Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape) and for constant weights. Integers are computed exactly in int64, floats
// in double and rounded to float precision for FLOAT results.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>

#include "pipeline/onnx/onnx_internal.h"

namespace schedfarm {
namespace onnx_import {

using onnx::TensorProto;

namespace {

using Inputs = std::vector<const ConstTensor*>;
using Result = StatusOr<std::vector<ConstTensor>>;

// Rounds a tensor's values to its element type's precision.
void RoundToType(ConstTensor& t) {
  if (t.elem_type == TensorProto::FLOAT) {
    for (double& v : t.f) v = static_cast<float>(v);
  }
}

Result One(ConstTensor t) {
  RoundToType(t);
  std::vector<ConstTensor> out;
  out.push_back(std::move(t));
  return out;
}

// Row-major strides of a shape.
std::vector<int64_t> Strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int k = static_cast<int>(shape.size()) - 2; k >= 0; --k) s[k] = s[k + 1] * shape[k + 1];
  return s;
}

// For each element of `out_shape`, calls fn(out_index, in_index...) with the flat
// indices of the broadcast inputs.
void ForEachBroadcast(const Shape& out_shape, const std::vector<Shape>& in_shapes,
                      const std::function<void(int64_t, const std::vector<int64_t>&)>& fn) {
  const size_t rank = out_shape.size();
  std::vector<std::vector<int64_t>> bstrides;
  for (const Shape& s : in_shapes) {
    std::vector<int64_t> st = Strides(s);
    std::vector<int64_t> b(rank, 0);
    for (size_t k = 0; k < s.size(); ++k) {
      const size_t o = rank - s.size() + k;
      b[o] = s[k] == 1 ? 0 : st[k];
    }
    bstrides.push_back(b);
  }
  const int64_t n = NumElements(out_shape);
  std::vector<int64_t> idx(rank, 0);
  std::vector<int64_t> in_flat(in_shapes.size(), 0);
  for (int64_t o = 0; o < n; ++o) {
    for (size_t j = 0; j < in_shapes.size(); ++j) {
      int64_t flat = 0;
      for (size_t k = 0; k < rank; ++k) flat += idx[k] * bstrides[j][k];
      in_flat[j] = flat;
    }
    fn(o, in_flat);
    for (int k = static_cast<int>(rank) - 1; k >= 0; --k) {
      if (++idx[k] < out_shape[k]) break;
      idx[k] = 0;
    }
  }
}

// Copies element `from` of `src` to element `to` of `dst` (same type class).
void CopyElement(const ConstTensor& src, int64_t from, ConstTensor& dst, int64_t to) {
  if (dst.is_float()) {
    dst.f[to] = src.AsDouble(from);
  } else {
    dst.i[to] = src.AsInt(from);
  }
}

// A tensor of `shape` whose element o is src[index(o)].
ConstTensor Gathered(const ConstTensor& src, const Shape& shape,
                     const std::function<int64_t(const std::vector<int64_t>&)>& index) {
  ConstTensor out = MakeConst(src.elem_type, shape);
  std::vector<int64_t> idx(shape.size(), 0);
  const int64_t n = NumElements(shape);
  for (int64_t o = 0; o < n; ++o) {
    CopyElement(src, index(idx), out, o);
    for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

bool TooLarge(const Shape& shape) {
  for (int64_t d : shape) {
    if (d < 0) return true;
  }
  double n = 1;
  for (int64_t d : shape) n *= static_cast<double>(d);
  return n > static_cast<double>(kMaxFoldElements);
}

Status Need(const NodeContext& ctx, const Inputs& in, int k, const char* what) {
  if (k >= static_cast<int>(in.size()) || in[k] == nullptr) {
    return ctx.Error(std::string("missing input ") + std::to_string(k) + " (" + what + ")");
  }
  return Status::Ok();
}

// Reads an integer list from an optional input or, for older opsets, an attribute.
std::vector<int64_t> IntsFrom(const Inputs& in, int k) {
  if (k < static_cast<int>(in.size()) && in[k] != nullptr) return in[k]->Ints();
  return {};
}

// --- elementwise ---------------------------------------------------------------------

enum class Arith { kAdd, kSub, kMul, kDiv, kPow, kMax, kMin, kEq, kLt, kGt, kLe, kGe, kAnd, kOr };

bool IsComparison(Arith op) {
  return op == Arith::kEq || op == Arith::kLt || op == Arith::kGt || op == Arith::kLe ||
         op == Arith::kGe || op == Arith::kAnd || op == Arith::kOr;
}

// The comparisons and logical operators (IsComparison), on either operand type.
template <typename T>
bool Compare(Arith op, T a, T b) {
  switch (op) {
    case Arith::kEq:
      return a == b;
    case Arith::kLt:
      return a < b;
    case Arith::kGt:
      return a > b;
    case Arith::kLe:
      return a <= b;
    case Arith::kGe:
      return a >= b;
    case Arith::kAnd:
      return (a != 0) && (b != 0);
    case Arith::kOr:
      return (a != 0) || (b != 0);
    default:
      return false;
  }
}

StatusOr<int64_t> IntArith(Arith op, int64_t a, int64_t b) {
  switch (op) {
    case Arith::kAdd:
      return static_cast<int64_t>(static_cast<uint64_t>(a) + b);
    case Arith::kSub:
      return static_cast<int64_t>(static_cast<uint64_t>(a) - b);
    case Arith::kMul:
      return static_cast<int64_t>(static_cast<uint64_t>(a) * b);
    case Arith::kDiv:
      if (b == 0) return Status::Error("integer division by zero");
      if (a == std::numeric_limits<int64_t>::min() && b == -1) return a;
      return a / b;
    case Arith::kPow: {
      if (b < 0) return Status::Error("integer power with a negative exponent");
      int64_t r = 1;
      for (int64_t k = 0; k < b && k < 64; ++k)
        r = static_cast<int64_t>(static_cast<uint64_t>(r) * a);
      return r;
    }
    case Arith::kMax:
      return std::max(a, b);
    case Arith::kMin:
      return std::min(a, b);
    default:
      return static_cast<int64_t>(Compare(op, a, b));
  }
}

double FloatArith(Arith op, double a, double b) {
  switch (op) {
    case Arith::kAdd:
      return a + b;
    case Arith::kSub:
      return a - b;
    case Arith::kMul:
      return a * b;
    case Arith::kDiv:
      return a / b;
    case Arith::kPow:
      return std::pow(a, b);
    case Arith::kMax:
      return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b);
    case Arith::kMin:
      return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b);
    default:
      return Compare(op, a, b);
  }
}

// a op b with broadcasting. The result has a's type (BOOL for comparisons); integer
// operands are computed exactly unless a float is involved. Sets *declined (and
// returns an empty tensor) when the result would be too large to fold.
StatusOr<ConstTensor> Binary(Arith op, const ConstTensor& a, const ConstTensor& b, bool* declined) {
  SCHEDFARM_ASSIGN_OR_RETURN(Shape shape, BroadcastShapes(a.shape, b.shape));
  if (TooLarge(shape)) {
    *declined = true;
    return ConstTensor();
  }
  const int32_t type = IsComparison(op) ? TensorProto::BOOL : a.elem_type;
  ConstTensor out = MakeConst(type, shape);
  const bool float_math = a.is_float() || b.is_float();
  Status error;
  ForEachBroadcast(shape, {a.shape, b.shape}, [&](int64_t o, const std::vector<int64_t>& in) {
    if (float_math) {
      const double v = FloatArith(op, a.AsDouble(in[0]), b.AsDouble(in[1]));
      if (out.is_float()) {
        out.f[o] = v;
      } else {
        out.i[o] = static_cast<int64_t>(CastValue(v, type));
      }
    } else {
      StatusOr<int64_t> v = IntArith(op, a.i[in[0]], b.i[in[1]]);
      if (!v.ok()) {
        error = v.status();
        return;
      }
      out.i[o] = *v;
    }
  });
  if (!error.ok()) return error;
  RoundToType(out);
  return out;
}

// The elementwise function `op` of x, or nothing for an op or type it does not know.
std::optional<ConstTensor> Unary(const std::string& op, const ConstTensor& x) {
  ConstTensor out = x;
  if (!x.is_float()) {
    for (int64_t& v : out.i) {
      if (op == "Neg")
        v = -v;
      else if (op == "Abs")
        v = v < 0 ? -v : v;
      else if (op == "Relu")
        v = std::max<int64_t>(v, 0);
      else if (op == "Sign")
        v = (v > 0) - (v < 0);
      else if (op == "Not")
        v = v == 0;
      else if (op != "Identity")
        return std::nullopt;
    }
    return out;
  }
  for (double& v : out.f) {
    if (op == "Neg")
      v = -v;
    else if (op == "Abs")
      v = std::fabs(v);
    else if (op == "Relu")
      v = v > 0 ? v : 0.0;
    else if (op == "Sign")
      v = (v > 0) - (v < 0);
    else if (op == "Sqrt")
      v = std::sqrt(v);
    else if (op == "Exp")
      v = std::exp(v);
    else if (op == "Log")
      v = std::log(v);
    else if (op == "Reciprocal")
      v = 1.0 / v;
    else if (op == "Floor")
      v = std::floor(v);
    else if (op == "Ceil")
      v = std::ceil(v);
    else if (op == "Sigmoid")
      v = 1.0 / (1.0 + std::exp(-v));
    else if (op == "Tanh")
      v = std::tanh(v);
    else if (op == "Sin")
      v = std::sin(v);
    else if (op == "Cos")
      v = std::cos(v);
    else if (op == "Erf")
      v = std::erf(v);
    else if (op != "Identity")
      return std::nullopt;
  }
  RoundToType(out);
  return out;
}

Result FoldArith(const NodeContext& ctx, const Inputs& in) {
  static const std::map<std::string, Arith> kOps = {
      {"Add", Arith::kAdd},        {"Sub", Arith::kSub},           {"Mul", Arith::kMul},
      {"Div", Arith::kDiv},        {"Pow", Arith::kPow},           {"Max", Arith::kMax},
      {"Min", Arith::kMin},        {"Sum", Arith::kAdd},           {"Mean", Arith::kAdd},
      {"Equal", Arith::kEq},       {"Less", Arith::kLt},           {"Greater", Arith::kGt},
      {"LessOrEqual", Arith::kLe}, {"GreaterOrEqual", Arith::kGe}, {"And", Arith::kAnd},
      {"Or", Arith::kOr}};
  const Arith op = kOps.at(ctx.op());
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] == nullptr) return ctx.Error("missing input " + std::to_string(k));
  }
  if (in.empty()) return ctx.Error("needs at least one input");
  ConstTensor acc = *in[0];
  if (ctx.opset() < 7 && ctx.Int("broadcast", 0) != 0 && in.size() == 2) {
    // Broadcasting before opset 7: align b at `axis`, then broadcast as numpy does.
    StatusOr<Shape> b_shape =
        LegacyBroadcastShape(in[0]->shape, in[1]->shape, ctx.Has("axis"), ctx.Int("axis", 0));
    if (!b_shape.ok()) return ctx.Error(b_shape.status().message());
    ConstTensor b = *in[1];
    b.shape = *b_shape;
    bool declined = false;
    StatusOr<ConstTensor> r = Binary(op, acc, b, &declined);
    if (!r.ok()) return ctx.Error(r.status().message());
    if (declined) return std::vector<ConstTensor>{};
    return One(std::move(r).value());
  }
  for (size_t k = 1; k < in.size(); ++k) {
    bool declined = false;
    StatusOr<ConstTensor> r = Binary(op, acc, *in[k], &declined);
    if (!r.ok()) return ctx.Error(r.status().message());
    if (declined) return std::vector<ConstTensor>{};
    acc = std::move(r).value();
  }
  if (ctx.op() == "Mean") {
    if (!acc.is_float()) return std::vector<ConstTensor>{};
    for (double& v : acc.f) v /= static_cast<double>(in.size());
  }
  return One(std::move(acc));
}

// --- shape and data movement ---------------------------------------------------------

Result FoldCast(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "input"));
  int32_t to;
  if (ctx.op() == "CastLike") {
    SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 1, "target_type"));
    to = in[1]->elem_type;
  } else {
    to = static_cast<int32_t>(ctx.Int("to", 0));
  }
  if (!IsFloatType(to) && !IsIntegerType(to)) {
    return ctx.Unsupported(std::string("cast to ") + ElemTypeName(to));
  }
  const ConstTensor& x = *in[0];
  ConstTensor out = MakeConst(to, x.shape);
  for (int64_t k = 0; k < x.size(); ++k) {
    if (out.is_float()) {
      out.f[k] = CastValue(x.AsDouble(k), to);
    } else if (!x.is_float() && to == TensorProto::INT64) {
      out.i[k] = x.i[k];
    } else if (!x.is_float()) {
      out.i[k] = static_cast<int64_t>(CastValue(static_cast<double>(x.i[k]), to));
    } else {
      out.i[k] = static_cast<int64_t>(CastValue(x.f[k], to));
    }
  }
  return One(std::move(out));
}

Result FoldGather(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "data"));
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 1, "indices"));
  const ConstTensor& data = *in[0];
  const ConstTensor& indices = *in[1];
  const int64_t rank = static_cast<int64_t>(data.shape.size());
  StatusOr<int64_t> axis = NormalizeAxis(ctx.Int("axis", 0), rank);
  if (!axis.ok()) return ctx.Error(axis.status().message());
  const int64_t dim = data.shape[*axis];
  std::vector<int64_t> idx = indices.Ints();
  for (int64_t& v : idx) {
    if (v < -dim || v >= dim) {
      return ctx.Error("index " + std::to_string(v) + " is out of range for extent " +
                       std::to_string(dim));
    }
    if (v < 0) v += dim;
  }
  Shape shape(data.shape.begin(), data.shape.begin() + *axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), data.shape.begin() + *axis + 1, data.shape.end());
  if (TooLarge(shape)) return std::vector<ConstTensor>{};
  const std::vector<int64_t> st = Strides(data.shape);
  const size_t q = indices.shape.size();
  return One(Gathered(data, shape, [&](const std::vector<int64_t>& o) {
    int64_t flat = 0;
    for (int64_t k = 0; k < *axis; ++k) flat += o[k] * st[k];
    int64_t ii = 0;
    for (size_t k = 0; k < q; ++k) ii = ii * indices.shape[k] + o[*axis + k];
    flat += idx[ii] * st[*axis];
    for (int64_t k = *axis + 1; k < rank; ++k) flat += o[k + q - 1] * st[k];
    return flat;
  }));
}

Result Reshaped(const ConstTensor& x, const Shape& shape) {
  ConstTensor out = x;
  out.shape = shape;
  return One(std::move(out));
}

Result FoldReshapeLike(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "data"));
  const ConstTensor& x = *in[0];
  const std::string& op = ctx.op();
  StatusOr<Shape> shape = Shape{};
  if (op == "Reshape") {
    if (ctx.opset() >= 5) SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 1, "shape"));
    const std::vector<int64_t> target = ctx.opset() < 5 ? ctx.Ints("shape") : IntsFrom(in, 1);
    shape = ReshapeTarget(x.shape, target, ctx.Int("allowzero", 0) != 0);
  } else if (op == "Flatten") {
    const int64_t rank = static_cast<int64_t>(x.shape.size());
    int64_t axis = ctx.Int("axis", 1);
    if (axis < -rank || axis > rank) return ctx.Error("axis out of range");
    if (axis < 0) axis += rank;
    int64_t outer = 1;
    for (int64_t k = 0; k < axis; ++k) outer *= x.shape[k];
    shape = Shape{outer, NumElements(x.shape) / std::max<int64_t>(outer, 1)};
    if (outer == 0) shape = Shape{0, 0};
  } else {
    std::vector<int64_t> axes = ctx.opset() < 13 ? ctx.Ints("axes") : IntsFrom(in, 1);
    shape = op == "Squeeze" ? SqueezeShape(x.shape, axes) : UnsqueezeShape(x.shape, axes);
  }
  if (!shape.ok()) return ctx.Error(shape.status().message());
  return Reshaped(x, *shape);
}

Result FoldTranspose(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "data"));
  const ConstTensor& x = *in[0];
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> perm = ctx.Ints("perm");
  if (!ctx.Has("perm")) {
    for (int64_t k = rank - 1; k >= 0; --k) perm.push_back(k);
  }
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t k = 0; k < static_cast<int64_t>(sorted.size()); ++k) {
    if (sorted[k] != k || static_cast<int64_t>(perm.size()) != rank) {
      return ctx.Error("perm is not a permutation of the " + std::to_string(rank) + " axes");
    }
  }
  Shape shape(rank);
  for (int64_t d = 0; d < rank; ++d) shape[d] = x.shape[perm[d]];
  const std::vector<int64_t> st = Strides(x.shape);
  return One(Gathered(x, shape, [&](const std::vector<int64_t>& o) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat += o[d] * st[perm[d]];
    return flat;
  }));
}

Result FoldConcat(const NodeContext& ctx, const Inputs& in) {
  if (in.empty()) return ctx.Error("needs at least one input");
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] == nullptr) return ctx.Error("missing input " + std::to_string(k));
  }
  const int64_t rank = static_cast<int64_t>(in[0]->shape.size());
  StatusOr<int64_t> axis = NormalizeAxis(ctx.Int("axis", 1), rank);
  if (!axis.ok()) return ctx.Error(axis.status().message());
  Shape shape = in[0]->shape;
  shape[*axis] = 0;
  for (const ConstTensor* t : in) {
    if (static_cast<int64_t>(t->shape.size()) != rank) return ctx.Error("inputs differ in rank");
    for (int64_t k = 0; k < rank; ++k) {
      if (k != *axis && t->shape[k] != in[0]->shape[k]) {
        return ctx.Error("inputs differ in shape besides the concat axis");
      }
    }
    shape[*axis] += t->shape[*axis];
  }
  ConstTensor out = MakeConst(in[0]->elem_type, shape);
  int64_t outer = 1;
  for (int64_t k = 0; k < *axis; ++k) outer *= shape[k];
  int64_t o = 0;
  for (int64_t p = 0; p < outer; ++p) {
    for (const ConstTensor* t : in) {
      const int64_t chunk = t->size() / std::max<int64_t>(outer, 1);
      for (int64_t k = 0; k < chunk; ++k) CopyElement(*t, p * chunk + k, out, o++);
    }
  }
  return One(std::move(out));
}

Result FoldSlice(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "data"));
  const ConstTensor& x = *in[0];
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.Ints("starts");
    ends = ctx.Ints("ends");
    axes = ctx.Ints("axes");
  } else {
    SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 1, "starts"));
    SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 2, "ends"));
    starts = IntsFrom(in, 1);
    ends = IntsFrom(in, 2);
    axes = IntsFrom(in, 3);
    steps = IntsFrom(in, 4);
  }
  StatusOr<ResolvedSlice> s = ResolveSlice(x.shape, starts, ends, axes, steps);
  if (!s.ok()) return ctx.Error(s.status().message());
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  for (size_t k = 0; k < s->axes.size(); ++k) {
    start[s->axes[k]] = s->starts[k];
    step[s->axes[k]] = s->steps[k];
  }
  const std::vector<int64_t> st = Strides(x.shape);
  return One(Gathered(x, s->output, [&](const std::vector<int64_t>& o) {
    int64_t flat = 0;
    for (int64_t d = 0; d < rank; ++d) flat += (start[d] + o[d] * step[d]) * st[d];
    return flat;
  }));
}

Result FoldExpand(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "input"));
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 1, "shape"));
  StatusOr<Shape> shape = BroadcastShapes(in[0]->shape, in[1]->Ints());
  if (!shape.ok()) return ctx.Error(shape.status().message());
  if (TooLarge(*shape)) return std::vector<ConstTensor>{};
  ConstTensor out = MakeConst(in[0]->elem_type, *shape);
  ForEachBroadcast(*shape, {in[0]->shape}, [&](int64_t o, const std::vector<int64_t>& i) {
    CopyElement(*in[0], i[0], out, o);
  });
  return One(std::move(out));
}

Result FoldTile(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "input"));
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 1, "repeats"));
  const ConstTensor& x = *in[0];
  const std::vector<int64_t> reps = in[1]->Ints();
  if (reps.size() != x.shape.size()) return ctx.Error("repeats must have one entry per dim");
  Shape shape = x.shape;
  for (size_t k = 0; k < reps.size(); ++k) {
    if (reps[k] < 0) return ctx.Error("negative repeat");
    shape[k] *= reps[k];
  }
  if (TooLarge(shape)) return std::vector<ConstTensor>{};
  const std::vector<int64_t> st = Strides(x.shape);
  return One(Gathered(x, shape, [&](const std::vector<int64_t>& o) {
    int64_t flat = 0;
    for (size_t d = 0; d < o.size(); ++d) flat += (o[d] % x.shape[d]) * st[d];
    return flat;
  }));
}

Result FoldConstantOfShape(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "input"));
  Shape shape = in[0]->Ints();
  if (TooLarge(shape)) {
    for (int64_t d : shape) {
      if (d < 0) return ctx.Error("negative dim in shape " + ShapeToString(shape));
    }
    return std::vector<ConstTensor>{};
  }
  ConstTensor value = MakeConst(TensorProto::FLOAT, {1});
  if (const onnx::AttributeProto* attr = ctx.Find("value")) {
    StatusOr<ConstTensor> v = DecodeTensor(attr->t(), "attribute 'value'");
    if (!v.ok()) return ctx.Error(v.status().message());
    if (v->size() != 1) return ctx.Error("attribute 'value' must have one element");
    value = std::move(v).value();
  }
  ConstTensor out = MakeConst(value.elem_type, shape);
  for (int64_t k = 0; k < out.size(); ++k) CopyElement(value, 0, out, k);
  return One(std::move(out));
}

Result FoldRange(const NodeContext& ctx, const Inputs& in) {
  for (int k = 0; k < 3; ++k) {
    SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, k, k == 0 ? "start" : k == 1 ? "limit" : "delta"));
    if (in[k]->size() != 1) return ctx.Error("inputs must be scalars");
  }
  const int32_t type = in[0]->elem_type;
  int64_t n;
  if (in[0]->is_float()) {
    const double start = in[0]->f[0], limit = in[1]->AsDouble(0), delta = in[2]->AsDouble(0);
    if (delta == 0) return ctx.Error("delta is 0");
    const double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(kMaxFoldElements))) return std::vector<ConstTensor>{};
    n = std::max<int64_t>(static_cast<int64_t>(count), 0);
    ConstTensor out = MakeConst(type, {n});
    for (int64_t k = 0; k < n; ++k) out.f[k] = start + static_cast<double>(k) * delta;
    return One(std::move(out));
  }
  const int64_t start = in[0]->i[0], limit = in[1]->AsInt(0), delta = in[2]->AsInt(0);
  if (delta == 0) return ctx.Error("delta is 0");
  const double span = (static_cast<double>(limit) - static_cast<double>(start)) / delta;
  if (span > static_cast<double>(kMaxFoldElements)) return std::vector<ConstTensor>{};
  n = 0;
  if (delta > 0 && limit > start) n = (limit - start + delta - 1) / delta;
  if (delta < 0 && limit < start) n = (start - limit - delta - 1) / (-delta);
  ConstTensor out = MakeConst(type, {n});
  for (int64_t k = 0; k < n; ++k) out.i[k] = start + k * delta;
  return One(std::move(out));
}

Result FoldWhere(const NodeContext& ctx, const Inputs& in) {
  for (int k = 0; k < 3; ++k) SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, k, "operand"));
  StatusOr<Shape> s = BroadcastShapes(in[0]->shape, in[1]->shape);
  if (s.ok()) s = BroadcastShapes(*s, in[2]->shape);
  if (!s.ok()) return ctx.Error(s.status().message());
  if (TooLarge(*s)) return std::vector<ConstTensor>{};
  ConstTensor out = MakeConst(in[1]->elem_type, *s);
  ForEachBroadcast(*s, {in[0]->shape, in[1]->shape, in[2]->shape},
                   [&](int64_t o, const std::vector<int64_t>& i) {
                     const bool c = in[0]->AsDouble(i[0]) != 0;
                     CopyElement(c ? *in[1] : *in[2], c ? i[1] : i[2], out, o);
                   });
  return One(std::move(out));
}

Result FoldUnary(const NodeContext& ctx, const Inputs& in) {
  SCHEDFARM_RETURN_IF_ERROR(Need(ctx, in, 0, "input"));
  std::optional<ConstTensor> r = Unary(ctx.op(), *in[0]);
  if (!r) return std::vector<ConstTensor>{};
  return One(std::move(*r));
}

using Folder = Result (*)(const NodeContext&, const Inputs&);

const std::map<std::string, Folder>& Folders() {
  static const auto* folders = new std::map<std::string, Folder>{
      {"Add", FoldArith},           {"Sub", FoldArith},
      {"Mul", FoldArith},           {"Div", FoldArith},
      {"Pow", FoldArith},           {"Max", FoldArith},
      {"Min", FoldArith},           {"Sum", FoldArith},
      {"Mean", FoldArith},          {"Equal", FoldArith},
      {"Less", FoldArith},          {"Greater", FoldArith},
      {"LessOrEqual", FoldArith},   {"GreaterOrEqual", FoldArith},
      {"And", FoldArith},           {"Or", FoldArith},
      {"Not", FoldUnary},           {"Identity", FoldUnary},
      {"Neg", FoldUnary},           {"Abs", FoldUnary},
      {"Relu", FoldUnary},          {"Sign", FoldUnary},
      {"Sqrt", FoldUnary},          {"Exp", FoldUnary},
      {"Log", FoldUnary},           {"Reciprocal", FoldUnary},
      {"Floor", FoldUnary},         {"Ceil", FoldUnary},
      {"Sigmoid", FoldUnary},       {"Tanh", FoldUnary},
      {"Sin", FoldUnary},           {"Cos", FoldUnary},
      {"Erf", FoldUnary},           {"Cast", FoldCast},
      {"CastLike", FoldCast},       {"Gather", FoldGather},
      {"Reshape", FoldReshapeLike}, {"Flatten", FoldReshapeLike},
      {"Squeeze", FoldReshapeLike}, {"Unsqueeze", FoldReshapeLike},
      {"Transpose", FoldTranspose}, {"Concat", FoldConcat},
      {"Slice", FoldSlice},         {"Expand", FoldExpand},
      {"Tile", FoldTile},           {"ConstantOfShape", FoldConstantOfShape},
      {"Range", FoldRange},         {"Where", FoldWhere}};
  return *folders;
}

}  // namespace

bool IsFoldable(const std::string& op_type) { return Folders().count(op_type) > 0; }

StatusOr<std::vector<ConstTensor>> FoldNode(const NodeContext& ctx, const Inputs& inputs) {
  auto it = Folders().find(ctx.op());
  if (it == Folders().end()) return std::vector<ConstTensor>{};
  return it->second(ctx, inputs);
}

}  // namespace onnx_import
}  // namespace schedfarm
