// model-guided and uncertainty: a sample of `sample_size` new random schedules per
// proposal batch, scored by the model in one call; the acquisition's Select picks the
// ones proposed (exploit's best predicted for model-guided: Ansor's policy; the
// ensemble's relative spread for uncertainty; or any other acquisition, among them the
// batch rules thompson and random). One implementation, two registry names.
#include <algorithm>

#include "search/factories.h"
#include "search/strategies/model_search.h"
#include "search/strategies/random_search.h"

namespace schedfarm {
namespace {

class ScreenedSearch : public ModelSearch {
 public:
  explicit ScreenedSearch(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  bool Exhausted() const override { return random_.Exhausted(); }

  StatusOr<std::vector<SearchProposal>> Propose(int n) override {
    SCHEDFARM_ASSIGN_OR_RETURN(
        std::vector<SearchProposal> sample,
        random_.Propose(std::max(n, static_cast<int>(Setting("sample_size")))));
    if (sample.empty()) return sample;
    std::vector<const ScheduleSpec*> pointers;
    for (const SearchProposal& p : sample) pointers.push_back(&p.schedule);
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<RuntimePrediction> predictions,
                               model().Predict(pointers));
    std::vector<SearchProposal> out;
    for (size_t i : acquisition().Select(predictions, incumbent_seconds(),
                                               static_cast<size_t>(n), select_rng_)) {
      if (!TakeIfNew(sample[i].hash)) continue;
      out.push_back(MakeProposal(std::move(sample[i].schedule), std::move(sample[i].hash),
                                 predictions[i], 0));
    }
    return out;
  }

 private:
  Status Start() override {
    SearchContext context;
    context.space = &space();
    context.seed = MixSeed(seed(), 1);
    context.known = [this](const std::string& hash) { return IsKnown(hash); };
    context.pool = pool();
    select_rng_ = SpaceRng(MixSeed(seed(), 2));
    return random_.Init(context);
  }

  std::string name_;
  RandomSearch random_;
  SpaceRng select_rng_{0};  // the acquisition's random picks
};

}  // namespace

std::unique_ptr<SearchStrategy> MakeModelGuidedSearch() {
  return std::make_unique<ScreenedSearch>("model-guided");
}

std::unique_ptr<SearchStrategy> MakeUncertaintySearch() {
  return std::make_unique<ScreenedSearch>("uncertainty");
}

}  // namespace schedfarm
