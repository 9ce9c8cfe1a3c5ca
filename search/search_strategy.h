// A search strategy walks one pipeline's schedule space and proposes complete
// schedules to measure (docs/SEARCH.md). Implementations live in
// search/strategies/, one file each, made by name through the registry
// (search/registry.h); farm-learner runs them through PipelineSearch
// (search/pipeline_search.h), the coordinator runs the random one itself.
//
// Call order: Init once; then Propose and Notify in any order, from one thread.
//
//   Init(space, model, acquisition, seed, settings, known)
//     -> Propose(n) -> schedules measured on the farm -> Notify(results) -> Propose(n) ...
//
// A strategy never proposes a schedule that `known` reports (measured or proposed
// before), nor one schedule twice. When it has nothing new left to propose, Propose
// returns fewer than n (maybe none) and Exhausted() turns true.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"
#include "scheduler/schedule_space.h"
#include "search/acquisition.h"
#include "search/cost_model.h"

namespace schedfarm {

// A strategy's settings by name, its own and its acquisition's: every one the registry
// lists for them, defaults filled in (ResolvedSettings in search/registry.h).
using StrategySettings = std::map<std::string, double>;

// One schedule of a replay campaign's proposal space (its dataset's schedules).
struct PoolSchedule {
  ScheduleSpec schedule;  // complete; passes the space's Check
  std::string hash;       // ScheduleHash
};

struct SearchContext {
  const ScheduleSpace* space = nullptr;  // outlives the strategy
  // The model to search under; null for strategies that use none (random). Outlives
  // the strategy.
  CostModel* model = nullptr;
  const AcquisitionFunction* acquisition = nullptr;  // set whenever model is
  uint64_t seed = 0;
  StrategySettings settings;
  // Whether a schedule, by ScheduleHash, was measured or proposed already.
  std::function<bool(const std::string& hash)> known;
  // A replay campaign's pipeline: the only schedules random samples are drawn from
  // (pool-based active learning); null: the whole space. Outlives the strategy.
  const std::vector<PoolSchedule>* pool = nullptr;
};

// One proposed schedule.
struct SearchProposal {
  ScheduleSpec schedule;  // complete; passes space->Check
  std::string hash;       // ScheduleHash
  // Whether `prediction`, `acquisition` and `acquisition_score` are set.
  bool predicted = false;
  RuntimePrediction prediction;
  std::string acquisition;  // the registry name of the acquisition that scored it
  double acquisition_score = 0;
  // Stages of the walk that led here whose options exceeded the strategy's cap, so that
  // only a uniform sample of them was scored.
  int sampled_stages = 0;
};

// The outcome of measuring a proposed (or any) schedule of the pipeline.
struct SearchResult {
  std::string hash;
  ScheduleSpec schedule;  // complete
  bool ok = false;        // false: the schedule failed (compile error, timeout...)
  double seconds = 0;     // the median runtime, when ok
};

class SearchStrategy {
 public:
  virtual ~SearchStrategy() = default;
  // The strategy's registry name; the origin of its candidates.
  virtual std::string name() const = 0;
  // Binds the strategy to its pipeline, model and settings. An error for a missing
  // model, a setting out of range or a model whose predictions cannot serve (a
  // complete-only model for a strategy that scores partial schedules).
  virtual Status Init(const SearchContext& context) = 0;
  // Up to n new complete schedules, best first. An error when the model fails; the
  // strategy may be called again (with another model after a new Init).
  virtual StatusOr<std::vector<SearchProposal>> Propose(int n) = 0;
  // Measurements of this pipeline, failures included, whoever proposed them.
  virtual void Notify(const std::vector<SearchResult>& results) = 0;
  // Whether Propose has nothing new left.
  virtual bool Exhausted() const = 0;
};

}  // namespace schedfarm
