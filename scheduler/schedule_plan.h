// The Halide scheduling calls a ScheduleSpec stands for, in the order they are made:
// the one translation from the spec to Halide, which ApplySchedule makes on the
// lowered Funcs and ScheduleSource prints as C++. Halide-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "scheduler/layouts.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// A Var or RVar of a scheduling call, by name (Halide matches loop variables by name).
struct PlanVar {
  std::string name;
  bool rvar = false;

  bool operator==(const PlanVar& other) const { return name == other.name && rvar == other.rvar; }
};

// One call on a Func (location calls) or on one of its definitions (loop calls).
struct PlanCall {
  enum class Kind {
    kBound,          // bound(vars[0], 0, extent): outputs, to their static shapes
    kComputeInline,  // compute_inline()
    kComputeRoot,    // compute_root()
    kComputeAt,      // compute_at(host, vars[0])
    kStoreRoot,      // store_root()
    kStoreAt,        // store_at(host, vars[0])
    kSplit,          // split(vars[0], vars[1], vars[2], factor, tail)
    kReorder,        // reorder({vars...}), innermost first
    kVectorize,      // vectorize(vars[0])
    kUnroll,         // unroll(vars[0])
    kParallel,       // parallel(vars[0])
    kUnscheduled,    // unscheduled(): an update left as Halide's default on purpose
    kReorderStorage,  // reorder_storage({vars...}): the buffer's dims, innermost first
  };
  Kind kind = Kind::kComputeRoot;
  std::vector<PlanVar> vars;
  int64_t factor = 0;             // kSplit
  int64_t extent = 0;             // kBound
  TailStrategy tail = TAIL_AUTO;  // kSplit: never TAIL_AUTO once planned
  int host = -1;                  // kComputeAt, kStoreAt: the host's stage index
};

// The calls on one definition of a stage.
struct DefinitionPlan {
  bool update = false;  // false: the pure definition (the Func); true: update(0)
  std::vector<PlanCall> calls;
};

// The calls of one stage: the bounds of an output, where the stage is computed and
// stored and its storage order, then the calls on its definitions; the weights it
// packs and the padded copy of its input it reads.
struct StagePlan {
  int stage = -1;
  bool inlined = false;
  // The weights packed for the stage (pack_weights): stored in this order when the
  // pipeline is loaded, before it is compiled; parameter -1 when none.
  PackedWeights packed;
  // The calls on the padded copy of its input (padded_copy: location and loop calls,
  // on the Func LoweredStage::padded_input); empty when it reads no copy.
  std::vector<PlanCall> padded_copy;
  std::vector<PlanCall> location;
  std::vector<DefinitionPlan> definitions;  // only those with calls; pure first
};

// Translates `spec` (complete or partial; stages in any order) into one StagePlan per
// stage of `graph`, in decision order (reverse topological, outputs first). Stages not
// listed, or listed with compute COMPUTE_LOCATION_UNSPECIFIED, take the schedule
// space's default (ScheduleSpace::WithDefaults): INLINE unless the stage is an output
// or has an update definition, else ROOT, with no other directive. Errors
// name the stage and the directive: unknown stages, dims or levels, inlining an output
// or a reduction, a compute_at host that is inlined or lacks the loop, directives on
// an inlined stage or on the update of a stage without one, vector widths that are
// not the extent of the vectorized loop.
StatusOr<std::vector<StagePlan>> PlanSchedule(const PipelineGraph& graph, const ScheduleSpec& spec);

// The calls that make the padded copy of stage `s`'s input (padded_copy): computed at
// root, stored as the input is (channels innermost where the pipeline's boundaries are
// channels-last), its loops in storage order, the innermost vectorized by
// kPaddedCopyLanes where the input has that many elements along it, the outermost of
// extent > 1 parallel. The copy is the Func of BoundaryConditions::constant_exterior,
// whose dims are those of its source: Halide's implicit Vars _0, _1... for a pipeline
// input, the stage's pure Vars for a stage.
std::vector<PlanCall> PaddedCopyCalls(const PipelineGraph& graph, int s);
inline constexpr int kPaddedCopyLanes = 16;

// The call as Halide C++ without its object, e.g. "split(d0, d0_0, d0_1, 8,
// TailStrategy::Auto)"; `host` is the C++ name of the host Func of compute/store_at.
std::string CallSource(const PlanCall& call, const std::string& host);

}  // namespace schedfarm
