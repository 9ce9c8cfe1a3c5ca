#include "pipeline/yaml_io.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <sstream>
#include <vector>

#include "common/files.h"
#include "common/text.h"
#include "google/protobuf/descriptor.h"
#include "pipeline/graph.h"
#include "pipeline/ops.h"
#include "pipeline/tensor.h"
#include "pipeline/yaml_reader.h"

namespace schedfarm {
namespace {

using google::protobuf::FieldDescriptor;

// --- op names ----------------------------------------------------------------------------

struct OpName {
  std::string name;
  OpKind op;
  UnaryFn unary = UNARY_FN_UNSPECIFIED;
  BinaryFn binary = BINARY_FN_UNSPECIFIED;
  ReduceFn reduce = REDUCE_FN_UNSPECIFIED;
};

std::string ReduceSuffix(ReduceFn fn) {
  switch (fn) {
    case SUM:
      return "sum";
    case MEAN:
      return "mean";
    case REDUCE_MAX:
      return "max";
    case REDUCE_MIN:
      return "min";
    case SUM_SQUARE:
      return "sum_square";
    default:
      return "";
  }
}

// Every op name of the format, in the order the documentation lists them.
const std::vector<OpName>& OpNames() {
  static const std::vector<OpName> names = [] {
    std::vector<OpName> n = {{"conv", CONV}, {"matmul", MATMUL}, {"pool", POOL}};
    for (ReduceFn fn : {SUM, MEAN, REDUCE_MAX, REDUCE_MIN, SUM_SQUARE}) {
      OpName r{"reduce." + ReduceSuffix(fn), REDUCE};
      r.reduce = fn;
      n.push_back(r);
    }
    for (int u = RELU; u <= SCALE; ++u) {
      if (!UnaryFn_IsValid(u)) continue;
      OpName r{Lower(UnaryFn_Name(static_cast<UnaryFn>(u))), UNARY};
      r.unary = static_cast<UnaryFn>(u);
      n.push_back(r);
    }
    for (int b = ADD; b <= POW; ++b) {
      if (!BinaryFn_IsValid(b)) continue;
      OpName r{Lower(BinaryFn_Name(static_cast<BinaryFn>(b))), BINARY};
      r.binary = static_cast<BinaryFn>(b);
      n.push_back(r);
    }
    for (auto [name, op] : std::vector<std::pair<const char*, OpKind>>{{"pad", PAD},
                                                                       {"concat", CONCAT},
                                                                       {"slice", SLICE},
                                                                       {"transpose", TRANSPOSE},
                                                                       {"reshape", RESHAPE},
                                                                       {"upsample", UPSAMPLE}}) {
      n.push_back({name, op});
    }
    return n;
  }();
  return names;
}

std::string YamlOpName(const Stage& stage) {
  for (const OpName& n : OpNames()) {
    if (n.op != stage.op()) continue;
    if ((n.op == UNARY && n.unary != stage.attrs().unary()) ||
        (n.op == BINARY && n.binary != stage.attrs().binary()) ||
        (n.op == REDUCE && n.reduce != stage.attrs().reduce())) {
      continue;
    }
    return n.name;
  }
  return OpDisplayName(stage);
}

// Attribute keys each op accepts (its function is given by the op name, except the
// pool function, given by `pool:`).
const std::vector<std::string>& AttributeKeys(OpKind op) {
  static const std::map<OpKind, std::vector<std::string>> keys = {
      {CONV, {"strides", "pads", "dilations", "groups"}},
      {MATMUL, {"trans_a", "trans_b", "alpha", "beta"}},
      {POOL, {"pool", "kernel", "strides", "pads", "dilations", "ceil_mode", "count_include_pad"}},
      {REDUCE, {"axes", "keepdims"}},
      {UNARY, {"math", "alpha", "beta", "clip_min", "clip_max"}},
      {BINARY, {}},
      {PAD, {"pads", "pad_mode", "pad_value"}},
      {CONCAT, {"axis"}},
      {SLICE, {"axes", "starts", "steps"}},
      {TRANSPOSE, {"perm"}},
      {RESHAPE, {}},
      {UPSAMPLE, {"scales"}},
  };
  static const std::vector<std::string> none;
  auto it = keys.find(op);
  return it == keys.end() ? none : it->second;
}

// Names of the enum attributes in the format.
const std::vector<std::pair<std::string, int>>& EnumNames(const std::string& field) {
  static const std::map<std::string, std::vector<std::pair<std::string, int>>> names = {
      {"pool", {{"max", MAX_POOL}, {"avg", AVG_POOL}}},
      {"pad_mode", {{"constant", CONSTANT}, {"edge", EDGE}, {"reflect", REFLECT}}},
      {"math", {{"exact", EXACT}, {"pade", PADE}}},
  };
  static const std::vector<std::pair<std::string, int>> none;
  auto it = names.find(field);
  return it == names.end() ? none : it->second;
}

const std::vector<std::pair<std::string, DataType>>& DtypeNames() {
  static const std::vector<std::pair<std::string, DataType>> names = {{"f32", FLOAT32},
                                                                      {"f64", FLOAT64}};
  return names;
}

// --- scalars -------------------------------------------------------------------------------

// The shortest decimal text that reads back as exactly `v` (YAML spellings for NaN and
// infinities). T is double or float.
template <typename T>
std::string FormatShortest(T v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  char buf[40];
  for (int precision = 1; precision <= std::numeric_limits<T>::max_digits10; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, static_cast<double>(v));
    if (static_cast<T>(std::strtod(buf, nullptr)) == v) break;
  }
  return buf;
}

std::string FormatDouble(double v) { return FormatShortest(v); }
std::string FormatFloat(float v) { return FormatShortest(v); }

bool IsPlainScalar(const std::string& s) {
  if (s.empty()) return false;
  if (!(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-' ||
          c == '/')) {
      return false;
    }
  }
  static const std::set<std::string> reserved = {"true", "false", "yes", "no", "on",
                                                 "off",  "null",  "y",   "n"};
  return !reserved.count(Lower(s));
}

