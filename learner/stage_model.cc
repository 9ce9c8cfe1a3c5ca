#include "learner/stage_model.h"

#include <algorithm>
#include <utility>

namespace schedfarm {
namespace features_internal {
namespace {

// ---------------------------------------------------------------------------------
// Operation counts of the expressions of pipeline/halide/lowering.cc.

// Sizes of the numerator and denominator of lowering.cc's ContinuedFractionPade.
std::pair<int, int> PadeSizes(int terms) {
  size_t p_prev = 1, q_prev = 1, p = 1, q = 1;
  for (int k = 1; k < terms; ++k) {
    const size_t p_next = std::max(p, p_prev + 1), q_next = std::max(q, q_prev + 1);
    p_prev = p;
    q_prev = q;
    p = p_next;
    q = q_next;
  }
  return {static_cast<int>(q), static_cast<int>(p)};  // f = x * Q / P
}

void Poly(int coefficients, OpCounts& c) {
  c.f[kFMul] += coefficients - 1;
  c.f[kFAdd] += coefficients - 1;
}

void Chebyshev(int n, OpCounts& c) {
  c.f[kFMul] += 1 + (n - 1) + 1;
  c.f[kFAdd] += (n - 1) + 1;
  c.f[kFSub] += (n - 1) + 1;
}

void PadeTanh(bool f64, OpCounts& c) {
  const std::pair<int, int> sizes = PadeSizes(7);
  c.f[kFMin] += 1;
  c.f[kFMax] += 1;
  c.f[kFMul] += 2;  // scaling by 2^-k, z = y * y
  Poly(sizes.first, c);
  Poly(sizes.second, c);
  c.f[kFMul] += 1;
  c.f[kFDiv] += 1;
  const int halvings = f64 ? 3 : 1;
  c.f[kFMul] += 2 * halvings;
  c.f[kFAdd] += halvings;
  c.f[kFDiv] += halvings;
}

void PadeExp(bool f64, OpCounts& c) {
  const int n = f64 ? 6 : 3;
  const int even = n / 2 + 1, odd = (n + 1) / 2;
  c.f[kFMin] += 1;
  c.f[kFMax] += 1;
  c.f[kFMul] += 1;  // n = floor(xc * log2(e) + 0.5)
  c.f[kFAdd] += 1;
  c.f[kFRound] += 1;
  c.f[kFMul] += 2;  // Cody-Waite reduction
  c.f[kFSub] += 2;
  c.f[kFMul] += 1;  // r^2
  Poly(even, c);
  Poly(odd, c);
  c.f[kFMul] += 1;  // r * odd
  c.f[kFAdd] += 1;
  c.f[kFSub] += 1;
  c.f[kFDiv] += 1;
  c.f[kFCast] += 1;  // to int
  c.i[kIBits] += 1;  // n >> 1
  c.i[kISub] += 1;
  for (int k = 0; k < 2; ++k) {  // two powers of two built from their bits
    if (f64) c.i[kICast] += 1;
    c.i[kIAdd] += 1;
    c.i[kIBits] += 1;
    c.f[kFCast] += 1;  // reinterpret
  }
  c.f[kFMul] += 2;
}

void Exp(MathMode math, bool f64, OpCounts& c) {
  if (math == PADE) {
    PadeExp(f64, c);
  } else {
    c.f[kFExp] += 1;
  }
}

void Erf(MathMode math, bool f64, OpCounts& c) {
  c.f[kFAbs] += 1;
  c.f[kFMin] += 1;
  c.f[kFMul] += 1;  // x^2
  c.f[kFMul] += 1;  // * 0.5
  c.f[kFSub] += 1;  // - 1
  Chebyshev(f64 ? 19 : 11, c);
  c.f[kFMul] += 1;  // ax *
  c.f[kFMax] += 1;
  c.f[kFDiv] += 1;  // u
  c.f[kFSub] += 1;  // -x2
  Exp(math, f64, c);
  c.f[kFMul] += 2;  // exp * u * cheb
  c.f[kFMul] += 1;  // u * 6
  c.f[kFSub] += 1;  // - 2
  Chebyshev(f64 ? 17 : 7, c);
  c.b[kBLess] += 1;
  c.b[kBSelect] += 1;
  c.f[kFSub] += 1;  // 1 - erfc
  c.b[kBLess] += 1;
  c.b[kBSelect] += 1;
  c.f[kFSub] += 1;  // -magnitude
}

void Sigmoid(MathMode math, bool f64, OpCounts& c) {
  if (math == PADE) {
    c.f[kFMul] += 2;
    c.f[kFAdd] += 1;
    PadeTanh(f64, c);
  } else {
    c.f[kFSub] += 1;
    c.f[kFExp] += 1;
    c.f[kFAdd] += 1;
    c.f[kFDiv] += 1;
  }
}

void PadeLog1p(bool f64, OpCounts& c) {
  const std::pair<int, int> sizes = PadeSizes(f64 ? 12 : 5);
  c.f[kFAdd] += 1;
  c.f[kFDiv] += 1;
  c.f[kFMul] += 1;
  c.f[kFMul] += 2;
  Poly(sizes.first, c);
  Poly(sizes.second, c);
  c.f[kFDiv] += 1;
}

void UnaryCounts(const Attributes& a, bool f64, OpCounts& c) {
  const MathMode math = a.math();
  switch (a.unary()) {
    case RELU:
      c.f[kFMax] += 1;
      break;
    case SIGMOID:
      Sigmoid(math, f64, c);
      break;
    case TANH:
      if (math == PADE) {
        PadeTanh(f64, c);
      } else {
        c.f[kFTanh] += 1;
      }
      break;
    case GELU:
      c.f[kFMul] += 3;
      c.f[kFAdd] += 1;
      Erf(math, f64, c);
      break;
    case EXP:
      Exp(math, f64, c);
      break;
    case LOG:
      c.f[kFLog] += 1;
      break;
    case SQRT:
      c.f[kFSqrt] += 1;
      break;
    case RSQRT:
      c.f[kFSqrt] += 1;
      c.f[kFDiv] += 1;
      break;
    case NEG:
      c.f[kFSub] += 1;
      break;
    case ABS:
      c.f[kFAbs] += 1;
      break;
    case RECIPROCAL:
      c.f[kFDiv] += 1;
      break;
    case ERF:
      Erf(math, f64, c);
      break;
    case CLIP:
      c.f[kFMin] += 1;
      c.f[kFMax] += 1;
      break;
    case LEAKY_RELU:
      c.b[kBLess] += 1;
      c.b[kBSelect] += 1;
      c.f[kFMul] += 1;
      break;
    case ELU:
      c.b[kBLess] += 1;
      c.b[kBSelect] += 1;
      c.f[kFMul] += 1;
      c.f[kFSub] += 1;
      Exp(math, f64, c);
      break;
    case SOFTPLUS:
      c.f[kFAbs] += 1;
      c.f[kFSub] += 1;
      Exp(math, f64, c);
      c.f[kFMax] += 1;
      c.f[kFAdd] += 1;
      if (math == PADE) {
        PadeLog1p(f64, c);
      } else {
        c.f[kFAdd] += 1;
        c.f[kFLog] += 1;
      }
      break;
    case HARD_SIGMOID:
      c.f[kFMul] += 1;
      c.f[kFAdd] += 1;
      c.f[kFMin] += 1;
      c.f[kFMax] += 1;
      break;
    case HARD_SWISH:
      c.f[kFAdd] += 1;
      c.f[kFMin] += 1;
      c.f[kFMax] += 1;
      c.f[kFMul] += 2;
      break;
    case SILU:
      c.f[kFMul] += 1;
      Sigmoid(math, f64, c);
      break;
    case SQUARE:
      c.f[kFMul] += 1;
      break;
    case FLOOR:
    case CEIL:
      c.f[kFRound] += 1;
      break;
    case SIN:
    case COS:
      c.f[kFTrig] += 1;
      break;
    case SIGN:
      c.b[kBLess] += 2;
      c.b[kBSelect] += 2;
      break;
    case SCALE:
      c.f[kFMul] += 1;
      c.f[kFAdd] += 1;
      break;
    default:  // IDENTITY
      break;
  }
}

void BinaryCounts(BinaryFn fn, OpCounts& c) {
  switch (fn) {
    case ADD:
      c.f[kFAdd] += 1;
      break;
    case SUB:
      c.f[kFSub] += 1;
      break;
    case MUL:
      c.f[kFMul] += 1;
      break;
    case DIV:
      c.f[kFDiv] += 1;
      break;
    case MAX:
      c.f[kFMax] += 1;
      break;
    case MIN:
      c.f[kFMin] += 1;
      break;
    case POW:
      c.f[kFPow] += 1;
      break;
    default:
      break;
  }
}

// BoundaryConditions::constant_exterior over `axes` axes: an out-of-bounds test per
// axis (two comparisons joined by ors), a select, and a clamp per axis.
void ConstantExterior(int axes, OpCounts& c) {
  if (axes == 0) return;
  c.b[kBLess] += 2 * axes;
  c.b[kBOr] += 2 * axes - 1;
  c.b[kBSelect] += 1;
  c.i[kIMin] += axes;
  c.i[kIMax] += axes;
}

// ---------------------------------------------------------------------------------
// Access maps

// Builds accesses with row-major helpers: consumer axis a is pure var rank_c - 1 - a;
// producer axis e is coordinate rank_p - 1 - e.
class AccessBuilder {
 public:
  AccessBuilder(InputAccess& access, int consumer_rank)
      : access_(access), consumer_rank_(consumer_rank) {}
  CoordMap& Axis(int e) { return access_.coords[access_.rank - 1 - e]; }
  int Var(int consumer_axis) const { return consumer_rank_ - 1 - consumer_axis; }
  void Identity(int e, int consumer_axis) {
    CoordMap& m = Axis(e);
    m = CoordMap();
    m.var = static_cast<int8_t>(Var(consumer_axis));
  }
  void Constant(int e, int64_t value) {
    CoordMap& m = Axis(e);
    m = CoordMap();
    m.a = 0;
    m.c = value;
  }
  void Reduction(int e, int rvar) {
    CoordMap& m = Axis(e);
    m = CoordMap();
    m.a = 0;
    m.rvar = static_cast<int8_t>(rvar);
    m.r_coef = 1;
  }
  void ClampAxis(int e, int64_t lo, int64_t hi) {
    CoordMap& m = Axis(e);
    m.clamp = true;
    m.clamp_lo = lo;
    m.clamp_hi = hi;
  }

