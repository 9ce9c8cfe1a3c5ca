// farm-pretrain: trains a pretrained model (pretrained/pretrained.h) of one kind on
// recorded datasets of one kind of host, and shows one.
//
//   farm-pretrain --kind K --dataset FILE [--dataset FILE...] --output-dir DIR
//                 [--held-out F] [--seed N] [--threads N] [--epochs N] [--ensemble N]
//                 [--early-stopping]
//   farm-pretrain --kind K --dataset FILE... --hold-out TEXT [...]
//   farm-pretrain --show FILE
//
// Every distinct schedule's first OK measurement of every dataset is a sample,
// featurized in the schedule space its campaign planned for (the vector width its
// workers' ISA gave it). The samples are split by pipeline (F of the pipelines held
// out, default 0.2): the model trains on the rest and its metrics on the held-out
// pipelines go into the file, so that they are what a pipeline it never saw gets.
// It is written to DIR/KIND-HOST.sfpm (PretrainedName). --hold-out TEXT holds out
// instead every pipeline whose provenance (PipelineSpec.source) contains TEXT, e.g. a
// network's tasks ("resnet18/") or the zoo blocks ("zoo:"), and prints the metrics
// without writing a model: what a network nobody trained on sees (the transfer table
// of docs/EVALUATION.md). Exit codes: 0 written or shown, 1 a dataset, the training or
// the file failed, 2 usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "campaign/campaign_yaml.h"
#include "common/flags.h"
#include "common/log.h"
#include "dataset/dataset.h"
#include "evaluation/split.h"
#include "learner/features.h"
#include "learner/kinds/model_kinds.h"
#include "learner/model_evaluation.h"
#include "pipeline/graph.h"
#include "pretrained/pretrained.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

constexpr char kUsage[] =
    "usage: farm-pretrain --kind K --dataset FILE [--dataset FILE...] --output-dir DIR\n"
    "                     [--held-out F] [--seed N] [--threads N] [--epochs N]\n"
    "                     [--ensemble N] [--early-stopping]\n"
    "       farm-pretrain --kind K --dataset FILE... --hold-out TEXT [...]\n"
    "       farm-pretrain --show FILE\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "farm-pretrain: %s\n", message.c_str());
  return 1;
}

// The samples of one dataset: each distinct schedule's first OK measurement, in the
// space its campaign planned for. Schedules that the space now refuses are counted in
// *skipped (the learner skips them alike).
Status AddDatasetSamples(const LoadedDataset& dataset, std::vector<Sample>* samples,
                         std::map<std::string, std::string>* sources, int64_t* skipped) {
  std::map<std::string, int> vector_bytes;  // by campaign id
  for (const DatasetPart& part : dataset.data.parts()) {
    StatusOr<CampaignConfig> config =
        ParseCampaignYaml(part.yaml_source(), part.campaign_name() + ".yaml", false);
    if (!config.ok()) {
      return config.status().WithContext(dataset.path + ": campaign " + part.campaign_id());
    }
    vector_bytes[part.campaign_id()] = CampaignVectorBytes(config->workers());
  }
  std::map<std::string, const PipelineSpec*> specs;
  for (int i = 0; i < dataset.data.pipelines_size(); ++i) {
    specs[dataset.pipeline_ids[i]] = &dataset.data.pipelines(i);
    (*sources)[dataset.pipeline_ids[i]] = dataset.data.pipelines(i).source();
  }
  struct Space {
    std::unique_ptr<PipelineGraph> graph;
    std::unique_ptr<ScheduleSpace> space;
    std::unique_ptr<Featurizer> featurizer;
  };
  std::map<std::pair<std::string, int>, Space> spaces;
  for (const auto& [key, m] : FirstOkMeasurements(dataset.data)) {
    const auto bytes = vector_bytes.find(m->candidate().campaign());
    if (bytes == vector_bytes.end()) {
      return Status::Error(dataset.path + ": measurement of lease " + m->lease_id() +
                           " is of campaign " + m->candidate().campaign() +
                           ", which the dataset has no part for");
    }
    Space& space = spaces[{m->candidate().pipeline_id(), bytes->second}];
    if (space.featurizer == nullptr) {
      SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph,
                                 PipelineGraph::Build(*specs.at(m->candidate().pipeline_id())));
      space.graph = std::make_unique<PipelineGraph>(std::move(graph));
      TargetParams target;
      target.vector_bytes = bytes->second;
      space.space = std::make_unique<ScheduleSpace>(*space.graph, target);
      space.featurizer = std::make_unique<Featurizer>(*space.space);
    }
    StatusOr<Sample> sample = SampleOf(*m, *space.featurizer);
    if (!sample.ok()) {
      ++*skipped;
      continue;
    }
    samples->push_back(std::move(sample).value());
  }
  return Status::Ok();
}

