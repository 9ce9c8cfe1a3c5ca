#include "pipeline/ops.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "common/int_math.h"
#include "common/text.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace schedfarm {
namespace {

using google::protobuf::FieldDescriptor;

std::vector<int64_t> ToVector(const google::protobuf::RepeatedField<int64_t>& field) {
  return std::vector<int64_t>(field.begin(), field.end());
}

// The Attributes fields each op reads; every other field must keep its default.
const std::set<std::string>& FieldsReadBy(OpKind op) {
  static const std::map<OpKind, std::set<std::string>> kFields = {
      {CONV, {"strides", "pads", "dilations", "groups"}},
      {MATMUL, {"trans_a", "trans_b", "alpha", "beta"}},
      {POOL, {"pool", "kernel", "strides", "pads", "dilations", "ceil_mode",
              "count_include_pad"}},
      {REDUCE, {"reduce", "axes", "keepdims"}},
      {UNARY, {"unary", "math", "alpha", "beta", "clip_min", "clip_max"}},
      {BINARY, {"binary"}},
      {PAD, {"pads", "pad_mode", "pad_value"}},
      {CONCAT, {"axis"}},
      {SLICE, {"axes", "starts", "steps"}},
      {TRANSPOSE, {"perm"}},
      {RESHAPE, {}},
      {UPSAMPLE, {"scales"}},
  };
  static const std::set<std::string> kNone;
  auto it = kFields.find(op);
  return it == kFields.end() ? kNone : it->second;
}

bool FieldIsSet(const Attributes& attrs, const FieldDescriptor* field) {
  const auto* reflection = attrs.GetReflection();
  if (field->is_repeated()) return reflection->FieldSize(attrs, field) > 0;
  return reflection->HasField(attrs, field);
}

std::pair<int, int> ExpectedInputCount(OpKind op) {
  switch (op) {
    case CONV:
    case MATMUL:
      return {2, 3};
    case BINARY:
      return {2, 2};
    case CONCAT:
      return {1, 1 << 20};
    default:
      return {1, 1};
  }
}

Status CheckPositive(const std::vector<int64_t>& v, const char* what, size_t expected_len) {
  if (v.size() != expected_len) {
    return Status::Error(std::string(what) + " must have " + std::to_string(expected_len) +
                         " values, has " + ShapeToString(v));
  }
  for (int64_t x : v) {
    if (x < 1) return Status::Error(std::string(what) + " must be >= 1, got " + ShapeToString(v));
  }
  return Status::Ok();
}

Status CheckNonNegative(const std::vector<int64_t>& v, const char* what, size_t expected_len) {
  if (v.size() != expected_len) {
    return Status::Error(std::string(what) + " must have " + std::to_string(expected_len) +
                         " values, has " + ShapeToString(v));
  }
  for (int64_t x : v) {
    if (x < 0) return Status::Error(std::string(what) + " must be >= 0, got " + ShapeToString(v));
  }
  return Status::Ok();
}

// Numpy broadcasting of two shapes.
StatusOr<Shape> Broadcast(const Shape& a, const Shape& b) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return Status::Error("shapes " + ShapeToString(a) + " and " + ShapeToString(b) +
                           " do not broadcast (dim " + std::to_string(i) + ": " +
                           std::to_string(da) + " vs " + std::to_string(db) + ")");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

StatusOr<Shape> InferWindowed(const Stage& stage, const Shape& x, const Shape& kernel) {
  const Attributes& a = stage.attrs();
  size_t spatial = x.size() - 2;
  Shape out = {x[0], 0};
  for (size_t s = 0; s < spatial; ++s) {
    int64_t begin = a.pads(s), end = a.pads(spatial + s);
    int64_t effective = a.dilations(s) * (kernel[s] - 1) + 1;
    int64_t span = x[2 + s] + begin + end - effective;
    if (span < 0) {
      return Status::Error("spatial dim " + std::to_string(s) + ": window of " +
                           std::to_string(effective) + " (dilated) is larger than the padded input " +
                           std::to_string(x[2 + s] + begin + end));
    }
    int64_t o;
    if (stage.op() == POOL && a.ceil_mode()) {
      o = CeilDiv(span, a.strides(s)) + 1;
      if ((o - 1) * a.strides(s) >= x[2 + s] + begin) --o;
    } else {
      o = FloorDiv(span, a.strides(s)) + 1;
    }
    out.push_back(o);
  }
  return out;
}

}  // namespace

