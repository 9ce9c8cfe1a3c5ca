#include "tests/scheduler/halide/schedule_checks.h"

#include <algorithm>
#include <map>

#include "pipeline/halide/lowering.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/zoo.h"
#include "scheduler/halide/apply.h"

namespace schedfarm {
namespace schedule_checks {

StatusOr<PipelineSpec> ZooBlock(const std::string& name) {
  ZooOptions options;
  options.spatial_scale = 0.5;
  options.channel_scale = 0.5;
  return MakeZooBlock(name, options);
}

RandomPipelineOptions RandomPipelineCaseOptions() {
  RandomPipelineOptions options;
  options.max_ops = 12;
  options.max_elements = int64_t{1} << 15;
  options.max_flops = 2e7;
  return options;
}

StatusOr<PipelineSpec> RandomPipelineCase(uint64_t seed) {
  return RandomPipeline(seed, RandomPipelineCaseOptions());
}

uint64_t ScheduleSeed(const std::string& pipeline_name, int k) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : pipeline_name) h = (h ^ c) * 1099511628211ull;
  return h + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(k + 1);
}

RunOutcome RunAndCompare(const ScheduleSpace& space, const ScheduleSpec& spec,
                         const std::vector<HostTensor>& reference, const RunOptions& options) {
  RunOutcome outcome;
  const Status legal = space.Check(spec);
  if (!legal.ok()) {
    outcome.message = "illegal schedule: " + legal.message();
    return outcome;
  }
  StatusOr<RunResult> run = RunWithSchedule(space.graph(), spec, options);
  if (!run.ok()) {
    outcome.message = run.status().message();
    return outcome;
  }
  outcome.compile_seconds = run->compile_seconds;
  outcome.run_seconds = run->median_seconds;
  if (run->outputs.size() != reference.size()) {
    outcome.message = "output counts differ";
    return outcome;
  }
  outcome.pass = true;
  for (size_t i = 0; i < reference.size(); ++i) {
    const Comparison c =
        CompareTensors(run->outputs[i], reference[i], DefaultTolerance(reference[i].dtype));
    outcome.max_abs_error = std::max(outcome.max_abs_error, c.max_abs_error);
    if (!c.match && outcome.pass) {
      outcome.pass = false;
      outcome.message =
          "output '" + space.graph().spec().outputs(static_cast<int>(i)) + "': " + c.message;
    }
  }
  return outcome;
}

namespace {

std::string Describe(const std::string& var, int64_t extent, const std::string& type) {
  return var + " (" + (extent >= 0 ? "extent " + std::to_string(extent) : "extent ?") + ", " +
         type + ")";
}

std::string SpaceType(const ScheduledLoop& loop) {
  if (loop.vectorized) return "vectorized";
  if (loop.unrolled) return "unrolled";
  if (loop.parallel) return "parallel";
  return "for";
}

// Levels of each split dim of a definition.
int Levels(const DefinitionSchedule& def, const std::string& dim) {
  for (const DimSplit& split : def.splits()) {
    if (split.dim() == dim) return split.factors_size() + 1;
  }
  return 1;
}

const StageSchedule* DecisionOf(const ScheduleSpec& spec, const std::string& stage) {
  for (const StageSchedule& decision : spec.stages()) {
    if (decision.stage() == stage) return &decision;
  }
  return nullptr;
}

// "host.s<D>.<...>.<var>" for a LoopRef of a host stage.
struct LoopMatch {
  std::string prefix;
  std::string var;
  bool Matches(const std::string& loop) const {
    return loop.compare(0, prefix.size(), prefix) == 0 && loop.size() > var.size() &&
           loop.compare(loop.size() - var.size() - 1, std::string::npos, "." + var) == 0;
  }
  std::string Text() const { return prefix + "..." + var; }
};

}  // namespace

