// Constant tensors decoded from onnx.TensorProto, node attributes and the shape
// rules of ONNX shared by the importer and the constant folder; the unary operators
// the importer and the writer map alike.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "pipeline/onnx/onnx_internal.h"

namespace schedfarm {
namespace onnx_import {

using onnx::AttributeProto;
using onnx::TensorProto;

bool IsFloatType(int32_t elem_type) {
  return elem_type == TensorProto::FLOAT || elem_type == TensorProto::DOUBLE;
}

bool IsIntegerType(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::INT8:
    case TensorProto::INT16:
    case TensorProto::INT32:
    case TensorProto::INT64:
    case TensorProto::UINT8:
    case TensorProto::UINT16:
    case TensorProto::UINT32:
    case TensorProto::UINT64:
    case TensorProto::BOOL:
      return true;
    default:
      return false;
  }
}

const char* ElemTypeName(int32_t elem_type) {
  if (!TensorProto::DataType_IsValid(elem_type)) return "INVALID";
  // The generated name table is static, so the pointer stays valid.
  return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(elem_type)).c_str();
}

const std::vector<std::pair<std::string, UnaryFn>>& UnaryOperators() {
  static const auto* operators =
      new std::vector<std::pair<std::string, UnaryFn>>{{"Relu", RELU},
                                                       {"Sigmoid", SIGMOID},
                                                       {"Tanh", TANH},
                                                       {"Exp", EXP},
                                                       {"Log", LOG},
                                                       {"Sqrt", SQRT},
                                                       {"Neg", NEG},
                                                       {"Abs", ABS},
                                                       {"Reciprocal", RECIPROCAL},
                                                       {"Erf", ERF},
                                                       {"Floor", FLOOR},
                                                       {"Ceil", CEIL},
                                                       {"Sin", SIN},
                                                       {"Cos", COS},
                                                       {"Sign", SIGN},
                                                       {"Softplus", SOFTPLUS},
                                                       {"HardSwish", HARD_SWISH}};
  return *operators;
}

int64_t ConstTensor::AsInt(int64_t k) const {
  if (!is_float()) return i[k];
  double v = std::trunc(f[k]);
  if (!(v >= -9.2e18 && v <= 9.2e18))
    return v > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::vector<int64_t> ConstTensor::Ints() const {
  std::vector<int64_t> out(size());
  for (int64_t k = 0; k < size(); ++k) out[k] = AsInt(k);
  return out;
}

std::vector<double> ConstTensor::Doubles() const {
  std::vector<double> out(size());
  for (int64_t k = 0; k < size(); ++k) out[k] = AsDouble(k);
  return out;
}

ConstTensor MakeConst(int32_t elem_type, const Shape& shape) {
  ConstTensor t;
  t.elem_type = elem_type;
  t.shape = shape;
  if (IsFloatType(elem_type)) {
    t.f.assign(NumElements(shape), 0.0);
  } else {
    t.i.assign(NumElements(shape), 0);
  }
  return t;
}

ConstTensor IntVector(const std::vector<int64_t>& values) {
  ConstTensor t;
  t.elem_type = TensorProto::INT64;
  t.shape = {static_cast<int64_t>(values.size())};
  t.i = values;
  return t;
}

double CastValue(double v, int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT:
      return static_cast<double>(static_cast<float>(v));
    case TensorProto::DOUBLE:
      return v;
    case TensorProto::BOOL:
      return v != 0 ? 1 : 0;
    default:
      break;
  }
  double t = std::isfinite(v) ? std::trunc(v) : 0.0;
  t = std::min(std::max(t, -9.2e18), 9.2e18);
  const int64_t x = static_cast<int64_t>(t);
  switch (elem_type) {
    case TensorProto::INT8:
      return static_cast<int8_t>(x);
    case TensorProto::INT16:
      return static_cast<int16_t>(x);
    case TensorProto::INT32:
      return static_cast<int32_t>(x);
    case TensorProto::UINT8:
      return static_cast<uint8_t>(x);
    case TensorProto::UINT16:
      return static_cast<uint16_t>(x);
    case TensorProto::UINT32:
      return static_cast<uint32_t>(x);
    default:
      return static_cast<double>(x);
  }
}

