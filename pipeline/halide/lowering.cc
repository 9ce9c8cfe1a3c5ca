#include "pipeline/halide/lowering.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "pipeline/lowered_names.h"
#include "pipeline/spec.h"

namespace schedfarm {
namespace {

using Halide::Expr;
using Halide::Func;
using Halide::Type;
using Halide::Var;

Type HalideType(DataType dtype) { return dtype == FLOAT64 ? Halide::Float(64) : Halide::Float(32); }

Expr Const(const Type& t, double v) { return Halide::Internal::make_const(t, v); }

// Horner evaluation of sum_j c[j] * z^j.
Expr Polynomial(const Expr& z, const std::vector<double>& c) {
  const Type t = z.type();
  Expr acc = Const(t, c.back());
  for (int j = static_cast<int>(c.size()) - 2; j >= 0; --j) acc = acc * z + Const(t, c[j]);
  return acc;
}

// Clenshaw evaluation of sum_{j<n} c[j] * T_j(s), s in [-1, 1].
Expr Chebyshev(const Expr& s, const double* c, int n) {
  const Type t = s.type();
  Expr b1 = Const(t, 0), b2 = Const(t, 0);
  const Expr two_s = s * Const(t, 2);
  for (int j = n - 1; j >= 1; --j) {
    Expr b0 = Const(t, c[j]) + two_s * b1 - b2;
    b2 = b1;
    b1 = b0;
  }
  return Const(t, c[0]) + s * b1 - b2;
}

// ---------------------------------------------------------------------------
// Math. Constants are built in the stage's type so f32 stages stay f32.
// ---------------------------------------------------------------------------

// A Padé approximant as the convergent of the continued fraction
//   f(x) = x / (1 + a(1) z / (3 + a(2) z / (5 + ...)))   with z = x^2,
// truncated after `terms` partial denominators 1, 3, 5, ... The result is
// f(x) ~= x * num(z) / den(z) (coefficients ascending in z, den[0] = 1).
struct OddRational {
  std::vector<double> num, den;
};
OddRational ContinuedFractionPade(int terms, double (*a)(int)) {
  // Convergents P_k / Q_k of the denominator D = b0 + a1 z / (b1 + ...), b_k = 2k + 1.
  std::vector<double> p_prev = {1}, q_prev = {0}, p = {1}, q = {1};
  for (int k = 1; k < terms; ++k) {
    const double b = 2.0 * k + 1.0;
    std::vector<double> p_next(std::max(p.size(), p_prev.size() + 1), 0.0);
    std::vector<double> q_next(std::max(q.size(), q_prev.size() + 1), 0.0);
    for (size_t j = 0; j < p.size(); ++j) p_next[j] += b * p[j];
    for (size_t j = 0; j < p_prev.size(); ++j) p_next[j + 1] += a(k) * p_prev[j];
    for (size_t j = 0; j < q.size(); ++j) q_next[j] += b * q[j];
    for (size_t j = 0; j < q_prev.size(); ++j) q_next[j + 1] += a(k) * q_prev[j];
    p_prev = std::move(p);
    q_prev = std::move(q);
    p = std::move(p_next);
    q = std::move(q_next);
  }
  // f = x / D = x * Q / P; normalize so that P(0) = 1.
  const double scale = p[0];
  for (double& c : p) c /= scale;
  for (double& c : q) c /= scale;
  return {q, p};
}

double TanhCoefficient(int) { return 1.0; }
double AtanhCoefficient(int k) { return -static_cast<double>(k) * k; }

// Padé [7/6] of tanh (continued fraction with 7 partial denominators).
const OddRational& TanhPade() {
  static const OddRational r = ContinuedFractionPade(7, TanhCoefficient);
  return r;
}

// tanh(x): clamp to +-c (where tanh rounds to +-1), evaluate the [7/6] Padé
// approximant at x / 2^k, then apply tanh(2y) = 2 tanh(y) / (1 + tanh(y)^2) k times.
Expr PadeTanh(const Expr& x) {
  const Type t = x.type();
  const bool f64 = t.bits() == 64;
  const double c = f64 ? 19.5 : 9.0;
  const int halvings = f64 ? 3 : 1;
  Expr y = Halide::clamp(x, Const(t, -c), Const(t, c)) * Const(t, std::ldexp(1.0, -halvings));
  const Expr z = y * y;
  Expr r = y * Polynomial(z, TanhPade().num) / Polynomial(z, TanhPade().den);
  for (int i = 0; i < halvings; ++i) r = Const(t, 2) * r / (Const(t, 1) + r * r);
  return r;
}

// Coefficients of the numerator of the [n/n] Padé approximant of e^r:
// e^r ~= N(r) / N(-r), N(r) = sum_j (2n-j)! n! / ((2n)! j! (n-j)!) r^j.
std::vector<double> ExpPadeNumerator(int n) {
  std::vector<double> c(n + 1);
  c[0] = 1;
  for (int j = 1; j <= n; ++j) {
    c[j] = c[j - 1] * (n - j + 1) / (static_cast<double>(j) * (2 * n - j + 1));
  }
  return c;
}

// 2^m for an integer m in the normal exponent range, by building the float's bits.
Expr PowerOfTwo(const Expr& m, const Type& t) {
  if (t.bits() == 64) {
    return Halide::reinterpret(t, Halide::cast(Halide::Int(64), m + 1023) << 52);
  }
  return Halide::reinterpret(t, (m + 127) << 23);
}

// e^x: x = n ln2 + r with |r| <= ln2 / 2 (Cody-Waite split of ln2), e^r by the
// [3/3] (f32) or [6/6] (f64) Padé approximant, 2^n as two exact powers of two so
// that overflow gives inf and underflow goes through the subnormals to 0.
Expr PadeExp(const Expr& x) {
  const Type t = x.type();
  const bool f64 = t.bits() == 64;
  const double lo = f64 ? -746.0 : -104.0, hi = f64 ? 710.0 : 89.0;
  const double ln2_hi = f64 ? 6.93147180369123816490e-01 : 0.693359375;
  const double ln2_lo = f64 ? 1.90821492927058770002e-10 : -2.12194440e-4;
  static const std::vector<double> n3 = ExpPadeNumerator(3), n6 = ExpPadeNumerator(6);
  const std::vector<double>& num = f64 ? n6 : n3;
  std::vector<double> even, odd;
  for (size_t j = 0; j < num.size(); ++j) (j % 2 ? odd : even).push_back(num[j]);

  const Expr xc = Halide::clamp(x, Const(t, lo), Const(t, hi));
  const Expr n = Halide::floor(xc * Const(t, 1.4426950408889634) + Const(t, 0.5));
  const Expr r = (xc - n * Const(t, ln2_hi)) - n * Const(t, ln2_lo);
  const Expr r2 = r * r;
  const Expr e = Polynomial(r2, even), o = r * Polynomial(r2, odd);
  const Expr er = (e + o) / (e - o);
  const Expr ni = Halide::cast(Halide::Int(32), n);
  const Expr n1 = ni >> 1;
  const Expr n2 = ni - n1;
  return er * PowerOfTwo(n1, t) * PowerOfTwo(n2, t);
}

Expr Exp(const Expr& x, MathMode math) { return math == PADE ? PadeExp(x) : Halide::exp(x); }

// Chebyshev interpolants (computed at 40 digits) of
//   A(t) = erf(sqrt(t)) / sqrt(t)            on t = x^2 in [0, 4],
//   B(u) = erfc(1/u) * exp(1/u^2) / u        on u = 1/|x| in [1/6, 1/2].
constexpr double kErfSmall[] = {
    7.4155528204240179e-1,   -3.0107107338659494e-1,  6.8994830689831566e-2,
    -1.3916271264722188e-2,  2.4207995224334637e-3,   -3.6586396858480864e-4,
    4.8620984432319048e-5,   -5.7492565580356848e-6,  6.1132435784347647e-7,
    -5.8991015312958434e-8,  5.2070090920686482e-9,   -4.2329758799655433e-10,
    3.188113506649175e-11,   -2.2361550188326843e-12, 1.4673298479910849e-13,
    -9.0440019853817471e-15, 5.2548137154709187e-16,  -2.8874261222849454e-17,
    1.5047851875576325e-18};
constexpr double kErfcLarge[] = {
    5.3537320684388195e-1,  -2.3155412139469354e-2,  -1.6392210759605805e-3,
    2.2227996277607013e-4,  -8.7899995427353404e-6,  -8.8103957167908124e-7,
    1.8418972159404268e-7,  -1.4087247661320116e-8,  -2.1633908484773031e-10,
    2.1064317309527063e-10, -2.9793144763375551e-11, 1.8153634618564103e-12,
    1.4524503191869518e-13, -5.4759072298231789e-14, 7.6118117959436453e-15,
    -4.896370723709231e-16, -4.1418075055923381e-17};

// erf(x): |x| <= 2 from A, 2 < |x| < 6 as 1 - exp(-x^2) B(1/|x|) / |x|, 1 beyond
// (erfc(6) < 2.2e-17). f32 stages use the leading 11 and 7 coefficients.
Expr Erf(const Expr& x, MathMode math) {
  const Type t = x.type();
  const bool f64 = t.bits() == 64;
  const Expr ax = Halide::min(Halide::abs(x), Const(t, 6));
  const Expr x2 = ax * ax;
  const Expr erf_small = ax * Chebyshev(x2 * Const(t, 0.5) - Const(t, 1), kErfSmall, f64 ? 19 : 11);
  const Expr u = Const(t, 1) / Halide::max(ax, Const(t, 2));
  const Expr erfc_large =
      Exp(-x2, math) * u * Chebyshev(u * Const(t, 6) - Const(t, 2), kErfcLarge, f64 ? 17 : 7);
  const Expr magnitude = Halide::select(ax <= Const(t, 2), erf_small, Const(t, 1) - erfc_large);
  return Halide::select(x < Const(t, 0), -magnitude, magnitude);
}

// log(1 + u) for u in [0, 1] as 2 atanh(u / (2 + u)), atanh by its Padé approximant
// from the continued fraction (5 terms for f32, 12 for f64; |y| <= 1/3).
Expr PadeLog1p(const Expr& u) {
  const Type t = u.type();
  static const OddRational r5 = ContinuedFractionPade(5, AtanhCoefficient);
  static const OddRational r12 = ContinuedFractionPade(12, AtanhCoefficient);
  const OddRational& r = t.bits() == 64 ? r12 : r5;
  const Expr y = u / (Const(t, 2) + u);
  const Expr z = y * y;
  return Const(t, 2) * y * Polynomial(z, r.num) / Polynomial(z, r.den);
}

Expr Sigmoid(const Expr& x, MathMode math) {
  const Type t = x.type();
  if (math == PADE) return Const(t, 0.5) + Const(t, 0.5) * PadeTanh(x * Const(t, 0.5));
  return Const(t, 1) / (Const(t, 1) + Halide::exp(-x));
}

double AttrOr(bool has, double value, double fallback) { return has ? value : fallback; }

StatusOr<Expr> UnaryExpr(const Attributes& a, const Expr& x) {
  const Type t = x.type();
  const MathMode math = a.math();
  const Expr zero = Const(t, 0), one = Const(t, 1);
  switch (a.unary()) {
    case RELU:
      return Halide::max(x, zero);
    case SIGMOID:
      return Sigmoid(x, math);
    case TANH:
      return math == PADE ? PadeTanh(x) : Halide::tanh(x);
    case GELU:
      return x * Const(t, 0.5) * (one + Erf(x * Const(t, 0.70710678118654752440), math));
    case EXP:
      return Exp(x, math);
    case LOG:
      return Halide::log(x);
    case SQRT:
      return Halide::sqrt(x);
    case RSQRT:
      return one / Halide::sqrt(x);
    case NEG:
      return -x;
    case ABS:
      return Halide::abs(x);
    case RECIPROCAL:
      return one / x;
    case ERF:
      return Erf(x, math);
    case CLIP:
      return Halide::clamp(x, Const(t, a.clip_min()), Const(t, a.clip_max()));
    case LEAKY_RELU:
      return Halide::select(x < zero, Const(t, AttrOr(a.has_alpha(), a.alpha(), 0.01)) * x, x);
    case ELU:
      return Halide::select(x > zero, x,
                            Const(t, AttrOr(a.has_alpha(), a.alpha(), 1.0)) * (Exp(x, math) - one));
    case SOFTPLUS: {
      const Expr e = Exp(-Halide::abs(x), math);
      return Halide::max(x, zero) + (math == PADE ? PadeLog1p(e) : Halide::log(one + e));
    }
    case HARD_SIGMOID:
      return Halide::clamp(Const(t, AttrOr(a.has_alpha(), a.alpha(), 0.2)) * x +
                               Const(t, AttrOr(a.has_beta(), a.beta(), 0.5)),
                           zero, one);
    case HARD_SWISH:
      return x * Halide::clamp(x + Const(t, 3), zero, Const(t, 6)) * Const(t, 1.0 / 6.0);
    case SILU:
      return x * Sigmoid(x, math);
    case IDENTITY:
      return x;
    case SQUARE:
      return x * x;
    case FLOOR:
      return Halide::floor(x);
    case CEIL:
      return Halide::ceil(x);
    case SIN:
      return Halide::sin(x);
    case COS:
      return Halide::cos(x);
    case SIGN:
      return Halide::select(x > zero, one, x < zero, -one, zero);
    case SCALE:
      return Const(t, AttrOr(a.has_alpha(), a.alpha(), 1.0)) * x +
             Const(t, AttrOr(a.has_beta(), a.beta(), 0.0));
    default:
      return Status::Error("unsupported unary function " + std::to_string(a.unary()));
  }
}

StatusOr<Expr> BinaryExpr(BinaryFn fn, const Expr& a, const Expr& b) {
  switch (fn) {
    case ADD:
      return a + b;
    case SUB:
      return a - b;
    case MUL:
      return a * b;
    case DIV:
      return a / b;
    case MAX:
      return Halide::max(a, b);
    case MIN:
      return Halide::min(a, b);
    case POW:
      return Halide::pow(a, b);
    default:
      return Status::Error("unsupported binary function " + std::to_string(fn));
  }
}

// ---------------------------------------------------------------------------
// Lowering
// ---------------------------------------------------------------------------

using Index = std::vector<Expr>;  // row-major, outermost first

// Halide argument order (innermost first) of a row-major index.
Index Reversed(Index idx) {
  std::reverse(idx.begin(), idx.end());
  return idx;
}

Halide::Region HalideRegion(const Shape& shape) {
  Halide::Region region;
  for (auto it = shape.rbegin(); it != shape.rend(); ++it) {
    region.emplace_back(0, static_cast<int>(*it));
  }
  return region;
}

// Compiles the loads or stores of an input or output for `storage_order` (empty: the
// natural order, Halide's default of a unit stride along dim 0): the first dim it names
// has stride 1, the others whatever the buffer has.
void ConstrainStorage(Halide::OutputImageParam param, const std::vector<int>& storage_order) {
  if (storage_order.empty()) return;
  for (int d = 0; d < param.dimensions(); ++d) param.dim(d).set_stride(Halide::Expr());
  param.dim(storage_order[0]).set_stride(1);
}

class Lowerer {
 public:
  Lowerer(const PipelineGraph& graph, LoweredPipeline& out) : graph_(graph), out_(out) {}