std::string Quote(const std::string& s) {
  if (IsPlainScalar(s)) return s;
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\x%02x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string IntList(const google::protobuf::RepeatedField<int64_t>& v) {
  std::string out = "[";
  for (int i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

// --- reading -------------------------------------------------------------------------------

using Fields = YamlFields;

class Reader : public YamlReader {
 public:
  explicit Reader(std::string filename) : YamlReader(std::move(filename)) {}

  StatusOr<PipelineSpec> Read(const std::string& text);

 private:
  StatusOr<std::vector<int64_t>> IntList(const YAML::Node& n, const std::string& what) const;
  StatusOr<Shape> ShapeField(const YAML::Node& n, const std::string& what) const;
  StatusOr<DataType> Dtype(const YAML::Node& n, const std::string& what) const;
  Status DefineName(const std::string& name, const YAML::Node& at, const std::string& what);

  Status ReadInput(const YAML::Node& n, DataType default_dtype, PipelineSpec& spec);
  // The name, shape and dtype of an input or a parameter (`kind`); returns how errors
  // name it ("input 'x'").
  StatusOr<std::string> ReadDecl(const Fields& f, const std::string& what, const char* kind,
                                 DataType default_dtype, TensorDecl* t);
  Status ReadParameter(const YAML::Node& n, DataType default_dtype, PipelineSpec& spec);
  Status ReadStage(const YAML::Node& n, PipelineSpec& spec);
  Status SetAttribute(Stage& stage, const std::string& key, const YAML::Node& value,
                      const std::string& what);
  // Shapes, dtypes and attributes of the stages, producers first.
  Status CheckStages(PipelineSpec& spec);
  // Position of the first name quoted in a validator message, if it names something.
  YAML::Mark MarkOfMessage(const std::string& message) const;

  std::map<std::string, YAML::Node> defined_;  // name -> its name node
  std::vector<Fields> stage_fields_;           // per stage, in spec order
};

StatusOr<std::vector<int64_t>> Reader::IntList(const YAML::Node& n, const std::string& what) const {
  SCHEDFARM_RETURN_IF_ERROR(List(n, what));
  std::vector<int64_t> out;
  for (size_t i = 0; i < n.size(); ++i) {
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t v, Int(n[i], what + "[" + std::to_string(i) + "]"));
    out.push_back(v);
  }
  return out;
}

StatusOr<Shape> Reader::ShapeField(const YAML::Node& n, const std::string& what) const {
  SCHEDFARM_ASSIGN_OR_RETURN(Shape shape, IntList(n, what));
  const PipelineLimits limits;
  if (static_cast<int>(shape.size()) > limits.max_rank) {
    return ErrorAt(n, what + " " + ShapeToString(shape) + " has rank " +
                          std::to_string(shape.size()) + ", over the limit of " +
                          std::to_string(limits.max_rank));
  }
  double elements = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 1) {
      return ErrorAt(n[i], what + " " + ShapeToString(shape) + ": extent " +
                               std::to_string(shape[i]) + " of dim " + std::to_string(i) +
                               " must be >= 1");
    }
    elements *= static_cast<double>(shape[i]);
  }
  if (elements > static_cast<double>(limits.max_tensor_elements)) {
    return ErrorAt(n, what + " " + ShapeToString(shape) + " has " + FormatDouble(elements) +
                          " elements, over the limit of " +
                          std::to_string(limits.max_tensor_elements));
  }
  return shape;
}

