// Storage layouts a schedule chooses (docs/SCHEDULES.md, "Layouts"): which pure dim a
// stage's buffer stores innermost (StageSchedule.storage_innermost: Halide's
// reorder_storage), whether a convolution or transposed matmul reads its
// constant weights packed with the output channels innermost
// (StageSchedule.pack_weights), so that a loop vectorized across output channels
// stores, and loads its weights, as whole vectors, and whether a convolution reads its
// zero-padded input from a copy (StageSchedule.padded_copy), so that its kernel loads
// without a bounds check. Halide-free.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"

namespace schedfarm {

// The weights stage `s` reads that pack_weights packs, and their storage order.
struct PackedWeights {
  int parameter = -1;  // index into spec.parameters()
  // Halide dims of the weights, innermost first: the output-channel dim, then the
  // others in natural order.
  std::vector<int> storage_order;
};

// The weights stage `s` may pack: CONV's filter (output channels: its row-major axis
// 0), or the b of a MATMUL with trans_b (n: its row-major axis rank - 2), when they
// are a parameter (a constant) that no other stage reads. An error says why not,
// naming the stage and the tensor.
StatusOr<PackedWeights> PackableWeights(const PipelineGraph& graph, int s);

// Whether stage `s` may read its input from a padded copy (padded_copy): a CONV whose
// input is zero-padded (ClampedAxes) and a pipeline input, or a stage computed at root
// (`producer`: where the schedule computes that stage), so that the copy, at root,
// comes after the input and before everything that reads it. The space offers copies
// of pipeline inputs only (it decides a producer after its consumers); an assembled
// network's tasks read the previous tasks' outputs, stages at root. An error says why
// not, naming the stage and the tensor.
Status PaddedCopyAllowed(const PipelineGraph& graph, int s,
                         ComputeLocation producer = COMPUTE_LOCATION_UNSPECIFIED);

// The storage order (Halide dims, innermost first) of a rank-`rank` buffer that
// stores dim `innermost` first and the others in natural order.
std::vector<int> StorageOrderWithInnermost(int rank, int innermost);

}  // namespace schedfarm
