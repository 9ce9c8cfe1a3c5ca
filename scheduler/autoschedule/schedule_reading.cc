#include "scheduler/autoschedule/schedule_reading.h"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "common/int_math.h"
#include "common/text.h"
#include "scheduler/layouts.h"

namespace schedfarm {

std::string RefName(const LoopRef& ref, int num_levels) {
  return LoopVarName(ref.dim(), ref.level(), num_levels);
}

namespace {

using Halide::Internal::Definition;
using Halide::Internal::Dim;
using Halide::Internal::ForType;
using Halide::Internal::Function;
using Halide::Internal::Split;

constexpr int kMaxLevels = 3;

std::string ForTypeName(ForType t) {
  std::ostringstream out;
  out << t;
  return out.str();
}

std::string TailName(Halide::TailStrategy t) {
  switch (t) {
    case Halide::TailStrategy::RoundUp:
      return "RoundUp";
    case Halide::TailStrategy::GuardWithIf:
      return "GuardWithIf";
    case Halide::TailStrategy::Predicate:
      return "Predicate";
    case Halide::TailStrategy::PredicateLoads:
      return "PredicateLoads";
    case Halide::TailStrategy::PredicateStores:
      return "PredicateStores";
    case Halide::TailStrategy::ShiftInwards:
      return "ShiftInwards";
    case Halide::TailStrategy::Auto:
      return "Auto";
  }
  return "?";
}

std::optional<TailStrategy> ToSpecTail(Halide::TailStrategy t) {
  switch (t) {
    case Halide::TailStrategy::RoundUp:
      return TAIL_ROUND_UP;
    case Halide::TailStrategy::GuardWithIf:
      return TAIL_GUARD_WITH_IF;
    case Halide::TailStrategy::ShiftInwards:
      return TAIL_SHIFT_INWARDS;
    case Halide::TailStrategy::Auto:
      return TAIL_AUTO;
    default:
      return std::nullopt;
  }
}

// ---------------------------------------------------------------------------------
// Reading one definition: its splits replayed on the natural dims, then its Dims.
// ---------------------------------------------------------------------------------

// One loop of a definition in the space's terms, innermost first.
struct ReadLoop {
  LoopRef ref;
  int64_t extent = 0;
  ForType for_type = ForType::Serial;
};
class DefinitionReader {
 public:
  DefinitionReader(const std::string& stage, const Definition& def, bool update,
                   const StageLoops& natural)
      : stage_(stage), def_(def), update_(update) {
    // Natural dims: for an update the reduction dims innermost, then the pure dims.
    if (update) {
      for (const LoopDim& d : natural.reduction) AddDim(d, true);
    }
    for (const LoopDim& d : natural.pure) AddDim(d, false);
  }

  DefinitionReading Read() {
    const Halide::Internal::StageSchedule& sched = def_.schedule();
    if (update_) CheckReductionVars(sched);
    for (const Split& split : sched.splits()) Replay(split);
    ReadDims(sched.dims());
    ReadExtras();
    return Finish();
  }

 private:
  struct DimChain {
    std::string dim;
    int64_t extent = 0;
    std::vector<std::string> vars;  // levels, outermost first
    std::vector<int64_t> inner;     // extents of vars[1..]
    bool reduction = false;
    bool broken = false;  // its splits do not fit: imported unsplit
  };
  // A set of loops Halide restructured beyond the space (fused, or split after a fuse):
  // imported as its member dims' loops, placed where the first of its loops is.
  struct Group {
    std::vector<std::pair<int, std::string>> leaves;  // (chain index, level var), inner first
    std::string origin;                               // the directive, for messages
  };
  struct Node {
    int chain = -1;  // a level of chains_[chain]
    int group = -1;  // or a loop of groups_[group]
  };

  void AddDim(const LoopDim& d, bool reduction) {
    DimChain c;
    c.reduction = reduction;
    c.dim = d.name;
    c.extent = d.extent;
    c.vars = {d.name};
    nodes_[d.name] = Node{static_cast<int>(chains_.size()), -1};
    chains_.push_back(std::move(c));
  }

  std::string Where() const { return update_ ? "update(0)." : ""; }

  void Leave(const std::string& directive, const std::string& why, bool changes = true) {
    left_out_.push_back({stage_, Where() + directive, why, changes});
  }

  void CheckReductionVars(const Halide::Internal::StageSchedule& sched) {
    std::vector<std::string> have, want;
    for (const auto& rv : sched.rvars()) have.push_back(rv.var);
    for (const DimChain& c : chains_) {
      if (c.reduction) want.push_back(c.dim);
    }
    std::vector<std::string> sorted_have = have, sorted_want = want;
    std::sort(sorted_have.begin(), sorted_have.end());
    std::sort(sorted_want.begin(), sorted_want.end());
    if (sorted_have != sorted_want) {
      Leave("rfactor", "the reduction runs over {" + Join(have, ", ") + "} instead of {" +
                           Join(want, ", ") +
                           "}: part of it moved to an intermediate Func (rfactor), which the "
                           "schedule space does not have");
    }
  }

