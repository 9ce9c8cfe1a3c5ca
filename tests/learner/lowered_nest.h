// What Halide's bounds inference makes of a scheduled pipeline, at one representative
// point of its loop nest: the features' cross-check reads loop extents, loop types and
// realized regions from it. Halide-free header.
//
// The statement is lowered like Halide's own lower() up to allocation bounds inference
// (loop nests, then the bounds of every loop and realization as let statements), then
// walked along one path: every loop takes its lower-middle iteration (floor((extent - 1)
// / 2)), or the largest iteration below it whose tail guards (`if (likely(...))`) hold.
// Along that path each loop's extent and each realization's region are evaluated, and
// optionally how often each definition runs in the realization on the path.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace schedfarm {

struct LoweredPipeline;  // pipeline/halide/lowering.h

namespace lowered_nest {

struct PathLoop {
  std::string name;    // "conv.s1.d1.d1_0"
  std::string func;    // "conv"
  int definition = 0;  // 0 pure, 1 update
  std::string var;     // "d1_0"
  std::string type;    // "for", "parallel", "vectorized", "unrolled"
  int64_t extent = 0;
};

struct PathRealization {
  std::string func;
  // The region allocated (the realization's bounds) and the region its definitions
  // compute (the union of their bounds "<func>.s<k>.<var>.min/max"), Halide order: dim
  // 0 innermost. Halide may allocate more than it computes: its allocation bounds come
  // from the boxes its consumers touch, evaluated over whole loop ranges.
  std::vector<int64_t> extents;
  std::vector<int64_t> computed;
  double enclosing_iterations = 1;  // product of the extents of the loops around it
};

// How often one definition's body (its Provide) runs: over every iteration of the
// realization on the path (tail guards evaluated), times the realizations (the
// iterations of the loops around it, as PathRealization), as the features count.
struct DefinitionCount {
  double iterations = 0;  // body executions (a vector counts its lanes)
  // Inside a vectorized loop, the executions where every lane runs (one per vector);
  // elsewhere, and the lanes of a vectorized loop whose guard holds for some lanes only
  // (which Halide scalarizes), scalar executions.
  double vectors = 0;
  double scalars = 0;
};

struct PathNest {
  std::vector<PathLoop> loops;                // in program order along the path
  std::vector<PathRealization> realizations;  // one per non-inlined Func
  // With count_iterations, per Func produced on the path: its definitions (0 pure,
  // 1 update).
  std::map<std::string, std::vector<DefinitionCount>> definitions;
  // With count_iterations, per loop of those Funcs (PathLoop::name): how often it starts
  // with a positive extent, counted as DefinitionCount::iterations.
  std::map<std::string, double> loop_starts;
};

// Lowers a copy of `lowered.pipeline` (as scheduled) and walks it along the
// representative path; with `count_iterations`, also every iteration of each
// realization on it. Errors: Halide refusing the schedule, or an expression of the loop
// bounds or of a guard the walk cannot evaluate.
StatusOr<PathNest> WalkLoweredNest(const LoweredPipeline& lowered, bool count_iterations = false);

}  // namespace lowered_nest
}  // namespace schedfarm
