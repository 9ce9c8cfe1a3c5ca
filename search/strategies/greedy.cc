// greedy (value-learning paper, Alg. 1): one decision per stage in the space's order
// (outputs first), each the option the acquisition scores best under the model, of all
// the stage's options or of a uniform sample of `options` of them. The first walk is
// the pure greedy one; each later walk takes, at every stage, a uniformly random
// option with probability `noise` (seeded by the walk's index), so that a campaign
// gets more than one schedule out of a model. Where no stage was sampled and noise is
// 0, every walk is the same: the strategy is exhausted after the first.
#include "search/factories.h"
#include "search/strategies/model_search.h"
#include "search/walks.h"

namespace schedfarm {
namespace {

constexpr int kMaxRepeatedWalks = 32;

class GreedySearch : public ModelSearch {
 public:
  std::string name() const override { return "greedy"; }
  bool Exhausted() const override { return exhausted_; }

  StatusOr<std::vector<SearchProposal>> Propose(int n) override {
    std::vector<SearchProposal> out;
    const int64_t cap = static_cast<int64_t>(Setting("options"));
    const double noise = Setting("noise");
    int repeats = 0;
    while (static_cast<int>(out.size()) < n && !exhausted_) {
      const uint64_t walk = walks_;
      if (walk > 0 && (noise == 0 && !sampled_any_)) {
        exhausted_ = true;
        break;
      }
      SpaceRng rng(MixSeed(seed(), walk));
      SCHEDFARM_ASSIGN_OR_RETURN(
          std::vector<WalkState> states,
          GreedyWalk(space(), {&model(), &acquisition(), incumbent_seconds(), cap}, space().Empty(),
                     walk > 0 ? noise : 0, rng));
      WalkState& last = states.back();
      const int sampled_stages = last.sampled_stages;
      ++walks_;  // only a finished walk counts: after a model error the walk is redone
      sampled_any_ = sampled_any_ || sampled_stages > 0;
      std::string hash = ScheduleHash(space(), last.schedule);
      if (!TakeIfNew(hash)) {
        exhausted_ = ++repeats >= kMaxRepeatedWalks;
        continue;
      }
      repeats = 0;
      out.push_back(
          MakeProposal(std::move(last.schedule), std::move(hash), last.prediction, sampled_stages));
    }
    return out;
  }

 private:
  uint64_t walks_ = 0;
  bool sampled_any_ = false;
  bool exhausted_ = false;
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeGreedySearch() { return std::make_unique<GreedySearch>(); }

}  // namespace schedfarm