  // The leaves (chain, var) a node stands for.
  std::vector<std::pair<int, std::string>> LeavesOf(const std::string& var, const Node& n) const {
    if (n.group >= 0) return groups_[n.group].leaves;
    return {{n.chain, var}};
  }

  int NewGroup(std::vector<std::pair<int, std::string>> leaves, const std::string& origin) {
    Group g;
    g.leaves = std::move(leaves);
    g.origin = origin;
    groups_.push_back(std::move(g));
    return static_cast<int>(groups_.size()) - 1;
  }

  // old_var is the fused loop, of `inner` (inside) and `outer`.
  void Fuse(const Split& split) {
    const std::string directive =
        "fuse(" + split.inner + ", " + split.outer + ", " + split.old_var + ")";
    auto inner = nodes_.find(split.inner);
    auto outer = nodes_.find(split.outer);
    if (inner == nodes_.end() || outer == nodes_.end()) {
      Leave(directive, "fuses loops that are not loops of the stage's definition");
      return;
    }
    std::vector<std::pair<int, std::string>> leaves = LeavesOf(split.inner, inner->second);
    for (const auto& leaf : LeavesOf(split.outer, outer->second)) leaves.push_back(leaf);
    Leave(directive,
          "the schedule space has no fused loops; imported as the loops it fuses, "
          "parallel on the outermost of them with extent > 1 if the fused loop is");
    const int g = NewGroup(std::move(leaves), directive);
    nodes_.erase(split.inner);
    nodes_.erase(split.outer);
    nodes_[split.old_var] = Node{-1, g};
  }

  void Replay(const Split& split) {
    if (split.split_type == Split::FuseVars) return Fuse(split);
    auto it = nodes_.find(split.old_var);
    if (it == nodes_.end()) {
      // A variable this reader does not know (rfactor's new pure var, or a purified
      // RVar of it): the loops made from it stay unknown.
      Leave(SplitSource(split), "'" + split.old_var + "' is not a loop of the stage's definition");
      return;
    }
    const Node node = it->second;
    switch (split.split_type) {
      case Split::RenameVar:
        nodes_.erase(it);
        nodes_[split.outer] = node;
        if (node.chain >= 0) Rename(node.chain, split.old_var, split.outer);
        return;
      case Split::PurifyRVar:
        Leave("purify(" + split.old_var + ")",
              "the RVar is made a pure Var (by rfactor), which the schedule space does not do");
        nodes_.erase(it);
        nodes_[split.outer] = node;
        if (node.chain >= 0) Rename(node.chain, split.old_var, split.outer);
        return;
      case Split::FuseVars:
      case Split::SplitVar:
        break;
    }
    nodes_.erase(it);
    splits_.push_back({split, node.group >= 0 ? -1 : node.chain});
    if (node.group >= 0) {
      // A split of a fused loop: both parts stand for the whole group.
      Leave(SplitSource(split), "splits a fused loop (" + groups_[node.group].origin +
                                    "), which the schedule space cannot express");
      nodes_[split.outer] = node;
      nodes_[split.inner] = node;
      return;
    }
    DimChain& c = chains_[node.chain];
    nodes_[split.outer] = node;
    nodes_[split.inner] = node;
    if (c.broken) return;
    const int64_t* factor = Halide::Internal::as_const_int(split.factor);
    const auto pos = std::find(c.vars.begin(), c.vars.end(), split.old_var);
    std::string why;
    if (factor == nullptr || *factor < 1) {
      why = "the split factor is not a positive constant";
    } else if (static_cast<int>(c.vars.size()) >= kMaxLevels) {
      why = "it would split dim " + c.dim + " into more than " + std::to_string(kMaxLevels) +
            " levels";
    } else if (pos == c.vars.end()) {
      why = "internal: the split variable is not a level of dim " + c.dim;
    } else if (pos != c.vars.begin()) {
      // Splitting an inner level of known extent e: exact only if the factor divides e
      // (else its parts have extents ceil(e/f) and f, whose product exceeds e).
      const size_t idx = pos - c.vars.begin();
      const int64_t e = c.inner[idx - 1];
      if (e % *factor != 0) {
        why = "it splits " + split.old_var + " (extent " + std::to_string(e) + ") by " +
              std::to_string(*factor) +
              ", which does not divide it: the levels' extents are not a DimSplit of " + c.dim;
      }
    }
    if (!why.empty()) {
      c.broken = true;
      Leave(SplitSource(split), why + "; dim " + c.dim + " is imported unsplit");
      return;
    }
    const size_t idx = pos - c.vars.begin();
    // vars[idx] becomes (outer, inner): inner has extent `factor`, outer the rest.
    c.vars[idx] = split.outer;
    c.vars.insert(c.vars.begin() + idx + 1, split.inner);
    if (idx == 0) {
      c.inner.insert(c.inner.begin(), *factor);
    } else {
      const int64_t e = c.inner[idx - 1];
      c.inner[idx - 1] = e / *factor;
      c.inner.insert(c.inner.begin() + idx, *factor);
    }
  }

