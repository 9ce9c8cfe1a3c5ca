// Exports a ScheduleSpec as Halide C++ schedule source, in the style of the schedules
// Halide's autoschedulers print: one block per Func (reverse topological order) that
// declares its Vars and RVars and chains exactly the calls ApplySchedule makes
// (scheduler/halide/apply.h, docs/SCHEDULES.md). Text only: it needs no Halide.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The source, for pasting where `using namespace Halide;` holds and a Halide::Func of
// the lowered pipeline is in scope for every stage, under the C++ name
// ScheduleSourceFuncNames gives it, and for the padded input of every convolution
// with padded_copy (LoweredStage::padded_input, Halide's constant_exterior Func of
// its input), under the name ScheduleSourcePaddedInputNames gives it. Errors: as ApplySchedule's for specs that
// do not fit the graph.
StatusOr<std::string> ScheduleSource(const PipelineGraph& graph, const ScheduleSpec& spec);

// The C++ names the source uses for the Funcs, by stage index: the lowered Func's name
// (pipeline/lowered_names.h), with "_" appended while it is a C++ keyword, a Halide
// name the source uses (Var, RVar, TailStrategy...), or already taken.
std::vector<std::string> ScheduleSourceFuncNames(const PipelineGraph& graph);

// The C++ names of the stages' padded inputs by stage index ("" for a stage whose
// input no schedule may copy, PaddedCopyAllowed): "<stage>_padded", distinct from
// those of the stages.
std::vector<std::string> ScheduleSourcePaddedInputNames(const PipelineGraph& graph);

}  // namespace schedfarm
