#include "scheduler/schedule_source.h"

#include <map>
#include <set>
#include <sstream>

#include "pipeline/lowered_names.h"
#include "pipeline/spec.h"
#include "scheduler/schedule_plan.h"

namespace schedfarm {
namespace {

// Names a Func's C++ variable must not take: C++ keywords and the Halide names the
// source uses unqualified.
const std::set<std::string>& ReservedNames() {
  static const std::set<std::string> kNames = {
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break",
      "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept",
      "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await",
      "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast",
      "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto",
      "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register",
      "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local",
      "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using",
      "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // Halide names of the source.
      "Halide", "Func", "Var", "RVar", "TailStrategy"};
  return kNames;
}

// C++ names for the Funcs: unreserved names stay, reserved ones get "_" suffixes
// until they are free.
std::vector<std::string> CppNames(const std::vector<std::string>& func_names) {
  std::set<std::string> taken;
  for (const std::string& name : func_names) {
    if (!ReservedNames().count(name)) taken.insert(name);
  }
  std::vector<std::string> names;
  for (const std::string& name : func_names) {
    std::string cpp = name;
    if (ReservedNames().count(name)) {
      while (ReservedNames().count(cpp) || taken.count(cpp)) cpp += "_";
      taken.insert(cpp);
    }
    names.push_back(cpp);
  }
  return names;
}

// Prints `object.call1().call2()...;` one call a line (one line for a single call).
void PrintChain(std::ostringstream& out, const std::string& indent, const std::string& object,
                const std::vector<std::string>& calls) {
  if (calls.empty()) return;
  if (calls.size() == 1) {
    out << indent << object << "." << calls[0] << ";\n";
    return;
  }
  out << indent << object << "\n";
  for (size_t i = 0; i < calls.size(); ++i) {
    out << indent << "    ." << calls[i] << (i + 1 == calls.size() ? ";\n" : "\n");
  }
}

// Prints `Type a("a"), b("b");` wrapped before 100 columns.
void PrintDeclaration(std::ostringstream& out, const std::string& indent, const std::string& type,
                      const std::vector<std::pair<std::string, std::string>>& vars) {
  if (vars.empty()) return;
  std::string line = indent + type + " ";
  for (size_t i = 0; i < vars.size(); ++i) {
    const std::string item =
        vars[i].first + "(\"" + vars[i].second + "\")" + (i + 1 == vars.size() ? ";" : ",");
    if (line.size() + item.size() + 1 > 100 && line.back() == ',') {
      out << line << "\n";
      line = indent + std::string(type.size() + 1, ' ') + item;
    } else {
      line += (line.back() == ' ' ? "" : " ") + item;
    }
  }
  out << line << "\n";
}

// The C++ names of the stages' Funcs and of their padded inputs ("" where none), by
// stage index.
struct SourceNames {
  std::vector<std::string> stages, padded_inputs;
};

// A padded input that a schedule may copy is "<stage>_padded", with "_" appended while
// taken.
SourceNames SourceNamesOf(const PipelineGraph& graph) {
  SourceNames names;
  names.stages = CppNames(LoweredNamesOf(graph).stages);
  std::set<std::string> taken(names.stages.begin(), names.stages.end());
  for (int s = 0; s < graph.num_stages(); ++s) {
    std::string name;
    if (PaddedCopyAllowed(graph, s, ROOT).ok()) {
      name = names.stages[s] + "_padded";
      while (taken.count(name)) name += "_";
      taken.insert(name);
    }
    names.padded_inputs.push_back(name);
  }
  return names;
}

// The block of one stage.
void PrintStage(std::ostringstream& out, const PipelineGraph& graph, const StagePlan& plan,
                const SourceNames& names) {
  const std::vector<std::string>& cpp_names = names.stages;
  const Stage& stage = graph.stage(plan.stage);
  const std::string& func = cpp_names[plan.stage];
  const std::string& copy = names.padded_inputs[plan.stage];
  out << "// stage '" << stage.name() << "' (" << OpDisplayName(stage) << ")\n";
  if (plan.packed.parameter >= 0) {
    // Packing is no scheduling call: the weights' buffer is stored in another order
    // before the pipeline is compiled.
    out << "// its weights '" << graph.spec().parameters(plan.packed.parameter).tensor().name()
        << "' are packed before compiling: stored with Halide dims {";
    for (size_t i = 0; i < plan.packed.storage_order.size(); ++i) {
      out << (i ? ", " : "") << plan.packed.storage_order[i];
    }
    out << "} innermost first (Buffer(type, sizes, storage_order), then copy_from)\n";
  }

  if (!plan.padded_copy.empty()) {
    out << "// it reads its input '" << graph.value(graph.stage_inputs(plan.stage)[0]).name
        << "' through Func " << copy
        << " (BoundaryConditions::constant_exterior of it), copied at root\n";
  }

  // Funcs the block names, which its Vars must not shadow.
  std::set<std::string> funcs = {func};
  if (!plan.padded_copy.empty()) funcs.insert(copy);
  for (const PlanCall& call : plan.location) {
    if (call.host >= 0) funcs.insert(cpp_names[call.host]);
  }
  // Vars and RVars in order of first use, with their C++ names.
  std::vector<std::pair<std::string, std::string>> vars, rvars;
  std::map<std::string, std::string> cpp_var;
  const auto declare = [&](const PlanVar& v) {
    if (cpp_var.count(v.name)) return;
    std::string cpp = v.name;
    while (funcs.count(cpp) || ReservedNames().count(cpp)) cpp += "_";
    cpp_var[v.name] = cpp;
    (v.rvar ? rvars : vars).push_back({cpp, v.name});
  };
  const auto source = [&](PlanCall call) {
    for (PlanVar& v : call.vars) {
      declare(v);
      v.name = cpp_var[v.name];
    }
    return CallSource(call, call.host >= 0 ? cpp_names[call.host] : "");
  };

  std::vector<std::string> copy_calls, func_calls, update_calls;
  for (const PlanCall& call : plan.padded_copy) copy_calls.push_back(source(call));
  for (const PlanCall& call : plan.location) func_calls.push_back(source(call));
  for (const DefinitionPlan& def : plan.definitions) {
    for (const PlanCall& call : def.calls) {
      (def.update ? update_calls : func_calls).push_back(source(call));
    }
  }
  const bool block = !vars.empty() || !rvars.empty();
  const std::string indent = block ? "  " : "";
  if (block) out << "{\n";
  PrintDeclaration(out, indent, "Var", vars);
  PrintDeclaration(out, indent, "RVar", rvars);
  PrintChain(out, indent, copy, copy_calls);
  PrintChain(out, indent, func, func_calls);
  PrintChain(out, indent, func + ".update(0)", update_calls);
  if (block) out << "}\n";
}

}  // namespace

std::vector<std::string> ScheduleSourceFuncNames(const PipelineGraph& graph) {
  return SourceNamesOf(graph).stages;
}

std::vector<std::string> ScheduleSourcePaddedInputNames(const PipelineGraph& graph) {
  return SourceNamesOf(graph).padded_inputs;
}

StatusOr<std::string> ScheduleSource(const PipelineGraph& graph, const ScheduleSpec& spec) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<StagePlan> plans, PlanSchedule(graph, spec));
  const SourceNames names = SourceNamesOf(graph);
  std::ostringstream out;
  out << "// Halide schedule of pipeline '" << graph.spec().name() << "' (id " << PipelineId(graph)
      << "), " << graph.num_stages() << " stages, exported by schedfarm.\n"
      << "// Expects `using namespace Halide;` and the lowered pipeline's Funcs in scope.\n";
  if (graph.spec().boundary_layout() == LAYOUT_CHANNELS_LAST) {
    out << "// Its 4-D inputs and outputs are stored channels innermost: each ImageParam\n"
        << "// and output_buffer() has dim(0).set_stride(Expr()) and dim(2).set_stride(1).\n";
  }
  for (const StagePlan& plan : plans) PrintStage(out, graph, plan, names);
  return out.str();
}

}  // namespace schedfarm
