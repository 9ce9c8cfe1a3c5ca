// Fused tasks (network/tasks.h, FUSION_BLOCKS) with Halide: the templates of a fused
// task (scheduler/templates.h, TemplateSchedules: its cuts) are legal, the first computes
// its producers in strips of its output's rows, and each computes the task's reference
// outputs; a network's fused tasks assemble into a schedule of the network that
// computes its reference outputs.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "network/assemble.h"
#include "network/tasks.h"
#include "pipeline/halide/runner.h"
#include "scheduler/templates.h"
#include "tests/network/test_networks.h"
#include "tests/scheduler/halide/schedule_checks.h"

namespace schedfarm {
namespace {

RunOptions OneRun() {
  RunOptions options;
  options.timing_samples = 0;
  options.threads = 2;
  return options;
}

StatusOr<NetworkPartition> Fused(const PipelineGraph& network) {
  return PartitionNetwork(network, FUSION_BLOCKS);
}

PipelineGraph MustBuild(const StatusOr<PipelineSpec>& spec, BoundaryLayout layout) {
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  PipelineSpec laid_out = *spec;
  laid_out.set_boundary_layout(layout);
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(laid_out);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return std::move(*graph);
}

const StageSchedule* Decision(const ScheduleSpec& spec, const std::string& stage) {
  for (const StageSchedule& d : spec.stages()) {
    if (d.stage() == stage) return &d;
  }
  return nullptr;
}

// The inverted residual block of a MobileNet-like network at 16 channels (64
// expanded) and 32x32, both layouts, AVX2 and AVX-512 vectors: three templates (every
// producer in the strips, the expansion at root, every anchor at root), each legal
// and computing the reference; in the first, the expansion's and the depthwise
// convolution's hosts are computed at the strip loop of the block's output, which is
// parallel.
TEST(FusedTemplates, EveryCutOfAnInvertedResidualBlockComputesTheReference) {
  for (BoundaryLayout layout : {LAYOUT_CHANNELS_LAST, LAYOUT_NATURAL}) {
    const PipelineGraph network = MustBuild(test_networks::TinyMobileNet(16, 64), layout);
    StatusOr<NetworkPartition> partition = Fused(network);
    ASSERT_TRUE(partition.ok()) << partition.status().ToString();
    const PipelineGraph task =
        MustBuild(partition->distinct[partition->tasks[1].distinct].spec, layout);
    ASSERT_EQ(ChainedAnchors(task).size(), 3u);
    StatusOr<RunResult> reference = RunReference(task, OneRun());
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    for (int vector_bytes : {32, 64}) {
      SCOPED_TRACE("layout " + BoundaryLayout_Name(layout) + ", vector bytes " +
                   std::to_string(vector_bytes));
      TargetParams target;
      target.vector_bytes = vector_bytes;
      const ScheduleSpace space(task, target);
      const std::vector<ScheduleSpec> templates = TemplateSchedules(space);
      ASSERT_EQ(templates.size(), 3u);
      const std::string output = task.stage(task.output_stages()[0]).name();
      const ScheduleSpec& fused = templates[0];
      const StageSchedule* out = Decision(fused, output);
      ASSERT_NE(out, nullptr);
      ASSERT_EQ(out->pure().parallel_size(), 1);
      const LoopRef strip = out->pure().parallel(0);
      int in_strip = 0;
      for (const StageSchedule& d : fused.stages()) {
        in_strip += d.compute() == AT && d.compute_at().stage() == output &&
                    d.compute_at().dim() == strip.dim() && d.compute_at().level() == 0;
      }
      EXPECT_GE(in_strip, 2) << fused.DebugString();
      // In the last cut, only the last anchor is computed in the output's tiles: the
      // producers are at root, each in its host's tiles as in a task of its own.
      int in_output = 0;
      for (const StageSchedule& d : templates.back().stages()) {
        in_output += d.compute() == AT && d.compute_at().stage() == output;
      }
      EXPECT_EQ(in_output, 1) << templates.back().DebugString();
      for (size_t k = 0; k < templates.size(); ++k) {
        ASSERT_TRUE(space.Check(templates[k]).ok())
            << k << ": " << space.Check(templates[k]).message();
        const schedule_checks::RunOutcome run =
            schedule_checks::RunAndCompare(space, templates[k], reference->outputs, OneRun());
        EXPECT_TRUE(run.pass) << "template " << k << ": " << run.message;
      }
    }
  }
}

// A ResNet-like network's fused tasks (its stem with the pool, each block's two 3x3
// convolutions: a producer read through padding by the next) have chained templates
// that compute the reference, and the whole network assembled from them (the fused
// tasks' first templates, the others' TemplateSchedule) computes the network's.
TEST(FusedTemplates, AFusedNetworkAssemblesFromItsTasksTemplates) {
  const PipelineGraph network = MustBuild(test_networks::TinyResNet(16, 32), LAYOUT_CHANNELS_LAST);
  StatusOr<NetworkPartition> partition = Fused(network);
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  TargetParams avx512;
  avx512.vector_bytes = 64;
  std::vector<ScheduleSpec> schedules;
  int chained = 0;
  for (const DistinctTask& distinct : partition->distinct) {
    SCOPED_TRACE(distinct.summary);
    const PipelineGraph task = MustBuild(distinct.spec, LAYOUT_CHANNELS_LAST);
    const ScheduleSpace space(task, avx512);
    const std::vector<ScheduleSpec> templates = TemplateSchedules(space);
    ASSERT_FALSE(templates.empty());
    chained += !ChainedAnchors(task).empty();
    StatusOr<RunResult> reference = RunReference(task, OneRun());
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    for (size_t k = 0; k < templates.size(); ++k) {
      const schedule_checks::RunOutcome run =
          schedule_checks::RunAndCompare(space, templates[k], reference->outputs, OneRun());
      EXPECT_TRUE(run.pass) << "template " << k << ": " << run.message;
    }
    schedules.push_back(templates[0]);
  }
  EXPECT_EQ(chained, 2);  // the stem with its pool; the blocks (one distinct task)
  PipelineSpec assembly_spec = partition->assembly;
  const PipelineGraph assembly = MustBuild(assembly_spec, LAYOUT_CHANNELS_LAST);
  const ScheduleSpace assembly_space(assembly, avx512);
  std::vector<const ScheduleSpec*> pointers;
  for (const ScheduleSpec& s : schedules) pointers.push_back(&s);
  StatusOr<ScheduleSpec> assembled = AssembleSchedule(*partition, assembly_space, pointers);
  ASSERT_TRUE(assembled.ok()) << assembled.status().ToString();
  StatusOr<RunResult> reference = RunReference(assembly, OneRun());
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  const schedule_checks::RunOutcome outcome =
      schedule_checks::RunAndCompare(assembly_space, *assembled, reference->outputs, OneRun());
  EXPECT_TRUE(outcome.pass) << outcome.message;
}

}  // namespace
}  // namespace schedfarm