  // The tail strategy under which Halide would record the imported splits' tails as
  // they are. Halide 14 resolves TailStrategy::Auto when a split is made: GuardWithIf
  // for RVars, RoundUp in updates, and in pure definitions ShiftInwards, or RoundUp
  // for a variable descending from the outer part of a ShiftInwards split whose
  // factor is at least this split's.
  void ReadTail(DefinitionSchedule& s) {
    std::vector<const SplitRecord*> imported;
    for (const SplitRecord& r : splits_) {
      if (r.chain >= 0 && !chains_[r.chain].broken) imported.push_back(&r);
    }
    if (imported.empty()) return;
    const auto factor_of = [](const Split& sp) {
      const int64_t* f = Halide::Internal::as_const_int(sp.factor);
      return f == nullptr ? int64_t{0} : *f;
    };
    const auto reproduces = [&](TailStrategy tail) {
      // Variables descending from the outer part of a ShiftInwards split -> its factor.
      std::map<std::string, int64_t> descends;
      for (const SplitRecord& r : splits_) {
        const Split& sp = r.split;
        const auto ancestor = descends.find(sp.old_var);
        Halide::TailStrategy want = Halide::TailStrategy::Auto;
        switch (tail) {
          case TAIL_GUARD_WITH_IF:
            want = Halide::TailStrategy::GuardWithIf;
            break;
          case TAIL_SHIFT_INWARDS:
            want = Halide::TailStrategy::ShiftInwards;
            break;
          case TAIL_ROUND_UP:
            want = Halide::TailStrategy::RoundUp;
            break;
          default:
            if (sp.exact) {
              want = Halide::TailStrategy::GuardWithIf;
            } else if (update_ ||
                       (ancestor != descends.end() && ancestor->second >= factor_of(sp))) {
              want = Halide::TailStrategy::RoundUp;
            } else {
              want = Halide::TailStrategy::ShiftInwards;
            }
            break;
        }
        const bool counts = r.chain >= 0 && !chains_[r.chain].broken;
        if (counts && want != sp.tail) return false;
        if (sp.tail == Halide::TailStrategy::ShiftInwards) {
          descends[sp.outer] = factor_of(sp);
        } else if (ancestor != descends.end()) {
          const int64_t f = ancestor->second;
          descends[sp.inner] = f;
          descends[sp.outer] = f;
        }
      }
      return true;
    };
    for (TailStrategy tail : {TAIL_AUTO, TAIL_GUARD_WITH_IF, TAIL_SHIFT_INWARDS, TAIL_ROUND_UP}) {
      if (reproduces(tail)) {
        s.set_tail(tail);
        return;
      }
    }
    // Mixed: GuardWithIf if any split uses it (it is legal for every factor).
    std::set<Halide::TailStrategy> tails;
    std::vector<std::string> sources;
    for (const SplitRecord* r : imported) {
      tails.insert(r->split.tail);
      sources.push_back(SplitSource(r->split));
    }
    const Halide::TailStrategy chosen = tails.count(Halide::TailStrategy::GuardWithIf)
                                            ? Halide::TailStrategy::GuardWithIf
                                            : *tails.begin();
    std::vector<std::string> names;
    for (Halide::TailStrategy t : tails) names.push_back(TailName(t));
    std::optional<TailStrategy> spec_tail = ToSpecTail(chosen);
    Leave("tails " + Join(names, ", "),
          "the splits (" + Join(sources, "; ") +
              ") mix tail strategies that no one tail strategy of the definition gives; "
              "imported with " +
              (spec_tail ? TailName(chosen) : std::string("Auto")),
          false);
    s.set_tail(spec_tail.value_or(TAIL_AUTO));
  }

  static std::string SplitSource(const Split& split) {
    std::ostringstream out;
    out << "split(" << split.old_var << ", " << split.outer << ", " << split.inner << ", "
        << split.factor << ", TailStrategy::" << TailName(split.tail) << ")";
    return out.str();
  }