  Status Run() {
    const PipelineSpec& spec = graph_.spec();
    const LoweredNames names = LoweredNamesOf(graph_);
    for (int i = 0; i < spec.inputs_size(); ++i) {
      const TensorDecl& decl = spec.inputs(i);
      Halide::ImageParam param(HalideType(decl.dtype()), decl.shape_size(), names.inputs[i]);
      for (int j = 0; j < decl.shape_size(); ++j) {
        param.dim(j).set_estimate(0, static_cast<int>(decl.shape(decl.shape_size() - 1 - j)));
      }
      ConstrainStorage(param, BoundaryStorageOrder(spec, decl.shape_size()));
      out_.inputs.push_back(param);
    }
    for (int i = 0; i < spec.parameters_size(); ++i) {
      const Parameter& p = spec.parameters(i);
      StatusOr<HostTensor> values = MaterializeParameter(p);
      if (!values.ok()) return values.status();
      Halide::Buffer<> buffer = ToHalideBuffer(*values);
      buffer.set_name(names.parameters[i]);
      out_.parameters.push_back(buffer);
    }
    out_.stages.resize(graph_.num_stages());
    for (int s = 0; s < graph_.num_stages(); ++s) {
      // Through Function: Func(name) would add a "$<n>" suffix to a name used before
      // anywhere in the process.
      out_.stages[s].func = Func(Halide::Internal::Function(names.stages[s]));
    }
    for (int s : graph_.topological_order()) {
      Status st = LowerStage(s);
      if (!st.ok()) {
        const Stage& stage = graph_.stage(s);
        return st.WithContext("pipeline '" + spec.name() + "', stage '" + stage.name() + "' (" +
                              OpDisplayName(stage) + ")");
      }
    }
    for (int s : graph_.output_stages()) {
      Func f = out_.stages[s].func;
      const Shape& shape = graph_.value(graph_.stage_value(s)).shape;
      f.set_estimates(HalideRegion(shape));
      ConstrainStorage(f.output_buffer(), BoundaryStorageOrder(spec, static_cast<int>(shape.size())));
      out_.outputs.push_back(f);
    }
    out_.pipeline = Halide::Pipeline(out_.outputs);
    return Status::Ok();
  }

