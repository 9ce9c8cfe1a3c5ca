#include "tests/scheduler/halide/source_cases.h"

#include <google/protobuf/text_format.h>

#include "network/assemble.h"
#include "pipeline/graph.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"
#include "scheduler/templates.h"
#include "tests/network/test_networks.h"
#include "tests/scheduler/halide/schedule_checks.h"
#include "tests/scheduler/halide/test_pipelines.h"

namespace schedfarm {
namespace source_cases {
namespace {

// ConvReluPool renamed so that the source must rename: "new" (a C++ keyword), "Var" (a
// Halide name of the source), "d1_0" (a Func named like the Var d1_0 of the block of
// "new", which it also names as the host of compute_at); "new" is stored channels
// innermost (reorder_storage), packs its weights (a comment in the source) and reads
// a copy of its padded input.
constexpr char kAwkwardSchedule[] = R"pb(
  stages {
    stage: "d1_0"
    compute: ROOT
    pure {
      splits { dim: "d3" factors: 2 }
      vectorize { stage: "d1_0" dim: "d3" level: 1 }
      tail: TAIL_GUARD_WITH_IF
    }
    update {
      splits { dim: "d1" factors: 4 }
      parallel { stage: "d1_0" dim: "d1" level: 0 update: true }
    }
  }
  stages { stage: "Var" compute: INLINE }
  stages {
    stage: "new"
    compute: AT
    compute_at { stage: "d1_0" dim: "d2" update: true }
    storage_innermost: "d1"
    pack_weights: true
    padded_copy: true
    update {
      splits { dim: "d1" factors: 2 }
      splits { dim: "d3" factors: 4 factors: 2 }
      loop_order { stage: "new" dim: "d3" level: 2 update: true }
      loop_order { stage: "new" dim: "d1" level: 1 update: true }
      vectorize { stage: "new" dim: "d3" level: 2 update: true }
      vector_width: 4
    }
  }
)pb";

StatusOr<ScheduleSpec> Parse(const char* text) {
  ScheduleSpec spec;
  if (!google::protobuf::TextFormat::ParseFromString(text, &spec)) {
    return Status::Error("unparsable schedule text");
  }
  return spec;
}

// A random schedule of `pipeline` from the schedule space.
StatusOr<SourceCase> RandomCase(const std::string& name, const StatusOr<PipelineSpec>& pipeline,
                                int k) {
  if (!pipeline.ok()) return pipeline.status();
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(*pipeline));
  const ScheduleSpace space(graph);
  SourceCase c;
  c.name = name;
  c.pipeline = *pipeline;
  c.schedule = space.RandomSchedule(schedule_checks::ScheduleSeed(pipeline->name(), k));
  return c;
}

// A small network's schedule assembled from random schedules of its tasks
// (network/assemble.h), on its assembly pipeline: what `farmctl best` prints for a
// network campaign.
StatusOr<SourceCase> AssembledNetworkCase() {
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec spec, test_networks::TinyResNet());
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph network, PipelineGraph::Build(spec));
  SCHEDFARM_ASSIGN_OR_RETURN(NetworkPartition partition, PartitionNetwork(network));
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph assembly, PipelineGraph::Build(partition.assembly));
  std::vector<ScheduleSpec> schedules;
  for (const DistinctTask& task : partition.distinct) {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(task.spec));
    schedules.push_back(ScheduleSpace(graph).RandomSchedule(
        schedule_checks::ScheduleSeed(task.pipeline_id, 0)));
  }
  std::vector<const ScheduleSpec*> pointers;
  for (const ScheduleSpec& schedule : schedules) pointers.push_back(&schedule);
  SourceCase c;
  c.name = "assembled_network";
  c.pipeline = partition.assembly;
  SCHEDFARM_ASSIGN_OR_RETURN(c.schedule,
                             AssembleSchedule(partition, ScheduleSpace(assembly), pointers));
  return c;
}

}  // namespace

StatusOr<std::vector<SourceCase>> SourceCases() {
  std::vector<SourceCase> cases;
  const auto add_hand = [&](const std::string& name, const StatusOr<PipelineSpec>& pipeline,
                            const char* schedule) -> Status {
    if (!pipeline.ok()) return pipeline.status();
    SCHEDFARM_ASSIGN_OR_RETURN(ScheduleSpec spec, Parse(schedule));
    cases.push_back({name, *pipeline, spec});
    return Status::Ok();
  };
  SCHEDFARM_RETURN_IF_ERROR(add_hand("conv_relu_pool", testing_pipelines::ConvReluPool(),
                                     testing_pipelines::kConvReluPoolSchedule));
  SCHEDFARM_RETURN_IF_ERROR(add_hand("matmul_two_outputs", testing_pipelines::MatMulTwoOutputs(),
                                     testing_pipelines::kMatMulTwoOutputsSchedule));
  StatusOr<PipelineSpec> conv_relu_pool = testing_pipelines::ConvReluPool();
  if (!conv_relu_pool.ok()) return conv_relu_pool.status();
  SCHEDFARM_RETURN_IF_ERROR(
      add_hand("awkward_names",
               testing_pipelines::RenameStages(
                   *conv_relu_pool, {{"conv", "new"}, {"relu", "Var"}, {"max_pool", "d1_0"}}),
               kAwkwardSchedule));

  for (const char* block : {"resnet18_basic", "mobilenetv2_inverted_residual", "squeezenet_fire",
                            "inception_module", "transformer_encoder", "wavenet_residual"}) {
    for (int k = 0; k < 2; ++k) {
      SCHEDFARM_ASSIGN_OR_RETURN(
          SourceCase c,
          RandomCase(std::string(block) + "_" + std::to_string(k), MakeZooBlock(block), k));
      cases.push_back(std::move(c));
    }
  }
  // The template of a block with channels-last boundaries, sized for AVX-512: a tile
  // of packed weights over a copy of the padded input stored channels innermost.
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec block, MakeZooBlock("resnet18_basic"));
  block.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph block_graph, PipelineGraph::Build(block));
  TargetParams avx512;
  avx512.vector_bytes = 64;
  SCHEDFARM_ASSIGN_OR_RETURN(ScheduleSpec block_template,
                             TemplateSchedule(ScheduleSpace(block_graph, avx512)));
  cases.push_back({"resnet18_basic_template_channels_last", block, block_template});

  SCHEDFARM_ASSIGN_OR_RETURN(SourceCase network, AssembledNetworkCase());
  cases.push_back(std::move(network));
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    SCHEDFARM_ASSIGN_OR_RETURN(
        SourceCase c,
        RandomCase("random_" + std::to_string(seed), schedule_checks::RandomPipelineCase(seed), 0));
    cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace source_cases
}  // namespace schedfarm