StatusOr<DataType> Reader::Dtype(const YAML::Node& n, const std::string& what) const {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string s, String(n, what));
  std::vector<std::string> known;
  for (const auto& [name, dtype] : DtypeNames()) {
    if (s == name) return dtype;
    known.push_back(name);
  }
  return ErrorAt(n, what + ": unknown dtype '" + s + "' (known: " + Join(known, ", ") + ")");
}

Status Reader::DefineName(const std::string& name, const YAML::Node& at, const std::string& what) {
  if (name.empty()) return ErrorAt(at, what + ": name must not be empty");
  auto it = defined_.find(name);
  if (it != defined_.end()) {
    return ErrorAt(at, what + ": name '" + name + "' is already defined at line " +
                           std::to_string(it->second.Mark().line + 1));
  }
  defined_[name] = at;
  return Status::Ok();
}

Status Reader::ReadInput(const YAML::Node& n, DataType default_dtype, PipelineSpec& spec) {
  const std::string what = "input " + std::to_string(spec.inputs_size());
  SCHEDFARM_ASSIGN_OR_RETURN(Fields f, Map(n, what, {"name", "shape", "dtype"}));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "name", what));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "shape", what));
  return ReadDecl(f, what, "input", default_dtype, spec.add_inputs()).status();
}

StatusOr<std::string> Reader::ReadDecl(const Fields& f, const std::string& what, const char* kind,
                                       DataType default_dtype, TensorDecl* t) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::string name, String(f.value("name"), what + " name"));
  const std::string named = std::string(kind) + " '" + name + "'";
  SCHEDFARM_RETURN_IF_ERROR(DefineName(name, f.value("name"), named));
  t->set_name(name);
  SCHEDFARM_ASSIGN_OR_RETURN(Shape shape, ShapeField(f.value("shape"), named + " shape"));
  for (int64_t d : shape) t->add_shape(d);
  t->set_dtype(default_dtype);
  if (f.has("dtype")) {
    SCHEDFARM_ASSIGN_OR_RETURN(DataType dtype, Dtype(f.value("dtype"), named));
    t->set_dtype(dtype);
  }
  return named;
}

Status Reader::ReadParameter(const YAML::Node& n, DataType default_dtype, PipelineSpec& spec) {
  const std::string what = "parameter " + std::to_string(spec.parameters_size());
  SCHEDFARM_ASSIGN_OR_RETURN(
      Fields f, Map(n, what, {"name", "shape", "dtype", "random", "data"}));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "name", what));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "shape", what));
  Parameter* p = spec.add_parameters();
  TensorDecl* t = p->mutable_tensor();
  SCHEDFARM_ASSIGN_OR_RETURN(const std::string named,
                             ReadDecl(f, what, "parameter", default_dtype, t));
  if (f.has("random") == f.has("data")) {
    return ErrorAt(n, named +
                          ": needs exactly one of 'random' (seed, scale, offset) and 'data' "
                          "(a list of values)");
  }
  if (f.has("random")) {
    SCHEDFARM_ASSIGN_OR_RETURN(Fields r, Map(f.value("random"), named + " random",
                                             {"seed", "scale", "offset"}));
    SCHEDFARM_RETURN_IF_ERROR(Require(r, "seed", named + " random"));
    RandomInit* init = p->mutable_random();
    SCHEDFARM_ASSIGN_OR_RETURN(uint64_t seed, Uint(r.value("seed"), named + " random seed"));
    init->set_seed(seed);
    init->set_scale(1.0);
    if (r.has("scale")) {
      SCHEDFARM_ASSIGN_OR_RETURN(double scale, Double(r.value("scale"), named + " random scale"));
      init->set_scale(scale);
    }
    if (r.has("offset")) {
      SCHEDFARM_ASSIGN_OR_RETURN(double offset,
                                 Double(r.value("offset"), named + " random offset"));
      init->set_offset(offset);
    }
    return Status::Ok();
  }
  const YAML::Node& data = f.value("data");
  SCHEDFARM_RETURN_IF_ERROR(List(data, named + " data"));
  const Shape shape(t->shape().begin(), t->shape().end());
  if (static_cast<int64_t>(data.size()) != NumElements(shape)) {
    return ErrorAt(data, named + ": data has " + std::to_string(data.size()) + " values, shape " +
                             ShapeToString(shape) + " needs " + std::to_string(NumElements(shape)));
  }
  std::vector<double> values;
  values.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    SCHEDFARM_ASSIGN_OR_RETURN(double v,
                               Double(data[i], named + " data[" + std::to_string(i) + "]"));
    values.push_back(v);
  }
  p->set_raw_data(EncodeRawData(values, t->dtype()));
  return Status::Ok();
}