 private:
  const Value& InputValue(int s, int i) const { return graph_.value(graph_.stage_inputs(s)[i]); }

  // Element of value `id` at a row-major index.
  Expr Read(int id, const Index& idx) const {
    const Value& v = graph_.value(id);
    const Index args = Reversed(idx);
    switch (v.kind) {
      case Value::Kind::kInput:
        return out_.inputs[v.index](args);
      case Value::Kind::kParameter:
        return out_.parameters[v.index](args);
      case Value::Kind::kStage:
        break;
    }
    return out_.stages[v.index].func(args);
  }
  Expr Read(int s, int i, const Index& idx) const { return Read(graph_.stage_inputs(s)[i], idx); }

  // Value `id` as a Func that reads `value` outside [0, extent) of the row-major
  // axes listed in `axes` (a BoundaryConditions::constant_exterior wrapper).
  Func ConstantExterior(int id, const std::vector<int>& axes, const Expr& value) const {
    const Value& v = graph_.value(id);
    const int rank = static_cast<int>(v.shape.size());
    Halide::Region bounds(rank);
    for (int axis : axes) {
      bounds[rank - 1 - axis] = Halide::Range(0, static_cast<int>(v.shape[axis]));
    }
    switch (v.kind) {
      case Value::Kind::kInput:
        return Halide::BoundaryConditions::constant_exterior(out_.inputs[v.index], value, bounds);
      case Value::Kind::kParameter:
        return Halide::BoundaryConditions::constant_exterior(out_.parameters[v.index], value,
                                                             bounds);
      case Value::Kind::kStage:
        break;
    }
    return Halide::BoundaryConditions::constant_exterior(out_.stages[v.index].func, value, bounds);
  }

