#include "tests/learner/lowered_nest.h"

#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "pipeline/halide/lowering.h"

namespace schedfarm {
namespace lowered_nest {
namespace {

using Halide::Expr;
using Halide::Internal::Call;
using Halide::Internal::Function;
using Halide::Internal::IRNodeType;
using Halide::Internal::Stmt;
namespace hi = Halide::Internal;

// Halide's integer division and modulo: Euclidean (the remainder is never negative).
int64_t EuclidDiv(int64_t a, int64_t b) {
  int64_t q = a / b, r = a % b;
  if (r < 0) q += b > 0 ? -1 : 1;
  return q;
}
int64_t EuclidMod(int64_t a, int64_t b) {
  const int64_t r = a % b;
  return r < 0 ? r + (b > 0 ? b : -b) : r;
}

// Evaluates the integer expressions of loop bounds, guards and regions, with the
// values of the enclosing lets and loop variables.
class ExprEvaluator {
 public:
  const std::string& error() const { return error_; }

 protected:
  void Push(const std::string& name, int64_t value) { env_[name].push_back(value); }
  void Pop(const std::string& name) {
    auto it = env_.find(name);
    it->second.pop_back();
    if (it->second.empty()) env_.erase(it);
  }

  bool Fail(const std::string& what) {
    if (error_.empty()) error_ = "cannot evaluate " + what;
    return true;
  }

  template <typename T>
  bool Binary(const Expr& e, int64_t* a, int64_t* b) {
    const T* op = e.as<T>();
    return Eval(op->a, a) && Eval(op->b, b);
  }

  bool Eval(const Expr& e, int64_t* out) {
    int64_t a = 0, b = 0;
    switch (e->node_type) {
      case IRNodeType::IntImm:
        *out = e.as<hi::IntImm>()->value;
        return true;
      case IRNodeType::UIntImm:
        *out = static_cast<int64_t>(e.as<hi::UIntImm>()->value);
        return true;
      case IRNodeType::Variable: {
        const auto it = env_.find(e.as<hi::Variable>()->name);
        if (it == env_.end()) return false;
        *out = it->second.back();
        return true;
      }
      case IRNodeType::Cast: {
        const auto* op = e.as<hi::Cast>();
        if (!op->type.is_int_or_uint() || !op->value.type().is_int_or_uint()) return false;
        if (!Eval(op->value, &a)) return false;
        *out = op->type.is_bool() ? (a != 0) : a;
        return true;
      }
      case IRNodeType::Add:
        if (!Binary<hi::Add>(e, &a, &b)) return false;
        *out = a + b;
        return true;
      case IRNodeType::Sub:
        if (!Binary<hi::Sub>(e, &a, &b)) return false;
        *out = a - b;
        return true;
      case IRNodeType::Mul:
        if (!Binary<hi::Mul>(e, &a, &b)) return false;
        *out = a * b;
        return true;
      case IRNodeType::Div:
        if (!Binary<hi::Div>(e, &a, &b) || b == 0) return false;
        *out = EuclidDiv(a, b);
        return true;
      case IRNodeType::Mod:
        if (!Binary<hi::Mod>(e, &a, &b) || b == 0) return false;
        *out = EuclidMod(a, b);
        return true;
      case IRNodeType::Min:
        if (!Binary<hi::Min>(e, &a, &b)) return false;
        *out = std::min(a, b);
        return true;
      case IRNodeType::Max:
        if (!Binary<hi::Max>(e, &a, &b)) return false;
        *out = std::max(a, b);
        return true;
      case IRNodeType::EQ:
        if (!Binary<hi::EQ>(e, &a, &b)) return false;
        *out = a == b;
        return true;
      case IRNodeType::NE:
        if (!Binary<hi::NE>(e, &a, &b)) return false;
        *out = a != b;
        return true;
      case IRNodeType::LT:
        if (!Binary<hi::LT>(e, &a, &b)) return false;
        *out = a < b;
        return true;
      case IRNodeType::LE:
        if (!Binary<hi::LE>(e, &a, &b)) return false;
        *out = a <= b;
        return true;
      case IRNodeType::GT:
        if (!Binary<hi::GT>(e, &a, &b)) return false;
        *out = a > b;
        return true;
      case IRNodeType::GE:
        if (!Binary<hi::GE>(e, &a, &b)) return false;
        *out = a >= b;
        return true;
      case IRNodeType::And:
        if (!Binary<hi::And>(e, &a, &b)) return false;
        *out = a && b;
        return true;
      case IRNodeType::Or:
        if (!Binary<hi::Or>(e, &a, &b)) return false;
        *out = a || b;
        return true;
      case IRNodeType::Not:
        if (!Eval(e.as<hi::Not>()->a, &a)) return false;
        *out = !a;
        return true;
      case IRNodeType::Select: {
        const auto* op = e.as<hi::Select>();
        if (!Eval(op->condition, &a)) return false;
        return Eval(a ? op->true_value : op->false_value, out);
      }
      case IRNodeType::Let: {
        const auto* op = e.as<hi::Let>();
        if (!Eval(op->value, &a)) return false;
        Push(op->name, a);
        const bool ok = Eval(op->body, out);
        Pop(op->name);
        return ok;
      }
      case IRNodeType::Call: {
        const auto* op = e.as<Call>();
        if (op->is_intrinsic(Call::likely) || op->is_intrinsic(Call::likely_if_innermost) ||
            op->is_intrinsic(Call::promise_clamped) ||
            op->is_intrinsic(Call::unsafe_promise_clamped)) {
          return Eval(op->args[0], out);
        }
        if (op->is_intrinsic(Call::abs)) {
          if (!Eval(op->args[0], &a)) return false;
          *out = a < 0 ? -a : a;
          return true;
        }
        return false;
      }
      default:
        return false;
    }
  }