Status Reader::SetAttribute(Stage& stage, const std::string& key, const YAML::Node& value,
                            const std::string& what) {
  Attributes* attrs = stage.mutable_attrs();
  const FieldDescriptor* field = Attributes::descriptor()->FindFieldByName(key);
  const auto* reflection = attrs->GetReflection();
  const std::string named = what + " " + key;
  if (field->is_repeated()) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<int64_t> values, IntList(value, named));
    for (int64_t v : values) reflection->AddInt64(attrs, field, v);
    return Status::Ok();
  }
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64: {
      SCHEDFARM_ASSIGN_OR_RETURN(int64_t v, Int(value, named));
      reflection->SetInt64(attrs, field, v);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      SCHEDFARM_ASSIGN_OR_RETURN(bool v, Bool(value, named));
      reflection->SetBool(attrs, field, v);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      SCHEDFARM_ASSIGN_OR_RETURN(double v, Double(value, named));
      reflection->SetDouble(attrs, field, v);
      return Status::Ok();
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      SCHEDFARM_ASSIGN_OR_RETURN(std::string s, String(value, named));
      std::vector<std::string> known;
      for (const auto& [name, number] : EnumNames(key)) {
        if (s == name) {
          reflection->SetEnumValue(attrs, field, number);
          return Status::Ok();
        }
        known.push_back(name);
      }
      return ErrorAt(value,
                     named + ": unknown value '" + s + "' (known: " + Join(known, ", ") + ")");
    }
    default:
      return ErrorAt(value, named + ": unsupported attribute type");
  }
}