  void Rename(int chain, const std::string& from, const std::string& to) {
    for (std::string& v : chains_[chain].vars) {
      if (v == from) v = to;
    }
    for (Group& g : groups_) {
      for (auto& leaf : g.leaves) {
        if (leaf.first == chain && leaf.second == from) leaf.second = to;
      }
    }
  }

  int Levels(const DimChain& c) const { return c.broken ? 1 : static_cast<int>(c.vars.size()); }

  // The space's loop of a level var of chain `ci`.
  std::pair<LoopRef, int64_t> RefOf(int ci, const std::string& var) const {
    const DimChain& c = chains_[ci];
    LoopRef ref;
    ref.set_stage(stage_);
    ref.set_dim(c.dim);
    ref.set_update(update_);
    if (c.broken) return {ref, c.extent};
    const int level =
        static_cast<int>(std::find(c.vars.begin(), c.vars.end(), var) - c.vars.begin());
    ref.set_level(level);
    int64_t inner = 1;
    for (int64_t e : c.inner) inner *= e;
    return {ref, level == 0 ? CeilDiv(c.extent, inner) : c.inner[level - 1]};
  }

  void ReadDims(const std::vector<Dim>& dims) {
    for (const Dim& d : dims) {
      if (d.var == Halide::Var::outermost().name()) continue;
      ForType t = d.for_type;
      if (t != ForType::Serial && t != ForType::Parallel && t != ForType::Vectorized &&
          t != ForType::Unrolled) {
        Leave(ForTypeName(t) + "(" + d.var + ")",
              "the schedule space has CPU loops only (serial, parallel, vectorized, unrolled); "
              "imported as serial");
        t = ForType::Serial;
      }
      auto it = nodes_.find(d.var);
      if (it == nodes_.end()) {
        Leave("loop " + d.var,
              "not a loop of the stage's dims or of their splits; left out "
              "of the loop order");
        continue;
      }
      const Node& n = it->second;
      const bool grouped = n.group >= 0 || chains_[n.chain].broken;
      if (!grouped) {
        auto [ref, extent] = RefOf(n.chain, d.var);
        loops_.push_back({ref, extent, t});
        var_loops_[d.var] = ref;
        continue;
      }
      if (t == ForType::Vectorized || t == ForType::Unrolled) {
        Leave(ForTypeName(t) + "(" + d.var + ")",
              "the loop is not one loop of the schedule space (" + GroupOrigin(n, d.var) +
                  "); not imported");
      }
      // A broken dim is a group of its own: its one unsplit loop.
      const std::string key =
          n.group >= 0 ? "g" + std::to_string(n.group) : "c" + std::to_string(n.chain);
      if (t == ForType::Parallel) parallel_groups_.insert(key);
      if (emitted_.count(key)) continue;
      emitted_.insert(key);
      std::vector<std::pair<int, std::string>> leaves =
          n.group >= 0 ? groups_[n.group].leaves
                       : std::vector<std::pair<int, std::string>>{{n.chain, d.var}};
      std::set<std::string> seen;
      std::vector<size_t> members;
      for (const auto& [ci, var] : leaves) {
        auto [ref, extent] = RefOf(ci, var);
        const std::string name = ref.dim() + "/" + std::to_string(ref.level());
        if (!seen.insert(name).second) continue;
        members.push_back(loops_.size());
        loops_.push_back({ref, extent, ForType::Serial});
      }
      group_members_[key] = members;
    }
    // A parallel group: parallel on its outermost loop with extent > 1.
    for (const std::string& key : parallel_groups_) {
      const std::vector<size_t>& members = group_members_[key];
      for (auto m = members.rbegin(); m != members.rend(); ++m) {
        if (loops_[*m].extent > 1) {
          loops_[*m].for_type = ForType::Parallel;
          break;
        }
      }
    }
  }

  std::string GroupOrigin(const Node& n, const std::string& var) const {
    if (n.group >= 0) return "part of " + groups_[n.group].origin;
    return var + " is a level of dim " + chains_[n.chain].dim + ", which is imported unsplit";
  }

  void ReadExtras() {
    const Halide::Internal::StageSchedule& sched = def_.schedule();
    if (!sched.prefetches().empty()) {
      std::vector<std::string> names;
      for (const auto& p : sched.prefetches()) names.push_back(p.name + " at " + p.at);
      Leave("prefetch(" + Join(names, ", ") + ")", "the schedule space has no prefetching", false);
    }
    Halide::LoopLevel fuse_level = sched.fuse_level().level;
    if (fuse_level.defined() && !fuse_level.is_inlined()) {
      Leave("compute_with(" + fuse_level.to_string() + ")",
            "the schedule space has no loop fusion of separate stages");
    }
    if (sched.atomic()) {
      Leave("atomic()", "the schedule space has no atomic updates");
    }
    if (sched.allow_race_conditions()) {
      Leave("allow_race_conditions()", "the schedule space does not allow race conditions", false);
    }
    if (!def_.specializations().empty()) {
      Leave("specialize(...)", std::to_string(def_.specializations().size()) +
                                   " specializations; the schedule space has none");
    }
  }

