// Internal to scheduler/autoschedule/: the schedule a lowered pipeline carries, read
// stage by stage in the schedule space's terms before the space checks it. import.cc
// fits what is read into the space; canonical_loop_nest.cc names Halide's loops by it.
// Includes Halide.h: include it only from code that links Halide.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/halide/lowering.h"
#include "scheduler/autoschedule/autoschedulers.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

// A LoopRef as the space's loop name, e.g. "d2_1" or "rc".
std::string RefName(const LoopRef& ref, int num_levels);

// What is read of one definition of a stage (its pure one or its update).
struct DefinitionReading {
  DefinitionSchedule schedule;
  // Halide loop variable (Dim::var) -> the loop it is in the space, for the variables
  // that are one loop of the space (not those of a fused or unexpressible group).
  std::map<std::string, LoopRef> loops;
  std::map<std::string, int> num_levels;  // dim -> levels of its split
  std::vector<LeftOut> left_out;
};

// What is read of one stage.
struct StageReading {
  StageSchedule full;         // everything read, before the space's Check
  DefinitionReading defs[2];  // pure, update
  bool has_update = false;
  std::vector<std::string> reduction_dims;  // natural order, innermost first
};

// What the reading of a lowered pipeline gives.
struct PipelineReading {
  std::vector<StageReading> stages;          // by stage index
  std::vector<LeftOut> left_out;             // what does not fit, with the reason
  std::map<std::string, int> stage_of_func;  // Halide Func name -> its stage
};

// Reads the schedule of every stage of `lowered` (lowered from `graph`), and what it
// leaves out (helper Funcs among them). Finalizes (locks) the Funcs' loop levels, as
// compiling does. Halide's errors are thrown as Halide throws them.
StatusOr<PipelineReading> ReadPipelineSchedule(const PipelineGraph& graph,
                                               const LoweredPipeline& lowered);

}  // namespace schedfarm
