// The Halide side of the baselines: running an autoscheduler on a lowered pipeline,
// and reading the schedule a lowered pipeline carries (FuncSchedule and each
// Definition's StageSchedule, not the printed source) back as a ScheduleSpec.
// Includes Halide.h: include it only from code that links Halide.
#pragma once

#include <string>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/halide/lowering.h"
#include "scheduler/autoschedule/autoschedulers.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

struct HalideAutoscheduleResult {
  std::string schedule_source;  // AutoSchedulerResults::schedule_source
  double seconds = 0;           // wall time of Pipeline::auto_schedule
  std::string machine_params;
  std::string target;
};

// Schedules `lowered` in place with `autoscheduler` (see AutoschedulerNames() and the
// settings documented in autoschedulers.h) for the JIT target of the farm's runner.
StatusOr<HalideAutoscheduleResult> ApplyAutoscheduler(LoweredPipeline& lowered,
                                                      const std::string& autoscheduler,
                                                      const AutoscheduleOptions& options);

// Reads the schedule of every stage of `lowered` (scheduled by an autoscheduler or by
// hand; `graph` is the pipeline it was lowered from) as a ScheduleSpec of the space of
// `graph` with `target`:
//  - compute and store levels become INLINE, ROOT or AT a LoopRef of the host loop;
//  - the splits of each dim (a chain of at most 3 levels: the inner or the outer
//    part of a 2-level split split again, with exact extents) become DimSplits, the
//    Dims order the loop order, their ForTypes vectorize/parallel/unroll, the tail
//    strategy of the splits the definition's tail.
// What does not fit is left out and listed with the reason: fuse, rfactor and
// purified RVars, splits beyond 3 levels or with extents the space cannot express,
// helper Funcs (boundary conditions, wrappers, rfactor intermediates) that are not
// inlined and stages computed inside them, GPU and extern loops, prefetch, bound,
// storage folding and alignment, reorder_storage, store_in, compute_with, atomic,
// async, memoize, specializations; then every directive ScheduleSpace::Check rejects
// (with Check's message), keeping the rest of the stage's decision. The closest
// in-space form replaces what was left out: a fused loop by its loops, parallel on
// the outermost of them with extent > 1; an unexpressible split by the unsplit dim; a
// loop order that moves RVars out of their natural order by the same order with the
// RVars in natural order in the slots they occupied; a location by ROOT.
// Finalizes (locks) the Funcs' loop levels, as compiling does. Never throws.
StatusOr<ImportedSchedule> ImportHalideSchedule(const PipelineGraph& graph,
                                                const LoweredPipeline& lowered,
                                                const TargetParams& target);

}  // namespace schedfarm
