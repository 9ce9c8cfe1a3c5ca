#include "scheduler/autoschedule/import.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "common/text.h"
#include "pipeline/spec.h"
#include "scheduler/autoschedule/schedule_reading.h"

namespace schedfarm {
namespace {

// ---------------------------------------------------------------------------------
// Fitting each stage's decision into the space, directive by directive.
// ---------------------------------------------------------------------------------

std::string RefSource(const LoopRef& ref, const std::map<std::string, int>& levels) {
  auto it = levels.find(ref.dim());
  return RefName(ref, it == levels.end() ? 1 : it->second);
}

std::string RefList(const google::protobuf::RepeatedPtrField<LoopRef>& refs,
                    const std::map<std::string, int>& levels) {
  std::vector<std::string> names;
  for (const LoopRef& r : refs) names.push_back(RefSource(r, levels));
  return Join(names, ", ");
}

// One directive of a stage's decision that Check may reject on its own. `copy` adds it
// from the full decision to `into`, which holds the directives kept before it.
struct Directive {
  std::string source;
  std::function<void(const StageSchedule& full, StageSchedule& into)> copy;
  // Tried when Check rejects `copy`: a nearby form, and what it changes.
  std::function<void(const StageSchedule& full, StageSchedule& into)> fallback;
  std::string fallback_note;
};

Directive MakeDirective(std::string source,
                        std::function<void(const StageSchedule&, StageSchedule&)> copy) {
  Directive d;
  d.source = std::move(source);
  d.copy = std::move(copy);
  return d;
}

DefinitionSchedule* MutableDefinition(StageSchedule& s, bool update) {
  return update ? s.mutable_update() : s.mutable_pure();
}
const DefinitionSchedule& Definition(const StageSchedule& s, bool update) {
  return update ? s.update() : s.pure();
}

const DimSplit* FindSplit(const DefinitionSchedule& def, const std::string& dim) {
  for (const DimSplit& sp : def.splits()) {
    if (sp.dim() == dim) return &sp;
  }
  return nullptr;
}

// Whether `ref` names the same loop in `into` as in `full`: its dim is split alike.
bool SameLoop(const DefinitionSchedule& full, const DefinitionSchedule& into, const LoopRef& ref) {
  const DimSplit* a = FindSplit(full, ref.dim());
  const DimSplit* b = FindSplit(into, ref.dim());
  if (a == nullptr || b == nullptr) return a == b;
  return a->factors_size() == b->factors_size() &&
         std::equal(a->factors().begin(), a->factors().end(), b->factors().begin());
}

std::string HostLoopSource(const LoopRef& at, const std::vector<StageReading>& all,
                           const std::map<std::string, int>& stage_index) {
  auto h = stage_index.find(at.stage());
  const std::string loop = h == stage_index.end()
                               ? at.dim()
                               : RefSource(at, all[h->second].defs[at.update() ? 1 : 0].num_levels);
  return at.stage() + (at.update() ? ".update(0)" : "") + ", " + loop;
}

std::vector<Directive> DirectivesOf(const StageReading& r, const std::vector<StageReading>& all,
                                    const std::map<std::string, int>& stage_index) {
  std::vector<Directive> out;
  const StageSchedule& full = r.full;
  if (full.compute() == INLINE) {
    out.push_back(MakeDirective(
        "compute_inline()",
        [](const StageSchedule& f, StageSchedule& into) { into.set_compute(f.compute()); }));
    return out;
  }
  if (full.compute() == AT) {
    out.push_back(
        MakeDirective("compute_at(" + HostLoopSource(full.compute_at(), all, stage_index) + ")",
                      [](const StageSchedule& f, StageSchedule& into) {
                        into.set_compute(f.compute());
                        *into.mutable_compute_at() = f.compute_at();
                      }));
  }
  if (full.store() == ROOT || full.store() == AT) {
    out.push_back(
        MakeDirective(full.store() == ROOT
                          ? std::string("store_root()")
                          : "store_at(" + HostLoopSource(full.store_at(), all, stage_index) + ")",
                      [](const StageSchedule& f, StageSchedule& into) {
                        into.set_store(f.store());
                        *into.mutable_store_at() = f.store_at();
                      }));
  }
  for (const bool update : {false, true}) {
    if (update && !r.has_update) continue;
    const DefinitionSchedule& def = Definition(full, update);
    const std::map<std::string, int>& levels = r.defs[update ? 1 : 0].num_levels;
    const std::string where = update ? "update(0)." : "";
    if (def.tail() != TAIL_AUTO) {
      out.push_back(
          MakeDirective(where + "tail(" + TailStrategy_Name(def.tail()) + ")",
                        [update](const StageSchedule& f, StageSchedule& into) {
                          MutableDefinition(into, update)->set_tail(Definition(f, update).tail());
                        }));
    }
    for (int i = 0; i < def.splits_size(); ++i) {
      std::vector<std::string> factors;
      for (int64_t x : def.splits(i).factors()) factors.push_back(std::to_string(x));
      out.push_back(MakeDirective(
          where + "split(" + def.splits(i).dim() + " by [" + Join(factors, ", ") + "])",
          [update, i](const StageSchedule& f, StageSchedule& into) {
            *MutableDefinition(into, update)->add_splits() = Definition(f, update).splits(i);
          }));
    }
    if (def.loop_order_size() > 0) {
      // Loops of a dim whose split was left out become that dim's one loop, in the
      // slot of its innermost level. Fallback: the reduction loops in their natural
      // order, in the slots they occupied (the space keeps RVars in natural order).
      const auto order = [update](const StageSchedule& f, StageSchedule& into,
                                  const std::vector<std::string>& reduction_dims) {
        const DefinitionSchedule& from = Definition(f, update);
        DefinitionSchedule* to = MutableDefinition(into, update);
        std::set<std::string> unsplit;
        std::vector<LoopRef> loops;
        for (const LoopRef& ref : from.loop_order()) {
          if (SameLoop(from, *to, ref)) {
            loops.push_back(ref);
          } else if (unsplit.insert(ref.dim()).second) {
            LoopRef whole = ref;
            whole.set_level(0);
            loops.push_back(whole);
          }
        }
        if (!reduction_dims.empty()) {
          const auto rank = [&](const LoopRef& ref) {
            const auto dim = std::find(reduction_dims.begin(), reduction_dims.end(), ref.dim());
            return std::make_pair(dim - reduction_dims.begin(), -ref.level());
          };
          std::vector<size_t> slots;
          std::vector<LoopRef> reductions;
          for (size_t i = 0; i < loops.size(); ++i) {
            if (std::count(reduction_dims.begin(), reduction_dims.end(), loops[i].dim())) {
              slots.push_back(i);
              reductions.push_back(loops[i]);
            }
          }
          std::stable_sort(reductions.begin(), reductions.end(),
                           [&](const LoopRef& a, const LoopRef& b) { return rank(a) < rank(b); });
          for (size_t i = 0; i < slots.size(); ++i) loops[slots[i]] = reductions[i];
        }
        for (const LoopRef& ref : loops) *to->add_loop_order() = ref;
      };
      const std::vector<std::string> none, reduction_dims = update ? r.reduction_dims : none;
      Directive d;
      d.source = where + "reorder(" + RefList(def.loop_order(), levels) + ")";
      d.copy = [order](const StageSchedule& f, StageSchedule& into) { order(f, into, {}); };
      if (update) {
        d.fallback = [order, reduction_dims](const StageSchedule& f, StageSchedule& into) {
          order(f, into, reduction_dims);
        };
        d.fallback_note =
            "imported with the reduction loops in their natural order, in the "
            "slots they occupied";
      }
      out.push_back(std::move(d));
    }
    // Loop directives on a dim whose split was left out are left out with it.
    const auto loop_directive = [&](const std::string& name, const LoopRef& ref,
                                    std::function<void(const StageSchedule&, StageSchedule&)> add) {
      out.push_back(
          MakeDirective(where + name + "(" + RefSource(ref, levels) + ")",
                        [update, ref, add](const StageSchedule& f, StageSchedule& into) {
                          if (SameLoop(Definition(f, update), Definition(into, update), ref)) {
                            add(f, into);
                          }
                        }));
    };
    for (int i = 0; i < def.parallel_size(); ++i) {
      loop_directive(
          "parallel", def.parallel(i), [update, i](const StageSchedule& f, StageSchedule& into) {
            *MutableDefinition(into, update)->add_parallel() = Definition(f, update).parallel(i);
          });
    }
    if (def.has_vectorize()) {
      loop_directive(
          "vectorize", def.vectorize(), [update](const StageSchedule& f, StageSchedule& into) {
            *MutableDefinition(into, update)->mutable_vectorize() =
                Definition(f, update).vectorize();
            MutableDefinition(into, update)->set_vector_width(Definition(f, update).vector_width());
          });
    }
    for (int i = 0; i < def.unroll_size(); ++i) {
      loop_directive(
          "unroll", def.unroll(i), [update, i](const StageSchedule& f, StageSchedule& into) {
            *MutableDefinition(into, update)->add_unroll() = Definition(f, update).unroll(i);
          });
    }
  }
  return out;
}

}  // namespace

StatusOr<ImportedSchedule> ImportHalideSchedule(const PipelineGraph& graph,
                                                const LoweredPipeline& lowered,
                                                const TargetParams& target) {
  const std::string where = "pipeline '" + graph.spec().name() + "'";
  try {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineReading reading, ReadPipelineSchedule(graph, lowered));
    ImportedSchedule result;
    result.left_out = std::move(reading.left_out);
    const ScheduleSpace space(graph, target);
    std::map<std::string, int> stage_index;
    for (int s = 0; s < graph.num_stages(); ++s) stage_index[graph.stage(s).name()] = s;
    ScheduleSpec& spec = result.spec;
    spec.set_pipeline_id(PipelineId(graph));
    spec.set_partial(true);
    for (int s : space.decision_order()) {
      const StageReading& r = reading.stages[s];
      StageSchedule* decision = spec.add_stages();
      *decision = r.full;
      if (space.Check(spec).ok()) continue;
      // Keep each directive that Check accepts with those kept before it.
      StageSchedule kept;
      kept.set_stage(r.full.stage());
      kept.set_compute(ROOT);
      for (const Directive& d : DirectivesOf(r, reading.stages, stage_index)) {
        StageSchedule trial = kept;
        d.copy(r.full, trial);
        if (trial.SerializeAsString() == kept.SerializeAsString()) {
          result.left_out.push_back(
              {r.full.stage(), d.source, "its loop is a level of a split that was left out"});
          continue;
        }
        *decision = trial;
        const Status status = space.Check(spec);
        if (status.ok()) {
          kept = trial;
          continue;
        }
        std::string why = "rejected by the schedule space: " + status.message();
        if (d.fallback) {
          StageSchedule nearby = kept;
          d.fallback(r.full, nearby);
          *decision = nearby;
          if (space.Check(spec).ok()) {
            kept = nearby;
            why += "; " + d.fallback_note;
          }
        }
        result.left_out.push_back({r.full.stage(), d.source, why});
      }
      *decision = kept;
      const Status status = space.Check(spec);
      if (!status.ok()) {
        return Status::Error(
            where + ", stage '" + r.full.stage() +
            "': no decision of the imported schedule fits the schedule space: " + status.message());
      }
    }
    spec.set_partial(false);
    const Status status = space.Check(spec);
    if (!status.ok()) {
      return Status::Error(
          where + ": the imported schedule does not fit the schedule space: " + status.message());
    }
    return result;
  } catch (const Halide::Error& e) {
    return Status::Error(where + ": Halide error while reading the schedule: " + e.what());
  } catch (const std::exception& e) {
    return Status::Error(where + ": error while reading the schedule: " + e.what());
  }
}

}  // namespace schedfarm