std::vector<std::string> LoopNestDifferences(const ScheduleSpace& space, const ScheduleSpec& spec,
                                             const LoweredPipeline& lowered, const LoopNest& nest) {
  const PipelineGraph& graph = space.graph();
  std::vector<std::string> differences;
  std::map<std::string, std::vector<const HalideLoop*>> loops_by_definition;
  for (const HalideLoop& loop : nest.loops) {
    loops_by_definition[loop.func + "#" + std::to_string(loop.definition)].push_back(&loop);
  }
  std::map<std::string, const FuncPlacement*> placements;
  for (const FuncPlacement& p : nest.placements) placements[p.func] = &p;

  const auto host_loop = [&](const LoopRef& ref) {
    const int id = graph.FindValue(ref.stage());
    const int host = graph.value(id).index;
    const StageSchedule* decision = DecisionOf(spec, ref.stage());
    const DefinitionSchedule def = decision == nullptr
                                       ? DefinitionSchedule()
                                       : (ref.update() ? decision->update() : decision->pure());
    return LoopMatch{lowered.stages[host].func.name() + ".s" + (ref.update() ? "1" : "0") + ".",
                     LoopVarName(ref.dim(), ref.level(), Levels(def, ref.dim()))};
  };

  for (int s = 0; s < graph.num_stages(); ++s) {
    const std::string func = lowered.stages[s].func.name();
    const std::string where = "stage '" + graph.stage(s).name() + "' (Func " + func + ")";
    const StageSchedule* found = DecisionOf(spec, graph.stage(s).name());
    const StageSchedule decision = found != nullptr ? *found : StageSchedule();
    ComputeLocation compute = decision.compute();
    if (compute == COMPUTE_LOCATION_UNSPECIFIED) compute = space.InlineLegal(s) ? INLINE : ROOT;
    const auto placed = placements.find(func);
    if (compute == INLINE) {
      if (placed != placements.end())
        differences.push_back(where + ": inlined, but Halide produces it");
      continue;
    }
    if (placed == placements.end()) {
      differences.push_back(where + ": not inlined, but Halide never produces it");
      continue;
    }
    const FuncPlacement& placement = *placed->second;
    if (compute == ROOT) {
      if (!placement.compute_loop.empty()) {
        differences.push_back(where + ": ROOT, but Halide computes it in " +
                              placement.compute_loop);
      }
    } else {
      const LoopMatch at = host_loop(decision.compute_at());
      if (!at.Matches(placement.compute_loop)) {
        differences.push_back(where + ": computed at " + at.Text() +
                              ", but Halide computes it in " +
                              (placement.compute_loop.empty() ? "root" : placement.compute_loop));
      }
    }
    const bool output = std::find(graph.output_stages().begin(), graph.output_stages().end(), s) !=
                        graph.output_stages().end();
    if (!output) {
      std::string expected_store = placement.compute_loop;
      bool ok = placement.store_loop == expected_store;
      std::string expected_text = expected_store.empty() ? "root" : expected_store;
      if (decision.store() == ROOT) {
        ok = placement.store_loop.empty();
        expected_text = "root";
      } else if (decision.store() == AT) {
        const LoopMatch at = host_loop(decision.store_at());
        ok = at.Matches(placement.store_loop);
        expected_text = at.Text();
      }
      if (!ok) {
        differences.push_back(where + ": stored at " + expected_text +
                              ", but Halide stores it in " +
                              (placement.store_loop.empty() ? "root" : placement.store_loop));
      }
    }

    const bool has_update = !graph.loops(s).reduction.empty();
    for (bool update : {false, true}) {
      if (update && !has_update) continue;
      const std::string def_where = where + (update ? ", update" : ", pure definition");
      const DefinitionSchedule& def = update ? decision.update() : decision.pure();
      std::vector<ScheduledLoop> expected = space.DefinitionLoops(s, update, decision);
      std::reverse(expected.begin(), expected.end());  // outermost first, as Halide nests
      const std::vector<const HalideLoop*>& actual =
          loops_by_definition[func + "#" + (update ? "1" : "0")];
      const size_t n = std::max(expected.size(), actual.size());
      for (size_t i = 0; i < n; ++i) {
        std::string space_text = "none", halide_text = "none";
        bool same = i < expected.size() && i < actual.size();
        if (i < expected.size()) {
          const ScheduledLoop& e = expected[i];
          space_text = Describe(LoopVarName(e.ref.dim(), e.ref.level(), Levels(def, e.ref.dim())),
                                e.extent, SpaceType(e));
        }
        if (i < actual.size()) {
          const HalideLoop& a = *actual[i];
          halide_text = Describe(a.var, a.extent, a.type);
          if (same) {
            const ScheduledLoop& e = expected[i];
            same = a.var == LoopVarName(e.ref.dim(), e.ref.level(), Levels(def, e.ref.dim())) &&
                   a.type == SpaceType(e) && (a.extent < 0 || a.extent == e.extent);
          }
        }
        if (!same) {
          differences.push_back(def_where + ", loop " + std::to_string(i) +
                                " from outermost: space " + space_text + ", Halide " + halide_text);
        }
      }
    }
  }
  return differences;
}

std::vector<std::string> CheckLoopNest(const ScheduleSpace& space, const ScheduleSpec& spec) {
  StatusOr<LoweredPipeline> lowered = LowerToHalide(space.graph());
  if (!lowered.ok()) return {lowered.status().message()};
  const Status applied = ApplySchedule(space.graph(), *lowered, spec);
  if (!applied.ok()) return {applied.message()};
  StatusOr<LoopNest> nest = ScheduledLoopNest(*lowered);
  if (!nest.ok()) return {nest.status().message()};
  return LoopNestDifferences(space, spec, *lowered, *nest);
}

}  // namespace schedule_checks
}  // namespace schedfarm
