// Lowering of a PipelineGraph to Halide: one Func per stage (pure definition plus,
// for reductions, one update), ImageParams for the inputs, Buffers for the
// parameters, and bounds estimates on everything so that autoschedulers and the
// schedule space see the real extents. Func, Var and RVar names follow
// pipeline/ops.h (LoopNestOf): the Func of stage s is named after the stage
// (pipeline/lowered_names.h), pure vars "d<i>", reduction vars as documented.
//
// This header includes Halide.h: include it only from code that links Halide.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "Halide.h"
#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

struct LoweredStage {
  Halide::Func func;
  std::vector<Halide::Var> pure_vars;   // innermost first, names as LoopNestOf
  std::vector<Halide::RVar> reduction_vars;  // innermost first; empty if no update
  bool has_update = false;
  // A CONV with padding reads its input through this Func: the input with zeros
  // outside its bounds (BoundaryConditions::constant_exterior, its Vars those of the
  // input: Halide's implicit _0, _1... for a pipeline input), inlined unless a schedule
  // copies it (padded_copy); undefined for other stages.
  Halide::Func padded_input;
};

// A lowered pipeline. Owns the parameter buffers; inputs are bound at run time.
struct LoweredPipeline {
  std::vector<LoweredStage> stages;            // indexed like graph.stage(s)
  std::vector<Halide::ImageParam> inputs;       // indexed like spec.inputs
  std::vector<Halide::Buffer<>> parameters;     // indexed like spec.parameters
  std::vector<Halide::Func> outputs;            // spec.outputs order
  Halide::Pipeline pipeline;                    // over `outputs`
};

// Lowers every stage with no schedule applied (Halide's default: all inline except
// outputs). Never throws: Halide errors come back as a Status.
StatusOr<LoweredPipeline> LowerToHalide(const PipelineGraph& graph);

// The reference schedule: every stage compute_root, no splitting, no vectorization,
// no parallelism. Trusted because it is the simplest legal schedule.
void ApplyReferenceSchedule(const PipelineGraph& graph, LoweredPipeline& lowered);

// The storage order (Halide dims, innermost first) of an input or output of `rank`
// dims: {2, 0, 1, 3}, channels innermost, where BoundaryChannelsLast; else empty, the
// natural order.
std::vector<int> BoundaryStorageOrder(const PipelineSpec& spec, int rank);

// A copy of `buffer` with the same values, stored in `storage_order` (Halide dims,
// innermost first).
Halide::Runtime::Buffer<void> InStorageOrder(const Halide::Runtime::Buffer<void>& buffer,
                                             const std::vector<int>& storage_order);

// Converts between HostTensor (row-major) and Halide buffers (dim 0 innermost, or in
// `storage_order` when one is given). FromHalideBuffer reads any storage order.
Halide::Buffer<> ToHalideBuffer(const HostTensor& tensor,
                                const std::vector<int>& storage_order = {});
HostTensor FromHalideBuffer(const Halide::Buffer<>& buffer, DataType dtype);

}  // namespace schedfarm