Status CheckAttributes(const Stage& stage) {
  const Attributes& a = stage.attrs();
  if (stage.op() == OP_KIND_UNSPECIFIED || !OpKind_IsValid(stage.op())) {
    return Status::Error("op is missing or unknown");
  }
  auto [min_inputs, max_inputs] = ExpectedInputCount(stage.op());
  if (stage.inputs_size() < min_inputs || stage.inputs_size() > max_inputs) {
    return Status::Error(std::string(OpKind_Name(stage.op())) + " takes " +
                         (min_inputs == max_inputs
                              ? std::to_string(min_inputs)
                              : std::to_string(min_inputs) + " to " +
                                    (max_inputs > 100 ? std::string("any number of")
                                                      : std::to_string(max_inputs))) +
                         " inputs, got " + std::to_string(stage.inputs_size()));
  }
  const auto& allowed = FieldsReadBy(stage.op());
  const auto* descriptor = Attributes::descriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* field = descriptor->field(i);
    if (FieldIsSet(a, field) && !allowed.count(field->name())) {
      return Status::Error("attribute '" + field->name() + "' is not used by " +
                           OpKind_Name(stage.op()));
    }
  }
  switch (stage.op()) {
    case POOL:
      if (a.pool() == POOL_FN_UNSPECIFIED) return Status::Error("pool function missing");
      break;
    case REDUCE:
      if (a.reduce() == REDUCE_FN_UNSPECIFIED) return Status::Error("reduce function missing");
      if (a.axes_size() == 0) return Status::Error("reduce needs at least one axis");
      break;
    case UNARY: {
      UnaryFn fn = a.unary();
      if (fn == UNARY_FN_UNSPECIFIED) return Status::Error("unary function missing");
      bool reads_alpha = fn == LEAKY_RELU || fn == ELU || fn == HARD_SIGMOID || fn == SCALE;
      bool reads_beta = fn == HARD_SIGMOID || fn == SCALE;
      if (a.has_alpha() && !reads_alpha) {
        return Status::Error("attribute 'alpha' is not used by " + UnaryFn_Name(fn));
      }
      if (a.has_beta() && !reads_beta) {
        return Status::Error("attribute 'beta' is not used by " + UnaryFn_Name(fn));
      }
      if (fn != CLIP && (a.clip_min() != 0 || a.clip_max() != 0)) {
        return Status::Error("clip_min/clip_max are only used by CLIP");
      }
      if (fn == CLIP && !(a.clip_min() <= a.clip_max())) {
        return Status::Error("CLIP needs clip_min <= clip_max, got " +
                             std::to_string(a.clip_min()) + " > " + std::to_string(a.clip_max()));
      }
      break;
    }
    case BINARY:
      if (a.binary() == BINARY_FN_UNSPECIFIED) return Status::Error("binary function missing");
      break;
    case SLICE:
      if (a.axes_size() == 0) return Status::Error("slice needs at least one axis");
      if (a.starts_size() != a.axes_size() || a.steps_size() != a.axes_size()) {
        return Status::Error("slice needs one start and one step per axis");
      }
      for (int64_t step : a.steps()) {
        if (step == 0) return Status::Error("slice step must not be 0");
      }
      break;
    default:
      break;
  }
  return Status::Ok();
}