 private:
  InputAccess& access_;
  int consumer_rank_;
};

// Numpy broadcasting of input `in` to the output shape `out` (lowering.cc Broadcast).
void BroadcastAccess(const Shape& in, const Shape& out, AccessBuilder& b) {
  const size_t offset = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1 && out[d + offset] != 1) {
      b.Constant(static_cast<int>(d), 0);
    } else {
      b.Identity(static_cast<int>(d), static_cast<int>(d + offset));
    }
  }
}

int ReadMask(OpKind op, int index) {
  switch (op) {
    case CONV:
    case MATMUL:
      return index == 2 ? 1 : 2;
    case POOL:
    case REDUCE:
      return 2;
    default:
      return 1;
  }
}

// Fills stage.inputs and the index-arithmetic part of the op counts.
void BuildAccesses(const PipelineGraph& graph, int s, StageModel& m) {
  const Stage& stage = graph.stage(s);
  const Attributes& a = stage.attrs();
  const Shape out(stage.shape().begin(), stage.shape().end());
  const int rank = static_cast<int>(out.size());
  const std::vector<int>& ids = graph.stage_inputs(s);
  const int n = static_cast<int>(ids.size());
  m.inputs.resize(n);
  for (int i = 0; i < n; ++i) {
    const Value& v = graph.value(ids[i]);
    InputAccess& acc = m.inputs[i];
    acc.value = ids[i];
    acc.kind = v.kind;
    acc.producer = v.kind == Value::Kind::kStage ? v.index : -1;
    acc.defs = ReadMask(stage.op(), i);
    acc.rank = static_cast<int>(v.shape.size());
    acc.bytes = BytesPerElement(v.dtype);
    acc.pattern = AccessPatternOf(stage, i, graph.input_shapes(s));
    for (int j = 0; j < kMaxRank; ++j) {
      acc.extent[j] = j < acc.rank ? v.shape[acc.rank - 1 - j] : 1;
      acc.gather_stride[j] = 0;
      acc.coords[j] = CoordMap();
    }
  }
  auto in_shape = [&](int i) -> const Shape& { return graph.value(ids[i]).shape; };
  OpCounts& pure = m.ops[0];
  OpCounts& update = m.ops[1];
  switch (stage.op()) {
    case CONV: {
      const Shape& x = in_shape(0);
      const Shape& w = in_shape(1);
      const int spatial = static_cast<int>(x.size()) - 2;
      AccessBuilder bx(m.inputs[0], rank);
      bx.Identity(0, 0);
      const int rc = spatial;
      if (a.groups() > 1) {
        CoordMap& ch = bx.Axis(1);
        ch = CoordMap();
        ch.var = static_cast<int8_t>(bx.Var(1));
        ch.div = w[0] / a.groups();
        ch.scale = w[1];
        ch.rvar = static_cast<int8_t>(rc);
        ch.r_coef = 1;
        update.i[kIDiv] += 1;
        update.i[kIMul] += 1;
        update.i[kIAdd] += 1;
      } else {
        bx.Reduction(1, rc);
      }
      int padded = 0;
      for (int sp = 0; sp < spatial; ++sp) {
        CoordMap& c = bx.Axis(2 + sp);
        c = CoordMap();
        c.var = static_cast<int8_t>(bx.Var(2 + sp));
        c.a = a.strides(sp);
        c.b = -a.pads(sp);
        c.rvar = static_cast<int8_t>(spatial - 1 - sp);
        c.r_coef = a.dilations(sp);
        if (a.pads(sp) > 0 || a.pads(spatial + sp) > 0) {
          bx.ClampAxis(2 + sp, 0, x[2 + sp] - 1);
          ++padded;
        }
        update.i[kIMul] += 2;
        update.i[kISub] += 1;
        update.i[kIAdd] += 1;
      }
      ConstantExterior(padded, update);
      AccessBuilder bw(m.inputs[1], rank);
      bw.Identity(0, 1);
      bw.Reduction(1, rc);
      for (int sp = 0; sp < spatial; ++sp) bw.Reduction(2 + sp, spatial - 1 - sp);
      if (n == 3) {
        AccessBuilder bb(m.inputs[2], rank);
        bb.Identity(0, 1);
      }
      update.f[kFAdd] += 1;
      update.f[kFMul] += 1;
      break;
    }
    case MATMUL: {
      const bool ta = a.trans_a(), tb = a.trans_b();
      for (int i = 0; i < 2; ++i) {
        const Shape& in = in_shape(i);
        const int batch = static_cast<int>(in.size()) - 2, offset = rank - 2 - batch;
        AccessBuilder b(m.inputs[i], rank);
        for (int d = 0; d < batch; ++d) {
          if (in[d] == 1 && out[d + offset] != 1) {
            b.Constant(d, 0);
          } else {
            b.Identity(d, d + offset);
          }
        }
        // a: [m, k] (or [k, m]); b: [k, n] (or [n, k]).
        const bool trans = i == 0 ? ta : tb;
        const int outer_axis = i == 0 ? rank - 2 : rank - 1;
        const bool k_first = i == 0 ? trans : !trans;
        if (k_first) {
          b.Reduction(batch, 0);
          b.Identity(batch + 1, outer_axis);
        } else {
          b.Identity(batch, outer_axis);
          b.Reduction(batch + 1, 0);
        }
      }
      if (n == 3) {
        AccessBuilder bc(m.inputs[2], rank);
        BroadcastAccess(in_shape(2), out, bc);
        if (EffectiveBeta(stage) != 1.0) pure.f[kFMul] += 1;
      }
      update.f[kFAdd] += 1;
      update.f[kFMul] += EffectiveAlpha(stage) != 1.0 ? 2 : 1;
      break;
    }
    case POOL: {
      const Shape& x = in_shape(0);
      const int spatial = static_cast<int>(x.size()) - 2;
      const bool is_max = a.pool() == MAX_POOL;
      AccessBuilder bx(m.inputs[0], rank);
      bx.Identity(0, 0);
      bx.Identity(1, 1);
      int outside = 0;
      for (int sp = 0; sp < spatial; ++sp) {
        CoordMap& c = bx.Axis(2 + sp);
        c = CoordMap();
        c.var = static_cast<int8_t>(bx.Var(2 + sp));
        c.a = a.strides(sp);
        c.b = -a.pads(sp);
        c.rvar = static_cast<int8_t>(spatial - 1 - sp);
        c.r_coef = a.dilations(sp);
        const int64_t last =
            (out[2 + sp] - 1) * a.strides(sp) - a.pads(sp) + a.dilations(sp) * (a.kernel(sp) - 1);
        if (a.pads(sp) > 0 || last > x[2 + sp] - 1) {
          bx.ClampAxis(2 + sp, 0, x[2 + sp] - 1);
          ++outside;
        }
        update.i[kIMul] += 2;  // start = var * stride - pad; + rk * dil
        update.i[kISub] += 1;
        update.i[kIAdd] += 1;
        if (!is_max) {  // taps inside the window: first, last, count
          update.i[kISub] += 3;
          update.i[kIAdd] += 2;
          update.i[kIDiv] += 2;
          update.i[kIMax] += 2;
          update.i[kIMin] += 1;
          update.i[kIMul] += 1;
        }
      }
      ConstantExterior(outside, update);
      if (is_max) {
        update.f[kFMax] += 1;
      } else {
        update.i[kIMax] += 1;
        update.f[kFCast] += 1;
        update.f[kFDiv] += 1;
        update.f[kFMul] += 1;
        update.f[kFAdd] += 1;
      }
      break;
    }
    case REDUCE: {
      const Shape& x = in_shape(0);
      const int n_axes = a.axes_size();
      AccessBuilder bx(m.inputs[0], rank);
      int out_axis = 0;
      for (int d = 0; d < static_cast<int>(x.size()); ++d) {
        const auto it = std::find(a.axes().begin(), a.axes().end(), d);
        if (it != a.axes().end()) {
          bx.Reduction(d, n_axes - 1 - static_cast<int>(it - a.axes().begin()));
          if (a.keepdims()) ++out_axis;
        } else {
          bx.Identity(d, out_axis++);
        }
      }
      switch (a.reduce()) {
        case SUM:
          update.f[kFAdd] += 1;
          break;
        case MEAN:
          update.f[kFAdd] += 1;
          update.f[kFMul] += 1;
          break;
        case SUM_SQUARE:
          update.f[kFAdd] += 1;
          update.f[kFMul] += 1;
          break;
        case REDUCE_MAX:
          update.f[kFMax] += 1;
          break;
        case REDUCE_MIN:
          update.f[kFMin] += 1;
          break;
        default:
          break;
      }
      break;
    }
    case UNARY: {
      AccessBuilder b(m.inputs[0], rank);
      for (int d = 0; d < rank; ++d) b.Identity(d, d);
      UnaryCounts(a, stage.dtype() == FLOAT64, pure);
      break;
    }
    case BINARY: {
      for (int i = 0; i < 2; ++i) {
        AccessBuilder b(m.inputs[i], rank);
        BroadcastAccess(in_shape(i), out, b);
      }
      BinaryCounts(a.binary(), pure);
      break;
    }
    case PAD: {
      const Shape& x = in_shape(0);
      AccessBuilder b(m.inputs[0], rank);
      bool any = false;
      for (int d = 0; d < rank; ++d) {
        const int64_t begin = a.pads(d), end = a.pads(rank + d), last = x[d] - 1;
        b.Identity(d, d);
        if (begin == 0 && end == 0) continue;
        any = true;
        CoordMap& c = b.Axis(d);
        c.b = -begin;
        pure.i[kISub] += 1;
        if (a.pad_mode() == REFLECT) {  // the clamp of i, two max(x, -x), two subtractions
          c.kind = CoordMap::kReflect;
          c.clamp_hi = last;
          pure.i[kIMin] += 1;
          pure.i[kIMax] += 3;
          pure.i[kISub] += 4;
        } else {
          if (a.pad_mode() == CONSTANT) {
            pure.b[kBLess] += 2;
            pure.b[kBAnd] += 2;
          }
        }
        b.ClampAxis(d, 0, last);
        pure.i[kIMin] += 1;
        pure.i[kIMax] += 1;
      }
      if (any && a.pad_mode() == CONSTANT) pure.b[kBSelect] += 1;
      break;
    }
    case CONCAT: {
      const int axis = static_cast<int>(a.axis());
      int64_t offset = 0;
      for (int i = 0; i < n; ++i) {
        const int64_t extent = in_shape(i)[axis];
        AccessBuilder b(m.inputs[i], rank);
        for (int d = 0; d < rank; ++d) b.Identity(d, d);
        CoordMap& c = b.Axis(axis);
        c.b = -offset;
        c.mod = extent;
        offset += extent;
        pure.i[kISub] += 1;
        pure.i[kIMod] += 1;
      }
      pure.b[kBLess] += n - 1;
      pure.b[kBSelect] += n - 1;
      break;
    }
    case SLICE: {
      AccessBuilder b(m.inputs[0], rank);
      for (int d = 0; d < rank; ++d) b.Identity(d, d);
      for (int i = 0; i < a.axes_size(); ++i) {
        CoordMap& c = b.Axis(static_cast<int>(a.axes(i)));
        c.a = a.steps(i);
        c.b = a.starts(i);
        pure.i[kIMul] += 1;
        pure.i[kIAdd] += 1;
      }
      break;
    }
    case TRANSPOSE: {
      AccessBuilder b(m.inputs[0], rank);
      for (int d = 0; d < rank; ++d) b.Identity(static_cast<int>(a.perm(d)), d);
      break;
    }
    case RESHAPE: {
      const Shape& x = in_shape(0);
      AccessBuilder b(m.inputs[0], rank);
      if (x == out) {
        for (int d = 0; d < rank; ++d) b.Identity(d, d);
        break;
      }
      InputAccess& acc = m.inputs[0];
      int64_t stride = 1;
      for (int d = rank - 1; d >= 0; --d) {
        acc.gather_stride[b.Var(d)] = stride;
        stride *= out[d];
      }
      pure.i[kIMul] += rank;
      pure.i[kIAdd] += rank;
      stride = 1;
      for (int e = static_cast<int>(x.size()) - 1; e >= 0; --e) {
        CoordMap& c = b.Axis(e);
        c = CoordMap();
        c.kind = CoordMap::kGather;
        c.div = stride;
        c.mod = e > 0 ? x[e] : 0;
        if (stride != 1) pure.i[kIDiv] += 1;
        if (e > 0) pure.i[kIMod] += 1;
        stride *= x[e];
      }
      break;
    }
    case UPSAMPLE: {
      AccessBuilder b(m.inputs[0], rank);
      for (int d = 0; d < rank; ++d) {
        b.Identity(d, d);
        if (a.scales(d) > 1) {
          b.Axis(d).div = a.scales(d);
          pure.i[kIDiv] += 1;
        }
      }
      break;
    }
    default:
      break;
  }
  // Loads per iteration of the definition that reads each input, and the self-loads of
  // updates (f(args) = f(args) op ...).
  for (const InputAccess& acc : m.inputs) {
    const int kind = acc.kind == Value::Kind::kStage
                         ? kLoadStage
                         : (acc.kind == Value::Kind::kInput ? kLoadInput : kLoadParameter);
    m.ops[acc.defs == 2 ? 1 : 0].loads[kind] += 1;
  }
  if (m.has_update) m.ops[1].loads[kLoadSelf] += 1;
}

}  // namespace

