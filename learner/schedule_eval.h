// The loop nest a ScheduleSpec gives each stage, evaluated without Halide the way
// Halide's bounds inference does: real loop extents, compute locations, realizations,
// regions and allocations, and the boxes of every buffer a loop level touches.
// Internal to learner/ (features.h is the API).
//
// Extents are real: from the region each realization covers, not the space's nominal
// extents.
//
// One representative realization. A stage computed at a consumer loop covers a
// different region in each iteration of the loops around it; the evaluation follows one
// path through the nest: every enclosing loop at its lower-middle iteration
// (floor((extent - 1) / 2)), or, where a guarded split tail would skip that iteration,
// the largest earlier one that runs. Regions, allocations, footprints and per-loop
// extents are those of that path; counts (realizations, points) multiply its extents.
// Iterations count only those that run: a guarded split tail skips the iterations of
// its loops beyond the dim's extent.
#pragma once

#include <cstdint>
#include <vector>

#include "learner/stage_model.h"
#include "schedfarm.pb.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace features_internal {

struct LoopState {
  int8_t dim = 0;
  int8_t level = 0;
  bool reduction = false;
  bool vectorized = false;
  bool unrolled = false;
  bool parallel = false;
  int64_t extent = 1;  // real extent on the representative path
  int64_t index = 0;   // representative iteration
};

// One definition after its decision.
struct DefState {
  bool present = false;
  bool shift_inwards = false;  // resolved tail of its pure dims
  int num_dims = 0;
  int num_pure = 0;
  int8_t levels[kMaxDefDims];
  int64_t factors[kMaxDefDims][kMaxLevels - 1];  // innermost first
  int8_t pos[kMaxDefDims][kMaxLevels];           // position of (dim, level) in `loops`
  int num_loops = 0;
  LoopState loops[kMaxLoops];  // innermost first
  int vectorized_position = -1;
  // Per realization: iterations of the body (a guarded split tail skips the iterations
  // beyond its dim's extent), and how they run: vectors (every lane runs; one per
  // vector) and scalars (no vectorized loop, or the lanes of a guarded tail, which
  // Halide scalarizes).
  double iterations = 0;
  double vectors = 0;
  double scalars = 0;
};

struct StageState {
  bool inlined = false;
  ComputeLocation location = ROOT;  // INLINE, ROOT or AT; undecided stages: ROOT
  int host = -1;
  int host_def = 0;
  int host_position = -1;
  DefState defs[2];
  bool global_set = false;
  Interval global[kMaxRank];  // the region all realizations together cover
  Interval region[kMaxRank];  // the region of the representative realization
  double realizations = 0;
  double outer_parallel = 1;  // product of the parallel loops around the compute location
  int depth = 0;              // loops around the compute location
  double inline_evaluations = 0;
  int inline_sites = 0;
  int site_stamp = -1;
};

// Evaluates schedules of one pipeline. Holds scratch space: one per thread.
class ScheduleEvaluator {
 public:
  // Resolves and evaluates `spec`. REQUIRES: space.Check(spec).ok(), `model` built
  // from space.graph().
  void Evaluate(const ScheduleSpace& space, const PipelineModel& model, const ScheduleSpec& spec);

  const StageState& stage(int s) const { return states_[s]; }
  // The main definition of a stage: its update if it has one, else its pure definition.
  static int MainDef(const StageModel& m) { return m.has_update ? 1 : 0; }

  // The iteration box of definition `def` of stage `s` when the loops at positions up
  // to `free_upto` (innermost first) run over their ranges and the others stay at their
  // representative iterations. `pure` has the stage's pure dims, `red` its reduction
  // dims (LoopNestOf order).
  void IterationBox(int s, int def, int free_upto, Interval* pure, Interval* red) const;
  // The reduction dims of definition `def` of stage `s` over all their iterations (their
  // split ranges), into `red`.
  void WholeReduction(int s, int def, Interval* red) const;
  // Recomputes dim `dim` of such a box only (when the loops of that dim moved across
  // free_upto): walking free_upto outwards one loop at a time changes one dim.
  void UpdateIterationBox(int s, int def, int dim, int free_upto, Interval* pure,
                          Interval* red) const;

  // The union, per buffer read (a value not inlined), of the boxes that the iterations
  // `pure` x `red` of definition `def` of stage `s` read, through inlined stages. With
  // `reset` false the boxes are added to those of the previous call. Results stay valid
  // until the next call: the values touched, and the box of each.
  void Touch(int s, int def, const Interval* pure, const Interval* red, bool reset = true);
  const std::vector<int>& touched_values() const { return touched_; }
  const Interval* touched_box(int value) const { return &value_boxes_[value * kMaxRank]; }

  // Operation counts per iteration of a definition, with the inlined stages it
  // evaluates (their loads become evaluations).
  const OpCounts& DefinitionOps(int s, int def);
  // Iterations of one definition's body over all realizations: realizations x the
  // points of its dims' ranges in one realization (the region for pure dims, the
  // reduction extents), not the product of its loop extents: a guarded split tail skips
  // the iterations beyond its dim's extent (ShiftInwards runs them all).
  double DefinitionIterations(int s, int def) const;
  // Body iterations of dim `dim` of definition `def` of stage `s` when its loops at
  // positions up to `free_upto` run over their ranges and the others stay at their
  // representative iterations (1 when none of them runs over its range): that dim's
  // factor in the iterations of one execution of a loop level (their product over the
  // dims). At least 1: the representative path runs.
  double DimIterations(int s, int def, int dim, int free_upto) const;
  // Times the loop at `position` of definition `def` of stage `s` starts in one
  // realization: the iterations of the loops around it whose tail guards hold.
  double LoopStarts(int s, int def, int position) const;

 private:
  void Resolve(const ScheduleSpace& space, int s, const StageSchedule* decision);
  void ResolveDefinition(int s, int def, const DefinitionSchedule* schedule, bool output);
  void SetExtentsAndIndices(int s);
  // Interval of dim `dim` (relative to its region's start), trimmed by guarded tails.
  Interval DimInterval(const DefState& d, int dim, int free_upto, int64_t extent) const;
  // DimIterations of a definition's state; `extent` is the dim's (region or reduction).
  static double DimCount(const DefState& d, int dim, int free_upto, int64_t extent);
  // Per realization: the definition's body iterations, vectors and scalars.
  static void CountIterations(DefState& d, const int64_t* extent);
  template <typename Leaf>
  void Walk(int s, int def_mask, const Interval* pure, const Interval* red, Leaf& leaf);
  void ComputeGlobalRegions();
  void ComputeRealizations();
  void ComputeInlineCounts();
  const OpCounts& InlineOps(int s);

  const PipelineModel* model_ = nullptr;
  std::vector<StageState> states_;
  LoopState natural_[kMaxLoops];  // scratch of ResolveDefinition
  std::vector<int> order_;
  // Touch results.
  std::vector<Interval> value_boxes_;
  std::vector<int> value_stamp_;
  std::vector<int> touched_;
  int stamp_ = 0;
  // Memoized operation counts.
  std::vector<OpCounts> inline_ops_;
  std::vector<OpCounts> def_ops_;  // 2 per stage
  std::vector<uint8_t> inline_ops_ready_;
  std::vector<uint8_t> def_ops_ready_;
};

}  // namespace features_internal
}  // namespace schedfarm