  std::map<std::string, std::vector<int64_t>> env_;
  std::string error_;
};

// The variables an expression reads.
void AddVariables(const Expr& e, std::set<std::string>* out) {
  class Finder : public hi::IRGraphVisitor {
   public:
    explicit Finder(std::set<std::string>* out) : out_(out) {}

   private:
    using hi::IRGraphVisitor::visit;
    void visit(const hi::Variable* op) override { out_->insert(op->name); }
    std::set<std::string>* out_;
  } finder(out);
  e.accept(&finder);
}

// Walks every iteration of one realization of a Func (its produce statement) and counts
// how often each of its definitions runs; the producers computed inside it are skipped.
// A loop whose body's control flow (nested loop bounds, guards, and the lets they read)
// does not depend on its variable runs its body once, counted `extent` times.
class IterationCounter : public ExprEvaluator {
 public:
  // `env`: the values of the variables around the produce statement.
  IterationCounter(std::string func, std::map<std::string, std::vector<int64_t>> env)
      : func_(std::move(func)) {
    env_ = std::move(env);
  }

  // Per definition (0 pure, 1 update), after Count.
  const std::vector<DefinitionCount>& counts() const { return counts_; }
  // Per loop of the Func: times it starts (with a positive extent).
  const std::map<std::string, double>& loop_starts() const { return loop_starts_; }

