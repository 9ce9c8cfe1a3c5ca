// The checks of the random-schedule contract, shared by the ctest cases and the large
// sweep (random_schedule_check, run by ops/check_random_schedules.sh): the pipelines
// they use, a scheduled run compared with the reference run, and the comparison of
// the loop nest Halide builds with the one the schedule space describes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"
#include "scheduler/halide/loop_nest.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

struct LoweredPipeline;

namespace schedule_checks {

// A zoo block at the size of the checks: spatial and channel sizes halved (seconds of
// compile, milliseconds of run under random schedules).
StatusOr<PipelineSpec> ZooBlock(const std::string& name);
// A random pipeline of the checks: up to 12 operators, 2^15 elements per tensor, 2e7
// FLOPs (RandomPipelineCaseOptions).
RandomPipelineOptions RandomPipelineCaseOptions();
StatusOr<PipelineSpec> RandomPipelineCase(uint64_t seed);

// The seed of the `k`-th random schedule of a pipeline: distinct pipelines get
// unrelated streams.
uint64_t ScheduleSeed(const std::string& pipeline_name, int k);

struct RunOutcome {
  bool pass = false;
  double compile_seconds = 0;
  double run_seconds = 0;  // median sample (0 when untimed)
  double max_abs_error = 0;
  std::string message;  // why it failed
};

// Checks `spec` with the space, runs it (RunWithSchedule) and compares every output
// with `reference` (spec.outputs order) within DefaultTolerance.
RunOutcome RunAndCompare(const ScheduleSpace& space, const ScheduleSpec& spec,
                         const std::vector<HostTensor>& reference, const RunOptions& options);

// The differences between what the space says `spec` (complete, legal) does and the
// loop nest Halide built from `lowered` scheduled with it: per definition the loops
// outermost first (names, vectorized / parallel / unrolled, extents Halide already
// knows) against ScheduleSpace::DefinitionLoops, and each stage's compute and storage
// loops against the spec. Empty when they agree.
std::vector<std::string> LoopNestDifferences(const ScheduleSpace& space, const ScheduleSpec& spec,
                                             const LoweredPipeline& lowered, const LoopNest& nest);

// Lowers, applies `spec` and compares the loop nest (LoopNestDifferences); errors
// (lowering, applying, Halide rejecting the loop nest) are one difference.
std::vector<std::string> CheckLoopNest(const ScheduleSpace& space, const ScheduleSpec& spec);

}  // namespace schedule_checks
}  // namespace schedfarm
