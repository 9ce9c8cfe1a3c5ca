#include "campaign/campaign_pipelines.h"

#include <string>

#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"

namespace schedfarm {

StatusOr<PipelineSpec> BuildZooPipeline(const ZooPipeline& zoo) {
  ZooOptions options;
  options.spatial_scale = zoo.spatial_scale();
  options.channel_scale = zoo.channel_scale();
  options.batch = zoo.batch();
  options.dtype = zoo.dtype();
  options.math = zoo.math();
  return MakeZooBlock(zoo.block(), options);
}

StatusOr<PipelineSpec> BuildRandomPipeline(const RandomPipelines& random, uint64_t seed) {
  RandomPipelineOptions options;
  options.max_ops = random.max_ops();
  options.max_elements = random.max_elements();
  options.max_flops = random.max_flops();
  options.min_depth = random.min_depth();
  options.math = random.math();
  return RandomPipeline(seed, options);
}

int64_t CampaignPipelineCount(const CampaignConfig& config) {
  if (config.has_replay()) return config.replay().pipeline_ids_size();
  if (config.has_network()) return -1;
  int64_t count = 0;
  for (const PipelineSource& source : config.pipelines()) {
    count += source.has_random() ? static_cast<int64_t>(source.random().count()) : 1;
  }
  return count;
}

namespace {

// Checks that `submitted` builds and, when `expected` is given, is the same pipeline.
Status CheckPipeline(const PipelineSpec& submitted, const StatusOr<PipelineSpec>* expected,
                     const std::string& what) {
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(submitted);
  if (!graph.ok()) return graph.status().WithContext(what);
  if (expected == nullptr) return Status::Ok();
  if (!expected->ok()) return expected->status().WithContext(what);
  StatusOr<PipelineGraph> expected_graph = PipelineGraph::Build(**expected);
  if (!expected_graph.ok()) return expected_graph.status().WithContext(what);
  if (PipelineId(*graph) != PipelineId(*expected_graph)) {
    return Status::Error(what + ": the submitted pipeline is not the one its settings give");
  }
  return Status::Ok();
}

// The network's own pipeline checked as any entry (a zoo block as farmctl times it), in
// the campaign's layout, then the rest against its split.
Status CheckNetworkPipelines(const CampaignConfig& config,
                             const std::vector<PipelineSpec>& pipelines) {
  const PipelineSource& source = config.network();
  if (pipelines.empty()) return Status::Error("network: no pipeline was submitted");
  if (source.has_zoo()) {
    StatusOr<PipelineSpec> zoo = BuildZooPipeline(source.zoo());
    if (zoo.ok()) zoo = TimedNetwork(*zoo, config.network_layout());
    SCHEDFARM_RETURN_IF_ERROR(CheckPipeline(pipelines[0], &zoo, "network (zoo " + source.zoo().block() + ")"));
  } else {
    SCHEDFARM_RETURN_IF_ERROR(CheckPipeline(pipelines[0], nullptr, "network"));
  }
  if (pipelines[0].boundary_layout() != config.network_layout()) {
    return Status::Error("network: its pipeline's boundary layout is " +
                         BoundaryLayout_Name(pipelines[0].boundary_layout()) +
                         ", the campaign's layout " + BoundaryLayout_Name(config.network_layout()));
  }
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph network, PipelineGraph::Build(pipelines[0]));
  StatusOr<NetworkPartition> partition = PartitionNetwork(network, config.fusion());
  if (!partition.ok()) return partition.status().WithContext("network");
  std::vector<PipelineSpec> expected_pipelines = NetworkCampaignPipelines(network.spec(), *partition);
  if (pipelines.size() != expected_pipelines.size()) {
    return Status::Error("network: its split names " + std::to_string(expected_pipelines.size()) +
                         " pipelines (the network, its assembly and its distinct tasks), " +
                         std::to_string(pipelines.size()) + " were submitted");
  }
  for (size_t i = 1; i < pipelines.size(); ++i) {
    const StatusOr<PipelineSpec> want = expected_pipelines[i];
    SCHEDFARM_RETURN_IF_ERROR(CheckPipeline(
        pipelines[i], &want, i == 1 ? "network assembly" : "network task " + std::to_string(i - 2)));
  }
  return Status::Ok();
}

}  // namespace

std::vector<PipelineSpec> NetworkCampaignPipelines(const PipelineSpec& network,
                                                   const NetworkPartition& partition) {
  std::vector<PipelineSpec> pipelines = {network, partition.assembly};
  for (const DistinctTask& task : partition.distinct) pipelines.push_back(task.spec);
  return pipelines;
}

Status CheckCampaignPipelines(const CampaignConfig& config,
                              const std::vector<PipelineSpec>& pipelines) {
  if (config.has_network()) return CheckNetworkPipelines(config, pipelines);
  const int64_t expected_count = CampaignPipelineCount(config);
  if (static_cast<int64_t>(pipelines.size()) != expected_count) {
    return Status::Error("the campaign names " + std::to_string(expected_count) + " pipelines, " +
                         std::to_string(pipelines.size()) + " were submitted");
  }
  for (int i = 0; i < config.replay().pipeline_ids_size(); ++i) {
    const std::string what = "replay pipeline " + std::to_string(i);
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(pipelines[i]);
    if (!graph.ok()) return graph.status().WithContext(what);
    if (PipelineId(*graph) != config.replay().pipeline_ids(i)) {
      return Status::Error(what + " is " + PipelineId(*graph) + ", the dataset's split names " +
                           config.replay().pipeline_ids(i));
    }
  }
  size_t next = 0;
  for (int i = 0; i < config.pipelines_size(); ++i) {
    const PipelineSource& source = config.pipelines(i);
    const std::string what = "pipelines[" + std::to_string(i) + "]";
    if (source.has_zoo()) {
      const StatusOr<PipelineSpec> expected = BuildZooPipeline(source.zoo());
      SCHEDFARM_RETURN_IF_ERROR(CheckPipeline(pipelines[next++], &expected,
                                              what + " (zoo " + source.zoo().block() + ")"));
    } else if (source.has_random()) {
      for (uint64_t k = 0; k < source.random().count(); ++k) {
        const uint64_t seed = source.random().first_seed() + k;
        const StatusOr<PipelineSpec> expected = BuildRandomPipeline(source.random(), seed);
        SCHEDFARM_RETURN_IF_ERROR(CheckPipeline(
            pipelines[next++], &expected, what + " (random seed " + std::to_string(seed) + ")"));
      }
    } else {
      const std::string file = source.has_onnx_path() ? source.onnx_path() : source.yaml_path();
      SCHEDFARM_RETURN_IF_ERROR(
          CheckPipeline(pipelines[next++], nullptr, what + " (" + file + ")"));
    }
  }
  return Status::Ok();
}

}  // namespace schedfarm