  void Count(const Stmt& s, double times) {
    if (!s.defined() || !error_.empty()) return;
    switch (s->node_type) {
      case IRNodeType::LetStmt: {
        const auto* op = s.as<hi::LetStmt>();
        int64_t v = 0;
        const bool bound = Eval(op->value, &v);
        if (bound) Push(op->name, v);
        Count(op->body, times);
        if (bound) Pop(op->name);
        return;
      }
      case IRNodeType::For:
        return CountFor(s.as<hi::For>(), times);
      case IRNodeType::IfThenElse: {
        const auto* op = s.as<hi::IfThenElse>();
        int64_t c = 0;
        if (!Eval(op->condition, &c)) {
          Fail("an if condition");
          return;
        }
        return Count(c ? op->then_case : op->else_case, times);
      }
      case IRNodeType::Provide:
        return Provide(s.as<hi::Provide>(), times);
      case IRNodeType::Realize:
        return Count(s.as<hi::Realize>()->body, times);
      case IRNodeType::ProducerConsumer: {
        const auto* op = s.as<hi::ProducerConsumer>();
        if (op->is_producer && op->name != func_) return;  // another Func's work
        return Count(op->body, times);
      }
      case IRNodeType::Block: {
        const auto* op = s.as<hi::Block>();
        Count(op->first, times);
        return Count(op->rest, times);
      }
      case IRNodeType::Fork: {
        const auto* op = s.as<hi::Fork>();
        Count(op->first, times);
        return Count(op->rest, times);
      }
      case IRNodeType::Atomic:
        return Count(s.as<hi::Atomic>()->body, times);
      default:
        return;
    }
  }

 private:
  // Executions of one Provide by the lanes of the vectorized loop being walked lane by
  // lane, at one iteration of the loops inside it.
  struct LaneRuns {
    int lanes = 0;
    double times = 0;  // summed over the lanes
  };
  using LaneKey = std::pair<const hi::Provide*, std::vector<int64_t>>;

  void CountFor(const hi::For* op, double times) {
    int64_t min = 0, extent = 0;
    if (!Eval(op->min, &min) || !Eval(op->extent, &extent)) {
      Fail("the bounds of loop " + op->name);
      return;
    }
    if (extent <= 0) return;
    if (!by_lane_) loop_starts_[op->name] += times;
    const bool varies = Control(op->body).count(op->name) > 0;
    if (op->for_type == hi::ForType::Vectorized && !by_lane_) {
      if (!varies) {  // every lane runs the same statements: vectors
        const int64_t width = vector_width_;
        vector_width_ = extent;
        Push(op->name, min);
        Count(op->body, times);
        Pop(op->name);
        vector_width_ = width;
        return;
      }
      // A guard depends on the lane: each lane's runs, then the Provides all lanes
      // reached at the same inner iteration run as vectors, the others as scalars.
      by_lane_ = true;
      lane_runs_.clear();
      for (int64_t i = 0; i < extent; ++i) {
        Push(op->name, min + i);
        Count(op->body, times);
        Pop(op->name);
      }
      by_lane_ = false;
      for (const auto& [key, runs] : lane_runs_) {
        DefinitionCount& c = Definition(key.first);
        c.iterations += runs.times;
        if (runs.lanes == extent) {
          c.vectors += runs.times / static_cast<double>(extent);
        } else {
          c.scalars += runs.times;
        }
      }
      return;
    }
    if (!varies) {
      Push(op->name, min);
      Count(op->body, times * static_cast<double>(extent));
      Pop(op->name);
      return;
    }
    for (int64_t i = 0; i < extent; ++i) {
      Push(op->name, min + i);
      if (by_lane_) inner_.push_back(i);
      Count(op->body, times);
      if (by_lane_) inner_.pop_back();
      Pop(op->name);
    }
  }

  void Provide(const hi::Provide* op, double times) {
    if (op->name != func_) return;
    if (by_lane_) {
      LaneRuns& runs = lane_runs_[LaneKey(op, inner_)];
      runs.lanes += 1;
      runs.times += times;
      return;
    }
    DefinitionCount& c = Definition(op);
    if (vector_width_ > 0) {
      c.iterations += times * static_cast<double>(vector_width_);
      c.vectors += times;
    } else {
      c.iterations += times;
      c.scalars += times;
    }
  }

