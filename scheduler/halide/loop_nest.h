// The loop nest Halide builds from a scheduled pipeline, as its first lowering pass
// (schedule_functions) leaves it: every loop of the schedule is still there with its
// for-type, before bounds inference, vectorization, unrolling and simplification. It
// shows what a schedule did, to check it against the schedule space. Halide-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace schedfarm {

struct LoweredPipeline;  // pipeline/halide/lowering.h

// One loop of the nest.
struct HalideLoop {
  std::string name;     // Halide's loop name, e.g. "conv.s1.d0.d0_0.d0_1"
  std::string func;     // the Func it belongs to ("conv")
  int definition = 0;   // 0: the pure definition, k: update(k-1)
  std::string var;      // the Var or RVar ("d0_1"): the last part of the name
  std::string type;     // Halide's ForType as printed: "for", "parallel", "vectorized", "unrolled"
  int64_t extent = -1;  // when already constant (inner levels of splits), else -1
  int depth = 0;        // number of loops around it, of any Func
};

// Where a Func that is not inlined is computed and stored.
struct FuncPlacement {
  std::string func;
  std::string compute_loop;  // name of the innermost loop around its production; "" at root
  std::string store_loop;    // the same for its allocation; "" at root or for an output
};

struct LoopNest {
  std::vector<HalideLoop> loops;          // in program order (outer before inner)
  std::vector<FuncPlacement> placements;  // in program order of productions
  // The whole statement as Halide prints it, with the lets Halide numbers process-wide
  // ("t<n>", "<func>.s<k>.t<n>") renumbered in order of appearance: equal schedules
  // print equal text.
  std::string stmt;
};

// Runs the first lowering pass on a copy of `lowered.pipeline` (outputs at root, as
// Halide's lowering does). Errors: schedules Halide rejects at this stage (e.g. a
// compute_at a loop that does not enclose the Func's uses), with Halide's message.
StatusOr<LoopNest> ScheduledLoopNest(const LoweredPipeline& lowered);

}  // namespace schedfarm