namespace {

// Reads n little-endian values of type T from raw bytes.
template <typename T>
std::vector<T> FromRaw(const std::string& raw, int64_t n) {
  std::vector<T> out(n);
  if (n > 0) std::memcpy(out.data(), raw.data(), n * sizeof(T));
  return out;
}

int RawBytesPerElement(int32_t elem_type) {
  switch (elem_type) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return 8;
    case TensorProto::INT16:
    case TensorProto::UINT16:
      return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

}  // namespace

StatusOr<ConstTensor> DecodeTensor(const TensorProto& proto, const std::string& what,
                                   int64_t max_elements) {
  const int32_t type = proto.data_type();
  if (!IsFloatType(type) && !IsIntegerType(type)) {
    return Status::Error(what + ": unsupported element type " + ElemTypeName(type) +
                         " (supported: FLOAT, DOUBLE; integer and BOOL as constants)");
  }
  if (proto.data_location() == TensorProto::EXTERNAL) {
    return Status::Error(what +
                         ": unsupported external data (save the model with its "
                         "tensors embedded)");
  }
  if (proto.has_segment()) {
    return Status::Error(what + ": unsupported segmented tensor");
  }
  ConstTensor t;
  t.elem_type = type;
  int64_t n = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0) return Status::Error(what + ": negative dim " + std::to_string(d));
    t.shape.push_back(d);
    if (d != 0 && n > max_elements / d) {
      return Status::Error(what + ": too many elements (over " + std::to_string(max_elements) +
                           ")");
    }
    n *= d;
  }
  if (n > max_elements) {
    return Status::Error(what + ": too many elements (over " + std::to_string(max_elements) + ")");
  }
  const std::string& raw = proto.raw_data();
  const bool use_raw = proto.has_raw_data();
  if (use_raw) {
    const int64_t need = n * RawBytesPerElement(type);
    if (static_cast<int64_t>(raw.size()) != need) {
      return Status::Error(what + ": raw_data has " + std::to_string(raw.size()) +
                           " bytes, shape " + ShapeToString(t.shape) + " of " + ElemTypeName(type) +
                           " needs " + std::to_string(need));
    }
  }
  auto count_error = [&](int64_t have) {
    return Status::Error(what + ": has " + std::to_string(have) + " values, shape " +
                         ShapeToString(t.shape) + " needs " + std::to_string(n));
  };
  switch (type) {
    case TensorProto::FLOAT: {
      if (use_raw) {
        for (float v : FromRaw<float>(raw, n)) t.f.push_back(v);
      } else {
        if (proto.float_data_size() != n) return count_error(proto.float_data_size());
        t.f.assign(proto.float_data().begin(), proto.float_data().end());
      }
      break;
    }
    case TensorProto::DOUBLE: {
      if (use_raw) {
        t.f = FromRaw<double>(raw, n);
      } else {
        if (proto.double_data_size() != n) return count_error(proto.double_data_size());
        t.f.assign(proto.double_data().begin(), proto.double_data().end());
      }
      break;
    }
    case TensorProto::INT64: {
      if (use_raw) {
        t.i = FromRaw<int64_t>(raw, n);
      } else {
        if (proto.int64_data_size() != n) return count_error(proto.int64_data_size());
        t.i.assign(proto.int64_data().begin(), proto.int64_data().end());
      }
      break;
    }
    case TensorProto::UINT32:
    case TensorProto::UINT64: {
      if (use_raw) {
        if (type == TensorProto::UINT32) {
          for (uint32_t v : FromRaw<uint32_t>(raw, n)) t.i.push_back(v);
        } else {
          for (uint64_t v : FromRaw<uint64_t>(raw, n)) t.i.push_back(static_cast<int64_t>(v));
        }
      } else {
        if (proto.uint64_data_size() != n) return count_error(proto.uint64_data_size());
        for (uint64_t v : proto.uint64_data()) t.i.push_back(static_cast<int64_t>(v));
      }
      break;
    }
    default: {  // INT32, INT16, INT8, UINT16, UINT8, BOOL
      if (use_raw) {
        switch (type) {
          case TensorProto::INT32:
            for (int32_t v : FromRaw<int32_t>(raw, n)) t.i.push_back(v);
            break;
          case TensorProto::INT16:
            for (int16_t v : FromRaw<int16_t>(raw, n)) t.i.push_back(v);
            break;
          case TensorProto::UINT16:
            for (uint16_t v : FromRaw<uint16_t>(raw, n)) t.i.push_back(v);
            break;
          case TensorProto::INT8:
            for (int8_t v : FromRaw<int8_t>(raw, n)) t.i.push_back(v);
            break;
          default:  // UINT8, BOOL
            for (uint8_t v : FromRaw<uint8_t>(raw, n)) t.i.push_back(v);
            break;
        }
      } else {
        if (proto.int32_data_size() != n) return count_error(proto.int32_data_size());
        t.i.assign(proto.int32_data().begin(), proto.int32_data().end());
      }
      if (type == TensorProto::BOOL) {
        for (int64_t& v : t.i) v = v != 0;
      }
      break;
    }
  }
  return t;
}