Status Reader::ReadStage(const YAML::Node& n, PipelineSpec& spec) {
  std::string what = "stage " + std::to_string(spec.stages_size());
  if (!n.IsMap()) return ErrorAt(n, what + " must be a mapping, is " + KindName(n));
  // The op decides which attribute keys are allowed, so read it first (and the name,
  // for the messages).
  std::optional<YAML::Node> op_node;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    if (it->first.Scalar() == "op" && !op_node) op_node.emplace(it->second);
    if (it->first.Scalar() == "name" && it->second.IsScalar()) {
      what = "stage '" + it->second.Scalar() + "'";
    }
  }
  if (!op_node) return ErrorAt(n, what + ": missing field 'op'");
  SCHEDFARM_ASSIGN_OR_RETURN(std::string op_name, String(*op_node, what + " op"));
  const OpName* op = nullptr;
  std::vector<std::string> known;
  for (const OpName& o : OpNames()) {
    if (o.name == op_name) op = &o;
    known.push_back(o.name);
  }
  if (op == nullptr) {
    return ErrorAt(*op_node,
                   what + ": unknown op '" + op_name + "' (known ops: " + Join(known, ", ") + ")");
  }
  std::vector<std::string> keys = {"name", "op", "inputs", "shape", "dtype", "label"};
  const std::vector<std::string>& attribute_keys = AttributeKeys(op->op);
  keys.insert(keys.end(), attribute_keys.begin(), attribute_keys.end());
  SCHEDFARM_ASSIGN_OR_RETURN(
      Fields f, Map(n, what + " (" + op_name + ")", keys, "keys of op '" + op_name + "': "));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "name", what));
  SCHEDFARM_RETURN_IF_ERROR(Require(f, "inputs", what));
  Stage* stage = spec.add_stages();
  SCHEDFARM_ASSIGN_OR_RETURN(std::string name, String(f.value("name"), what + " name"));
  const std::string named = "stage '" + name + "'";
  SCHEDFARM_RETURN_IF_ERROR(DefineName(name, f.value("name"), named));
  stage->set_name(name);
  stage->set_op(op->op);
  stage->mutable_attrs();  // present even when empty, as the operator library makes stages
  if (op->op == UNARY) stage->mutable_attrs()->set_unary(op->unary);
  if (op->op == BINARY) stage->mutable_attrs()->set_binary(op->binary);
  if (op->op == REDUCE) stage->mutable_attrs()->set_reduce(op->reduce);
  if (op->op == POOL && !f.has("pool")) {
    return ErrorAt(n, named + ": missing field 'pool' (max or avg)");
  }
  const YAML::Node& inputs = f.value("inputs");
  SCHEDFARM_RETURN_IF_ERROR(List(inputs, named + " inputs"));
  for (size_t i = 0; i < inputs.size(); ++i) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string in,
                               String(inputs[i], named + " inputs[" + std::to_string(i) + "]"));
    stage->add_inputs(in);
  }
  if (f.has("shape")) {
    SCHEDFARM_ASSIGN_OR_RETURN(Shape shape, ShapeField(f.value("shape"), named + " shape"));
    for (int64_t d : shape) stage->add_shape(d);
  } else if (op->op == SLICE || op->op == RESHAPE) {
    return ErrorAt(
        n, named + ": missing field 'shape' (" + op_name + " takes its output extents from it)");
  }
  if (f.has("dtype")) {
    SCHEDFARM_ASSIGN_OR_RETURN(DataType dtype, Dtype(f.value("dtype"), named));
    stage->set_dtype(dtype);
  }
  if (f.has("label")) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string label, String(f.value("label"), named + " label"));
    stage->set_label(label);
  }
  for (const std::string& key : attribute_keys) {
    if (f.has(key)) SCHEDFARM_RETURN_IF_ERROR(SetAttribute(*stage, key, f.value(key), named));
  }
  stage_fields_.push_back(std::move(f));
  return Status::Ok();
}