  DefinitionReading Finish() {
    DefinitionReading r;
    DefinitionSchedule& s = r.schedule;
    for (const DimChain& c : chains_) {
      r.num_levels[c.dim] = Levels(c);
      if (c.broken || c.vars.size() < 2) continue;
      DimSplit* split = s.add_splits();
      split->set_dim(c.dim);
      for (auto e = c.inner.rbegin(); e != c.inner.rend(); ++e) split->add_factors(*e);
    }
    ReadTail(s);
    // The loop order: every loop, innermost first.
    for (const ReadLoop& l : loops_) *s.add_loop_order() = l.ref;
    bool vectorized = false;
    for (const ReadLoop& l : loops_) {
      switch (l.for_type) {
        case ForType::Vectorized:
          if (vectorized) {
            Leave("vectorize(" + RefName(l.ref, r.num_levels[l.ref.dim()]) + ")",
                  "a second vectorized loop; the schedule space vectorizes one loop");
            break;
          }
          vectorized = true;
          *s.mutable_vectorize() = l.ref;
          s.set_vector_width(l.extent);
          break;
        case ForType::Parallel:
          *s.add_parallel() = l.ref;
          break;
        case ForType::Unrolled:
          *s.add_unroll() = l.ref;
          break;
        default:
          break;
      }
    }
    r.loops = var_loops_;
    r.left_out = std::move(left_out_);
    return r;
  }

  std::string stage_;
  const Definition& def_;
  bool update_;
  std::vector<DimChain> chains_;
  std::vector<Group> groups_;
  std::map<std::string, Node> nodes_;
  struct SplitRecord {
    Split split;
    int chain = -1;  // the dim it splits; -1 for a split of a fused loop
  };
  std::vector<SplitRecord> splits_;  // SplitVar splits in order
  std::vector<ReadLoop> loops_;
  std::map<std::string, LoopRef> var_loops_;
  std::set<std::string> emitted_;
  std::set<std::string> parallel_groups_;
  std::map<std::string, std::vector<size_t>> group_members_;
  std::vector<LeftOut> left_out_;
};

// ---------------------------------------------------------------------------------
// The whole pipeline.
// ---------------------------------------------------------------------------------

class PipelineReader {
 public:
  PipelineReader(const PipelineGraph& graph, const LoweredPipeline& lowered)
      : graph_(graph), lowered_(lowered) {}

  Status Read() {
    if (lowered_.stages.size() != static_cast<size_t>(graph_.num_stages())) {
      return Status::Error("pipeline '" + graph_.spec().name() + "': the lowered pipeline has " +
                           std::to_string(lowered_.stages.size()) + " stages, the graph " +
                           std::to_string(graph_.num_stages()));
    }
    for (const Halide::Func& out : lowered_.outputs) {
      for (auto& [name, f] : Halide::Internal::find_transitive_calls(out.function())) {
        env_.emplace(name, f);
      }
    }
    // Finalize the loop levels (as lowering does) so that they can be inspected.
    for (auto& [name, f] : env_) f.lock_loop_levels();
    for (const LoweredStage& st : lowered_.stages) {
      Function f = st.func.function();
      f.lock_loop_levels();
    }
    for (int s = 0; s < graph_.num_stages(); ++s) {
      stage_of_func_[lowered_.stages[s].func.name()] = s;
      if (lowered_.stages[s].padded_input.defined()) {
        copy_of_func_[lowered_.stages[s].padded_input.name()] = s;
      }
    }
    readings_.resize(graph_.num_stages());
    for (int s = 0; s < graph_.num_stages(); ++s) ReadDefinitions(s);
    for (int s = 0; s < graph_.num_stages(); ++s) ReadLocation(s);
    for (const auto& [name, f] : env_) {
      if (!stage_of_func_.count(name)) ReadHelper(name, f);
    }
    return Status::Ok();
  }

  const std::vector<StageReading>& readings() const { return readings_; }
  std::vector<LeftOut>& left_out() { return left_out_; }
  const std::map<std::string, int>& stage_of_func() const { return stage_of_func_; }

 private:
  const std::string& StageName(int s) const { return graph_.stage(s).name(); }

