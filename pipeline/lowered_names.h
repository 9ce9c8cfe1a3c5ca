// The names the Halide lowering (pipeline/halide/lowering.h) gives a pipeline's
// ImageParams, parameter Buffers and stage Funcs, computed without Halide so that code
// printing Halide source (scheduler/schedule_source.h) names the same Funcs. Halide-free.
#pragma once

#include <string>
#include <vector>

#include "pipeline/graph.h"

namespace schedfarm {

struct LoweredNames {
  std::vector<std::string> inputs;      // indexed like spec.inputs
  std::vector<std::string> parameters;  // indexed like spec.parameters
  std::vector<std::string> stages;      // indexed like graph.stage(s)
};

// Each name is the declared one sanitized to a C identifier ("t" prefixed when it does
// not start with a letter), with "_" appended when it is a loop name of LoopNestOf
// ("d0", "rk1"...) or a C library symbol ("exp", "free"...: Halide's JIT would bind
// their calls to a function of that name), then "_2", "_3"... until it is unique
// among the names given before (inputs, then parameters, then stages).
LoweredNames LoweredNamesOf(const PipelineGraph& graph);

}  // namespace schedfarm