// ---------------------------------------------------------------------------------

double OpCounts::FloatTotal() const {
  double t = 0;
  for (double v : f) t += v;
  return t;
}
double OpCounts::IntTotal() const {
  double t = 0;
  for (double v : i) t += v;
  return t;
}
double OpCounts::BoolTotal() const {
  double t = 0;
  for (double v : b) t += v;
  return t;
}
double OpCounts::LoadTotal() const {
  double t = 0;
  for (double v : loads) t += v;
  return t;
}
OpCounts& OpCounts::operator+=(const OpCounts& o) {
  for (int k = 0; k < kNumFloatOps; ++k) f[k] += o.f[k];
  for (int k = 0; k < kNumIntOps; ++k) i[k] += o.i[k];
  for (int k = 0; k < kNumBoolOps; ++k) b[k] += o.b[k];
  for (int k = 0; k < kNumLoadKinds; ++k) loads[k] += o.loads[k];
  return *this;
}

const char* FloatOpName(int op) {
  static const char* const kNames[kNumFloatOps] = {"add", "sub",  "mul",   "div",  "min",
                                                   "max", "abs",  "round", "sqrt", "exp",
                                                   "log", "tanh", "trig",  "pow",  "cast"};
  return kNames[op];
}
const char* IntOpName(int op) {
  static const char* const kNames[kNumIntOps] = {"add", "sub", "mul", "div",  "mod",
                                                 "min", "max", "abs", "bits", "cast"};
  return kNames[op];
}
const char* BoolOpName(int op) {
  static const char* const kNames[kNumBoolOps] = {"compare", "equal", "and", "or", "select"};
  return kNames[op];
}
const char* LoadKindName(int kind) {
  static const char* const kNames[kNumLoadKinds] = {"stage", "input", "parameter", "self"};
  return kNames[kind];
}