StatusOr<Shape> InferOutputShape(const Stage& stage, const std::vector<Shape>& in) {
  SCHEDFARM_RETURN_IF_ERROR(CheckAttributes(stage));
  const Attributes& a = stage.attrs();
  const Shape& x = in[0];
  switch (stage.op()) {
    case CONV: {
      const Shape& w = in[1];
      if (x.size() < 3 || x.size() > 5) {
        return Status::Error("input must be [N, C, S...] with 1 to 3 spatial dims, got " +
                             ShapeToString(x));
      }
      if (w.size() != x.size()) {
        return Status::Error("weights " + ShapeToString(w) + " must have the rank of input " +
                             ShapeToString(x));
      }
      size_t spatial = x.size() - 2;
      SCHEDFARM_RETURN_IF_ERROR(CheckPositive(ToVector(a.strides()), "strides", spatial));
      SCHEDFARM_RETURN_IF_ERROR(CheckPositive(ToVector(a.dilations()), "dilations", spatial));
      SCHEDFARM_RETURN_IF_ERROR(CheckNonNegative(ToVector(a.pads()), "pads", 2 * spatial));
      int64_t groups = a.groups();
      if (groups < 1) return Status::Error("groups must be >= 1, got " + std::to_string(groups));
      if (x[1] % groups != 0 || w[0] % groups != 0) {
        return Status::Error("input channels " + std::to_string(x[1]) + " and output channels " +
                             std::to_string(w[0]) + " must be divisible by groups " +
                             std::to_string(groups));
      }
      if (w[1] != x[1] / groups) {
        return Status::Error("weights " + ShapeToString(w) + " need dim 1 = input channels / groups = " +
                             std::to_string(x[1] / groups));
      }
      if (in.size() == 3 && in[2] != Shape{w[0]}) {
        return Status::Error("bias " + ShapeToString(in[2]) + " must be [" + std::to_string(w[0]) + "]");
      }
      Shape kernel(w.begin() + 2, w.end());
      SCHEDFARM_ASSIGN_OR_RETURN(Shape out, InferWindowed(stage, x, kernel));
      out[1] = w[0];
      return out;
    }
    case MATMUL: {
      const Shape& b = in[1];
      if (x.size() < 2 || b.size() < 2) {
        return Status::Error("operands must have rank >= 2, got " + ShapeToString(x) + " and " +
                             ShapeToString(b));
      }
      int64_t m = a.trans_a() ? x[x.size() - 1] : x[x.size() - 2];
      int64_t ka = a.trans_a() ? x[x.size() - 2] : x[x.size() - 1];
      int64_t kb = a.trans_b() ? b[b.size() - 1] : b[b.size() - 2];
      int64_t n = a.trans_b() ? b[b.size() - 2] : b[b.size() - 1];
      if (ka != kb) {
        return Status::Error("inner dims differ: " + ShapeToString(x) + " x " + ShapeToString(b) +
                             " (k = " + std::to_string(ka) + " vs " + std::to_string(kb) + ")");
      }
      SCHEDFARM_ASSIGN_OR_RETURN(
          Shape out, Broadcast(Shape(x.begin(), x.end() - 2), Shape(b.begin(), b.end() - 2)));
      out.push_back(m);
      out.push_back(n);
      if (in.size() == 3) {
        SCHEDFARM_ASSIGN_OR_RETURN(Shape with_c, Broadcast(out, in[2]));
        if (with_c != out) {
          return Status::Error("c " + ShapeToString(in[2]) + " must broadcast to the output " +
                               ShapeToString(out));
        }
      }
      return out;
    }
    case POOL: {
      if (x.size() < 3 || x.size() > 5) {
        return Status::Error("input must be [N, C, S...] with 1 to 3 spatial dims, got " +
                             ShapeToString(x));
      }
      size_t spatial = x.size() - 2;
      SCHEDFARM_RETURN_IF_ERROR(CheckPositive(ToVector(a.kernel()), "kernel", spatial));
      SCHEDFARM_RETURN_IF_ERROR(CheckPositive(ToVector(a.strides()), "strides", spatial));
      SCHEDFARM_RETURN_IF_ERROR(CheckPositive(ToVector(a.dilations()), "dilations", spatial));
      SCHEDFARM_RETURN_IF_ERROR(CheckNonNegative(ToVector(a.pads()), "pads", 2 * spatial));
      for (size_t s = 0; s < spatial; ++s) {
        int64_t effective = a.dilations(s) * (a.kernel(s) - 1) + 1;
        if (a.pads(s) >= effective || a.pads(spatial + s) >= effective) {
          return Status::Error("pads " + ShapeToString(ToVector(a.pads())) +
                               " must be smaller than the (dilated) kernel " +
                               ShapeToString(ToVector(a.kernel())));
        }
      }
      SCHEDFARM_ASSIGN_OR_RETURN(Shape out, InferWindowed(stage, x, ToVector(a.kernel())));
      out[1] = x[1];
      return out;
    }
    case REDUCE: {
      Shape out;
      std::vector<int64_t> axes = ToVector(a.axes());
      for (size_t i = 0; i < axes.size(); ++i) {
        if (axes[i] < 0 || axes[i] >= static_cast<int64_t>(x.size()) ||
            (i > 0 && axes[i] <= axes[i - 1])) {
          return Status::Error("axes " + ShapeToString(axes) +
                               " must be increasing and within rank " + std::to_string(x.size()));
        }
      }
      for (size_t d = 0; d < x.size(); ++d) {
        bool reduced = std::count(axes.begin(), axes.end(), static_cast<int64_t>(d)) > 0;
        if (!reduced) {
          out.push_back(x[d]);
        } else if (a.keepdims()) {
          out.push_back(1);
        }
      }
      return out;
    }
    case UNARY:
      return x;
    case BINARY:
      return Broadcast(x, in[1]);
    case PAD: {
      SCHEDFARM_RETURN_IF_ERROR(CheckNonNegative(ToVector(a.pads()), "pads", 2 * x.size()));
      Shape out = x;
      for (size_t d = 0; d < x.size(); ++d) {
        int64_t begin = a.pads(d), end = a.pads(x.size() + d);
        if (a.pad_mode() == REFLECT && (begin >= x[d] || end >= x[d])) {
          return Status::Error("reflect pads " + ShapeToString(ToVector(a.pads())) +
                               " must be smaller than the input dims " + ShapeToString(x));
        }
        out[d] += begin + end;
      }
      return out;
    }
    case CONCAT: {
      int64_t axis = a.axis();
      if (axis < 0 || axis >= static_cast<int64_t>(x.size())) {
        return Status::Error("axis " + std::to_string(axis) + " out of range for rank " +
                             std::to_string(x.size()));
      }
      Shape out = x;
      for (size_t i = 1; i < in.size(); ++i) {
        Shape expected = in[i];
        if (expected.size() == x.size()) expected[axis] = x[axis];
        if (expected != x) {
          return Status::Error("input " + std::to_string(i) + " " + ShapeToString(in[i]) +
                               " does not match input 0 " + ShapeToString(x) +
                               " outside axis " + std::to_string(axis));
        }
        out[axis] += in[i][axis];
      }
      return out;
    }
    case SLICE: {
      Shape declared(stage.shape().begin(), stage.shape().end());
      if (declared.size() != x.size()) {
        return Status::Error("declared shape " + ShapeToString(declared) +
                             " must have the rank of the input " + ShapeToString(x));
      }
      std::vector<bool> sliced(x.size(), false);
      for (int i = 0; i < a.axes_size(); ++i) {
        int64_t axis = a.axes(i);
        if (axis < 0 || axis >= static_cast<int64_t>(x.size()) ||
            (i > 0 && axis <= a.axes(i - 1))) {
          return Status::Error("axes " + ShapeToString(ToVector(a.axes())) +
                               " must be increasing and within rank " + std::to_string(x.size()));
        }
        sliced[axis] = true;
        int64_t first = a.starts(i), n = declared[axis];
        int64_t last = first + (n - 1) * a.steps(i);
        if (n < 1 || first < 0 || first >= x[axis] || last < 0 || last >= x[axis]) {
          return Status::Error("axis " + std::to_string(axis) + ": " + std::to_string(n) +
                               " elements from " + std::to_string(first) + " by step " +
                               std::to_string(a.steps(i)) + " leave the input extent " +
                               std::to_string(x[axis]));
        }
      }
      for (size_t d = 0; d < x.size(); ++d) {
        if (!sliced[d] && declared[d] != x[d]) {
          return Status::Error("dim " + std::to_string(d) + " is not sliced but declared " +
                               std::to_string(declared[d]) + " != input " + std::to_string(x[d]));
        }
      }
      return declared;
    }
    case TRANSPOSE: {
      std::vector<int64_t> perm = ToVector(a.perm());
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t i = 0; i < sorted.size(); ++i) {
        if (sorted[i] != static_cast<int64_t>(i)) sorted.clear();
      }
      if (perm.size() != x.size() || sorted.size() != x.size()) {
        return Status::Error("perm " + ShapeToString(perm) + " is not a permutation of rank " +
                             std::to_string(x.size()));
      }
      Shape out;
      for (int64_t p : perm) out.push_back(x[p]);
      return out;
    }
    case RESHAPE: {
      Shape declared(stage.shape().begin(), stage.shape().end());
      for (int64_t d : declared) {
        if (d < 1) return Status::Error("reshape target " + ShapeToString(declared) + " has a dim < 1");
      }
      if (NumElements(declared) != NumElements(x)) {
        return Status::Error("reshape of " + ShapeToString(x) + " (" +
                             std::to_string(NumElements(x)) + " elements) to " +
                             ShapeToString(declared) + " (" + std::to_string(NumElements(declared)) +
                             " elements)");
      }
      return declared;
    }
    case UPSAMPLE: {
      SCHEDFARM_RETURN_IF_ERROR(CheckPositive(ToVector(a.scales()), "scales", x.size()));
      Shape out = x;
      for (size_t d = 0; d < x.size(); ++d) out[d] *= a.scales(d);
      return out;
    }
    default:
      return Status::Error("unknown op");
  }
}

