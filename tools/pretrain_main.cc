// farm-pretrain: trains a pretrained model (pretrained/pretrained.h) of one kind on
// recorded datasets of one or several kinds of host, and shows one.
//
//   farm-pretrain --kind K --dataset FILE [--dataset FILE...] --output-dir DIR
//                 [--held-out F] [--seed N] [--threads N] [--epochs N] [--ensemble N]
//                 [--early-stopping]
//   farm-pretrain --kind K --dataset FILE... --hold-out TEXT [...]
//   farm-pretrain --kind K --dataset FILE... --score-on FILE... [...]
//   farm-pretrain --show FILE
//
// Every distinct schedule's first OK measurement of every dataset is a sample,
// featurized on the host that measured it at the threads it ran with (its vector width,
// caches, peak and bandwidth: learner/host_featurizers.h). The samples are split by
// pipeline (F of the pipelines held out, default 0.2): the model trains on the rest and
// its metrics on the held-out pipelines go into the file, so that they are what a
// pipeline it never saw gets. It is written to DIR/KIND-HOSTS.sfpm (PretrainedName of
// its datasets' host kinds), which records each kind. --hold-out TEXT holds out instead
// every pipeline whose provenance (PipelineSpec.source) contains TEXT, e.g. a network's
// tasks ("resnet18/") or the zoo blocks ("zoo:"), and prints the metrics without
// writing a model: what a network nobody trained on sees. --score-on FILE (repeated)
// prints instead the metrics on each such dataset's held-out pipelines, the split made
// over the pipelines of every file named, so that runs naming the same files hold out
// the same pipelines on every host: a model of one host kind scored on another, and one
// of both on each (the transfer tables of docs/EVALUATION.md). Exit codes: 0 written,
// shown or scored, 1 a dataset, the training or the file failed, 2 usage.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/flags.h"
#include "common/log.h"
#include "common/text.h"
#include "dataset/dataset.h"
#include "evaluation/split.h"
#include "learner/features.h"
#include "learner/host_featurizers.h"
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
    "       farm-pretrain --kind K --dataset FILE... --score-on FILE... [...]\n"
    "       farm-pretrain --show FILE\n";

int Fail(const std::string& message) {
  std::fprintf(stderr, "farm-pretrain: %s\n", message.c_str());
  return 1;
}