// --- NodeContext ------------------------------------------------------------------

NodeContext::NodeContext(const onnx::NodeProto& node, int index, int64_t opset)
    : node_(node), index_(index), opset_(opset) {}

std::string NodeContext::Label() const {
  if (!node_.name().empty()) return "node '" + node_.name() + "' (op " + node_.op_type() + ")";
  std::string label = "node #" + std::to_string(index_) + " (op " + node_.op_type();
  if (node_.output_size() > 0) label += ", output '" + node_.output(0) + "'";
  return label + ")";
}

Status NodeContext::Error(const std::string& message) const {
  return Status::Error(Label() + ": " + message);
}

Status NodeContext::Unsupported(const std::string& message) const {
  return Status::Error(Label() + ": unsupported " + message);
}

const AttributeProto* NodeContext::Find(const std::string& name) const {
  for (const AttributeProto& attr : node_.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

int64_t NodeContext::Int(const std::string& name, int64_t fallback) const {
  const AttributeProto* attr = Find(name);
  return attr ? attr->i() : fallback;
}

double NodeContext::Float(const std::string& name, double fallback) const {
  const AttributeProto* attr = Find(name);
  return attr ? attr->f() : fallback;
}

std::string NodeContext::String(const std::string& name, const std::string& fallback) const {
  const AttributeProto* attr = Find(name);
  return attr ? attr->s() : fallback;
}

std::vector<int64_t> NodeContext::Ints(const std::string& name) const {
  const AttributeProto* attr = Find(name);
  if (!attr) return {};
  return {attr->ints().begin(), attr->ints().end()};
}

std::vector<double> NodeContext::Floats(const std::string& name) const {
  const AttributeProto* attr = Find(name);
  if (!attr) return {};
  return {attr->floats().begin(), attr->floats().end()};
}

namespace {

// The type of an attribute; models from before IR version 4 may leave `type` unset.
AttributeProto::AttributeType EffectiveType(const AttributeProto& attr) {
  if (attr.type() != AttributeProto::UNDEFINED) return attr.type();
  if (attr.has_f()) return AttributeProto::FLOAT;
  if (attr.has_i()) return AttributeProto::INT;
  if (attr.has_s()) return AttributeProto::STRING;
  if (attr.has_t()) return AttributeProto::TENSOR;
  if (attr.has_g()) return AttributeProto::GRAPH;
  if (attr.floats_size() > 0) return AttributeProto::FLOATS;
  if (attr.ints_size() > 0) return AttributeProto::INTS;
  if (attr.strings_size() > 0) return AttributeProto::STRINGS;
  return AttributeProto::UNDEFINED;
}

}  // namespace

Status CheckAttributes(const NodeContext& ctx, const std::vector<AttrSpec>& allowed) {
  for (const AttributeProto& attr : ctx.node().attribute()) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& a : allowed) {
      if (attr.name() == a.name) spec = &a;
    }
    if (spec == nullptr) {
      std::string names;
      for (const AttrSpec& a : allowed) names += std::string(names.empty() ? "" : ", ") + a.name;
      return ctx.Unsupported("attribute '" + attr.name() +
                             "' (supported: " + (names.empty() ? "none" : names) + ")");
    }
    const AttributeProto::AttributeType type = EffectiveType(attr);
    // An empty list has no detectable type in old models; accept it for list types.
    const bool empty_list =
        type == AttributeProto::UNDEFINED &&
        (spec->type == AttributeProto::INTS || spec->type == AttributeProto::FLOATS);
    if (type != spec->type && !empty_list) {
      return ctx.Error("attribute '" + attr.name() + "' has type " +
                       AttributeProto::AttributeType_Name(type) + ", expected " +
                       AttributeProto::AttributeType_Name(spec->type));
    }
  }
  return Status::Ok();
}

