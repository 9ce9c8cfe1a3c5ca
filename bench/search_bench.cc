// The search's scoring speed, on one core: partial schedules scored per second through
// the search layer's CostModel (featurized and predicted in batches, as greedy scores
// one stage's options) for every model kind on a pipeline of about 20 stages (target
// 20,000/s), and the wall time of one greedy search with an option cap of K = 1,000
// over a pipeline of at least 100 stages (target 10 s; the value-learning paper: 13 s
// on average). The models are trained briefly on featurized random schedules with
// synthetic runtimes: scoring costs the same whatever the weights. Every kind predicts
// with the ensemble campaigns use by default: 5 members for the GCN, LANN and gcn0, 3
// for the GBT, the BiLSTM's one member, also as value iteration's V_i (prefixes scored
// as they are).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/blas_threads.h"
#include "common/elapsed.h"
#include "learner/cost_model_adapter.h"
#include "learner/features.h"
#include "learner/kinds/model_kinds.h"
#include "learner/torch/torch_models.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "scheduler/schedule_space.h"
#include "search/registry.h"
#include "search/stage_options.h"

namespace schedfarm {
namespace {

constexpr double kStatesTarget = 20000;     // partial states per second, 20 stages
constexpr double kGreedyTargetSeconds = 10;  // one greedy search, K = 1000, >= 100 stages

// A pipeline of the random generator with at least `min_stages` stages (and, for
// small sizes, not many more).
struct Pipeline {
  std::unique_ptr<PipelineGraph> graph;
  std::unique_ptr<ScheduleSpace> space;
  std::unique_ptr<Featurizer> featurizer;
};

Pipeline MakePipeline(int min_stages, int max_stages, int min_ops, int max_ops) {
  RandomPipelineOptions options;
  options.min_ops = min_ops;
  options.max_ops = max_ops;
  options.max_flops = 1e9;
  for (uint64_t seed = 1;; ++seed) {
    StatusOr<PipelineSpec> spec = RandomPipeline(seed, options);
    if (!spec.ok()) continue;
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
    if (!graph.ok() || graph->num_stages() < min_stages || graph->num_stages() > max_stages) {
      continue;
    }
    Pipeline p;
    p.graph = std::make_unique<PipelineGraph>(std::move(*graph));
    p.space = std::make_unique<ScheduleSpace>(*p.graph);
    p.featurizer = std::make_unique<Featurizer>(*p.space);
    return p;
  }
}

// Trains `kind` briefly on random schedules of the pipelines.
std::shared_ptr<PerformanceModel> Trained(const std::string& kind,
                                          const std::vector<const Pipeline*>& pipelines) {
  std::vector<Sample> samples;
  for (const Pipeline* p : pipelines) {
    for (int k = 0; k < 32; ++k) {
      Sample sample;
      sample.pipeline_id = p->space->pipeline_id();
      sample.schedule_hash = std::to_string(k);
      if (!p->featurizer->Featurize(p->space->RandomSchedule(k + 1), &sample.features).ok()) {
        continue;
      }
      sample.seconds = 1e-9 * std::max(sample.features.flops, 1e3) * (1 + 0.05 * k);
      sample.stddev_seconds = 0.02 * sample.seconds;
      samples.push_back(std::move(sample));
    }
  }
  StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
  TrainOptions options;
  options.threads = 1;
  options.epochs = kind == "gbt" || kind == "lann" ? 20 : 2;
  options.ensemble = 0;  // each kind's default
  Status trained = (*model)->Train(samples, options);
  if (!trained.ok()) {
    std::printf("%s: training failed: %s\n", kind.c_str(), trained.message().c_str());
    return nullptr;
  }
  return std::shared_ptr<PerformanceModel>(std::move(*model));
}

// Partial states scored per second: random prefixes, and all the options of the next
// stage (capped at 1,000 and sampled beyond) scored in one call, as a greedy step does.
double StatesPerSecond(CostModel& model, const ScheduleSpace& space) {
  SpaceRng rng(7);
  int64_t states = 0;
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t round = 0; SecondsSince(start) < 3 || round < 3; ++round) {
    const int stages = static_cast<int>(space.decision_order().size());
    const int decided = static_cast<int>(rng.Below(stages));
    ScheduleSpec state = space.RandomCompletion(space.Empty(), round + 1);
    state.mutable_stages()->DeleteSubrange(decided, stages - decided);
    state.set_partial(true);
    bool sampled = false;
    const std::vector<StageSchedule> options = CappedOptions(space, state, 1000, rng, &sampled);
    if (!model.PredictOptions(state, options).ok()) return 0;
    states += static_cast<int64_t>(options.size());
  }
  return states / SecondsSince(start);
}

// The wall time of one greedy search with K = 1,000.
double GreedySeconds(CostModel& model, const ScheduleSpace& space) {
  std::unique_ptr<SearchStrategy> greedy = std::move(MakeSearchStrategy("greedy").value());
  std::unique_ptr<AcquisitionFunction> exploit = std::move(MakeAcquisition("exploit").value());
  SearchContext context;
  context.space = &space;
  context.model = &model;
  context.acquisition = exploit.get();
  context.settings = {{"options", 1000}, {"noise", 0}};
  if (!greedy->Init(context).ok()) return -1;
  const auto start = std::chrono::steady_clock::now();
  StatusOr<std::vector<SearchProposal>> proposal = greedy->Propose(1);
  if (!proposal.ok() || proposal->empty()) return -1;
  return SecondsSince(start);
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  using namespace schedfarm;
  // search_bench [--no-greedy] [--kind KIND]: skip the greedy searches, or one kind only.
  bool run_greedy = true;
  std::vector<std::string> kinds = ModelKindNames();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--no-greedy") {
      run_greedy = false;
    } else if (arg == "--kind" && i + 1 < argc) {
      kinds = {argv[++i]};
    } else {
      std::fprintf(stderr, "usage: search_bench [--no-greedy] [--kind KIND]\n");
      return 2;
    }
  }
  SetTorchThreads(1);
  SetBlasThreads(1);
  const Pipeline small = MakePipeline(18, 22, 6, 12);
  const Pipeline large = MakePipeline(100, 140, 40, 80);
  std::printf("search_bench: one core; a %d-stage pipeline for the scoring rate, a %d-stage "
              "one for greedy (K = 1000)\n",
              small.graph->num_stages(), large.graph->num_stages());
  std::printf("%-14s %14s %10s %12s %10s\n", "model", "states/s", "x target", "greedy s",
              "x target");
  // Each kind as the per-pipeline strategies read it, and the BiLSTM also as value
  // iteration reads its V_i (prefixes as they are, no default completion).
  std::vector<std::pair<std::string, PartialMeaning>> rows;
  for (const std::string& kind : kinds) {
    rows.emplace_back(kind, FindModelKind(kind)->partial);
    if (kind == "bilstm") rows.emplace_back(kind, PartialMeaning::kBestReachable);
  }
  for (const auto& [kind, meaning] : rows) {
    std::shared_ptr<PerformanceModel> model = Trained(kind, {&small, &large});
    if (!model) continue;
    PerformanceCostModel small_model(model, kind, *small.featurizer, meaning);
    const double rate = StatesPerSecond(small_model, *small.space);
    PerformanceCostModel large_model(model, kind, *large.featurizer, meaning);
    const double greedy = run_greedy ? GreedySeconds(large_model, *large.space) : 0;
    const std::string name =
        meaning == PartialMeaning::kBestReachable ? kind + " (V_i)" : kind;
    std::printf("%-14s %14.0f %10.2f %12.2f %10.2f\n", name.c_str(), rate, rate / kStatesTarget,
                greedy, greedy > 0 ? kGreedyTargetSeconds / greedy : 0);
    std::fflush(stdout);
  }
  std::printf("x target: states/s over 20,000; greedy: 10 s over the wall time (>= 1 meets "
              "the target)\n");
  return 0;
}