  // The count of the definition a Provide belongs to: an update reads its own Func.
  DefinitionCount& Definition(const hi::Provide* op) {
    auto found = definition_.find(op);
    if (found == definition_.end()) {
      class SelfCall : public hi::IRGraphVisitor {
       public:
        explicit SelfCall(const std::string& name) : name_(name) {}
        bool found = false;

       private:
        using hi::IRGraphVisitor::visit;
        void visit(const Call* op) override {
          found = found || (op->call_type == Call::Halide && op->name == name_);
          hi::IRGraphVisitor::visit(op);
        }
        const std::string& name_;
      } self(op->name);
      for (const Expr& e : op->values) e.accept(&self);
      found = definition_.emplace(op, self.found ? 1 : 0).first;
      if (counts_.size() <= static_cast<size_t>(found->second)) counts_.resize(found->second + 1);
    }
    return counts_[found->second];
  }

  // The variables the control flow of `s` reads: nested loop bounds, if conditions, and
  // the values of the lets these read.
  const std::set<std::string>& Control(const Stmt& s) {
    const auto found = control_.find(s.get());
    if (found != control_.end()) return found->second;
    std::set<std::string> vars;
    auto add = [&](const Stmt& child) {
      if (!child.defined()) return;
      const std::set<std::string>& c = Control(child);
      vars.insert(c.begin(), c.end());
    };
    switch (s->node_type) {
      case IRNodeType::LetStmt: {
        const auto* op = s.as<hi::LetStmt>();
        add(op->body);
        if (vars.erase(op->name) > 0) AddVariables(op->value, &vars);
        break;
      }
      case IRNodeType::For: {
        const auto* op = s.as<hi::For>();
        add(op->body);
        vars.erase(op->name);
        AddVariables(op->min, &vars);
        AddVariables(op->extent, &vars);
        break;
      }
      case IRNodeType::IfThenElse: {
        const auto* op = s.as<hi::IfThenElse>();
        AddVariables(op->condition, &vars);
        add(op->then_case);
        add(op->else_case);
        break;
      }
      case IRNodeType::Realize:
        add(s.as<hi::Realize>()->body);
        break;
      case IRNodeType::ProducerConsumer: {
        const auto* op = s.as<hi::ProducerConsumer>();
        if (!op->is_producer || op->name == func_) add(op->body);
        break;
      }
      case IRNodeType::Block:
        add(s.as<hi::Block>()->first);
        add(s.as<hi::Block>()->rest);
        break;
      case IRNodeType::Fork:
        add(s.as<hi::Fork>()->first);
        add(s.as<hi::Fork>()->rest);
        break;
      case IRNodeType::Atomic:
        add(s.as<hi::Atomic>()->body);
        break;
      default:
        break;
    }
    return control_.emplace(s.get(), std::move(vars)).first->second;
  }

  const std::string func_;
  std::vector<DefinitionCount> counts_;
  std::map<std::string, double> loop_starts_;
  std::map<const hi::Provide*, int> definition_;
  std::map<const hi::IRNode*, std::set<std::string>> control_;
  int64_t vector_width_ = 0;    // > 0 inside a vectorized loop whose lanes run together
  bool by_lane_ = false;        // walking a vectorized loop lane by lane
  std::vector<int64_t> inner_;  // iterations of the loops iterated inside it
  std::map<LaneKey, LaneRuns> lane_runs_;
};

// Walks the statement along the representative path (see the header).
class PathWalker : public ExprEvaluator {
 public:
  // `funcs`: the pure var names (Halide order) and the number of definitions of each
  // Func, to read the regions its definitions compute.
  struct FuncInfo {
    std::vector<std::string> args;
    int definitions = 1;
  };
  // With `count_iterations`, each realization on the path counts its definitions' runs
  // (times the iterations of the loops around it).
  PathWalker(PathNest& nest, std::map<std::string, FuncInfo> funcs, bool count_iterations)
      : nest_(nest), funcs_(std::move(funcs)), count_iterations_(count_iterations) {}

  // The counts of the realizations on the path, per Func.
  void SaveCounts() {
    for (Produced& p : produced_) {
      nest_.definitions[p.func] = std::move(p.definitions);
      nest_.loop_starts.insert(p.loop_starts.begin(), p.loop_starts.end());
    }
  }