  Status LowerStage(int s) {
    const Stage& stage = graph_.stage(s);
    LoweredStage& lowered = out_.stages[s];
    const StageLoops loops = graph_.loops(s);
    type_ = HalideType(stage.dtype());
    out_shape_.assign(stage.shape().begin(), stage.shape().end());
    const int rank = static_cast<int>(out_shape_.size());
    vars_.clear();
    for (int i = 0; i < rank; ++i) vars_.push_back(Var("d" + std::to_string(i)));
    lowered.pure_vars.clear();
    for (const LoopDim& d : loops.pure) lowered.pure_vars.push_back(Var(d.name));
    out_idx_.assign(vars_.begin(), vars_.end());
    lowered.reduction_vars.clear();
    lowered.has_update = !loops.reduction.empty();
    if (lowered.has_update) {
      std::vector<Halide::Internal::ReductionVariable> rvars;
      for (const LoopDim& d : loops.reduction) {
        rvars.push_back({d.name, 0, static_cast<int>(d.extent)});
      }
      rdom_ = Halide::RDom(Halide::Internal::ReductionDomain(rvars));
      for (int i = 0; i < rdom_.dimensions(); ++i) lowered.reduction_vars.push_back(rdom_[i]);
    }
    switch (stage.op()) {
      case CONV:
        return LowerConv(s, loops);
      case MATMUL:
        return LowerMatMul(s, loops);
      case POOL:
        return LowerPool(s, loops);
      case REDUCE:
        return LowerReduce(s, loops);
      case UNARY: {
        StatusOr<Expr> e = UnaryExpr(stage.attrs(), Read(s, 0, out_idx_));
        if (!e.ok()) return e.status();
        return Define(s, *e);
      }
      case BINARY: {
        StatusOr<Expr> e = BinaryExpr(stage.attrs().binary(), Read(s, 0, Broadcast(s, 0)),
                                      Read(s, 1, Broadcast(s, 1)));
        if (!e.ok()) return e.status();
        return Define(s, *e);
      }
      case PAD:
        return LowerPad(s);
      case CONCAT:
        return LowerConcat(s);
      case SLICE: {
        Index idx = out_idx_;
        const Attributes& a = stage.attrs();
        for (int i = 0; i < a.axes_size(); ++i) {
          idx[a.axes(i)] =
              static_cast<int>(a.starts(i)) + vars_[a.axes(i)] * static_cast<int>(a.steps(i));
        }
        return Define(s, Read(s, 0, idx));
      }
      case TRANSPOSE: {
        Index idx(rank);
        for (int d = 0; d < rank; ++d) idx[stage.attrs().perm(d)] = vars_[d];
        return Define(s, Read(s, 0, idx));
      }
      case RESHAPE:
        return LowerReshape(s);
      case UPSAMPLE: {
        Index idx = out_idx_;
        for (int d = 0; d < rank; ++d) {
          if (stage.attrs().scales(d) > 1) {
            idx[d] = vars_[d] / static_cast<int>(stage.attrs().scales(d));
          }
        }
        return Define(s, Read(s, 0, idx));
      }
      default:
        return Status::Error("unsupported op " + std::to_string(stage.op()));
    }
  }