PipelineModel BuildPipelineModel(const PipelineGraph& graph, int vector_bytes) {
  PipelineModel model;
  model.num_values = static_cast<int>(graph.values().size());
  for (const Value& v : graph.values()) {
    model.value_bytes.push_back(BytesPerElement(v.dtype));
    model.value_ranks.push_back(static_cast<int>(v.shape.size()));
  }
  const std::vector<int>& outputs = graph.output_stages();
  model.stages.resize(graph.num_stages());
  for (int s = 0; s < graph.num_stages(); ++s) {
    const Stage& stage = graph.stage(s);
    StageModel& m = model.stages[s];
    m.name = stage.name();
    m.value = graph.stage_value(s);
    m.op = stage.op();
    m.bytes = BytesPerElement(stage.dtype());
    m.lanes = m.bytes > 0 ? std::max(1, vector_bytes / m.bytes) : 1;
    const StageLoops loops = graph.loops(s);
    m.has_update = !loops.reduction.empty();
    m.is_output = std::find(outputs.begin(), outputs.end(), s) != outputs.end();
    m.inline_legal = !m.has_update && !m.is_output;
    m.rank = stage.shape_size();
    for (int j = 0; j < kMaxRank; ++j) m.shape[j] = j < m.rank ? stage.shape(m.rank - 1 - j) : 1;
    for (const LoopDim& d : loops.pure) {
      m.defs[0].push_back({d.name, d.extent, false});
      if (m.has_update) m.defs[1].push_back({d.name, d.extent, false});
    }
    for (const LoopDim& d : loops.reduction) {
      m.defs[1].push_back({d.name, d.extent, true});
      m.reduction_points *= d.extent;
    }
    m.num_reduction = static_cast<int>(loops.reduction.size());
    BuildAccesses(graph, s, m);
    for (const InputAccess& acc : m.inputs) {
      for (int j = 0; j < acc.rank; ++j) {
        const CoordMap& c = acc.coords[j];
        if (c.kind != CoordMap::kAffine || c.mod > 0) model.exact_on_symbols = true;
      }
    }
    m.consumers = graph.consumers(s);
  }
  for (int s : graph.topological_order()) {
    int depth = 0;
    for (const InputAccess& acc : model.stages[s].inputs) {
      if (acc.producer >= 0) depth = std::max(depth, model.stages[acc.producer].depth + 1);
    }
    model.stages[s].depth = depth;
  }
  return model;
}

}  // namespace features_internal
}  // namespace schedfarm