StageLoops LoopNestOf(const Stage& stage, const std::vector<Shape>& in) {
  StageLoops loops;
  const int rank = stage.shape_size();
  for (int i = rank - 1; i >= 0; --i) {
    loops.pure.push_back({"d" + std::to_string(i), stage.shape(i)});
  }
  const Attributes& a = stage.attrs();
  switch (stage.op()) {
    case CONV: {
      const Shape& w = in[1];
      for (int s = static_cast<int>(w.size()) - 3; s >= 0; --s) {
        loops.reduction.push_back({"rk" + std::to_string(s), w[2 + s]});
      }
      loops.reduction.push_back({"rc", w[1]});
      break;
    }
    case MATMUL: {
      const Shape& x = in[0];
      loops.reduction.push_back({"rk", a.trans_a() ? x[x.size() - 2] : x[x.size() - 1]});
      break;
    }
    case POOL:
      for (int s = a.kernel_size() - 1; s >= 0; --s) {
        loops.reduction.push_back({"rk" + std::to_string(s), a.kernel(s)});
      }
      break;
    case REDUCE:
      for (int i = a.axes_size() - 1; i >= 0; --i) {
        loops.reduction.push_back({"r" + std::to_string(a.axes(i)), in[0][a.axes(i)]});
      }
      break;
    default:
      break;
  }
  return loops;
}