  // Pure definition of stage s.
  Status Define(int s, const Expr& value) {
    out_.stages[s].func(Reversed(out_idx_)) = value;
    return Status::Ok();
  }

  Halide::RVar R(int i) const { return rdom_[i]; }

  // Checks that reduction dim i of the loop nest has the extent the op reads.
  static Status CheckExtent(const StageLoops& loops, size_t i, int64_t extent) {
    if (i >= loops.reduction.size() || loops.reduction[i].extent != extent) {
      return Status::Error(
          "loop nest (pipeline/ops.h) disagrees with the lowering on reduction "
          "dim " +
          std::to_string(i));
    }
    return Status::Ok();
  }

  // Row-major index into input i of stage s under numpy broadcasting to the output.
  Index Broadcast(int s, int i) const {
    const Shape& in = InputValue(s, i).shape;
    const size_t offset = out_shape_.size() - in.size();
    Index idx;
    for (size_t d = 0; d < in.size(); ++d) {
      idx.push_back(in[d] == 1 && out_shape_[d + offset] != 1 ? Expr(0) : Expr(vars_[d + offset]));
    }
    return idx;
  }

  Status LowerConv(int s, const StageLoops& loops) {
    const Stage& stage = graph_.stage(s);
    const Attributes& a = stage.attrs();
    const Shape& x = InputValue(s, 0).shape;
    const Shape& w = InputValue(s, 1).shape;
    const int spatial = static_cast<int>(x.size()) - 2;
    for (int sp = 0; sp < spatial; ++sp) {
      SCHEDFARM_RETURN_IF_ERROR(CheckExtent(loops, spatial - 1 - sp, w[2 + sp]));
    }
    SCHEDFARM_RETURN_IF_ERROR(CheckExtent(loops, spatial, w[1]));
    Func f = out_.stages[s].func;
    const Index args = Reversed(out_idx_);
    f(args) = stage.inputs_size() == 3 ? Read(s, 2, {vars_[1]}) : Const(type_, 0);

    const std::vector<int> padded_axes = ClampedAxes(stage, 0, graph_.input_shapes(s));
    const int x_id = graph_.stage_inputs(s)[0];
    Func xb;
    if (!padded_axes.empty()) xb = ConstantExterior(x_id, padded_axes, Const(type_, 0));
    out_.stages[s].padded_input = xb;

    const Halide::RVar rc = R(spatial);
    Expr channel = rc;
    if (a.groups() > 1) {
      const int out_per_group = static_cast<int>(w[0] / a.groups());
      channel = (vars_[1] / out_per_group) * static_cast<int>(w[1]) + rc;
    }
    Index x_idx = {vars_[0], channel};
    Index w_idx = {vars_[1], rc};
    for (int sp = 0; sp < spatial; ++sp) {
      const Halide::RVar rk = R(spatial - 1 - sp);
      x_idx.push_back(vars_[2 + sp] * static_cast<int>(a.strides(sp)) -
                      static_cast<int>(a.pads(sp)) + rk * static_cast<int>(a.dilations(sp)));
      w_idx.push_back(rk);
    }
    const Expr xv = padded_axes.empty() ? Read(x_id, x_idx) : xb(Reversed(x_idx));
    f(args) = f(args) + xv * Read(s, 1, w_idx);
    return Status::Ok();
  }

