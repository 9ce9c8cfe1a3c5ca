// beam: the greedy walk keeping the `width` best partial schedules at every stage
// (each state's options capped at `options`, sampled uniformly beyond). Its complete
// schedules are proposed best first, skipping the known ones. When they are all
// proposed, the beam runs again twice as wide (new samples where stages are sampled),
// up to `max_width`; then the strategy is exhausted.
#include <algorithm>

#include "search/factories.h"
#include "search/stage_options.h"
#include "search/strategies/model_search.h"

namespace schedfarm {
namespace {

struct BeamState {
  ScheduleSpec schedule;
  RuntimePrediction prediction;
  double score = 0;
  int sampled_stages = 0;
};

class BeamSearch : public ModelSearch {
 public:
  std::string name() const override { return "beam"; }
  bool Exhausted() const override { return exhausted_; }

  StatusOr<std::vector<SearchProposal>> Propose(int n) override {
    std::vector<SearchProposal> out;
    while (static_cast<int>(out.size()) < n && !exhausted_) {
      if (next_ == ranked_.size()) {
        // Widths: `width`, doubling, each at most max_width; the last run is at max_width.
        const int64_t max_width = static_cast<int64_t>(Setting("max_width"));
        if (width_ >= max_width) {
          exhausted_ = true;
          break;
        }
        const int64_t width = std::min(
            width_ == 0 ? static_cast<int64_t>(Setting("width")) : 2 * width_, max_width);
        SCHEDFARM_RETURN_IF_ERROR(Run(width));
        width_ = width;
        continue;
      }
      BeamState& state = ranked_[next_++];
      std::string hash = ScheduleHash(space(), state.schedule);
      if (!TakeIfNew(hash)) continue;
      out.push_back(MakeProposal(std::move(state.schedule), std::move(hash), state.prediction,
                                 state.sampled_stages));
    }
    return out;
  }

 private:
  // One beam search of the given width: ranked_ holds its complete schedules, best first.
  Status Run(int64_t width) {
    const int64_t cap = static_cast<int64_t>(Setting("options"));
    SpaceRng rng(MixSeed(seed(), runs_++));
    std::vector<BeamState> beam(1);
    beam[0].schedule = space().Empty();
    while (!IsComplete(space(), beam[0].schedule)) {
      std::vector<BeamState> children;
      for (const BeamState& parent : beam) {
        bool sampled = false;
        std::vector<StageSchedule> options =
            CappedOptions(space(), parent.schedule, cap, rng, &sampled);
        SCHEDFARM_ASSIGN_OR_RETURN(std::vector<RuntimePrediction> predictions,
                                   model().PredictOptions(parent.schedule, options));
        const std::vector<double> scores =
            AcquisitionScores(acquisition(), predictions, incumbent_seconds());
        for (size_t i = 0; i < options.size(); ++i) {
          children.push_back({WithOption(space(), parent.schedule, options[i]), predictions[i],
                              scores[i], parent.sampled_stages + (sampled ? 1 : 0)});
        }
      }
      const size_t keep = std::min<size_t>(children.size(), static_cast<size_t>(width));
      std::partial_sort(
          children.begin(), children.begin() + keep, children.end(),
          [](const BeamState& a, const BeamState& b) { return a.score > b.score; });
      children.resize(keep);
      beam = std::move(children);
    }
    ranked_ = std::move(beam);
    next_ = 0;
    return Status::Ok();
  }

  std::vector<BeamState> ranked_;
  size_t next_ = 0;
  int64_t width_ = 0;  // of the last run; 0 before the first
  uint64_t runs_ = 0;
  bool exhausted_ = false;
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeBeamSearch() { return std::make_unique<BeamSearch>(); }

}  // namespace schedfarm
