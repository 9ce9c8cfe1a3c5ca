// The assembled schedule (network/assemble.h) on a small network, compiled by Halide:
// random schedules of the distinct tasks, each correct alone, assembled into the
// network's schedule, which computes the reference outputs of the network and of
// every materialized task output; the network run as its task occurrences, each
// compiled on its own and reading the outputs of those before it, computes them too.
#include "network/assemble.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "network/tasks.h"
#include "pipeline/halide/lowering.h"
#include "pipeline/halide/runner.h"
#include "scheduler/halide/apply.h"
#include "scheduler/templates.h"
#include "tests/network/test_networks.h"
#include "tests/scheduler/halide/schedule_checks.h"

namespace schedfarm {
namespace {

struct Fixture {
  PipelineGraph network;
  NetworkPartition partition;
  PipelineGraph assembly;
};

Fixture MakeFixture() {
  StatusOr<PipelineSpec> spec = test_networks::TinyResNet();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> network = PipelineGraph::Build(*spec);
  EXPECT_TRUE(network.ok());
  StatusOr<NetworkPartition> partition = PartitionNetwork(*network);
  EXPECT_TRUE(partition.ok()) << partition.status().ToString();
  StatusOr<PipelineGraph> assembly = PipelineGraph::Build(partition->assembly);
  EXPECT_TRUE(assembly.ok()) << assembly.status().ToString();
  return Fixture{std::move(*network), std::move(*partition), std::move(*assembly)};
}

RunOptions OneRun() {
  RunOptions options;
  options.timing_samples = 0;
  options.threads = 2;
  return options;
}

TEST(Assemble, RandomTaskSchedulesAssembleIntoACorrectNetworkSchedule) {
  Fixture f = MakeFixture();
  StatusOr<RunResult> reference = RunReference(f.assembly, OneRun());
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  const ScheduleSpace assembly_space(f.assembly);

  for (uint64_t round = 0; round < 2; ++round) {
    std::vector<ScheduleSpec> schedules;
    for (size_t d = 0; d < f.partition.distinct.size(); ++d) {
      StatusOr<PipelineGraph> task = PipelineGraph::Build(f.partition.distinct[d].spec);
      ASSERT_TRUE(task.ok());
      const ScheduleSpace space(*task);
      schedules.push_back(space.RandomSchedule(round * 1000 + d + 1));
      // Each task's schedule is correct on the task alone.
      StatusOr<RunResult> task_reference = RunReference(*task, OneRun());
      ASSERT_TRUE(task_reference.ok()) << task_reference.status().ToString();
      const schedule_checks::RunOutcome alone = schedule_checks::RunAndCompare(
          space, schedules.back(), task_reference->outputs, OneRun());
      ASSERT_TRUE(alone.pass) << "task " << d << ": " << alone.message;
    }
    std::vector<const ScheduleSpec*> pointers;
    for (const ScheduleSpec& s : schedules) pointers.push_back(&s);
    StatusOr<ScheduleSpec> assembled = AssembleSchedule(f.partition, assembly_space, pointers);
    ASSERT_TRUE(assembled.ok()) << assembled.status().ToString();
    SCOPED_TRACE(assembled->DebugString());
    const schedule_checks::RunOutcome outcome =
        schedule_checks::RunAndCompare(assembly_space, *assembled, reference->outputs, OneRun());
    EXPECT_TRUE(outcome.pass) << outcome.message;
  }
}

TEST(Assemble, TasksWithoutAScheduleGetTheReferenceSchedule) {
  Fixture f = MakeFixture();
  const ScheduleSpace assembly_space(f.assembly);
  std::vector<const ScheduleSpec*> none(f.partition.distinct.size(), nullptr);
  StatusOr<ScheduleSpec> assembled = AssembleSchedule(f.partition, assembly_space, none);
  ASSERT_TRUE(assembled.ok()) << assembled.status().ToString();
  const ScheduleSpec reference = assembly_space.Reference();
  EXPECT_EQ(assembled->SerializeAsString(), reference.SerializeAsString());
  for (const StageSchedule& stage : reference.stages()) {
    EXPECT_EQ(stage.compute(), ROOT) << stage.stage();
    EXPECT_FALSE(stage.has_pure()) << stage.stage();
  }
  EXPECT_EQ(reference.stages_size(), f.assembly.num_stages());
  EXPECT_TRUE(assembly_space.Check(reference).ok());
}

TEST(Assemble, AScheduleOfAnotherPipelineIsRefusedNamingTheTask) {
  Fixture f = MakeFixture();
  const ScheduleSpace assembly_space(f.assembly);
  std::vector<const ScheduleSpec*> pointers(f.partition.distinct.size(), nullptr);
  StatusOr<PipelineGraph> other = PipelineGraph::Build(f.partition.distinct[0].spec);
  ASSERT_TRUE(other.ok());
  const ScheduleSpec wrong = ScheduleSpace(*other).RandomSchedule(3);  // the stem's stages
  pointers[1] = &wrong;                                                // given to the pool
  StatusOr<ScheduleSpec> assembled = AssembleSchedule(f.partition, assembly_space, pointers);
  ASSERT_FALSE(assembled.ok());
  EXPECT_NE(assembled.status().message().find("task 1 (pool.max_pool"), std::string::npos)
      << assembled.status().message();
  pointers.pop_back();
  EXPECT_FALSE(AssembleSchedule(f.partition, assembly_space, pointers).ok());
}

// The fused MobileNet-like network as its task occurrences in order (OccurrenceSpec,
// each under its distinct task's first template renamed by OccurrenceSchedule), each
// compiled alone and reading the outputs of the occurrences before it
// (CompiledPipeline::ReadInputFrom, no copy): the last computes the network's output.
// An input bound to an output of another shape is refused, naming both.
TEST(Assemble, ANetworkRunAsItsTaskOccurrencesComputesItsOutputs) {
  StatusOr<PipelineSpec> spec = test_networks::TinyMobileNet(8, 16);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> network = PipelineGraph::Build(*spec);
  ASSERT_TRUE(network.ok()) << network.status().ToString();
  StatusOr<NetworkPartition> partition = PartitionNetwork(*network, FUSION_BLOCKS);
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  StatusOr<RunResult> reference = RunReference(*network, OneRun());
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();

  std::vector<CompiledPipeline> occurrences;
  std::map<std::string, std::pair<int, int>> computed;  // tensor -> (occurrence, output)
  for (int t = 0; t < static_cast<int>(partition->tasks.size()); ++t) {
    StatusOr<PipelineGraph> task = PipelineGraph::Build(OccurrenceSpec(*network, *partition, t));
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    StatusOr<PipelineGraph> distinct =
        PipelineGraph::Build(partition->distinct[partition->tasks[t].distinct].spec);
    ASSERT_TRUE(distinct.ok());
    const std::vector<ScheduleSpec> templates = TemplateSchedules(ScheduleSpace(*distinct));
    ASSERT_FALSE(templates.empty());
    StatusOr<ScheduleSpec> schedule = OccurrenceSchedule(*partition, t, templates[0]);
    ASSERT_TRUE(schedule.ok()) << schedule.status().ToString();
    StatusOr<LoweredPipeline> lowered = LowerToHalide(*task);
    ASSERT_TRUE(lowered.ok());
    ASSERT_TRUE(ApplySchedule(*task, *lowered, *schedule).ok());
    StatusOr<CompiledPipeline> compiled = CompiledPipeline::Compile(*task, *lowered, 2);
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    for (int i = 0; i < task->spec().inputs_size(); ++i) {
      auto it = computed.find(task->spec().inputs(i).name());
      if (it == computed.end()) continue;  // the network's input
      const Status bound =
          compiled->ReadInputFrom(i, occurrences[it->second.first], it->second.second);
      ASSERT_TRUE(bound.ok()) << bound.ToString();
    }
    for (int o = 0; o < task->spec().outputs_size(); ++o) {
      computed[task->spec().outputs(o)] = {t, o};
    }
    occurrences.push_back(std::move(*compiled));
  }
  for (CompiledPipeline& occurrence : occurrences) ASSERT_TRUE(occurrence.Realize().ok());
  const auto [last, output] = computed.at(spec->outputs(0));
  const Comparison c = CompareTensors(occurrences[last].Outputs()[output], reference->outputs[0],
                                      DefaultTolerance(reference->outputs[0].dtype));
  EXPECT_TRUE(c.match) << c.message;

  // The linear layer's input bound to the stem's output.
  const Status refused = occurrences.back().ReadInputFrom(0, occurrences.front(), 0);
  EXPECT_NE(refused.message().find("does not have the shape, type and storage order of output 0"),
            std::string::npos)
      << refused.ToString();
}

}  // namespace
}  // namespace schedfarm
