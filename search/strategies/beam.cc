// beam: the greedy walk keeping the `width` best partial schedules at every stage
// (each state's options capped at `options`, sampled uniformly beyond). Its complete
// schedules are proposed best first, skipping the known ones. When they are all
// proposed, the beam runs again twice as wide (new samples where stages are sampled),
// up to `max_width`; then the strategy is exhausted.
#include <algorithm>

#include "search/factories.h"
#include "search/strategies/model_search.h"
#include "search/walks.h"

namespace schedfarm {
namespace {

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
      WalkState& state = ranked_[next_++];
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
    SpaceRng rng(MixSeed(seed(), runs_++));
    const WalkScoring scoring = {&model(), &acquisition(), incumbent_seconds(),
                                 static_cast<int64_t>(Setting("options"))};
    SCHEDFARM_ASSIGN_OR_RETURN(ranked_, BeamWalk(space(), scoring, space().Empty(), width, rng));
    next_ = 0;
    return Status::Ok();
  }

  std::vector<WalkState> ranked_;
  size_t next_ = 0;
  int64_t width_ = 0;  // of the last run; 0 before the first
  uint64_t runs_ = 0;
  bool exhausted_ = false;
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeBeamSearch() { return std::make_unique<BeamSearch>(); }

}  // namespace schedfarm
