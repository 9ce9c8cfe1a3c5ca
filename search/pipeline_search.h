// One pipeline's search within a campaign, as farm-learner runs it: the campaign's
// strategy under the newest model, an epsilon share of random schedules, every
// candidate new (never a schedule the campaign measured or proposed), each recorded
// with its origin, model version, prediction, acquisition and its score, and sampled
// stages.
// Before the first model, and after the strategy failed until the next model, it
// proposes random schedules. Not thread-safe.
#pragma once

#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"
#include "search/registry.h"
#include "search/strategies/random_search.h"

namespace schedfarm {

// A proposal of the pipeline `pipeline_id` as a candidate of the given origin; the
// model version and the acquisition are recorded when the proposal carries a
// prediction.
Candidate ProposalCandidate(const std::string& pipeline_id, SearchProposal proposal,
                            const std::string& origin, const std::string& model_version);

class PipelineSearch {
 public:
  struct Options {
    std::string strategy;  // a registry name
    StrategySettings settings;  // the strategy's and the acquisition's
    std::string acquisition = "exploit";  // a registry name
    uint64_t seed = 0;
    double epsilon = 0;  // share of random candidates, drawn per candidate
    // A replay campaign's pipeline: the schedules of its dataset, the only ones random
    // candidates are drawn from (SearchContext::pool); empty: the whole space.
    std::vector<PoolSchedule> pool;
  };

  // An error for an unknown strategy or acquisition, or an acquisition's setting out of
  // range. `space` outlives the search.
  static StatusOr<std::unique_ptr<PipelineSearch>> Create(const ScheduleSpace& space,
                                                          const Options& options);

  // Searches under `model` from now on (a new model version; null: random proposals):
  // the strategy starts again and is told every result so far. An error when the
  // strategy refuses the model (random proposals until the next one).
  Status SetModel(std::unique_ptr<CostModel> model);
  // A schedule measured or proposed elsewhere, never to be proposed.
  void MarkKnown(const std::string& hash);
  // A measurement of one of the pipeline's schedules, failures included.
  void Notify(const SearchResult& result);
  // Up to n new candidates of the pipeline, fewer when the space is exhausted. When
  // the strategy fails, *failure says how (else it is cleared) and random schedules
  // take its place.
  std::vector<Candidate> Propose(int n, std::string* failure);
  // Whether nothing new is left to propose.
  bool Exhausted() const;

 private:
  PipelineSearch(const ScheduleSpace& space, Options options);
  bool Known(const std::string& hash) const { return known_.count(hash) > 0; }
  // The next random candidate, if the random stream is not exhausted.
  bool ProposeRandom(std::vector<Candidate>* out);
  Candidate MakeCandidate(SearchProposal proposal, const std::string& origin) const;

  const ScheduleSpace& space_;
  Options options_;
  std::unique_ptr<AcquisitionFunction> acquisition_;
  std::unique_ptr<CostModel> model_;
  std::unique_ptr<SearchStrategy> strategy_;  // null: no model, or it failed
  RandomSearch random_;
  SpaceRng epsilon_rng_;
  std::unordered_set<std::string> known_;
  std::vector<SearchResult> results_;
};

}  // namespace schedfarm
