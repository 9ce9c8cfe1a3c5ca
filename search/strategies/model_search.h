// What every strategy that searches under a model shares: Init's checks (a model and
// an acquisition function the strategy can pick with, settings in range, a model that
// can score partial schedules where the strategy needs it), settings by name with the
// registry's defaults, the incumbent and the best measured schedule kept from Notify,
// and proposals that are new (neither known nor proposed by this strategy before).
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "search/search_strategy.h"

namespace schedfarm {

class ModelSearch : public SearchStrategy {
 public:
  Status Init(const SearchContext& context) final;
  void Notify(const std::vector<SearchResult>& results) final;

 protected:
  // Called at the end of Init, after the checks.
  virtual Status Start() { return Status::Ok(); }
  // Called by Notify when a measurement beats the incumbent.
  virtual void OnNewIncumbent() {}

  const ScheduleSpace& space() const { return *context_.space; }
  CostModel& model() { return *context_.model; }
  const AcquisitionFunction& acquisition() const { return *context_.acquisition; }
  uint64_t seed() const { return context_.seed; }
  // The replay campaign's pool of schedules, or null (SearchContext::pool).
  const std::vector<PoolSchedule>* pool() const { return context_.pool; }
  // The setting's value, or the registry's default. REQUIRES: the registry lists it.
  double Setting(const std::string& name) const;
  // The pipeline's best measured runtime (0: none yet) and its schedule.
  double incumbent_seconds() const { return incumbent_seconds_; }
  const std::optional<ScheduleSpec>& best_measured() const { return best_measured_; }
  // Whether `hash` was measured, or proposed by anyone.
  bool IsKnown(const std::string& hash) const;
  // Whether `hash` may still be proposed; true also marks it proposed.
  bool TakeIfNew(const std::string& hash);
  // A proposal of a complete schedule with its prediction and acquisition score.
  SearchProposal MakeProposal(ScheduleSpec schedule, std::string hash,
                              const RuntimePrediction& prediction, int sampled_stages) const;

 private:
  SearchContext context_;
  double incumbent_seconds_ = 0;
  std::optional<ScheduleSpec> best_measured_;
  std::unordered_set<std::string> proposed_;
};

}  // namespace schedfarm