  Status LowerMatMul(int s, const StageLoops& loops) {
    const Stage& stage = graph_.stage(s);
    const Attributes& a = stage.attrs();
    const Shape& as = InputValue(s, 0).shape;
    const int rank = static_cast<int>(out_shape_.size());
    SCHEDFARM_RETURN_IF_ERROR(CheckExtent(loops, 0, as[as.size() - (a.trans_a() ? 2 : 1)]));
    const Halide::RVar rk = R(0);
    const Expr m = vars_[rank - 2], n = vars_[rank - 1];
    // Batch dims of an operand broadcast like the output's leading dims.
    auto operand = [&](int i, const Expr& row, const Expr& col) {
      const Shape& in = InputValue(s, i).shape;
      const int batch = static_cast<int>(in.size()) - 2, offset = rank - 2 - batch;
      Index idx;
      for (int d = 0; d < batch; ++d) {
        idx.push_back(in[d] == 1 && out_shape_[d + offset] != 1 ? Expr(0)
                                                                : Expr(vars_[d + offset]));
      }
      idx.push_back(row);
      idx.push_back(col);
      return Read(s, i, idx);
    };
    const Expr av = a.trans_a() ? operand(0, rk, m) : operand(0, m, rk);
    const Expr bv = a.trans_b() ? operand(1, n, rk) : operand(1, rk, n);
    const double alpha = a.has_alpha() ? a.alpha() : 1.0;
    const double beta = a.has_beta() ? a.beta() : 1.0;
    Func f = out_.stages[s].func;
    const Index args = Reversed(out_idx_);
    if (stage.inputs_size() == 3) {
      const Expr c = Read(s, 2, Broadcast(s, 2));
      f(args) = beta == 1.0 ? c : Const(type_, beta) * c;
    } else {
      f(args) = Const(type_, 0);
    }
    const Expr term = alpha == 1.0 ? av * bv : Const(type_, alpha) * av * bv;
    f(args) = f(args) + term;
    return Status::Ok();
  }

  Status LowerPool(int s, const StageLoops& loops) {
    const Stage& stage = graph_.stage(s);
    const Attributes& a = stage.attrs();
    const Shape& x = InputValue(s, 0).shape;
    const int spatial = static_cast<int>(x.size()) - 2;
    const bool is_max = a.pool() == MAX_POOL;
    if (!is_max && a.pool() != AVG_POOL) {
      return Status::Error("unsupported pool function " + std::to_string(a.pool()));
    }
    for (int sp = 0; sp < spatial; ++sp) {
      SCHEDFARM_RETURN_IF_ERROR(CheckExtent(loops, spatial - 1 - sp, a.kernel(sp)));
    }
    // Spatial axes whose windows leave the input.
    const std::vector<int> outside_axes = ClampedAxes(stage, 0, graph_.input_shapes(s));
    const int x_id = graph_.stage_inputs(s)[0];
    const Expr exterior = is_max ? type_.min() : Const(type_, 0);
    Func xb;
    if (!outside_axes.empty()) xb = ConstantExterior(x_id, outside_axes, exterior);

    Index x_idx = {vars_[0], vars_[1]};
    Expr count = 1;  // window taps that count for AVG_POOL, in closed form
    for (int sp = 0; sp < spatial; ++sp) {
      const int stride = static_cast<int>(a.strides(sp)), dil = static_cast<int>(a.dilations(sp));
      const int pad = static_cast<int>(a.pads(sp)), k = static_cast<int>(a.kernel(sp));
      const Expr start = vars_[2 + sp] * stride - pad;
      x_idx.push_back(start + R(spatial - 1 - sp) * dil);
      if (is_max) continue;
      // Taps j in [0, k) with lo <= start + j * dil < hi.
      const int lo = a.count_include_pad() ? -pad : 0;
      const int hi = static_cast<int>(x[2 + sp]) +
                     (a.count_include_pad() ? static_cast<int>(a.pads(spatial + sp)) : 0);
      const Expr first = Halide::max(0, (lo - start + dil - 1) / dil);
      const Expr last = Halide::min(k - 1, (hi - 1 - start) / dil);
      count = count * Halide::max(last - first + 1, 0);
    }
    const Expr xv = outside_axes.empty() ? Read(x_id, x_idx) : xb(Reversed(x_idx));
    Func f = out_.stages[s].func;
    const Index args = Reversed(out_idx_);
    if (is_max) {
      f(args) = type_.min();
      f(args) = Halide::max(f(args), xv);
    } else {
      f(args) = Const(type_, 0);
      f(args) = f(args) + xv * (Const(type_, 1) / Halide::cast(type_, Halide::max(count, 1)));
    }
    return Status::Ok();
  }