  void ReadDefinitions(int s) {
    StageReading& r = readings_[s];
    const Function f = lowered_.stages[s].func.function();
    const StageLoops natural = graph_.loops(s);
    r.full.set_stage(StageName(s));
    r.has_update = lowered_.stages[s].has_update;
    for (const LoopDim& d : natural.reduction) r.reduction_dims.push_back(d.name);
    if (f.updates().size() != (r.has_update ? 1u : 0u)) {
      left_out_.push_back({StageName(s), "update definitions",
                           "the Func has " + std::to_string(f.updates().size()) +
                               " update definitions, the stage " +
                               (r.has_update ? "one" : "none")});
    }
    r.defs[0] = DefinitionReader(StageName(s), f.definition(), false, natural).Read();
    if (r.has_update && !f.updates().empty()) {
      r.defs[1] = DefinitionReader(StageName(s), f.updates()[0], true, natural).Read();
    }
    for (int d = 0; d < 2; ++d) {
      for (LeftOut& l : r.defs[d].left_out) left_out_.push_back(std::move(l));
      r.defs[d].left_out.clear();
    }
    *r.full.mutable_pure() = r.defs[0].schedule;
    if (r.has_update) *r.full.mutable_update() = r.defs[1].schedule;
    ReadFuncSchedule(s, f, &r.full);
    // Weights stored output channels innermost were packed (pack_weights).
    const StatusOr<PackedWeights> packed = PackableWeights(graph_, s);
    if (packed.ok()) {
      const Halide::Buffer<>& weights = lowered_.parameters[packed->parameter];
      const int innermost = packed->storage_order[0];
      r.full.set_pack_weights(weights.dim(innermost).extent() > 1 &&
                              weights.dim(innermost).stride() == 1);
    }
  }

  // Storage and other Func-wide directives; a storage order with one dim moved
  // innermost is the stage's storage_innermost.
  void ReadFuncSchedule(int s, const Function& f, StageSchedule* full) {
    const Halide::Internal::FuncSchedule& fs = f.schedule();
    const std::string& stage = StageName(s);
    std::vector<std::string> storage, natural;
    for (const auto& sd : fs.storage_dims()) {
      storage.push_back(sd.var);
      if (sd.fold_factor.defined()) {
        left_out_.push_back({stage, "fold_storage(" + sd.var + ")",
                             "the schedule space has no storage folding", false});
      }
      if (sd.alignment.defined()) {
        left_out_.push_back({stage, "align_storage(" + sd.var + ")",
                             "the schedule space has no storage alignment", false});
      }
      if (sd.bound.defined()) {
        left_out_.push_back({stage, "bound_storage(" + sd.var + ")",
                             "the schedule space has no storage bounds", false});
      }
    }
    for (const std::string& a : f.args()) natural.push_back(a);
    const std::vector<int>& outputs = graph_.output_stages();
    const bool output = std::find(outputs.begin(), outputs.end(), s) != outputs.end();
    if (storage != natural) {
      std::vector<std::string> moved = {storage.empty() ? "" : storage[0]};
      for (const std::string& a : natural) {
        if (a != moved[0]) moved.push_back(a);
      }
      if (moved == storage && !output) {
        full->set_storage_innermost(storage[0]);
      } else {
        left_out_.push_back(
            {stage, "reorder_storage(" + Join(storage, ", ") + ")",
             output ? "an output is stored as the caller's buffer is"
                    : "the schedule space stores one dim innermost and the others in their "
                      "natural order (" +
                          Join(natural, ", ") + ")",
             false});
      }
    }
    if (fs.memory_type() != Halide::MemoryType::Auto) {
      std::ostringstream type;
      type << fs.memory_type();
      left_out_.push_back({stage, "store_in(" + type.str() + ")",
                           "the schedule space leaves the memory type to Halide", false});
    }
    for (const auto& b : fs.bounds()) {
      // An output bounded to its own shape (as an applier of the space does) is no
      // directive: its buffer has that shape.
      if (output && IsShapeBound(s, b)) continue;
      left_out_.push_back({stage, "bound(" + b.var + ")", "the schedule space has no loop bounds"});
    }
    if (!fs.wrappers().empty()) {
      std::vector<std::string> names;
      for (const auto& w : fs.wrappers()) names.push_back(w.first.empty() ? "all" : w.first);
      left_out_.push_back(
          {stage, "in(" + Join(names, ", ") + ")", "the schedule space has no wrapper Funcs"});
    }
    if (fs.async()) {
      left_out_.push_back({stage, "async()", "the schedule space has no asynchronous producers"});
    }
    if (fs.memoized()) {
      left_out_.push_back({stage, "memoize()", "the schedule space has no memoization"});
    }
  }