int Show(const std::string& path) {
  StatusOr<PretrainedModel> model = ReadPretrained(path);
  if (!model.ok()) return Fail(model.status().message());
  std::printf("%s", DescribePretrained(*model).c_str());
  return 0;
}

int Pretrain(const Flags& flags, const std::vector<std::string>& dataset_files) {
  const std::string kind = flags.get("--kind");
  StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
  if (!model.ok()) return Fail(model.status().message());
  double held_out = 0.2;
  if (flags.has("--held-out")) {
    const std::string text = flags.get("--held-out");
    char* end = nullptr;
    held_out = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0' || !(held_out > 0 && held_out < 1)) {
      std::fprintf(stderr, "farm-pretrain: --held-out must be a number in (0, 1), got '%s'\n",
                   text.c_str());
      return 2;
    }
  }
  long long seed = 1, threads = 0, epochs = 0, ensemble = 0;
  std::string error;
  if (!IntFlag(flags, "--seed", 0, 1LL << 62, 1, &seed, &error) ||
      !IntFlag(flags, "--threads", 0, 1024, 0, &threads, &error) ||
      !IntFlag(flags, "--epochs", 0, 1000000, 0, &epochs, &error) ||
      !IntFlag(flags, "--ensemble", 0, 64, 0, &ensemble, &error)) {
    return Fail(error);
  }

  PretrainedModel pretrained;
  std::vector<Sample> samples;
  std::map<std::string, std::string> sources;  // provenance by pipeline id
  int64_t skipped = 0;
  for (const std::string& file : dataset_files) {
    StatusOr<LoadedDataset> dataset = ReadDataset(file);
    if (!dataset.ok()) return Fail(dataset.status().message());
    if (pretrained.datasets_size() == 0) {
      *pretrained.mutable_host() = dataset->data.host();
    } else if (const std::string difference =
                   HostKindDifference(dataset->data.host(), pretrained.host());
               !difference.empty()) {
      return Fail("dataset '" + file + "' was taken on another kind of host than '" +
                  dataset_files[0] + "': " + difference);
    }
    PretrainedDataset* record = pretrained.add_datasets();
    record->set_id(dataset->id);
    record->set_file(file.substr(file.find_last_of('/') + 1));
    record->set_measurements(dataset->data.measurements_size());
    if (Status added = AddDatasetSamples(*dataset, &samples, &sources, &skipped); !added.ok()) {
      return Fail(added.message());
    }
  }
  pretrained.mutable_host()->clear_worker_id();
  pretrained.set_name(PretrainedName(kind, pretrained.host()));

  std::vector<std::string> ids;
  for (const Sample& s : samples) ids.push_back(s.pipeline_id);
  StatusOr<PipelineSplit> split = SplitByPipeline(ids, seed, held_out);
  if (!split.ok()) return Fail("the datasets' samples: " + split.status().message());
  const std::string hold_out = flags.get("--hold-out");
  if (flags.has("--hold-out")) {
    std::set<std::string> held_ids, train_ids;
    for (const std::string& id : ids) {
      (sources[id].find(hold_out) != std::string::npos ? held_ids : train_ids).insert(id);
    }
    if (held_ids.empty() || train_ids.empty()) {
      return Fail("--hold-out '" + hold_out + "' holds out " + std::to_string(held_ids.size()) +
                  " of the " + std::to_string(held_ids.size() + train_ids.size()) +
                  " pipelines: it must leave some on each side");
    }
    split->held_out.assign(held_ids.begin(), held_ids.end());
    split->train.assign(train_ids.begin(), train_ids.end());
  }
  std::vector<Sample> train, held;
  if (Status put = SplitSamples(samples, *split, &train, &held); !put.ok()) {
    return Fail(put.message());
  }
  std::fprintf(stderr,
               "farm-pretrain: %zu samples (%lld schedules the space refuses now, skipped): %zu "
               "training, %zu held out (%zu of %zu pipelines)\n",
               samples.size(), static_cast<long long>(skipped), train.size(), held.size(),
               split->held_out.size(), split->held_out.size() + split->train.size());
  TrainOptions options;
  options.seed = seed;
  options.threads = static_cast<int>(threads);
  options.epochs = static_cast<int>(epochs);
  options.ensemble = static_cast<int>(ensemble);
  options.early_stopping = flags.has("--early-stopping");
  const auto started = std::chrono::steady_clock::now();
  if (Status trained = (*model)->Train(train, options); !trained.ok()) {
    return Fail(trained.message());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  StatusOr<EvalMetrics> metrics = EvaluateModel(**model, held);
  if (!metrics.ok()) return Fail(metrics.status().message());
  if (flags.has("--hold-out")) {
    std::printf("%s trained without the pipelines of '%s' (%.0f s):\n%s", kind.c_str(),
                hold_out.c_str(), seconds,
                FormatMetricsTable({{kind + " held out", *metrics}}).c_str());
    return 0;
  }

  Model& record = *pretrained.mutable_model();
  record.set_kind(kind);
  record.set_created_unix_ms(UnixMillis());
  record.set_version(pretrained.name() + "-" + std::to_string(record.created_unix_ms()));
  record.set_training_set_size(static_cast<int64_t>(train.size()));
  record.set_feature_schema_version(CurrentFeatureSchema().version);
  for (const std::string& id : split->held_out) record.add_held_out_pipelines(id);
  record.set_held_out_size(static_cast<int64_t>(held.size()));
  for (const auto& [name, value] : MetricsAsMap(*metrics))
    (*record.mutable_metrics())[name] = value;
  (*record.mutable_metrics())["train_seconds"] = seconds;
  StatusOr<std::string> weights = (*model)->Save();
  if (!weights.ok()) return Fail(weights.status().message());
  record.set_weights(std::move(weights).value());

  const std::string path = PretrainedPath(flags.get("--output-dir"), pretrained.name());
  if (Status written = WritePretrained(path, pretrained); !written.ok()) {
    return Fail(written.message());
  }
  std::printf("wrote %s\n%s", path.c_str(), DescribePretrained(pretrained).c_str());
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  using namespace schedfarm;
  std::vector<std::string> datasets;
  // --dataset repeats: take them out before the flag parser, which keeps one value.
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--dataset" && i + 1 < argc) {
      datasets.push_back(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  const Flags flags = ParseFlags(static_cast<int>(rest.size()), rest.data(),
                                 {{"--kind", true},
                                  {"--output-dir", true},
                                  {"--held-out", true},
                                  {"--seed", true},
                                  {"--threads", true},
                                  {"--epochs", true},
                                  {"--ensemble", true},
                                  {"--early-stopping", false},
                                  {"--hold-out", true},
                                  {"--show", true},
                                  {"--help", false}});
  if (flags.has("--help")) {
    std::fprintf(stdout, "%s", kUsage);
    return 0;
  }
  if (!flags.error.empty()) {
    std::fprintf(stderr, "farm-pretrain: %s\n%s", flags.error.c_str(), kUsage);
    return 2;
  }
  if (flags.has("--show")) return Show(flags.get("--show"));
  if (!flags.has("--kind") || datasets.empty() ||
      flags.has("--output-dir") == flags.has("--hold-out")) {
    std::fprintf(stderr,
                 "farm-pretrain: --kind, --dataset and one of --output-dir and --hold-out are "
                 "required\n%s",
                 kUsage);
    return 2;
  }
  return Pretrain(flags, datasets);
}
