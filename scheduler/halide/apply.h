// Applies a ScheduleSpec to the Halide pipeline of pipeline/halide/lowering.h through
// Halide's scheduling API, and runs a pipeline under a ScheduleSpec with the timing
// harness of pipeline/halide/runner.h. docs/SCHEDULES.md gives the mapping from each
// directive to Halide calls. Halide-free header.
#pragma once

#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"

namespace schedfarm {

struct LoweredPipeline;  // pipeline/halide/lowering.h

// Schedules `lowered` (fresh from LowerToHalide(graph), no schedule applied) as `spec`
// says. Stages that `spec` does not decide (partial specs), or decides with compute
// COMPUTE_LOCATION_UNSPECIFIED, take the schedule space's default: inline unless an
// output or a reduction, else root, nothing else. Errors name the stage and the
// directive: a spec that does not fit the graph (unknown stage, dim or level...), or a
// call Halide refuses. Legality beyond that is ScheduleSpace::Check's job; Halide
// checks compute locations only when the pipeline is compiled.
Status ApplySchedule(const PipelineGraph& graph, LoweredPipeline& lowered,
                     const ScheduleSpec& spec);

// Lowers `graph`, applies `spec`, JIT-compiles, runs on `inputs` (spec order;
// deterministic inputs when empty) and times it, as RunReference does.
StatusOr<RunResult> RunWithSchedule(const PipelineGraph& graph, const ScheduleSpec& spec,
                                    const RunOptions& options = {},
                                    std::vector<HostTensor> inputs = {});

}  // namespace schedfarm