AccessPattern AccessPatternOf(const Stage& stage, int input_index, const std::vector<Shape>& in) {
  Shape out(stage.shape().begin(), stage.shape().end());
  switch (stage.op()) {
    case CONV:
      return input_index == 0 ? AccessPattern::kStencil : AccessPattern::kBroadcast;
    case MATMUL:
      if (input_index == 2) return AccessPattern::kBroadcast;
      if ((input_index == 0 && stage.attrs().trans_a()) ||
          (input_index == 1 && stage.attrs().trans_b())) {
        return AccessPattern::kTransposed;
      }
      return AccessPattern::kReduction;
    case POOL:
      return AccessPattern::kStencil;
    case REDUCE:
      return AccessPattern::kReduction;
    case UNARY:
    case PAD:
    case CONCAT:
      return AccessPattern::kPointwise;
    case BINARY:
      return in[input_index] == out ? AccessPattern::kPointwise : AccessPattern::kBroadcast;
    case SLICE:
      for (int64_t step : stage.attrs().steps()) {
        if (step != 1) return AccessPattern::kStrided;
      }
      return AccessPattern::kPointwise;
    case TRANSPOSE:
      for (int i = 0; i < stage.attrs().perm_size(); ++i) {
        if (stage.attrs().perm(i) != i) return AccessPattern::kTransposed;
      }
      return AccessPattern::kPointwise;
    case RESHAPE:
      return in[0] == out ? AccessPattern::kPointwise : AccessPattern::kGather;
    case UPSAMPLE:
      return AccessPattern::kBroadcast;
    default:
      return AccessPattern::kPointwise;
  }
}

const char* AccessPatternName(AccessPattern pattern) {
  switch (pattern) {
    case AccessPattern::kPointwise: return "pointwise";
    case AccessPattern::kBroadcast: return "broadcast";
    case AccessPattern::kStrided: return "strided";
    case AccessPattern::kTransposed: return "transposed";
    case AccessPattern::kStencil: return "stencil";
    case AccessPattern::kReduction: return "reduction";
    case AccessPattern::kGather: return "gather";
  }
  return "?";
}

bool IsTranscendental(UnaryFn fn) {
  switch (fn) {
    case SIGMOID: case TANH: case GELU: case EXP: case LOG: case ERF: case ELU:
    case SOFTPLUS: case SILU: case SIN: case COS: case SQRT: case RSQRT:
      return true;
    default:
      return false;
  }
}

