// Training and inference throughput of the Torch performance models (gcn, gcn-rank,
// sage, gcn0, lann):
// samples per second on one thread and on all cores, over real features (random
// schedules of the zoo blocks and of random pipelines, featurized). The runtimes are
// synthetic (they do not change the work). Training throughput counts sample-epochs
// of one ensemble member; inference counts schedules predicted by the whole ensemble.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/blas_threads.h"
#include "common/elapsed.h"
#include "learner/features.h"
#include "learner/kinds/model_kinds.h"
#include "learner/model.h"
#include "learner/torch/torch_models.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

constexpr int kSchedulesPerPipeline = 24;
constexpr int kRandomPipelines = 12;

std::vector<Sample> MakeSamples() {
  std::vector<PipelineSpec> specs;
  for (const std::string& name : ZooNames()) {
    StatusOr<PipelineSpec> spec = MakeZooBlock(name);
    if (spec.ok()) specs.push_back(*spec);
  }
  for (int s = 1; s <= kRandomPipelines; ++s) {
    StatusOr<PipelineSpec> spec = RandomPipeline(s);
    if (spec.ok()) specs.push_back(*spec);
  }
  std::vector<Sample> samples;
  for (const PipelineSpec& spec : specs) {
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
    if (!graph.ok()) continue;
    const ScheduleSpace space(*graph);
    const Featurizer featurizer(space);
    for (int k = 0; k < kSchedulesPerPipeline; ++k) {
      Sample sample;
      sample.pipeline_id = space.pipeline_id();
      sample.schedule_hash = std::to_string(k);
      if (!featurizer.Featurize(space.RandomSchedule(k + 1), &sample.features).ok()) continue;
      // Any positive runtime: the work does not depend on it.
      sample.seconds = 1e-9 * std::max(sample.features.flops, 1e3) * (1 + 0.05 * k);
      sample.stddev_seconds = 0.02 * sample.seconds;
      samples.push_back(std::move(sample));
    }
  }
  return samples;
}

struct Figures {
  double train = 0;    // sample-epochs per second, one member
  double predict = 0;  // schedules per second, whole ensemble
};

Figures Measure(const std::string& kind, const std::vector<Sample>& samples, int threads,
                int epochs, int ensemble) {
  Figures figures;
  SetTorchThreads(threads);
  SetBlasThreads(threads);
  StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
  TrainOptions options;
  options.threads = threads;
  options.ensemble = 1;
  options.epochs = epochs;
  auto start = std::chrono::steady_clock::now();
  Status status = (*model)->Train(samples, options);
  if (!status.ok()) {
    std::printf("%s: %s\n", kind.c_str(), status.ToString().c_str());
    return figures;
  }
  figures.train = static_cast<double>(samples.size()) * epochs / SecondsSince(start);

  options.ensemble = ensemble;
  options.epochs = 1;
  status = (*model)->Train(samples, options);
  std::vector<const PipelineFeatures*> features;
  for (const Sample& s : samples) features.push_back(&s.features);
  int rounds = 0;
  start = std::chrono::steady_clock::now();
  while (rounds < 2 || SecondsSince(start) < 2) {
    if (!(*model)->Predict(features).ok()) return figures;
    ++rounds;
  }
  figures.predict = static_cast<double>(samples.size()) * rounds / SecondsSince(start);
  return figures;
}

}  // namespace
}  // namespace schedfarm

int main() {
  using namespace schedfarm;
  const std::vector<Sample> samples = MakeSamples();
  int64_t stages = 0;
  std::set<std::string> pipelines;
  for (const Sample& s : samples) {
    stages += s.features.num_stages;
    pipelines.insert(s.pipeline_id);
  }
  const FeatureSchema& schema = CurrentFeatureSchema();
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  std::printf(
      "model_bench: %zu schedules of %zu pipelines, %.1f stages each on average; "
      "features: %zu invariant + %zu dependent columns per stage\n",
      samples.size(), pipelines.size(), static_cast<double>(stages) / samples.size(),
      schema.invariant_names.size(), schema.dependent_names.size());
  std::printf("%-8s %8s %22s %26s\n", "model", "threads", "train samples/s (1 m.)",
              "predict samples/s (5 m.)");
  struct Run {
    const char* kind;
    int epochs;
  };
  for (const Run& run :
       {Run{"gcn", 2}, Run{"gcn-rank", 2}, Run{"sage", 2}, Run{"gcn0", 2}, Run{"lann", 300}}) {
    for (int threads : {1, cores}) {
      const Figures f = Measure(run.kind, samples, threads, run.epochs, 5);
      std::printf("%-8s %8d %22.0f %26.0f\n", run.kind, threads, f.train, f.predict);
      if (cores == 1) break;
    }
  }
  return 0;
}