Status Reader::CheckStages(PipelineSpec& spec) {
  std::map<std::string, int> stage_index;
  std::map<std::string, std::pair<DataType, Shape>> tensors;
  for (const TensorDecl& t : spec.inputs()) {
    tensors[t.name()] = {t.dtype(), Shape(t.shape().begin(), t.shape().end())};
  }
  for (const Parameter& p : spec.parameters()) {
    tensors[p.tensor().name()] = {p.tensor().dtype(),
                                  Shape(p.tensor().shape().begin(), p.tensor().shape().end())};
  }
  const int n = spec.stages_size();
  for (int s = 0; s < n; ++s) stage_index[spec.stages(s).name()] = s;

  // References, then a topological order (Kahn, declaration order among ready stages).
  std::vector<std::vector<int>> consumers(n);
  std::vector<int> pending(n, 0);
  for (int s = 0; s < n; ++s) {
    const Stage& st = spec.stages(s);
    const YAML::Node& inputs = stage_fields_[s].value("inputs");
    for (int i = 0; i < st.inputs_size(); ++i) {
      const std::string& in = st.inputs(i);
      auto it = stage_index.find(in);
      if (it != stage_index.end()) {
        consumers[it->second].push_back(s);
        ++pending[s];
      } else if (!tensors.count(in)) {
        return ErrorAt(inputs[i], "stage '" + st.name() + "': unknown tensor '" + in +
                                      "' (not an input, parameter or stage)");
      }
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int s = 0; s < n; ++s) {
    if (pending[s] == 0) ready.push(s);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int s = ready.top();
    ready.pop();
    order.push_back(s);
    for (int c : consumers[s]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  if (static_cast<int>(order.size()) != n) {
    // Follow unfinished producers from an unfinished stage until one repeats.
    int s = 0;
    while (pending[s] == 0) ++s;
    std::vector<int> path, seen_at(n, -1);
    while (seen_at[s] < 0) {
      seen_at[s] = static_cast<int>(path.size());
      path.push_back(s);
      for (const std::string& in : spec.stages(s).inputs()) {
        auto it = stage_index.find(in);
        if (it != stage_index.end() && pending[it->second] > 0) {
          s = it->second;
          break;
        }
      }
    }
    std::string cycle;
    for (size_t i = seen_at[s]; i < path.size(); ++i) {
      cycle = " -> '" + spec.stages(path[i]).name() + "'" + cycle;
    }
    cycle = "'" + spec.stages(s).name() + "'" + cycle;
    return ErrorAt(stage_fields_[s].node, "stages form a cycle: " + cycle);
  }

  const PipelineLimits limits;
  for (int s : order) {
    Stage& st = *spec.mutable_stages(s);
    const Fields& f = stage_fields_[s];
    const std::string named = "stage '" + st.name() + "' (" + YamlOpName(st) + ")";
    std::vector<Shape> shapes;
    for (const std::string& in : st.inputs()) shapes.push_back(tensors.at(in).second);
    if (st.dtype() == DATA_TYPE_UNSPECIFIED) {
      st.set_dtype(st.inputs_size() > 0 ? tensors.at(st.inputs(0)).first : FLOAT32);
    }
    if ((st.op() == CONV || st.op() == POOL) && !shapes.empty() && shapes[0].size() >= 3) {
      // ONNX's defaults: strides and dilations 1, no padding, one group.
      Attributes& a = *st.mutable_attrs();
      const size_t spatial = shapes[0].size() - 2;
      if (!f.has("strides")) a.mutable_strides()->Resize(static_cast<int>(spatial), 1);
      if (!f.has("dilations")) a.mutable_dilations()->Resize(static_cast<int>(spatial), 1);
      if (!f.has("pads")) a.mutable_pads()->Resize(static_cast<int>(2 * spatial), 0);
      if (st.op() == CONV && !f.has("groups")) a.set_groups(1);
    }
    Status attrs = CheckAttributes(st);
    if (!attrs.ok()) {
      // Point at the attribute the message names, if the stage gives it.
      YAML::Mark mark = f.node.Mark();
      for (const auto& [key, entry] : f.entries) {
        if (attrs.message().find("'" + key + "'") != std::string::npos) mark = entry.first.Mark();
      }
      return ErrorAt(mark, named + ": " + attrs.message());
    }
    const bool declared = st.shape_size() > 0 || f.has("shape");
    StatusOr<Shape> inferred = InferOutputShape(st, shapes);
    if (!inferred.ok()) {
      std::string in;
      for (size_t i = 0; i < shapes.size(); ++i) in += (i ? ", " : "") + ShapeToString(shapes[i]);
      return ErrorAt(f.node,
                     named + ": " + inferred.status().message() + " (input shapes " + in + ")");
    }
    if (declared) {
      const Shape given(st.shape().begin(), st.shape().end());
      if (given != *inferred) {
        return ErrorAt(f.value("shape"), named + ": declared shape " + ShapeToString(given) +
                                             " but its inputs give " + ShapeToString(*inferred));
      }
    } else {
      for (int64_t d : *inferred) st.add_shape(d);
    }
    double elements = 1;
    for (int64_t d : *inferred) elements *= static_cast<double>(d);
    if (elements > static_cast<double>(limits.max_tensor_elements) ||
        static_cast<int>(inferred->size()) > limits.max_rank) {
      return ErrorAt(f.node, named + ": output shape " + ShapeToString(*inferred) +
                                 " is over the limits (" +
                                 std::to_string(limits.max_tensor_elements) + " elements, rank " +
                                 std::to_string(limits.max_rank) + ")");
    }
    tensors[st.name()] = {st.dtype(), *inferred};
  }
  return Status::Ok();
}

YAML::Mark Reader::MarkOfMessage(const std::string& message) const {
  size_t pos = 0;
  if (message.rfind("pipeline '", 0) == 0) {
    pos = message.find("': ");  // skip the pipeline's own name
    if (pos == std::string::npos) return YAML::Mark::null_mark();
    pos += 3;
  }
  while ((pos = message.find('\'', pos)) != std::string::npos) {
    const size_t end = message.find('\'', pos + 1);
    if (end == std::string::npos) break;
    auto it = defined_.find(message.substr(pos + 1, end - pos - 1));
    if (it != defined_.end()) return it->second.Mark();
    pos = end + 1;
  }
  return YAML::Mark::null_mark();
}

StatusOr<PipelineSpec> Reader::Read(const std::string& text) {
  SCHEDFARM_ASSIGN_OR_RETURN(
      YAML::Node root,
      Load(text, "expected a mapping with name, inputs, parameters, stages and outputs"));
  SCHEDFARM_ASSIGN_OR_RETURN(
      Fields top, Map(root, "pipeline",
                      {"name", "source", "dtype", "inputs", "parameters", "stages", "outputs"}));
  PipelineSpec spec;
  if (top.has("name")) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string name, String(top.value("name"), "name"));
    spec.set_name(name);
  } else {
    std::string stem = filename().substr(filename().find_last_of('/') + 1);
    stem = stem.substr(0, stem.find('.'));
    spec.set_name(stem.empty() ? "pipeline" : stem);
  }
  spec.set_source("yaml:" + filename());
  if (top.has("source")) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string source, String(top.value("source"), "source"));
    spec.set_source(source);
  }
  DataType dtype = FLOAT32;
  if (top.has("dtype")) {
    SCHEDFARM_ASSIGN_OR_RETURN(dtype, Dtype(top.value("dtype"), "pipeline dtype"));
  }
  if (top.has("inputs")) {
    SCHEDFARM_RETURN_IF_ERROR(List(top.value("inputs"), "inputs"));
    for (const YAML::Node& n : top.value("inputs")) {
      SCHEDFARM_RETURN_IF_ERROR(ReadInput(n, dtype, spec));
    }
  }
  if (top.has("parameters")) {
    SCHEDFARM_RETURN_IF_ERROR(List(top.value("parameters"), "parameters"));
    for (const YAML::Node& n : top.value("parameters")) {
      SCHEDFARM_RETURN_IF_ERROR(ReadParameter(n, dtype, spec));
    }
  }
  SCHEDFARM_RETURN_IF_ERROR(Require(top, "stages", "pipeline"));
  SCHEDFARM_RETURN_IF_ERROR(List(top.value("stages"), "stages"));
  if (top.value("stages").size() == 0) return ErrorAt(top.value("stages"), "stages is empty");
  for (const YAML::Node& n : top.value("stages")) SCHEDFARM_RETURN_IF_ERROR(ReadStage(n, spec));
  SCHEDFARM_RETURN_IF_ERROR(Require(top, "outputs", "pipeline"));
  const YAML::Node& outputs = top.value("outputs");
  SCHEDFARM_RETURN_IF_ERROR(List(outputs, "outputs"));
  if (outputs.size() == 0) return ErrorAt(outputs, "outputs is empty");
  std::set<std::string> stage_names;
  for (const Stage& st : spec.stages()) stage_names.insert(st.name());
  for (size_t i = 0; i < outputs.size(); ++i) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string out,
                               String(outputs[i], "outputs[" + std::to_string(i) + "]"));
    if (!stage_names.count(out)) {
      return ErrorAt(outputs[i], "output '" + out + "' " +
                                     (defined_.count(out) ? "is not a stage (outputs are stages)"
                                                          : "does not name a stage"));
    }
    spec.add_outputs(out);
  }
  SCHEDFARM_RETURN_IF_ERROR(CheckStages(spec));
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  if (!graph.ok())
    return ErrorAt(MarkOfMessage(graph.status().message()), graph.status().message());
  return spec;
}

