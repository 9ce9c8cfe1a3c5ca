#include "farmctl/submission.h"

#include <map>

#include "campaign/campaign_pipelines.h"
#include "network/tasks.h"
#include "campaign/campaign_yaml.h"
#include "common/files.h"
#include "dataset/dataset.h"
#include "pipeline/graph.h"
#include "pipeline/onnx/onnx_import.h"
#include "pipeline/yaml_io.h"
#include "protocol/wire.h"

namespace schedfarm {
namespace {

// Room left in a protocol message for the envelope around the submission.
constexpr size_t kEnvelopeSlackBytes = 4096;

StatusOr<PipelineSpec> Validated(StatusOr<PipelineSpec> spec) {
  if (!spec.ok()) return spec;
  SCHEDFARM_RETURN_IF_ERROR(PipelineGraph::Build(*spec).status());
  return spec;
}

Status AddSource(const PipelineSource& source, std::vector<PipelineSpec>* out) {
  switch (source.kind_case()) {
    case PipelineSource::kZoo: {
      SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec spec, Validated(BuildZooPipeline(source.zoo())));
      out->push_back(std::move(spec));
      return Status::Ok();
    }
    case PipelineSource::kOnnxPath: {
      SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec spec, Validated(ImportOnnxFile(source.onnx_path())));
      out->push_back(std::move(spec));
      return Status::Ok();
    }
    case PipelineSource::kYamlPath: {
      SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec spec,
                                 Validated(PipelineFromYamlFile(source.yaml_path())));
      out->push_back(std::move(spec));
      return Status::Ok();
    }
    case PipelineSource::kRandom: {
      for (uint64_t i = 0; i < source.random().count(); ++i) {
        const uint64_t seed = source.random().first_seed() + i;
        StatusOr<PipelineSpec> spec = Validated(BuildRandomPipeline(source.random(), seed));
        if (!spec.ok()) return spec.status().WithContext("seed " + std::to_string(seed));
        out->push_back(std::move(*spec));
      }
      return Status::Ok();
    }
    case PipelineSource::KIND_NOT_SET:
      break;
  }
  return Status::Error("the item names no pipeline");
}

std::string Describe(const PipelineSource& source) {
  switch (source.kind_case()) {
    case PipelineSource::kZoo:
      return "zoo block " + source.zoo().block();
    case PipelineSource::kOnnxPath:
      return "onnx " + source.onnx_path();
    case PipelineSource::kYamlPath:
      return "yaml " + source.yaml_path();
    case PipelineSource::kRandom:
      return "random seeds " + std::to_string(source.random().first_seed()) + ".." +
             std::to_string(source.random().first_seed() + source.random().count() - 1);
    case PipelineSource::KIND_NOT_SET:
      break;
  }
  return "empty item";
}

}  // namespace

StatusOr<std::vector<PipelineSpec>> BuildCampaignPipelines(const CampaignConfig& config) {
  std::vector<PipelineSpec> pipelines;
  if (config.has_replay()) {
    SCHEDFARM_ASSIGN_OR_RETURN(LoadedDataset dataset, ReadDataset(config.replay().dataset()));
    if (dataset.id != config.replay().dataset_id()) {
      return Status::Error("dataset '" + dataset.path + "' changed while it was read (id " +
                           dataset.id + ", was " + config.replay().dataset_id() + ")");
    }
    std::map<std::string, const PipelineSpec*> by_id;
    for (int i = 0; i < dataset.data.pipelines_size(); ++i) {
      by_id[dataset.pipeline_ids[i]] = &dataset.data.pipelines(i);
    }
    for (const std::string& id : config.replay().pipeline_ids()) pipelines.push_back(*by_id.at(id));
    return pipelines;
  }
  if (config.has_network()) {
    const std::string what = "network (" + Describe(config.network()) + ")";
    SCHEDFARM_RETURN_IF_ERROR(AddSource(config.network(), &pipelines).WithContext(what));
    StatusOr<PipelineSpec> timed = TimedNetwork(pipelines[0], config.network_layout());
    if (!timed.ok()) return timed.status().WithContext(what);
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph network, PipelineGraph::Build(*timed));
    StatusOr<NetworkPartition> partition = PartitionNetwork(network, config.fusion());
    if (!partition.ok()) return partition.status().WithContext(what);
    return NetworkCampaignPipelines(network.spec(), *partition);
  }
  for (int i = 0; i < config.pipelines_size(); ++i) {
    const PipelineSource& source = config.pipelines(i);
    SCHEDFARM_RETURN_IF_ERROR(
        AddSource(source, &pipelines)
            .WithContext("pipelines[" + std::to_string(i) + "] (" + Describe(source) + ")"));
  }
  return pipelines;
}

StatusOr<SubmitCampaign> BuildSubmission(const std::string& path, CampaignConfig* config) {
  StatusOr<std::string> text = ReadFileBytes(path);
  if (!text.ok()) return text.status().WithContext("campaign file");
  SCHEDFARM_ASSIGN_OR_RETURN(CampaignConfig checked, ParseCampaignYaml(*text, path));
  StatusOr<std::vector<PipelineSpec>> pipelines = BuildCampaignPipelines(checked);
  if (!pipelines.ok()) return pipelines.status().WithContext(path);
  SubmitCampaign submit;
  submit.set_yaml_source(*text);
  submit.set_file_name(path);
  if (checked.has_replay()) *submit.mutable_replay() = checked.replay();
  for (PipelineSpec& spec : *pipelines) *submit.add_pipelines() = std::move(spec);
  const size_t bytes = submit.ByteSizeLong();
  if (bytes + kEnvelopeSlackBytes > kDefaultMaxMessageBytes) {
    return Status::Error(
        path + ": the campaign's " + std::to_string(submit.pipelines_size()) + " pipelines take " +
        std::to_string(bytes >> 20) + " MiB, over the protocol's message limit of " +
        std::to_string(kDefaultMaxMessageBytes >> 20) + " MiB: split the campaign");
  }
  if (config != nullptr) *config = std::move(checked);
  return submit;
}

}  // namespace schedfarm