  bool IsShapeBound(int s, const Halide::Internal::Bound& b) const {
    const Shape shape(graph_.stage(s).shape().begin(), graph_.stage(s).shape().end());
    const int rank = static_cast<int>(shape.size());
    for (int i = 0; i < rank; ++i) {
      if (b.var != "d" + std::to_string(i)) continue;
      const int64_t* min = b.min.defined() ? Halide::Internal::as_const_int(b.min) : nullptr;
      const int64_t* extent = Halide::Internal::as_const_int(b.extent);
      return min != nullptr && *min == 0 && extent != nullptr && *extent == shape[i] &&
             !b.modulus.defined();
    }
    return false;
  }

  // The space's loop of the loop level `level` (not root or inlined) at which stage s
  // is computed or stored, or why there is none. Halide 14's LoopLevels made by
  // compute_at(Func, Var) carry no definition index: the loop is looked up in the
  // host's definitions that read the stage (directly or through inlined Funcs).
  std::optional<LoopRef> LoopOfLevel(int s, const Halide::LoopLevel& level,
                                     std::string* why) const {
    auto host = stage_of_func_.find(level.func());
    if (host == stage_of_func_.end()) {
      *why = "the host " + level.func() + " is a helper Func that the schedule space keeps inline";
      return std::nullopt;
    }
    const int h = host->second;
    const std::string var = level.var().name();
    if (var == Halide::Var::outermost().name()) {
      *why = "the outermost level of a Func is not a loop of the schedule space";
      return std::nullopt;
    }
    const Function f = lowered_.stages[h].func.function();
    const std::string func = lowered_.stages[s].func.name();
    std::vector<int> readers;
    for (int def = 0; def < (readings_[h].has_update ? 2 : 1); ++def) {
      if (Reads(def == 0 ? f.definition() : f.updates()[0], func)) readers.push_back(def);
    }
    if (readers.empty()) {
      std::vector<std::string> consumers;
      for (int c : graph_.consumers(s)) consumers.push_back(StageName(c));
      *why = StageName(h) + " reads " + StageName(s) +
             " only through stages that are not inlined (" + StageName(s) + " is read by " +
             Join(consumers, ", ") +
             "); the schedule space computes a stage only in loops of the stage that reads it, "
             "directly or through inlined stages";
      return std::nullopt;
    }
    // Read by both definitions: Halide places it in the first whose loop matches.
    for (int def : readers) {
      const Definition& d = def == 0 ? f.definition() : f.updates()[0];
      const std::vector<Dim>& dims = d.schedule().dims();
      for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
        if (it->var != var && !EndsWith(it->var, "." + var)) continue;
        auto loop = readings_[h].defs[def].loops.find(it->var);
        if (loop == readings_[h].defs[def].loops.end()) {
          *why = "the loop " + it->var + " of " + StageName(h) +
                 " is not one loop of the schedule space (see the directives left out of " +
                 StageName(h) + ")";
          return std::nullopt;
        }
        return loop->second;
      }
    }
    *why = StageName(h) + " has no loop " + var + " in the definition that reads " + StageName(s);
    return std::nullopt;
  }

  // Whether `def` calls Func `func`, directly or through Funcs that are inlined.
  bool Reads(const Definition& def, const std::string& func) const {
    class Finder : public Halide::Internal::IRGraphVisitor {
     public:
      Finder(const std::string& target, const std::map<std::string, Function>& env)
          : target_(target), env_(env) {}
      bool found = false;

     private:
      using IRGraphVisitor::visit;
      void visit(const Halide::Internal::Call* op) override {
        IRGraphVisitor::visit(op);
        if (found || op->call_type != Halide::Internal::Call::Halide) return;
        if (op->name == target_) {
          found = true;
          return;
        }
        auto it = env_.find(op->name);
        if (it == env_.end() || !it->second.schedule().compute_level().is_inlined() ||
            !inlined_.insert(op->name).second) {
          return;
        }
        it->second.definition().accept(this);
        for (const Definition& u : it->second.updates()) u.accept(this);
      }
      const std::string& target_;
      const std::map<std::string, Function>& env_;
      std::set<std::string> inlined_;
    };
    Finder finder(func, env_);
    def.accept(&finder);
    return finder.found;
  }

  std::string LevelSource(const Halide::LoopLevel& level) const {
    return level.func() + "." + level.var().name();
  }