  // False when a tail guard failed on the way (the enclosing loop retries).
  bool Walk(const Stmt& s) {
    if (!s.defined() || !error_.empty()) return true;
    switch (s->node_type) {
      case IRNodeType::LetStmt: {
        const auto* op = s.as<hi::LetStmt>();
        int64_t v = 0;
        const bool bound = Eval(op->value, &v);
        if (bound) Push(op->name, v);
        const bool ok = Walk(op->body);
        if (bound) Pop(op->name);
        return ok;
      }
      case IRNodeType::For:
        return WalkFor(s.as<hi::For>());
      case IRNodeType::Realize: {
        const auto* op = s.as<hi::Realize>();
        PathRealization r;
        r.func = op->name;
        for (const Halide::Range& range : op->bounds) {
          int64_t extent = 0;
          if (!Eval(range.extent, &extent)) return Fail("the extent of realization " + op->name);
          r.extents.push_back(extent);
        }
        r.enclosing_iterations = iterations_;
        const auto info = funcs_.find(op->name);
        if (info != funcs_.end()) {
          for (const std::string& arg : info->second.args) {
            int64_t lo = 0, hi = -1;
            for (int k = 0; k < info->second.definitions; ++k) {
              const std::string prefix = op->name + ".s" + std::to_string(k) + "." + arg;
              const auto min = env_.find(prefix + ".min"), max = env_.find(prefix + ".max");
              if (min == env_.end() || max == env_.end()) {
                return Fail("the region of " + prefix);
              }
              lo = k == 0 ? min->second.back() : std::min(lo, min->second.back());
              hi = k == 0 ? max->second.back() : std::max(hi, max->second.back());
            }
            r.computed.push_back(hi - lo + 1);
          }
        }
        nest_.realizations.push_back(r);
        return Walk(op->body);
      }
      case IRNodeType::ProducerConsumer: {
        const auto* op = s.as<hi::ProducerConsumer>();
        if (op->is_producer && count_iterations_) {
          IterationCounter counter(op->name, env_);
          counter.Count(op->body, 1);
          if (!counter.error().empty()) {
            if (error_.empty()) {
              error_ = counter.error() + " (counting the runs of " + op->name + ")";
            }
            return true;
          }
          Produced& p = produced_.emplace_back();
          p.func = op->name;
          p.definitions = counter.counts();
          for (DefinitionCount& c : p.definitions) {
            c.iterations *= iterations_;
            c.vectors *= iterations_;
            c.scalars *= iterations_;
          }
          for (const auto& [loop, starts] : counter.loop_starts()) {
            p.loop_starts.emplace_back(loop, starts * iterations_);
          }
        }
        return Walk(op->body);
      }
      case IRNodeType::Block: {
        const auto* op = s.as<hi::Block>();
        return Walk(op->first) && Walk(op->rest);
      }
      case IRNodeType::IfThenElse: {
        const auto* op = s.as<hi::IfThenElse>();
        int64_t c = 0;
        if (!Eval(op->condition, &c)) {
          return Walk(op->then_case) && Walk(op->else_case);
        }
        if (c) return Walk(op->then_case);
        if (op->else_case.defined()) return Walk(op->else_case);
        return !IsGuard(op->condition);
      }
      case IRNodeType::Atomic:
        return Walk(s.as<hi::Atomic>()->body);
      case IRNodeType::Fork: {
        const auto* op = s.as<hi::Fork>();
        return Walk(op->first) && Walk(op->rest);
      }
      default:
        return true;  // provides, asserts, evaluates: nothing to record
    }
  }