// --- shapes -------------------------------------------------------------------------

StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) {
    return Status::Error("axis " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(rank));
  }
  return axis < 0 ? axis + rank : axis;
}

StatusOr<std::vector<int64_t>> NormalizeAxes(const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t a : axes) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t n, NormalizeAxis(a, rank));
    out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    return Status::Error("axes repeat an axis");
  }
  return out;
}

StatusOr<Shape> BroadcastShapes(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t da = k < rank - a.size() ? 1 : a[k - (rank - a.size())];
    const int64_t db = k < rank - b.size() ? 1 : b[k - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return Status::Error("shapes " + ShapeToString(a) + " and " + ShapeToString(b) +
                           " do not broadcast");
    }
    out[k] = da == 1 ? db : da;
  }
  return out;
}

StatusOr<Shape> ReshapeTarget(const Shape& input, const std::vector<int64_t>& target,
                              bool allowzero) {
  Shape out(target.size());
  int infer = -1;
  int64_t known = 1;
  for (size_t k = 0; k < target.size(); ++k) {
    int64_t d = target[k];
    if (d == 0 && !allowzero) {
      if (k >= input.size()) {
        return Status::Error("target shape copies dim " + std::to_string(k) +
                             " (0) that the input " + ShapeToString(input) + " lacks");
      }
      d = input[k];
    }
    if (d == -1) {
      if (infer >= 0) return Status::Error("target shape has more than one -1");
      infer = static_cast<int>(k);
      continue;
    }
    if (d < 0) return Status::Error("target shape has a negative dim " + std::to_string(d));
    if (d > (int64_t{1} << 40) || (d > 0 && known > (int64_t{1} << 62) / d)) {
      return Status::Error("target shape dim " + std::to_string(d) + " is too large");
    }
    out[k] = d;
    known *= d;
  }
  const int64_t total = NumElements(input);
  if (infer >= 0) {
    if (known == 0 || total % known != 0) {
      return Status::Error("cannot infer the -1 dim reshaping " + ShapeToString(input));
    }
    out[infer] = total / known;
  } else if (known != total) {
    return Status::Error("cannot reshape " + ShapeToString(input) + " (" + std::to_string(total) +
                         " elements) to " + ShapeToString(out));
  }
  return out;
}

