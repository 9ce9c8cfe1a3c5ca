#include "scheduler/halide/loop_nest.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <tuple>

#include "pipeline/halide/lowering.h"

namespace schedfarm {
namespace {

using Halide::Internal::For;
using Halide::Internal::Function;
using Halide::Internal::IRVisitor;
using Halide::Internal::LetStmt;
using Halide::Internal::ProducerConsumer;
using Halide::Internal::Realize;
using Halide::Internal::Stmt;

// Collects loops and placements from the statement.
class LoopCollector : public IRVisitor {
 public:
  explicit LoopCollector(LoopNest& nest) : nest_(nest) {}

 private:
  using IRVisitor::visit;

  void visit(const For* op) override {
    HalideLoop loop;
    loop.name = op->name;
    // "<func>.s<k>.<dim>[.<split vars>...]": Func names hold no dots.
    const size_t first = op->name.find('.');
    const size_t second = op->name.find('.', first + 1);
    loop.func = op->name.substr(0, first);
    if (first != std::string::npos && second != std::string::npos &&
        op->name.compare(first + 1, 1, "s") == 0) {
      loop.definition = std::stoi(op->name.substr(first + 2, second - first - 2));
    }
    loop.var = op->name.substr(op->name.rfind('.') + 1);
    std::ostringstream type;
    type << op->for_type;
    loop.type = type.str();
    if (const auto* v = op->extent.as<Halide::Internal::Variable>()) {
      const auto it = constants_.find(v->name);
      if (it != constants_.end()) loop.extent = it->second;
    } else if (const int64_t* c = Halide::Internal::as_const_int(op->extent)) {
      loop.extent = *c;
    }
    loop.depth = static_cast<int>(enclosing_.size());
    nest_.loops.push_back(loop);
    op->min.accept(this);
    op->extent.accept(this);
    enclosing_.push_back(op->name);
    op->body.accept(this);
    enclosing_.pop_back();
  }

  void visit(const LetStmt* op) override {
    const int64_t* c = Halide::Internal::as_const_int(op->value);
    if (c != nullptr) constants_[op->name] = *c;
    op->value.accept(this);
    op->body.accept(this);
    if (c != nullptr) constants_.erase(op->name);
  }

  void visit(const ProducerConsumer* op) override {
    if (op->is_producer) {
      FuncPlacement placement;
      placement.func = op->name;
      placement.compute_loop = Innermost();
      const auto it = store_loops_.find(op->name);
      if (it != store_loops_.end()) placement.store_loop = it->second;
      nest_.placements.push_back(placement);
    }
    op->body.accept(this);
  }

  void visit(const Realize* op) override {
    store_loops_[op->name] = Innermost();
    IRVisitor::visit(op);
  }

  std::string Innermost() const { return enclosing_.empty() ? "" : enclosing_.back(); }

  LoopNest& nest_;
  std::vector<std::string> enclosing_;
  std::map<std::string, int64_t> constants_;
  std::map<std::string, std::string> store_loops_;
};

// Halide names the lets it makes while inlining "t<n>" (or "<func>.s<k>.t<n>") from a
// process-wide counter: renumber them in order of appearance; and it numbers the Funcs
// of its boundary conditions after the first ("constant_exterior$<n>"): drop the
// number. So equal schedules print equal text.
std::string RenumberLets(const std::string& text) {
  const auto in_name = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$';
  };
  std::map<std::string, std::string> names;
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (!in_name(text[i])) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && in_name(text[j])) ++j;
    std::string name = text.substr(i, j - i);
    // "t<n>", or "<func>.s<k>.t<n>" for a let inside a definition.
    const size_t last = name.rfind('.') + 1;  // 0 without a dot
    if (name.size() > last + 1 && name[last] == 't' &&
        name.find_first_not_of("0123456789", last + 1) == std::string::npos) {
      const auto it = names.find(name);
      if (it == names.end()) {
        const std::string renamed = name.substr(0, last) + "t" + std::to_string(names.size());
        names[name] = renamed;
        name = renamed;
      } else {
        name = it->second;
      }
    }
    for (size_t at = name.find('$'); at != std::string::npos; at = name.find('$', at)) {
      const size_t end = std::min(name.find_first_not_of("0123456789", at + 1), name.size());
      name.erase(at, end - at);
    }
    out += name;
    i = j;
  }
  return out;
}

StatusOr<LoopNest> Collect(const LoweredPipeline& lowered) {
  // The first steps of Halide's lower(): the environment, a deep copy of it so that
  // the caller's Funcs are untouched, outputs at root, locked loop levels, wrappers,
  // the realization order, then the loop nests.
  std::map<std::string, Function> env;
  std::vector<Function> outputs;
  for (const Halide::Func& f : lowered.outputs) {
    outputs.push_back(f.function());
    const std::map<std::string, Function> calls =
        Halide::Internal::find_transitive_calls(f.function());
    env.insert(calls.begin(), calls.end());
  }
  std::tie(outputs, env) = Halide::Internal::deep_copy(outputs, env);
  for (const Function& f : outputs) Halide::Func(f).compute_root().store_root();
  for (auto& entry : env) entry.second.lock_loop_levels();
  env = Halide::Internal::wrap_func_calls(env);
  std::vector<std::string> order;
  std::vector<std::vector<std::string>> fused_groups;
  std::tie(order, fused_groups) = Halide::Internal::realization_order(outputs, env);
  bool any_memoized = false;
  const Stmt stmt = Halide::Internal::schedule_functions(outputs, fused_groups, env,
                                                         Halide::get_host_target(), any_memoized);
  LoopNest nest;
  std::ostringstream text;
  text << stmt;
  nest.stmt = RenumberLets(text.str());
  LoopCollector collector(nest);
  stmt.accept(&collector);
  return nest;
}

}  // namespace

StatusOr<LoopNest> ScheduledLoopNest(const LoweredPipeline& lowered) {
  try {
    return Collect(lowered);
  } catch (const Halide::Error& e) {
    return Status::Error(std::string("Halide's loop nest of the schedule: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Error(std::string("Halide's loop nest of the schedule: ") + e.what());
  }
}

}  // namespace schedfarm