// The samples of one dataset: each distinct schedule's first OK measurement,
// featurized on the host that measured it at the threads it ran with
// (learner/host_featurizers.h). Schedules that the space now refuses are counted in
// *skipped (the learner skips them alike).
Status AddDatasetSamples(const LoadedDataset& dataset, std::vector<Sample>* samples,
                         std::map<std::string, std::string>* sources, int64_t* skipped) {
  std::map<std::string, std::unique_ptr<PipelineGraph>> graphs;  // by pipeline id
  for (int i = 0; i < dataset.data.pipelines_size(); ++i) {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph,
                               PipelineGraph::Build(dataset.data.pipelines(i)));
    graphs[dataset.pipeline_ids[i]] = std::make_unique<PipelineGraph>(std::move(graph));
    (*sources)[dataset.pipeline_ids[i]] = dataset.data.pipelines(i).source();
  }
  HostFeaturizers featurizers;
  for (const auto& [key, m] : FirstOkMeasurements(dataset.data)) {
    StatusOr<Sample> sample = featurizers.SampleOf(*graphs.at(m->candidate().pipeline_id()), *m);
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

// Adds `host`'s kind to the model's host kinds unless one of them is of its kind
// (HostKindDifference); the first is also the model's `host`, for older readers.
void AddHostKind(HostFingerprint host, PretrainedModel* model) {
  host.clear_worker_id();
  for (const HostFingerprint& known : model->hosts()) {
    if (HostKindDifference(known, host).empty()) return;
  }
  if (model->hosts_size() == 0) *model->mutable_host() = host;
  *model->add_hosts() = std::move(host);
}

std::string FileName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// --score-on: the model trained on `training_files`, scored on each scored file's
// held-out pipelines, one row each (the transfer table of docs/EVALUATION.md).
int PrintTransfer(const PerformanceModel& model, const std::string& kind,
                  const std::vector<std::string>& training_files,
                  const std::vector<std::string>& scored_files,
                  const std::map<std::string, std::vector<Sample>>& samples_of,
                  const std::map<std::string, HostFingerprint>& host_of, const PipelineSplit& split,
                  double seconds) {
  std::vector<std::string> trained_on;
  for (const std::string& file : training_files) trained_on.push_back(FileName(file));
  std::vector<NamedMetrics> rows;
  for (const std::string& file : scored_files) {
    std::vector<Sample> train, held;
    if (Status put = SplitSamples(samples_of.at(file), split, &train, &held); !put.ok()) {
      return Fail(put.message());
    }
    StatusOr<EvalMetrics> metrics = EvaluateModel(model, held);
    if (!metrics.ok()) return Fail(file + ": " + metrics.status().message());
    rows.push_back({kind + " on " + FileName(file) + " (" + host_of.at(file).cpu_model() + ", " +
                        std::to_string(held.size()) + " held-out samples)",
                    *metrics});
  }
  std::printf("%s trained on %s (%.0f s), scored on the held-out pipelines of each file:\n%s",
              kind.c_str(), Join(trained_on, " + ").c_str(), seconds,
              FormatMetricsTable(rows).c_str());
  return 0;
}

int Pretrain(const Flags& flags, const std::vector<std::string>& training_files,
             const std::vector<std::string>& scored_files) {
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

  // Every file named, read once: the training datasets, then those only scored on.
  std::vector<std::string> files = training_files;
  for (const std::string& file : scored_files) {
    if (std::find(files.begin(), files.end(), file) == files.end()) files.push_back(file);
  }
  PretrainedModel pretrained;
  std::map<std::string, std::vector<Sample>> samples_of;  // by file
  std::map<std::string, HostFingerprint> host_of;         // by file
  std::map<std::string, std::string> sources;             // provenance by pipeline id
  std::vector<std::string> ids;                           // of every file's samples
  int64_t skipped = 0;
  for (const std::string& file : files) {
    StatusOr<LoadedDataset> dataset = ReadDataset(file);
    if (!dataset.ok()) return Fail(dataset.status().message());
    host_of[file] = dataset->data.host();
    std::vector<Sample>& samples = samples_of[file];
    if (Status added = AddDatasetSamples(*dataset, &samples, &sources, &skipped); !added.ok()) {
      return Fail(added.message());
    }
    for (const Sample& s : samples) ids.push_back(s.pipeline_id);
    if (std::find(training_files.begin(), training_files.end(), file) == training_files.end()) {
      continue;
    }
    PretrainedDataset* record = pretrained.add_datasets();
    record->set_id(dataset->id);
    record->set_file(FileName(file));
    record->set_measurements(dataset->data.measurements_size());
    AddHostKind(dataset->data.host(), &pretrained);
  }
  pretrained.set_name(PretrainedName(kind, pretrained.hosts()));
  std::vector<Sample> samples;
  for (const std::string& file : training_files) {
    samples.insert(samples.end(), samples_of[file].begin(), samples_of[file].end());
  }

  // The split is over every file's pipelines, so that a pipeline held out is held out
  // of every host's training.
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
  if (!scored_files.empty())
    return PrintTransfer(**model, kind, training_files, scored_files, samples_of, host_of, *split,
                         seconds);
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
  std::vector<std::string> datasets, scored;
  // --dataset and --score-on repeat: take them out before the flag parser, which keeps
  // one value.
  std::vector<char*> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--dataset" && i + 1 < argc) {
      datasets.push_back(argv[++i]);
    } else if (std::string(argv[i]) == "--score-on" && i + 1 < argc) {
      scored.push_back(argv[++i]);
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
  const int outputs = flags.has("--output-dir") + flags.has("--hold-out") + !scored.empty();
  if (!flags.has("--kind") || datasets.empty() || outputs != 1) {
    std::fprintf(stderr,
                 "farm-pretrain: --kind, --dataset and one of --output-dir, --hold-out and "
                 "--score-on are required\n%s",
                 kUsage);
    return 2;
  }
  return Pretrain(flags, datasets, scored);
}