  Status LowerReduce(int s, const StageLoops& loops) {
    const Stage& stage = graph_.stage(s);
    const Attributes& a = stage.attrs();
    const Shape& x = InputValue(s, 0).shape;
    const int n_axes = a.axes_size();
    Index idx;
    int out_axis = 0;
    double count = 1;
    for (int d = 0; d < static_cast<int>(x.size()); ++d) {
      const auto it = std::find(a.axes().begin(), a.axes().end(), d);
      if (it != a.axes().end()) {
        const int i = static_cast<int>(it - a.axes().begin());
        SCHEDFARM_RETURN_IF_ERROR(CheckExtent(loops, n_axes - 1 - i, x[d]));
        idx.push_back(R(n_axes - 1 - i));
        count *= static_cast<double>(x[d]);
        if (a.keepdims()) ++out_axis;
      } else {
        idx.push_back(vars_[out_axis++]);
      }
    }
    const Expr xv = Read(s, 0, idx);
    Func f = out_.stages[s].func;
    const Index args = Reversed(out_idx_);
    switch (a.reduce()) {
      case SUM:
        f(args) = Const(type_, 0);
        f(args) = f(args) + xv;
        break;
      case MEAN:
        f(args) = Const(type_, 0);
        f(args) = f(args) + xv * Const(type_, 1.0 / count);
        break;
      case SUM_SQUARE:
        f(args) = Const(type_, 0);
        f(args) = f(args) + xv * xv;
        break;
      case REDUCE_MAX:
        f(args) = type_.min();
        f(args) = Halide::max(f(args), xv);
        break;
      case REDUCE_MIN:
        f(args) = type_.max();
        f(args) = Halide::min(f(args), xv);
        break;
      default:
        return Status::Error("unsupported reduce function " + std::to_string(a.reduce()));
    }
    return Status::Ok();
  }

  Status LowerPad(int s) {
    const Attributes& a = graph_.stage(s).attrs();
    const Shape& x = InputValue(s, 0).shape;
    const int rank = static_cast<int>(x.size());
    Index idx;
    Expr inside = Halide::Internal::const_true();
    for (int d = 0; d < rank; ++d) {
      const int begin = static_cast<int>(a.pads(d)), end = static_cast<int>(a.pads(rank + d));
      const int last = static_cast<int>(x[d]) - 1;
      const Expr i = vars_[d] - begin;
      if (begin == 0 && end == 0) {
        idx.push_back(vars_[d]);
        continue;
      }
      switch (a.pad_mode()) {
        case CONSTANT:
          inside = inside && i >= 0 && i <= last;
          idx.push_back(Halide::clamp(i, 0, last));
          break;
        case EDGE:
          idx.push_back(Halide::clamp(i, 0, last));
          break;
        case REFLECT: {
          // Mirror about 0 and about `last` without repeating the edge (pads < extent):
          // last - |last - |i||, with |x| as max(x, -x). Not Halide's abs: it is unsigned,
          // and Halide 14 bounds abs(x) over [lo, hi] as max(uint(-lo), uint(hi)), which
          // wraps for lo > 0; inside a loop nest that folds to a signed overflow (random
          // pipeline 231 of the schedule check). i is clamped to where it is read so the
          // bounds stay finite, and the result to the input, as max(x, -x) bounds a range
          // that spans 0 from below by its minimum.
          auto magnitude = [](const Expr& e) { return Halide::max(e, -e); };
          const Expr reflected =
              last - magnitude(last - magnitude(Halide::clamp(i, -last, 2 * last)));
          idx.push_back(Halide::clamp(reflected, 0, last));
          break;
        }
        default:
          return Status::Error("unsupported pad mode " + std::to_string(a.pad_mode()));
      }
    }
    const Expr xv = Read(s, 0, idx);
    if (a.pad_mode() == CONSTANT) {
      return Define(s, Halide::select(inside, xv, Const(type_, a.pad_value())));
    }
    return Define(s, xv);
  }

  Status LowerConcat(int s) {
    const Stage& stage = graph_.stage(s);
    const int axis = static_cast<int>(stage.attrs().axis());
    // select(d < end_0, x0, d < end_1, x1, ..., x_last), each input read at (d - its
    // offset) modulo its extent: in range for bounds inference, as a clamp would be, but
    // where a vector of d lies within one input (the output's min is 0: outputs are bound,
    // docs/SCHEDULES.md) Halide's simplifier keeps the index a ramp, one dense load, where a
    // clamped ramp is a gather (Inception's concatenations 15 times slower).
    int offset = 0;
    std::vector<std::pair<Expr, Expr>> branches;
    for (int i = 0; i < stage.inputs_size(); ++i) {
      const int extent = static_cast<int>(InputValue(s, i).shape[axis]);
      Index idx = out_idx_;
      idx[axis] = (vars_[axis] - offset) % extent;
      offset += extent;
      branches.emplace_back(vars_[axis] < offset, Read(s, i, idx));
    }
    Expr value = branches.back().second;
    for (int i = static_cast<int>(branches.size()) - 2; i >= 0; --i) {
      value = Halide::select(branches[i].first, branches[i].second, value);
    }
    return Define(s, value);
  }

