#include "pipeline/torch/torch_script.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <utility>

#include "pipeline/torch/native_calls.h"

namespace schedfarm {
namespace {

// An op the generator cannot write; turned into a Status naming the stage.
struct ScriptError {
  std::string message;
};

[[noreturn]] void Fail(std::string message) { throw ScriptError{std::move(message)}; }

// A float literal TorchScript reads back as the same double.
std::string Number(double v) {
  if (std::isnan(v)) return "float('nan')";
  if (std::isinf(v)) return v > 0 ? "float('inf')" : "-float('inf')";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.17g", v);
  std::string text = buffer;
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

// A list of ints: a std::vector or a repeated proto field.
template <typename Ints>
std::string List(const Ints& values) {
  std::string text;
  for (int64_t v : values) text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "[" + text + "]";
}

std::string Join(const std::vector<std::string>& parts) {
  std::string text;
  for (const std::string& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text;
}

std::string Bool(bool value) { return value ? "True" : "False"; }

// A name as a comment shows it: printable ASCII only.
std::string Printable(const std::string& name) {
  std::string text = name;
  for (char& c : text) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return text;
}

// The expression of a unary function of `x`, as the eager program computes it.
std::string UnaryCall(const Attributes& a, const std::string& x) {
  const std::string alpha = Number(a.has_alpha() ? a.alpha() : 0);
  const std::string beta = Number(a.has_beta() ? a.beta() : 0);
  auto alpha_or = [&](double fallback) { return a.has_alpha() ? alpha : Number(fallback); };
  auto beta_or = [&](double fallback) { return a.has_beta() ? beta : Number(fallback); };
  auto call = [&](const char* op) { return std::string("torch.") + op + "(" + x + ")"; };
  switch (a.unary()) {
    case RELU:
      return call("relu");
    case SIGMOID:
      return call("sigmoid");
    case TANH:
      return call("tanh");
    case GELU:
      return call("gelu");
    case EXP:
      return call("exp");
    case LOG:
      return call("log");
    case SQRT:
      return call("sqrt");
    case RSQRT:
      return call("rsqrt");
    case NEG:
      return call("neg");
    case ABS:
      return call("abs");
    case RECIPROCAL:
      return call("reciprocal");
    case ERF:
      return call("erf");
    case CLIP:
      return "torch.clamp(" + x + ", " + Number(a.clip_min()) + ", " + Number(a.clip_max()) + ")";
    case LEAKY_RELU:
      return "torch.leaky_relu(" + x + ", " + alpha_or(0.01) + ")";
    case ELU:
      return "torch.elu(" + x + ", " + alpha_or(1.0) + ")";
    case SOFTPLUS:
      return "torch.relu(" + x + ") + torch.log1p(torch.exp(-torch.abs(" + x + ")))";
    case HARD_SIGMOID:
      return "torch.clamp(" + x + " * " + alpha_or(0.2) + " + " + beta_or(0.5) + ", 0.0, 1.0)";
    case HARD_SWISH:
      return call("hardswish");
    case SILU:
      return call("silu");
    case IDENTITY:
      return x;
    case SQUARE:
      return x + " * " + x;
    case FLOOR:
      return call("floor");
    case CEIL:
      return call("ceil");
    case SIN:
      return call("sin");
    case COS:
      return call("cos");
    case SIGN:
      return call("sign");
    case SCALE:
      return x + " * " + alpha_or(1.0) + " + " + beta_or(0.0);
    default:
      Fail("no TorchScript for unary function " + std::to_string(a.unary()));
  }
}

std::string BinaryCall(BinaryFn fn, const std::string& x, const std::string& y) {
  switch (fn) {
    case ADD:
      return x + " + " + y;
    case SUB:
      return x + " - " + y;
    case MUL:
      return x + " * " + y;
    case DIV:
      return x + " / " + y;
    case MAX:
      return "torch.maximum(" + x + ", " + y + ")";
    case MIN:
      return "torch.minimum(" + x + ", " + y + ")";
    case POW:
      return "torch.pow(" + x + ", " + y + ")";
    default:
      Fail("no TorchScript for binary function " + std::to_string(fn));
  }
}

std::string ReduceCall(const Attributes& a, const std::string& x) {
  const std::string args = ", " + List(a.axes()) + ", " + Bool(a.keepdims()) + ")";
  switch (a.reduce()) {
    case SUM:
      return "torch.sum(" + x + args;
    case MEAN:
      return "torch.mean(" + x + args;
    case REDUCE_MAX:
      return "torch.amax(" + x + args;
    case REDUCE_MIN:
      return "torch.amin(" + x + args;
    case SUM_SQUARE:
      return "torch.sum(" + x + " * " + x + args;
    default:
      Fail("no TorchScript for reduce function " + std::to_string(a.reduce()));
  }
}

// Writes the forward of one graph, stage by stage.
class Writer {
 public:
  explicit Writer(const PipelineGraph& graph) : graph_(graph) {}

  TorchScriptModule Module();

 private:
  // The statements of stage s; throws ScriptError.
  void WriteStage(int s);
  // The expression of value `id` as an operand whose result has rank `rank`: a
  // parameter of lower rank is read with leading 1s.
  std::string Ref(int id, size_t rank);
  std::string Ref(int id) { return Ref(id, graph_.value(id).shape.size()); }
  void Line(const std::string& text) { source_ += "    " + text + "\n"; }

  void Conv(int s, const std::string& out);
  void MatMul(int s, const std::string& out);
  void Pool(int s, const std::string& out);
  void Pad(int s, const std::string& out);

  const PipelineGraph& graph_;
  std::string source_;
  std::vector<ScriptAttribute> attributes_;
  std::map<std::pair<int, size_t>, std::string> parameter_names_;  // (value id, rank)
};

std::string Writer::Ref(int id, size_t rank) {
  const Value& value = graph_.value(id);
  if (value.kind == Value::Kind::kInput) return "x" + std::to_string(value.index);
  if (value.kind == Value::Kind::kStage) return "v" + std::to_string(id);
  rank = std::max(rank, value.shape.size());
  auto [it, added] = parameter_names_.emplace(std::make_pair(id, rank), "");
  if (added) {
    it->second = "p" + std::to_string(id);
    if (rank > value.shape.size()) it->second += "_" + std::to_string(rank) + "d";
    ScriptAttribute attribute;
    attribute.name = it->second;
    attribute.parameter = id;
    attribute.shape.assign(rank - value.shape.size(), 1);
    attribute.shape.insert(attribute.shape.end(), value.shape.begin(), value.shape.end());
    attributes_.push_back(std::move(attribute));
  }
  return "self." + it->second;
}

void Writer::Conv(int s, const std::string& out) {
  const std::vector<int>& in = graph_.stage_inputs(s);
  const ConvCall call = PlanConv(graph_.stage(s));
  std::string x = Ref(in[0]);
  if (!call.pad_first.empty()) {
    Line(out + " = torch.constant_pad_nd(" + x + ", " + List(call.pad_first) + ", 0.0)");
    x = out;
  }
  Line(out + " = torch.conv" + std::to_string(call.strides.size()) + "d(" + x + ", " + Ref(in[1]) +
       ", " + (in.size() > 2 ? Ref(in[2]) : "None") + ", " + List(call.strides) + ", " +
       List(call.padding) + ", " + List(call.dilations) + ", " + std::to_string(call.groups) + ")");
}

void Writer::MatMul(int s, const std::string& out) {
  const Stage& stage = graph_.stage(s);
  const Attributes& a = stage.attrs();
  const std::vector<int>& in = graph_.stage_inputs(s);
  const std::string x = Ref(in[0]) + (a.trans_a() ? ".transpose(-1, -2)" : "");
  switch (PlanMatMul(stage, graph_.input_shapes(s))) {
    case MatMulForm::kLinear:
      Line(out + " = torch.linear(" + x + ", " + Ref(in[1]) + (a.trans_b() ? "" : ".t()") + ", " +
           Ref(in[2]) + ")");
      return;
    case MatMulForm::kAddmm:
      Line(out + " = torch.addmm(" + Ref(in[2]) + ", " + x + ", " + Ref(in[1]) +
           (a.trans_b() ? ".t()" : "") + ", beta=" + Number(a.has_beta() ? a.beta() : 1.0) +
           ", alpha=" + Number(a.has_alpha() ? a.alpha() : 1.0) + ")");
      return;
    case MatMulForm::kMatmul:
      Line(out + " = torch.matmul(" + x + ", " + Ref(in[1]) +
           (a.trans_b() ? ".transpose(-1, -2)" : "") + ")");
      if (a.has_alpha() && a.alpha() != 1.0) Line(out + " = " + out + " * " + Number(a.alpha()));
      if (in.size() > 2) {
        Line(out + " = " + out + " + " + Ref(in[2]) +
             (a.has_beta() && a.beta() != 1.0 ? " * " + Number(a.beta()) : ""));
      }
      return;
  }
}

void Writer::Pool(int s, const std::string& out) {
  const Stage& stage = graph_.stage(s);
  const Attributes& a = stage.attrs();
  const int x_id = graph_.stage_inputs(s)[0];
  const PoolCall call = PlanPool(stage, graph_.value(x_id).shape);
  std::string x = Ref(x_id);
  if (!call.pad_first.empty()) {
    Line(out + " = torch.constant_pad_nd(" + x + ", " + List(call.pad_first) + ", " +
         Number(call.pad_value) + ")");
    x = out;
  }
  const size_t ns = call.kernel.size();
  if (call.form == PoolForm::kWindows) {
    std::vector<int64_t> window_dims;
    for (size_t d = 0; d < ns; ++d) {
      Line(out + " = " + x + ".unfold(" + std::to_string(2 + d) + ", " +
           std::to_string(call.spans[d]) + ", " + std::to_string(call.strides[d]) + ")" +
           (call.dilations[d] > 1 ? "[..., ::" + std::to_string(call.dilations[d]) + "]" : ""));
      x = out;
      window_dims.push_back(static_cast<int64_t>(2 + ns + d));
    }
    for (size_t d = 0; d < ns; ++d) {
      Line(out + " = " + out + ".narrow(" + std::to_string(2 + d) + ", 0, " +
           std::to_string(call.windows[d]) + ")");
    }
    ScriptAttribute counts;
    counts.name = "counts" + std::to_string(graph_.stage_value(s));
    counts.shape = call.counts.shape;
    counts.values = call.counts;
    Line(out + " = torch.sum(" + out + ", " + List(window_dims) + ") / self." + counts.name);
    attributes_.push_back(std::move(counts));
    return;
  }
  const std::string n = std::to_string(ns);
  if (call.max) {
    Line(out + " = torch.max_pool" + n + "d(" + x + ", " + List(call.kernel) + ", " +
         List(call.strides) + ", " + List(call.padding) + ", " + List(call.dilations) + ", " +
         Bool(a.ceil_mode()) + ")");
  } else {
    Line(out + " = torch.avg_pool" + n + "d(" + x + ", " + List(call.kernel) + ", " +
         List(call.strides) + ", " + List(call.padding) + ", " + Bool(a.ceil_mode()) + ", " +
         Bool(a.count_include_pad()) + ")");
  }
  if (call.form == PoolForm::kPadFirst) {
    for (size_t d = 0; d < ns; ++d) {
      Line(out + " = " + out + ".narrow(" + std::to_string(2 + d) + ", 0, " +
           std::to_string(call.windows[d]) + ")");
    }
  }
}

void Writer::Pad(int s, const std::string& out) {
  const Stage& stage = graph_.stage(s);
  const Attributes& a = stage.attrs();
  const int x_id = graph_.stage_inputs(s)[0];
  const std::string x = Ref(x_id);
  if (a.pad_mode() == CONSTANT) {
    const std::vector<int64_t> pads(a.pads().begin(), a.pads().end());
    const size_t rank = pads.size() / 2;
    const std::vector<int64_t> begins(pads.begin(), pads.begin() + rank);
    const std::vector<int64_t> ends(pads.begin() + rank, pads.end());
    Line(out + " = torch.constant_pad_nd(" + x + ", " + List(AtenPadArgument(begins, ends)) + ", " +
         Number(a.pad_value()) + ")");
    return;
  }
  if (a.pad_mode() != EDGE && a.pad_mode() != REFLECT) {
    Fail("no TorchScript for pad mode " + std::to_string(a.pad_mode()));
  }
  const bool edge = a.pad_mode() == EDGE;
  Line(out + " = " + x);
  for (const EdgePadCall& call : PlanEdgePad(stage, graph_.value(x_id).shape)) {
    const std::string d = std::to_string(call.dim);
    auto copies = [&](int64_t start, int64_t count) {
      const std::string slice = out + ".narrow(" + d + ", " + std::to_string(start) + ", " +
                                std::to_string(edge ? 1 : count) + ")";
      return edge ? "torch.repeat_interleave(" + slice + ", " + std::to_string(count) + ", " + d +
                        ")"
                  : slice + ".flip([" + d + "])";
    };
    std::vector<std::string> parts;
    if (call.begin > 0) parts.push_back(copies(call.before_start, call.begin));
    parts.push_back(out);
    if (call.end > 0) parts.push_back(copies(call.after_start, call.end));
    Line(out + " = torch.cat([" + Join(parts) + "], " + d + ")");
  }
}

void Writer::WriteStage(int s) {
  const Stage& stage = graph_.stage(s);
  const Attributes& a = stage.attrs();
  const std::vector<int>& in = graph_.stage_inputs(s);
  const std::string out = "v" + std::to_string(graph_.stage_value(s));
  source_ += "    # stage '" + Printable(stage.name()) + "' (" + OpDisplayName(stage) + ")\n";
  switch (stage.op()) {
    case CONV:
      Conv(s, out);
      return;
    case MATMUL:
      MatMul(s, out);
      return;
    case POOL:
      Pool(s, out);
      return;
    case REDUCE:
      Line(out + " = " + ReduceCall(a, Ref(in[0])));
      return;
    case UNARY:
      Line(out + " = " + UnaryCall(a, Ref(in[0])));
      return;
    case BINARY: {
      const size_t rank = static_cast<size_t>(stage.shape_size());
      Line(out + " = " + BinaryCall(a.binary(), Ref(in[0], rank), Ref(in[1], rank)));
      return;
    }
    case PAD:
      Pad(s, out);
      return;
    case CONCAT: {
      std::vector<std::string> parts;
      for (int id : in) parts.push_back(Ref(id));
      Line(out + " = torch.cat([" + Join(parts) + "], " + std::to_string(a.axis()) + ")");
      return;
    }
    case SLICE: {
      Line(out + " = " + Ref(in[0]));
      for (const SliceCall& call : PlanSlice(stage, graph_.value(in[0]).shape)) {
        if (call.flip) Line(out + " = " + out + ".flip([" + std::to_string(call.axis) + "])");
        std::string index;
        for (int64_t d = 0; d < call.axis; ++d) index += ":, ";
        Line(out + " = " + out + "[" + index + std::to_string(call.start) + ":" +
             std::to_string(call.end) + ":" + std::to_string(call.step) + "]");
      }
      return;
    }
    case TRANSPOSE:
      Line(out + " = " + Ref(in[0]) + ".permute(" + List(a.perm()) + ")");
      return;
    case RESHAPE:
      Line(out + " = " + Ref(in[0]) + ".reshape(" + List(stage.shape()) + ")");
      return;
    case UPSAMPLE:
      Line(out + " = " + Ref(in[0]));
      for (int d = 0; d < a.scales_size(); ++d) {
        if (a.scales(d) > 1) {
          Line(out + " = torch.repeat_interleave(" + out + ", " + std::to_string(a.scales(d)) +
               ", " + std::to_string(d) + ")");
        }
      }
      return;
    default:
      Fail("no TorchScript for op " + std::to_string(stage.op()));
  }
}

TorchScriptModule Writer::Module() {
  const PipelineSpec& spec = graph_.spec();
  std::string header = "def forward(self";
  for (int i = 0; i < spec.inputs_size(); ++i) header += ", x" + std::to_string(i) + ": Tensor";
  const std::vector<int>& outputs = graph_.output_stages();
  std::vector<std::string> names;
  for (int s : outputs) names.push_back("v" + std::to_string(graph_.stage_value(s)));
  std::string results = Join(names);
  std::string types = "Tensor";
  if (outputs.size() > 1) {
    types = "Tuple[Tensor";
    for (size_t i = 1; i < outputs.size(); ++i) types += ", Tensor";
    types += "]";
    results = "(" + results + ")";
  }
  source_ = header + ") -> " + types + ":\n";
  for (int s : graph_.topological_order()) {
    try {
      WriteStage(s);
    } catch (const ScriptError& e) {
      const Stage& stage = graph_.stage(s);
      Fail("stage '" + stage.name() + "' (" + OpDisplayName(stage) + "): " + e.message);
    }
  }
  source_ += "    return " + results + "\n";
  return TorchScriptModule{std::move(source_), std::move(attributes_)};
}

}  // namespace

StatusOr<TorchScriptModule> GenerateTorchScript(const PipelineGraph& graph) {
  try {
    return Writer(graph).Module();
  } catch (const ScriptError& e) {
    return Status::Error("TorchScript of pipeline '" + graph.spec().name() + "', " + e.message);
  }
}

}  // namespace schedfarm