// --- writing -------------------------------------------------------------------------------

std::string ShapeList(const TensorDecl& t) { return IntList(t.shape()); }

std::string AttributeValue(const Attributes& a, const FieldDescriptor* f) {
  const auto* reflection = a.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT64:
      return std::to_string(reflection->GetInt64(a, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return reflection->GetBool(a, f) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return FormatDouble(reflection->GetDouble(a, f));
    case FieldDescriptor::CPPTYPE_ENUM: {
      const int number = reflection->GetEnumValue(a, f);
      for (const auto& [name, value] : EnumNames(f->name())) {
        if (value == number) return name;
      }
      return std::to_string(number);
    }
    default:
      return "";
  }
}

std::string RawDataList(const Parameter& p) {
  const std::string& raw = p.raw_data();
  std::string out = "[";
  if (p.tensor().dtype() == FLOAT32) {
    for (size_t i = 0; i + sizeof(float) <= raw.size(); i += sizeof(float)) {
      float v;
      std::memcpy(&v, raw.data() + i, sizeof(v));
      out += (i ? ", " : "") + FormatFloat(v);
    }
  } else {
    for (size_t i = 0; i + sizeof(double) <= raw.size(); i += sizeof(double)) {
      double v;
      std::memcpy(&v, raw.data() + i, sizeof(v));
      out += (i ? ", " : "") + FormatDouble(v);
    }
  }
  return out + "]";
}

}  // namespace