  Status LowerReshape(int s) {
    const Shape& x = InputValue(s, 0).shape;
    if (x == out_shape_) return Define(s, Read(s, 0, out_idx_));
    Expr flat = 0;
    for (size_t d = 0; d < out_shape_.size(); ++d) {
      flat = flat * static_cast<int>(out_shape_[d]) + vars_[d];
    }
    Index idx(x.size());
    int64_t stride = 1;
    for (int e = static_cast<int>(x.size()) - 1; e >= 0; --e) {
      Expr i = stride == 1 ? flat : flat / static_cast<int>(stride);
      if (e > 0) i = i % static_cast<int>(x[e]);
      idx[e] = i;
      stride *= x[e];
    }
    return Define(s, Read(s, 0, idx));
  }

  const PipelineGraph& graph_;
  LoweredPipeline& out_;
  // State of the stage being lowered.
  Type type_;
  Shape out_shape_;
  std::vector<Var> vars_;  // row-major: vars_[i] is "d<i>"
  Index out_idx_;
  Halide::RDom rdom_;
};

bool IsFloat64(const Halide::Buffer<>& b) { return b.type() == Halide::Float(64); }

}  // namespace

StatusOr<LoweredPipeline> LowerToHalide(const PipelineGraph& graph) {
  LoweredPipeline lowered;
  try {
    Lowerer lowerer(graph, lowered);
    SCHEDFARM_RETURN_IF_ERROR(lowerer.Run());
  } catch (const Halide::Error& e) {
    return Status::Error("pipeline '" + graph.spec().name() +
                         "': Halide error while lowering: " + e.what());
  } catch (const std::exception& e) {
    return Status::Error("pipeline '" + graph.spec().name() +
                         "': error while lowering: " + e.what());
  }
  return lowered;
}

void ApplyReferenceSchedule(const PipelineGraph& graph, LoweredPipeline& lowered) {
  for (int s = 0; s < graph.num_stages(); ++s) lowered.stages[s].func.compute_root();
}

std::vector<int> BoundaryStorageOrder(const PipelineSpec& spec, int rank) {
  if (!BoundaryChannelsLast(spec, static_cast<size_t>(rank))) return {};
  return {2, 0, 1, 3};
}

Halide::Runtime::Buffer<void> InStorageOrder(const Halide::Runtime::Buffer<void>& buffer,
                                             const std::vector<int>& storage_order) {
  std::vector<int> sizes;
  for (int d = 0; d < buffer.dimensions(); ++d) sizes.push_back(buffer.dim(d).extent());
  Halide::Runtime::Buffer<void> out(buffer.type(), sizes, storage_order);
  std::vector<int> mins;
  for (int d = 0; d < buffer.dimensions(); ++d) mins.push_back(buffer.dim(d).min());
  out.set_min(mins);
  out.copy_from(buffer);
  return out;
}

Halide::Buffer<> ToHalideBuffer(const HostTensor& tensor, const std::vector<int>& storage_order) {
  std::vector<int> sizes(tensor.shape.rbegin(), tensor.shape.rend());
  Halide::Buffer<> buffer(HalideType(tensor.dtype), sizes);
  // A fresh dense buffer with dim 0 innermost has the row-major layout. Values
  // missing from a tensor whose data is shorter than its shape read as 0.
  const size_t n = static_cast<size_t>(buffer.number_of_elements());
  const size_t given = std::min(n, tensor.data.size());
  if (IsFloat64(buffer)) {
    double* out = static_cast<double*>(buffer.data());
    std::copy(tensor.data.begin(), tensor.data.begin() + given, out);
    std::fill(out + given, out + n, 0.0);
  } else {
    float* out = static_cast<float*>(buffer.data());
    for (size_t i = 0; i < given; ++i) out[i] = static_cast<float>(tensor.data[i]);
    std::fill(out + given, out + n, 0.0f);
  }
  if (!storage_order.empty()) *buffer.get() = InStorageOrder(*buffer.get(), storage_order);
  return buffer;
}

HostTensor FromHalideBuffer(const Halide::Buffer<>& buffer, DataType dtype) {
  HostTensor t;
  t.dtype = dtype;
  const int rank = buffer.dimensions();
  for (int j = rank - 1; j >= 0; --j) t.shape.push_back(buffer.dim(j).extent());
  t.data.resize(static_cast<size_t>(NumElements(t.shape)));
  const bool f64 = IsFloat64(buffer);
  const auto* base = static_cast<const uint8_t*>(buffer.data());
  const int bytes = f64 ? 8 : 4;
  // Row-major walk: pos[j] is the coordinate (from min) of Halide dim j.
  std::vector<int64_t> pos(rank, 0);
  for (size_t i = 0; i < t.data.size(); ++i) {
    int64_t offset = 0;
    for (int j = 0; j < rank; ++j) offset += pos[j] * buffer.dim(j).stride();
    const uint8_t* p = base + offset * bytes;
    double v;
    if (f64) {
      std::memcpy(&v, p, 8);
    } else {
      float f;
      std::memcpy(&f, p, 4);
      v = f;
    }
    t.data[i] = RoundToDtype(v, dtype);
    for (int j = 0; j < rank; ++j) {
      if (++pos[j] < buffer.dim(j).extent()) break;
      pos[j] = 0;
    }
  }
  return t;
}

}  // namespace schedfarm
