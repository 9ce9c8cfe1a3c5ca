// anneal (TPU paper's autotuner): simulated annealing over complete schedules,
// screened by the model. A move redecides one stage, chosen uniformly: the stages
// decided before it keep their decisions, it gets a uniformly random option, and each
// later stage keeps its decision where that is still legal (a compute_at whose loop
// changed is not) and gets a random option otherwise. Each step scores `neighbors`
// moves in one model call and considers the one the acquisition scores best; it is
// accepted with Metropolis' rule on the predicted log runtime at the temperature,
// which starts at `temperature` and is multiplied by `cooling` every step. Each
// Propose walks `steps` steps and proposes the best-scored schedules the walk visited
// that are new. The walk starts from a random schedule and restarts, at the initial
// temperature, from the best measured schedule whenever a measurement beats it.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <unordered_set>

#include "search/factories.h"
#include "search/stage_options.h"
#include "search/strategies/model_search.h"

namespace schedfarm {
namespace {

// Visited schedules kept for proposing, the best-scored.
constexpr size_t kMaxVisited = 4096;

class AnnealSearch : public ModelSearch {
 public:
  std::string name() const override { return "anneal"; }
  bool Exhausted() const override { return exhausted_; }

  StatusOr<std::vector<SearchProposal>> Propose(int n) override {
    if (restart_) SCHEDFARM_RETURN_IF_ERROR(Restart());
    const int64_t steps = static_cast<int64_t>(Setting("steps"));
    const int neighbors = static_cast<int>(Setting("neighbors"));
    const double cooling = Setting("cooling");
    for (int64_t step = 0; step < steps; ++step) {
      std::vector<ScheduleSpec> moves;
      for (int i = 0; i < neighbors; ++i) {
        std::optional<ScheduleSpec> move = Move(current_);
        if (move) moves.push_back(std::move(*move));
      }
      if (moves.empty()) continue;
      std::vector<const ScheduleSpec*> pointers;
      for (const ScheduleSpec& move : moves) pointers.push_back(&move);
      SCHEDFARM_ASSIGN_OR_RETURN(std::vector<RuntimePrediction> predictions,
                                 model().Predict(pointers));
      const std::vector<double> scores =
          AcquisitionScores(acquisition(), predictions, incumbent_seconds());
      for (size_t i = 0; i < moves.size(); ++i) Visit(moves[i], predictions[i], scores[i]);
      const size_t best = ArgMax(scores);
      const double delta = std::log(std::max(predictions[best].mean_seconds, 1e-15)) -
                           std::log(std::max(current_prediction_.mean_seconds, 1e-15));
      if (delta <= 0 || rng_.Unit() < std::exp(-delta / temperature_)) {
        current_ = std::move(moves[best]);
        current_prediction_ = predictions[best];
      }
      temperature_ *= cooling;
    }
    std::vector<SearchProposal> out;
    while (static_cast<int>(out.size()) < n && !visited_.empty()) {
      auto best = std::prev(visited_.end());
      Visited v = std::move(best->second);
      visited_.erase(best);
      if (!TakeIfNew(v.hash)) continue;
      out.push_back(MakeProposal(std::move(v.schedule), std::move(v.hash), v.prediction, 0));
    }
    exhausted_ = out.empty();
    return out;
  }

 private:
  struct Visited {
    ScheduleSpec schedule;
    std::string hash;
    RuntimePrediction prediction;
  };

  Status Start() override {
    rng_ = SpaceRng(MixSeed(seed(), 0));
    return Status::Ok();
  }

  void OnNewIncumbent() override { restart_ = true; }

  // The walk from the best measured schedule, or from a random one before any.
  Status Restart() {
    current_ = best_measured() ? *best_measured() : space().RandomSchedule(rng_.Next());
    current_.set_partial(false);
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<RuntimePrediction> prediction,
                               model().Predict({&current_}));
    current_prediction_ = prediction[0];
    temperature_ = Setting("temperature");
    restart_ = false;  // not before: a walk must not start from an unscored schedule
    return Status::Ok();
  }

  // `from` with one stage redecided; nothing when the result is not legal.
  std::optional<ScheduleSpec> Move(const ScheduleSpec& from) {
    const int stages = from.stages_size();
    if (stages == 0) return std::nullopt;
    const int redecided = static_cast<int>(rng_.Below(stages));
    ScheduleSpec move = space().Empty();
    for (int i = 0; i < redecided; ++i) *move.add_stages() = from.stages(i);
    *move.add_stages() = space().SampleOption(move, rng_);
    for (int i = redecided + 1; i < stages; ++i) {
      *move.add_stages() = from.stages(i);
      if (from.stages(i).compute() != AT) continue;
      if (!space().Check(move).ok()) {
        move.mutable_stages()->RemoveLast();
        *move.add_stages() = space().SampleOption(move, rng_);
      }
    }
    move.set_partial(false);
    if (!space().Check(move).ok()) return std::nullopt;
    return move;
  }

  void Visit(const ScheduleSpec& schedule, const RuntimePrediction& prediction, double score) {
    std::string hash = ScheduleHash(space(), schedule);
    if (IsKnown(hash) || seen_.count(hash)) return;
    seen_.insert(hash);
    visited_.emplace(score, Visited{schedule, std::move(hash), prediction});
    if (visited_.size() > kMaxVisited) visited_.erase(visited_.begin());
  }

  SpaceRng rng_{0};
  ScheduleSpec current_;
  RuntimePrediction current_prediction_;
  double temperature_ = 0;
  bool restart_ = true;
  bool exhausted_ = false;
  std::multimap<double, Visited> visited_;  // by acquisition score, best last
  std::unordered_set<std::string> seen_;    // every schedule visited
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeAnnealSearch() { return std::make_unique<AnnealSearch>(); }

}  // namespace schedfarm
