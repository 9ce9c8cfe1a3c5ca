#include "pipeline/spec.h"

#include <cstdio>
#include <set>
#include <sstream>

#include "common/sha256.h"
#include "google/protobuf/descriptor.h"

namespace schedfarm {
namespace {

using google::protobuf::FieldDescriptor;

std::string FormatDouble(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

std::string FormatShape(DataType dtype, const google::protobuf::RepeatedField<int64_t>& shape) {
  std::string s = std::string(DataTypeName(dtype)) + "[";
  for (int i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// Attributes with the op's defaults made explicit and fields that do not change the
// result cleared, so that specs meaning the same computation print the same.
Attributes NormalizedAttributes(const Stage& stage) {
  Attributes a = stage.attrs();
  if (stage.op() == MATMUL || (stage.op() == UNARY && (a.unary() == LEAKY_RELU ||
                                                       a.unary() == ELU ||
                                                       a.unary() == HARD_SIGMOID ||
                                                       a.unary() == SCALE))) {
    a.set_alpha(EffectiveAlpha(stage));
  }
  if (stage.op() == MATMUL ||
      (stage.op() == UNARY && (a.unary() == HARD_SIGMOID || a.unary() == SCALE))) {
    a.set_beta(EffectiveBeta(stage));
  }
  if (stage.op() == UNARY && !IsTranscendental(a.unary())) a.clear_math();
  if (stage.op() == MATMUL && stage.inputs_size() < 3) a.clear_beta();
  return a;
}

// "name=value" for every set field, in field-number order (stable when fields are
// added: a new field left at its default does not change existing forms).
std::string FormatAttributes(const Attributes& a) {
  const auto* descriptor = Attributes::descriptor();
  const auto* reflection = a.GetReflection();
  std::string out;
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const FieldDescriptor* f = descriptor->field(i);
    if (f->is_repeated() ? reflection->FieldSize(a, f) == 0 : !reflection->HasField(a, f)) continue;
    out += " " + f->name() + "=";
    if (f->is_repeated()) {
      out += "[";
      for (int j = 0; j < reflection->FieldSize(a, f); ++j) {
        out += (j ? "," : "") + std::to_string(reflection->GetRepeatedInt64(a, f, j));
      }
      out += "]";
      continue;
    }
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT64: out += std::to_string(reflection->GetInt64(a, f)); break;
      case FieldDescriptor::CPPTYPE_BOOL: out += reflection->GetBool(a, f) ? "1" : "0"; break;
      case FieldDescriptor::CPPTYPE_DOUBLE: out += FormatDouble(reflection->GetDouble(a, f)); break;
      case FieldDescriptor::CPPTYPE_ENUM: out += reflection->GetEnum(a, f)->name(); break;
      default: out += "?"; break;
    }
  }
  return out;
}

std::string FormatParameter(const Parameter& p) {
  std::string s = "param " + FormatShape(p.tensor().dtype(), p.tensor().shape());
  if (p.init_case() == Parameter::kRandom) {
    s += " random seed=" + std::to_string(p.random().seed()) +
         " scale=" + FormatDouble(p.random().scale()) +
         " offset=" + FormatDouble(p.random().offset());
  } else {
    s += " data sha256=" + Sha256Hex(p.raw_data());
  }
  return s;
}

}  // namespace

namespace {

// The canonical form's stage lines with the stages in their canonical order.
struct CanonicalStages {
  std::vector<int> order;
  std::string text;
};

CanonicalStages EncodeCanonically(const PipelineGraph& graph) {
  const PipelineSpec& spec = graph.spec();
  std::vector<std::string> key(graph.values().size());
  std::ostringstream out;
  out << kCanonicalFormVersion << "\n";
  if (spec.boundary_layout() != LAYOUT_NATURAL) {
    out << "layout " << BoundaryLayout_Name(spec.boundary_layout()) << "\n";
  }
  for (int i = 0; i < spec.inputs_size(); ++i) {
    key[graph.FindValue(spec.inputs(i).name())] = "in" + std::to_string(i);
    out << "input " << i << " " << FormatShape(spec.inputs(i).dtype(), spec.inputs(i).shape())
        << "\n";
  }
  for (const Parameter& p : spec.parameters()) {
    key[graph.FindValue(p.tensor().name())] = "{" + FormatParameter(p) + "}";
  }

  // Stages in topological order; among ready stages, the smallest encoding first.
  // A stage is encoded once all its inputs have keys, so encodings never depend on
  // names or declaration order.
  const int n = graph.num_stages();
  std::vector<int> pending(n, 0);
  for (int s = 0; s < n; ++s) {
    for (int c : graph.consumers(s)) ++pending[c];
  }
  auto encode = [&](int s) {
    const Stage& st = graph.stage(s);
    std::string e = OpKind_Name(st.op()) + " " + FormatShape(st.dtype(), st.shape()) + " in=(";
    for (size_t i = 0; i < graph.stage_inputs(s).size(); ++i) {
      e += (i ? "," : "") + key[graph.stage_inputs(s)[i]];
    }
    return e + ")" + FormatAttributes(NormalizedAttributes(st));
  };
  std::set<std::pair<std::string, int>> ready;
  for (int s = 0; s < n; ++s) {
    if (pending[s] == 0) ready.insert({encode(s), s});
  }
  CanonicalStages result;
  while (!ready.empty()) {
    auto [encoding, s] = *ready.begin();
    ready.erase(ready.begin());
    const int position = static_cast<int>(result.order.size());
    key[graph.stage_value(s)] = "s" + std::to_string(position);
    out << "stage " << position << " " << encoding << "\n";
    result.order.push_back(s);
    for (int c : graph.consumers(s)) {
      if (--pending[c] == 0) ready.insert({encode(c), c});
    }
  }
  for (int s : graph.output_stages()) out << "output " << key[graph.stage_value(s)] << "\n";
  if (spec.checked_outputs() > 0) out << "checked outputs " << spec.checked_outputs() << "\n";
  result.text = out.str();
  return result;
}

}  // namespace

std::string CanonicalForm(const PipelineGraph& graph) { return EncodeCanonically(graph).text; }

std::vector<int> CanonicalStageOrder(const PipelineGraph& graph) {
  return EncodeCanonically(graph).order;
}

std::string PipelineId(const PipelineGraph& graph) {
  return Sha256Hex(CanonicalForm(graph)).substr(0, 32);
}

PipelineSpec CheckedPipeline(const PipelineGraph& graph) {
  PipelineSpec spec = graph.spec();
  if (spec.checked_outputs() == 0) return spec;
  spec.mutable_outputs()->DeleteSubrange(spec.checked_outputs(),
                                         spec.outputs_size() - spec.checked_outputs());
  spec.clear_checked_outputs();
  return spec;
}

const std::vector<std::string>& BoundaryLayoutNames() {
  static const std::vector<std::string> kNames = {"nchw", "channels_last"};
  return kNames;
}

std::optional<BoundaryLayout> BoundaryLayoutNamed(const std::string& name) {
  if (name == "nchw") return LAYOUT_NATURAL;
  if (name == "channels_last") return LAYOUT_CHANNELS_LAST;
  return std::nullopt;
}

bool BoundaryChannelsLast(const PipelineSpec& spec, size_t rank) {
  return spec.boundary_layout() == LAYOUT_CHANNELS_LAST && rank == 4;
}

StatusOr<PipelineGraph> ParsePipelineSpec(const std::string& bytes, const std::string& what) {
  PipelineSpec spec;
  if (!spec.ParseFromString(bytes)) {
    return Status::Error(what + ": not a valid PipelineSpec message (truncated or corrupt, " +
                         std::to_string(bytes.size()) + " bytes)");
  }
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(std::move(spec));
  if (!graph.ok()) return graph.status().WithContext(what);
  return graph;
}

}  // namespace schedfarm
