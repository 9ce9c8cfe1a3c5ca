// relaxed (relaxed graph substitutions report): best-first backtracking over partial
// schedules. A priority queue holds partial schedules by predicted runtime, fastest
// first. The fastest is taken and dived from: expanded (its next stage's options,
// capped at `options` and sampled beyond, scored in one model call), then its fastest
// child, and so on to a complete schedule, the other children queued. A state is
// expanded (and a child queued) only while its prediction is at most alpha x the best
// complete schedule found so far, so the search backtracks into states a little worse
// than the best (alpha = 1: plain best-first). Complete schedules found
// are proposed best first. Each Propose expands at most `expansions` states; the queue
// carries over to the next call, and when it is empty and every schedule found was
// proposed the strategy is exhausted.
#include <algorithm>
#include <limits>
#include <queue>

#include "search/factories.h"
#include "search/stage_options.h"
#include "search/strategies/model_search.h"

namespace schedfarm {
namespace {

struct RelaxedState {
  ScheduleSpec schedule;
  RuntimePrediction prediction;
  int sampled_stages = 0;
};

struct SlowerFirst {
  bool operator()(const RelaxedState& a, const RelaxedState& b) const {
    return a.prediction.mean_seconds > b.prediction.mean_seconds;
  }
};

class RelaxedSearch : public ModelSearch {
 public:
  std::string name() const override { return "relaxed"; }
  bool Exhausted() const override { return exhausted_; }

  StatusOr<std::vector<SearchProposal>> Propose(int n) override {
    if (!started_) {
      ScheduleSpec empty = space().Empty();
      SCHEDFARM_ASSIGN_OR_RETURN(std::vector<RuntimePrediction> root, model().Predict({&empty}));
      open_.push({std::move(empty), root[0], 0});
      started_ = true;
    }
    const double alpha = Setting("alpha");
    const int64_t cap = static_cast<int64_t>(Setting("options"));
    const int64_t budget = static_cast<int64_t>(Setting("expansions"));
    int64_t expanded = 0;
    while (!open_.empty() && expanded < budget &&
           static_cast<int>(found_.size()) < n * kFoundPerProposal) {
      RelaxedState state = open_.top();
      open_.pop();
      // Dive from the state to a complete schedule, always into the fastest child; the
      // other children wait in the queue for the backtracking.
      while (state.prediction.mean_seconds <= alpha * best_found_) {
        if (expanded >= budget) {  // expanded by a later call
          open_.push(std::move(state));
          break;
        }
        bool sampled = false;
        std::vector<StageSchedule> options =
            CappedOptions(space(), state.schedule, cap, rng_, &sampled);
        StatusOr<std::vector<RuntimePrediction>> predicted =
            model().PredictOptions(state.schedule, options);
        if (!predicted.ok()) {
          open_.push(std::move(state));  // expanded again when called again
          return predicted.status();
        }
        const std::vector<RuntimePrediction>& predictions = *predicted;
        ++expanded;
        size_t fastest = 0;
        for (size_t i = 1; i < predictions.size(); ++i) {
          if (predictions[i].mean_seconds < predictions[fastest].mean_seconds) fastest = i;
        }
        RelaxedState next;
        for (size_t i = 0; i < options.size(); ++i) {
          RelaxedState child{WithOption(space(), state.schedule, options[i]), predictions[i],
                             state.sampled_stages + (sampled ? 1 : 0)};
          if (IsComplete(space(), child.schedule)) {
            best_found_ = std::min(best_found_, child.prediction.mean_seconds);
            found_.push_back(std::move(child));
          } else if (i == fastest) {
            next = std::move(child);
          } else if (child.prediction.mean_seconds <= alpha * best_found_) {
            open_.push(std::move(child));
          }
        }
        if (next.schedule.stages_size() == 0) break;  // the children were complete
        state = std::move(next);
      }
    }
    std::vector<double> scores(found_.size());
    for (size_t i = 0; i < found_.size(); ++i) {
      scores[i] = acquisition().Score(found_[i].prediction, incumbent_seconds());
    }
    std::vector<size_t> order(found_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    std::vector<SearchProposal> out;
    std::vector<bool> taken(found_.size(), false);
    for (size_t i : order) {
      if (static_cast<int>(out.size()) >= n) break;
      taken[i] = true;
      std::string hash = ScheduleHash(space(), found_[i].schedule);
      if (!TakeIfNew(hash)) continue;
      out.push_back(MakeProposal(std::move(found_[i].schedule), std::move(hash),
                                 found_[i].prediction, found_[i].sampled_stages));
    }
    std::vector<RelaxedState> rest;
    for (size_t i = 0; i < found_.size(); ++i) {
      if (!taken[i]) rest.push_back(std::move(found_[i]));
    }
    found_ = std::move(rest);
    exhausted_ = open_.empty() && found_.empty();
    return out;
  }

 private:
  // Complete schedules gathered per proposal asked for before a Propose stops
  // expanding, so that it proposes the best of several.
  static constexpr int kFoundPerProposal = 4;

  Status Start() override {
    rng_ = SpaceRng(MixSeed(seed(), 0));
    return Status::Ok();
  }

  bool started_ = false;
  SpaceRng rng_{0};
  std::priority_queue<RelaxedState, std::vector<RelaxedState>, SlowerFirst> open_;
  std::vector<RelaxedState> found_;
  double best_found_ = std::numeric_limits<double>::infinity();
  bool exhausted_ = false;
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeRelaxedSearch() { return std::make_unique<RelaxedSearch>(); }

}  // namespace schedfarm
