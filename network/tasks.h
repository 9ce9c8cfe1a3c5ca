// A whole network split into tasks, the unit the farm tunes (docs/NETWORKS.md).
//
// A task is an anchor stage (CONV, MATMUL, POOL or REDUCE) with the stages that
// follow it and read nothing computed later: walking the network in topological
// order, an anchor starts a task, and any other stage joins the newest task among its
// producers (a stage that reads only inputs and parameters starts a task of its own).
// Tasks therefore depend on earlier tasks only. A task's outputs are its stages that
// another task reads or that are network outputs: they are materialized (computed at
// root into buffers of their own), everything else of the task is the task's to
// schedule.
//
// Each task is also a pipeline of its own: the tensors it reads from other tasks and
// the network's inputs become its inputs (in order of first use), its weights become
// random parameters of the same shapes (values do not change how fast a schedule
// runs), and its stages keep the network's names, so its schedules apply to the
// network unchanged. Tasks with the same pipeline id are one distinct task, tuned
// once and weighted by how often it occurs. A fused task (below) chains several
// anchors: its producers' outputs are its own to schedule, computed inside its last
// anchor's tiles or at root as the schedule decides.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"

namespace schedfarm {

// The origins of a network campaign's own candidates: the network under its reference
// schedule (proposed with the baselines), and the schedule assembled from the tasks'.
inline constexpr char kReferenceOrigin[] = "reference";
inline constexpr char kAssembledOrigin[] = "assembled";

// Whether a network campaign runs `baseline` (a campaign baseline, BaselineNames()) on
// each distinct task as well as on the whole network, so that every task has a target
// of its own: libtorch and the autoschedulers whose search takes under a second (Li2018,
// Mullapudi2016), not Adams2019, whose search at its default beam takes seconds to
// minutes and up to gigabytes per pipeline (docs/MEASUREMENT.md, "What a baseline
// costs").
inline bool RunsOnEveryTask(const std::string& baseline) { return baseline != "adams2019"; }

// One task occurrence in the network.
struct NetworkTask {
  int distinct = -1;                   // index into NetworkPartition::distinct
  int anchor = -1;                     // the network stage that started it (-1: none)
  std::vector<int> anchors;            // a fused task's anchors (topological order); else {anchor}
  std::vector<int> stages;             // network stage indices, topological order
  std::vector<std::string> outputs;    // its materialized stages, by name
  std::vector<std::string> canonical;  // its stage names in CanonicalStageOrder
};

// A task tuned once for all its occurrences.
struct DistinctTask {
  std::string pipeline_id;
  PipelineSpec spec;             // the first occurrence as a pipeline
  std::vector<int> occurrences;  // indices into NetworkPartition::tasks
  std::string summary;           // e.g. "conv [1,64,56,56] + add + relu"

  int weight() const { return static_cast<int>(occurrences.size()); }
};

struct NetworkPartition {
  std::vector<NetworkTask> tasks;  // in topological order of their anchors
  std::vector<DistinctTask> distinct;
  // The network with every task output added to its outputs (after the network's
  // own): the pipeline the assembled schedule is compiled and timed on, checked on the
  // network's own outputs (checked_outputs), so its reference outputs are the network's.
  PipelineSpec assembly;
  std::vector<int> task_of_stage;  // network stage -> index into tasks
};

// The network with every parameter given as data (raw_data: an imported network's
// weights) replaced by deterministic random values of the same shape, mean and RMS
// (RandomInit, seeded by its position): what a network campaign times. The values do not
// change how fast a schedule runs, and the campaign then carries the network's structure
// rather than its weights, which the network and its assembly pipeline would both hold
// (ResNet-18: 45 MiB each, over the protocol's message limit together).
StatusOr<PipelineSpec> NetworkWithRandomWeights(const PipelineSpec& network);

// The network with an identity stage "<name>_out" after every CONV, MATMUL or POOL
// stage that would be an output of its task, or that a stage other than an elementwise
// one or a concatenation reads (a reshape, a transpose: no tile of theirs to compute it
// in), taking over all its readers and its place among the network's outputs (label
// "tile_copy"). In Halide an output accumulates a reduction in its own buffer, across the
// whole reduction; a stage computed in its consumer's tile accumulates in registers
// (docs/NETWORKS.md, "Tile copies"). The network computes the same values.
StatusOr<PipelineSpec> NetworkWithTileCopies(const PipelineSpec& network);

// The network whose tasks a campaign tunes, its weights kept: channels-last islands
// rewritten channels-first (network/channels_first.h), then tile copies.
StatusOr<PipelineSpec> TunedNetwork(const PipelineSpec& network);

// The network a network campaign times, as farmctl builds it from the imported one: the
// tuned network with random weights, and `layout` the boundary layout of the network and
// so of its assembly and tasks (docs/NETWORKS.md, "Layouts across a network").
StatusOr<PipelineSpec> TimedNetwork(const PipelineSpec& imported, BoundaryLayout layout);

// Whether stage `op` starts a task.
bool IsAnchorOp(OpKind op);

// The operator kind of a task (a pipeline of PartitionNetwork's), by its anchor: "conv",
// "grouped conv", "depthwise conv" (one group per input channel), "matmul" (by weights),
// "batched matmul" (of two computed operands), "pool", "global pool" (a reduction over
// every spatial axis of an NCHW tensor), "reduction" (any other: the statistics of a
// layer norm, a softmax's), or "elementwise" (no anchor); a fused task's anchors after
// "fused" ("fused conv > depthwise conv > conv"); " into concat" follows when the task
// writes a concatenation. What the per-operator benchmark groups by and the task
// table shows.
std::string TaskKind(const PipelineGraph& task);

// The most anchors a fused task chains (a pointwise, a depthwise and a pointwise
// convolution: MobileNet's inverted residual block).
inline constexpr int kMaxFusedAnchors = 3;

// Splits `network` into tasks. With FUSION_BLOCKS, chains of tasks where consumers
// alone read a producer are one task (docs/NETWORKS.md, "Fused tasks"): walking the
// tasks in order, a task whose anchor is a convolution or a pool and that no fused task
// took yet grows, up to kMaxFusedAnchors anchors, by the tasks reading its outputs
// while every reader is such an anchor (not an elementwise stage such as a residual's
// add, nor a reduction over the whole tensor, a matmul or a reshape, which need the
// whole of it) and no output is the network's; the fused task takes the place of its
// first. Fails only if a task is not a valid pipeline, which names the task and its
// first stage.
StatusOr<NetworkPartition> PartitionNetwork(const PipelineGraph& network,
                                            NetworkFusion fusion = FUSION_NONE);

// Task occurrence `t` of `partition` (of `network`) as a pipeline of its own, built as
// its distinct task's spec is from its first occurrence: its stages under their network
// names and weights, the tensors it reads from other tasks and the network's inputs as
// its inputs, its outputs (NetworkTask::outputs).
PipelineSpec OccurrenceSpec(const PipelineGraph& network, const NetworkPartition& partition, int t);

}  // namespace schedfarm
