// The template schedule of a task whose anchor is a convolution, a depthwise
// convolution, a matmul or, in a task without those, a pool, else a reduction: what a
// performance engineer writes by hand for a CPU, as a
// schedule of the space (docs/SCHEDULES.md, "Templates"). The output channels of a
// convolution or matmul are vectorized (up to 4 vectors) with a register tile of
// output columns unrolled around them, the reduction outside the tile, the weights
// packed with output channels innermost, and the anchor computed inside its
// consumer's tile, stored channels innermost, so that the epilogue (bias, activation,
// residual add) is applied to the tile while it is in registers; the outer loops are
// parallel. A depthwise convolution or a pool vectorizes its channels where its input
// stores them innermost, else its columns, and unrolls its rows. A reduction, and every
// other stage at root, gets a vector of what it stores innermost (a concatenation along
// it: its vectors unrolled), parallel only where the work pays for Halide's thread pool;
// an anchor at root is stored with its vector innermost, its reduction just outside the
// tile.
// Campaigns propose it (origin `template`) and searches start from it. Halide-free.
#pragma once

#include <vector>

#include "common/status.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

// Origin of the template's candidates.
inline constexpr char kTemplateOrigin[] = "template";

// The template schedule of the space's pipeline, legal (space.Check). An error names
// the pipeline when it has no anchor and no stage at root to vectorize.
StatusOr<ScheduleSpec> TemplateSchedule(const ScheduleSpace& space);

// The anchors of a fused task (network/tasks.h) that its templates chain: its
// convolutions and pools in topological order when there are two or more and no matmul
// or reduction, each but the last read, through its elementwise epilogue, only by later
// ones; else none.
std::vector<int> ChainedAnchors(const PipelineGraph& graph);

// The templates of the space's pipeline, the likeliest fastest first. For chained
// anchors, the cuts a fused task may take, each measured: every producer computed in
// strips of the last anchor's rows (the values between them stay in the cache, the
// strips' halos computed twice), the first producer at root and the others in the
// strips, and every anchor at root as in a task of its own (docs/SCHEDULES.md,
// "Templates"); otherwise, or where no cut has one, TemplateSchedule's alone. Empty
// when there is none.
std::vector<ScheduleSpec> TemplateSchedules(const ScheduleSpace& space);

}  // namespace schedfarm
