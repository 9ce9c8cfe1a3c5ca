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

}  // namespace

Status CheckCampaignPipelines(const CampaignConfig& config,
                              const std::vector<PipelineSpec>& pipelines) {
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