  void ReadLocation(int s) {
    StageReading& r = readings_[s];
    const Function f = lowered_.stages[s].func.function();
    const Halide::LoopLevel& compute = f.schedule().compute_level();
    const Halide::LoopLevel& store = f.schedule().store_level();
    const std::vector<int>& outputs = graph_.output_stages();
    const bool output = std::find(outputs.begin(), outputs.end(), s) != outputs.end();
    if (!env_.count(f.name()) && !output) {
      // No Func calls it any more: its definition was substituted into its consumers
      // (Mullapudi2016 does so with trivial Funcs), which is what inlining does.
      r.full.clear_pure();
      r.full.clear_update();
      if (!r.has_update) {
        r.full.set_compute(INLINE);
        return;
      }
      r.full.set_compute(ROOT);
      left_out_.push_back({StageName(s), "substitution into its consumers",
                           "the autoscheduler replaced the calls of this reduction by its "
                           "definition; the schedule space computes reductions at root or at "
                           "a loop, so it is imported as compute_root"});
      return;
    }
    if (compute.is_inlined() && !output) {
      r.full.set_compute(INLINE);
      r.full.clear_pure();
      r.full.clear_update();
      return;
    }
    if (compute.is_root() || compute.is_inlined()) {  // an output is computed at root
      r.full.set_compute(ROOT);
    } else {
      std::string why;
      std::optional<LoopRef> at = LoopOfLevel(s, compute, &why);
      if (!at) {
        left_out_.push_back({StageName(s), "compute_at(" + LevelSource(compute) + ")",
                             why + "; imported as compute_root"});
        r.full.set_compute(ROOT);
        return;
      }
      r.full.set_compute(AT);
      *r.full.mutable_compute_at() = *at;
    }
    if (store == compute || r.full.compute() == ROOT) {
      if (!(store == compute) && !store.is_root()) {
        left_out_.push_back({StageName(s), "store_at(" + LevelSource(store) + ")",
                             "stored inside its compute level"});
      }
      return;
    }
    if (store.is_root()) {
      r.full.set_store(ROOT);
      return;
    }
    std::string why;
    std::optional<LoopRef> at = LoopOfLevel(s, store, &why);
    if (!at) {
      left_out_.push_back({StageName(s), "store_at(" + LevelSource(store) + ")",
                           why + "; stored at its compute level"});
      return;
    }
    r.full.set_store(AT);
    *r.full.mutable_store_at() = *at;
  }

  // A Func of the lowering that is no stage: a stage's padded input computed at root
  // is its padded_copy; other placements are left out.
  void ReadHelper(const std::string& name, const Function& f) {
    const Halide::LoopLevel& compute = f.schedule().compute_level();
    if (compute.is_inlined()) return;
    const auto copy = copy_of_func_.find(name);
    if (copy != copy_of_func_.end() && compute.is_root() &&
        PaddedCopyAllowed(graph_, copy->second).ok()) {
      readings_[copy->second].full.set_padded_copy(true);
      return;
    }
    std::vector<std::string> reads;
    for (const auto& [callee, unused] : Halide::Internal::find_direct_calls(f)) {
      auto st = stage_of_func_.find(callee);
      if (st != stage_of_func_.end()) reads.push_back("stage " + StageName(st->second));
    }
    std::vector<std::string> readers;
    for (const auto& [other, g] : env_) {
      if (other == name) continue;
      if (Halide::Internal::find_direct_calls(g).count(name)) {
        auto st = stage_of_func_.find(other);
        auto copy = copy_of_func_.find(other);
        readers.push_back(st != stage_of_func_.end() ? "stage " + StageName(st->second)
                          : copy != copy_of_func_.end()
                              ? "the padded input of stage " + StageName(copy->second)
                              : other);
      }
    }
    std::string what =
        "a helper Func of the lowering (boundary condition, wrapper or rfactor "
        "intermediate)";
    if (!reads.empty()) what += " reading " + Join(reads, ", ");
    if (!readers.empty()) what += ", read by " + Join(readers, ", ");
    left_out_.push_back({name,
                         compute.is_root() ? std::string("compute_root()")
                                           : "compute_at(" + LevelSource(compute) + ")",
                         what + "; the schedule space keeps helper Funcs inline"});
  }

  const PipelineGraph& graph_;
  const LoweredPipeline& lowered_;
  std::map<std::string, Function> env_;
  std::map<std::string, int> stage_of_func_;
  std::map<std::string, int> copy_of_func_;  // a stage's padded input -> the stage
  std::vector<StageReading> readings_;
  std::vector<LeftOut> left_out_;
};

}  // namespace

StatusOr<PipelineReading> ReadPipelineSchedule(const PipelineGraph& graph,
                                               const LoweredPipeline& lowered) {
  PipelineReader reader(graph, lowered);
  SCHEDFARM_RETURN_IF_ERROR(reader.Read());
  PipelineReading reading;
  reading.stages = reader.readings();
  reading.left_out = std::move(reader.left_out());
  reading.stage_of_func = reader.stage_of_func();
  return reading;
}

}  // namespace schedfarm