double EffectiveAlpha(const Stage& stage) {
  const Attributes& a = stage.attrs();
  if (a.has_alpha()) return a.alpha();
  if (stage.op() == UNARY) {
    switch (a.unary()) {
      case LEAKY_RELU: return 0.01;
      case HARD_SIGMOID: return 0.2;
      default: return 1.0;
    }
  }
  return 1.0;
}

double EffectiveBeta(const Stage& stage) {
  const Attributes& a = stage.attrs();
  if (a.has_beta()) return a.beta();
  if (stage.op() == UNARY) return a.unary() == HARD_SIGMOID ? 0.5 : 0.0;
  return 1.0;
}

std::vector<int> ClampedAxes(const Stage& stage, int input_index, const std::vector<Shape>& in) {
  const Attributes& a = stage.attrs();
  std::vector<int> axes;
  switch (stage.op()) {
    case CONV:
    case POOL: {
      if (input_index != 0) break;
      const int spatial = static_cast<int>(in[0].size()) - 2;
      for (int sp = 0; sp < spatial; ++sp) {
        bool clamped = a.pads(sp) > 0 || a.pads(spatial + sp) > 0;
        if (stage.op() == POOL) {
          // The last window may end past the input without padding (ceil_mode).
          const int64_t last = (stage.shape(2 + sp) - 1) * a.strides(sp) - a.pads(sp) +
                               a.dilations(sp) * (a.kernel(sp) - 1);
          clamped = clamped || last > in[0][2 + sp] - 1;
        }
        if (clamped) axes.push_back(2 + sp);
      }
      break;
    }
    case PAD: {
      const int rank = static_cast<int>(in[0].size());
      for (int d = 0; d < rank; ++d) {
        if (a.pads(d) > 0 || a.pads(rank + d) > 0) axes.push_back(d);
      }
      break;
    }
    case CONCAT:
      axes.push_back(static_cast<int>(a.axis()));
      break;
    default:
      break;
  }
  return axes;
}

StageCost CostOf(const Stage& stage, const std::vector<Shape>& in) {
  StageCost cost;
  int bytes = BytesPerElement(stage.dtype());
  Shape out(stage.shape().begin(), stage.shape().end());
  double out_elements = static_cast<double>(NumElements(out));
  for (const Shape& s : in) cost.bytes_read += static_cast<double>(NumElements(s)) * bytes;
  cost.bytes_written = out_elements * bytes;
  StageLoops loops = LoopNestOf(stage, in);
  double reduction = 1;
  for (const LoopDim& r : loops.reduction) reduction *= static_cast<double>(r.extent);
  switch (stage.op()) {
    case CONV:
    case MATMUL:
      cost.flops = 2 * out_elements * reduction + (in.size() == 3 ? out_elements : 0);
      break;
    case POOL:
    case REDUCE:
      cost.flops = out_elements * reduction;
      break;
    case UNARY:
      cost.flops = out_elements * (IsTranscendental(stage.attrs().unary()) ? 10 : 1);
      break;
    case BINARY:
      cost.flops = out_elements;
      break;
    default:
      break;
  }
  return cost;
}

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int BytesPerElement(DataType dtype) {
  switch (dtype) {
    case FLOAT32: return 4;
    case FLOAT64: return 8;
    default: return 0;
  }
}

const char* DataTypeName(DataType dtype) {
  switch (dtype) {
    case FLOAT32: return "f32";
    case FLOAT64: return "f64";
    default: return "unspecified";
  }
}

std::string ShapeToString(const Shape& shape) { return "[" + Join(shape, ", ") + "]"; }

std::string OpDisplayName(const Stage& stage) {
  std::string name = OpKind_Name(stage.op());
  std::transform(name.begin(), name.end(), name.begin(), ::tolower);
  std::string fn;
  switch (stage.op()) {
    case UNARY: fn = UnaryFn_Name(stage.attrs().unary()); break;
    case BINARY: fn = BinaryFn_Name(stage.attrs().binary()); break;
    case REDUCE: fn = ReduceFn_Name(stage.attrs().reduce()); break;
    case POOL: fn = PoolFn_Name(stage.attrs().pool()); break;
    default: break;
  }
  std::transform(fn.begin(), fn.end(), fn.begin(), ::tolower);
  return fn.empty() ? name : name + "." + fn;
}

}  // namespace schedfarm