StatusOr<PipelineSpec> PipelineFromYaml(const std::string& text, const std::string& filename) {
  try {
    Reader reader(filename);
    return reader.Read(text);
  } catch (const std::exception& e) {
    return Status::Error(filename + ": cannot read the pipeline: " + e.what());
  }
}

StatusOr<PipelineSpec> PipelineFromYamlFile(const std::string& path) {
  StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status().WithContext("pipeline file");
  return PipelineFromYaml(*text, path);
}

std::string PipelineToYaml(const PipelineSpec& spec) {
  std::ostringstream out;
  out << "name: " << Quote(spec.name()) << "\n";
  out << "source: " << Quote(spec.source()) << "\n";
  // The pipeline's dtype: that of its first input (or parameter); tensors of another
  // dtype say theirs.
  DataType dtype = FLOAT32;
  if (spec.inputs_size() > 0) {
    dtype = spec.inputs(0).dtype();
  } else if (spec.parameters_size() > 0) {
    dtype = spec.parameters(0).tensor().dtype();
  }
  if (dtype != FLOAT32) out << "dtype: " << DataTypeName(dtype) << "\n";
  std::map<std::string, DataType> dtypes;
  auto tensor_fields = [&](const TensorDecl& t) {
    dtypes[t.name()] = t.dtype();
    std::string s = "name: " + Quote(t.name()) + ", shape: " + ShapeList(t);
    if (t.dtype() != dtype) s += std::string(", dtype: ") + DataTypeName(t.dtype());
    return s;
  };
  if (spec.inputs_size() > 0) {
    out << "inputs:\n";
    for (const TensorDecl& t : spec.inputs()) out << "  - {" << tensor_fields(t) << "}\n";
  }
  if (spec.parameters_size() > 0) {
    out << "parameters:\n";
    for (const Parameter& p : spec.parameters()) {
      out << "  - {" << tensor_fields(p.tensor());
      if (p.init_case() == Parameter::kRandom) {
        out << ", random: {seed: " << p.random().seed()
            << ", scale: " << FormatDouble(p.random().scale());
        if (p.random().offset() != 0) out << ", offset: " << FormatDouble(p.random().offset());
        out << "}";
      } else {
        out << ", data: " << RawDataList(p);
      }
      out << "}\n";
    }
  }
  for (const Stage& st : spec.stages()) dtypes[st.name()] = st.dtype();
  out << "stages:\n";
  for (const Stage& st : spec.stages()) {
    out << "  - {name: " << Quote(st.name()) << ", op: " << Quote(YamlOpName(st)) << ", inputs: [";
    for (int i = 0; i < st.inputs_size(); ++i) out << (i ? ", " : "") << Quote(st.inputs(i));
    out << "]";
    const Attributes& a = st.attrs();
    const auto* descriptor = Attributes::descriptor();
    const auto* reflection = a.GetReflection();
    for (int i = 0; i < descriptor->field_count(); ++i) {
      const FieldDescriptor* f = descriptor->field(i);
      const std::string& key = f->name();
      if (key == "unary" || key == "binary" || key == "reduce") continue;  // in the op name
      if (f->is_repeated()) {
        if (reflection->FieldSize(a, f) == 0) continue;
        out << ", " << key << ": [";
        for (int j = 0; j < reflection->FieldSize(a, f); ++j) {
          out << (j ? ", " : "") << reflection->GetRepeatedInt64(a, f, j);
        }
        out << "]";
      } else if (reflection->HasField(a, f)) {
        out << ", " << key << ": " << AttributeValue(a, f);
      }
    }
    out << ", shape: " << IntList(st.shape());
    auto first = st.inputs_size() > 0 ? dtypes.find(st.inputs(0)) : dtypes.end();
    if (first == dtypes.end() || first->second != st.dtype()) {
      out << ", dtype: " << DataTypeName(st.dtype());
    }
    if (!st.label().empty()) out << ", label: " << Quote(st.label());
    out << "}\n";
  }
  out << "outputs: [";
  for (int i = 0; i < spec.outputs_size(); ++i) out << (i ? ", " : "") << Quote(spec.outputs(i));
  out << "]\n";
  return out.str();
}

}  // namespace schedfarm
