// For tests of the import: Halide's loop nest of a lowered pipeline as text, with the
// loops named as the schedule space names them, so that the loops of a schedule and of
// its import can be compared.
// Includes Halide.h: include it only from code that links Halide.
#pragma once

#include <string>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/halide/lowering.h"

namespace schedfarm {

// Halide's printed loop nest of `lowered` (Internal::print_loop_nest: produce/consume,
// loops with their for-types and constant extents), with each loop variable of a stage
// renamed to the space's name of the loop it imports to (LoopVarName), so that two
// pipelines scheduled alike print alike whatever their Halide variable names. Funcs
// that do not depend on each other may print in either order: Halide orders them
// partly by name, and helper Funcs are named anew in each lowering.
StatusOr<std::string> CanonicalLoopNest(const PipelineGraph& graph, const LoweredPipeline& lowered);

}  // namespace schedfarm