StatusOr<Shape> LegacyBroadcastShape(const Shape& a, const Shape& b, bool has_axis, int64_t axis) {
  const int64_t ra = static_cast<int64_t>(a.size()), rb = static_cast<int64_t>(b.size());
  if (NumElements(b) == 1) return Shape(a.size(), 1);
  int64_t start = has_axis ? (axis < 0 ? axis + ra : axis) : ra - rb;
  if (rb > ra || start < 0 || start + rb > ra) {
    return Status::Error("legacy broadcast of " + ShapeToString(b) + " onto " + ShapeToString(a) +
                         " at axis " + std::to_string(start) + " is out of range");
  }
  Shape out(a.size(), 1);
  for (int64_t k = 0; k < rb; ++k) {
    if (b[k] != a[start + k] && b[k] != 1) {
      return Status::Error("legacy broadcast of " + ShapeToString(b) + " onto " + ShapeToString(a) +
                           " at axis " + std::to_string(start) + ": dims differ");
    }
    out[start + k] = b[k];
  }
  return out;
}

StatusOr<Shape> SqueezeShape(const Shape& input, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(input.size());
  std::set<int64_t> drop;
  if (axes.empty()) {
    for (int64_t k = 0; k < rank; ++k) {
      if (input[k] == 1) drop.insert(k);
    }
  } else {
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(axes, rank));
    for (int64_t a : norm) {
      if (input[a] != 1) {
        return Status::Error("cannot squeeze axis " + std::to_string(a) + " of extent " +
                             std::to_string(input[a]));
      }
      drop.insert(a);
    }
  }
  Shape out;
  for (int64_t k = 0; k < rank; ++k) {
    if (!drop.count(k)) out.push_back(input[k]);
  }
  return out;
}

StatusOr<Shape> UnsqueezeShape(const Shape& input, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(input.size() + axes.size());
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> norm, NormalizeAxes(axes, rank));
  Shape out;
  size_t next = 0;
  for (int64_t k = 0; k < rank; ++k) {
    if (std::binary_search(norm.begin(), norm.end(), k)) {
      out.push_back(1);
    } else {
      out.push_back(input[next++]);
    }
  }
  return out;
}

StatusOr<ResolvedSlice> ResolveSlice(const Shape& input, const std::vector<int64_t>& starts,
                                     const std::vector<int64_t>& ends,
                                     const std::vector<int64_t>& axes_in,
                                     const std::vector<int64_t>& steps_in) {
  const int64_t rank = static_cast<int64_t>(input.size());
  if (starts.size() != ends.size()) {
    return Status::Error("starts and ends have different lengths");
  }
  std::vector<int64_t> axes = axes_in;
  if (axes.empty()) {
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back(static_cast<int64_t>(k));
  }
  std::vector<int64_t> steps = steps_in;
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return Status::Error("starts, ends, axes and steps have different lengths");
  }
  struct Entry {
    int64_t axis, start, step, extent;
  };
  std::vector<Entry> entries;
  std::set<int64_t> seen;
  for (size_t k = 0; k < axes.size(); ++k) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(axes[k], rank));
    if (!seen.insert(axis).second) return Status::Error("axes repeat an axis");
    const int64_t dim = input[axis];
    const int64_t step = steps[k];
    if (step == 0) return Status::Error("step is 0");
    // Bring the (possibly huge) bounds into a range where the arithmetic cannot
    // overflow; the clamps below give the same result.
    const int64_t bound = 2 * dim + 2;
    int64_t start = std::min(std::max(starts[k], -bound), bound);
    int64_t end = std::min(std::max(ends[k], -bound), bound);
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t extent;
    if (step > 0) {
      start = std::min(std::max(start, int64_t{0}), dim);
      end = std::min(std::max(end, int64_t{0}), dim);
      extent = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::min(std::max(start, int64_t{0}), dim - 1);
      end = std::min(std::max(end, int64_t{-1}), dim - 1);
      extent = start > end ? (start - end - step - 1) / (-step) : 0;
    }
    entries.push_back({axis, start, step, extent});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.axis < b.axis; });
  ResolvedSlice out;
  out.output = input;
  for (const Entry& e : entries) {
    out.axes.push_back(e.axis);
    out.starts.push_back(e.start);
    out.steps.push_back(e.step);
    out.output[e.axis] = e.extent;
  }
  return out;
}

}  // namespace onnx_import
}  // namespace schedfarm