 private:
  bool WalkFor(const hi::For* op) {
    int64_t min = 0, extent = 0;
    if (!Eval(op->min, &min) || !Eval(op->extent, &extent)) {
      return Fail("the bounds of loop " + op->name);
    }
    PathLoop loop;
    loop.name = op->name;
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
    loop.extent = extent;
    nest_.loops.push_back(loop);
    if (extent <= 0) return true;
    const size_t loops_before = nest_.loops.size(), realizations_before = nest_.realizations.size();
    const size_t produced_before = produced_.size();
    for (int64_t i = (extent - 1) / 2; i >= 0; --i) {
      nest_.loops.resize(loops_before);
      nest_.realizations.resize(realizations_before);
      produced_.resize(produced_before);
      Push(op->name, min + i);
      iterations_ *= static_cast<double>(extent);
      const bool ok = Walk(op->body);
      iterations_ /= static_cast<double>(extent);
      Pop(op->name);
      if (ok) return true;
    }
    return false;
  }

  // Whether a condition holds a likely() call: Halide's tail guards do.
  static bool IsGuard(const Expr& e) {
    class FindLikely : public hi::IRVisitor {
     public:
      bool found = false;

     private:
      using hi::IRVisitor::visit;
      void visit(const Call* op) override {
        if (op->is_intrinsic(Call::likely) || op->is_intrinsic(Call::likely_if_innermost)) {
          found = true;
        }
        hi::IRVisitor::visit(op);
      }
    } finder;
    e.accept(&finder);
    return finder.found;
  }

  PathNest& nest_;
  const std::map<std::string, FuncInfo> funcs_;
  const bool count_iterations_;
  double iterations_ = 1;  // product of the extents of the loops around the walk
  // The counts of the realizations on the path so far.
  struct Produced {
    std::string func;
    std::vector<DefinitionCount> definitions;
    std::vector<std::pair<std::string, double>> loop_starts;
  };
  std::vector<Produced> produced_;
};

StatusOr<PathNest> Lower(const LoweredPipeline& lowered, bool count_iterations) {
  // The first steps of Halide's lower() on a deep copy (as scheduler/halide/loop_nest.cc),
  // then bounds inference and allocation bounds inference. Func value bounds are left
  // empty: no index of this IR depends on a Func's values.
  std::map<std::string, Function> env;
  std::vector<Function> outputs;
  for (const Halide::Func& f : lowered.outputs) {
    outputs.push_back(f.function());
    const std::map<std::string, Function> calls = hi::find_transitive_calls(f.function());
    env.insert(calls.begin(), calls.end());
  }
  std::tie(outputs, env) = hi::deep_copy(outputs, env);
  for (const Function& f : outputs) Halide::Func(f).compute_root().store_root();
  for (auto& entry : env) entry.second.lock_loop_levels();
  env = hi::wrap_func_calls(env);
  std::vector<std::string> order;
  std::vector<std::vector<std::string>> fused_groups;
  std::tie(order, fused_groups) = hi::realization_order(outputs, env);
  bool any_memoized = false;
  const Halide::Target target = Halide::get_host_target();
  Stmt s = hi::schedule_functions(outputs, fused_groups, env, target, any_memoized);
  const std::map<std::pair<std::string, int>, hi::Interval> func_bounds;
  s = hi::bounds_inference(s, outputs, order, fused_groups, env, func_bounds, target);
  s = hi::allocation_bounds_inference(s, env, func_bounds);

  std::map<std::string, PathWalker::FuncInfo> funcs;
  for (const auto& [name, function] : env) {
    PathWalker::FuncInfo& info = funcs[name];
    info.args = function.args();
    info.definitions = 1 + static_cast<int>(function.updates().size());
  }
  PathNest nest;
  PathWalker walker(nest, std::move(funcs), count_iterations);
  walker.Walk(s);
  if (!walker.error().empty()) return Status::Error("lowered loop nest: " + walker.error());
  walker.SaveCounts();
  return nest;
}

}  // namespace

StatusOr<PathNest> WalkLoweredNest(const LoweredPipeline& lowered, bool count_iterations) {
  try {
    return Lower(lowered, count_iterations);
  } catch (const Halide::Error& e) {
    return Status::Error(std::string("Halide's bounds inference of the schedule: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Error(std::string("Halide's bounds inference of the schedule: ") + e.what());
  }
}

}  // namespace lowered_nest
}  // namespace schedfarm
