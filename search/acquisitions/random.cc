// random: uniform picks, whatever the model predicts (every score is 0): the baseline
// of an active-learning comparison, the same search and sample with no model in the
// choice.
#include <algorithm>
#include <numeric>

#include "search/factories.h"

namespace schedfarm {
namespace {

class RandomPick : public AcquisitionFunction {
 public:
  std::string name() const override { return "random"; }
  bool needs_spread() const override { return false; }
  double Score(const RuntimePrediction&, double) const override { return 0; }

  // A partial Fisher-Yates shuffle: the first n of a uniform permutation.
  std::vector<size_t> Select(const std::vector<RuntimePrediction>& predictions, double,
                             size_t n, SpaceRng& rng) const override {
    std::vector<size_t> order(predictions.size());
    std::iota(order.begin(), order.end(), 0);
    n = std::min(n, order.size());
    for (size_t k = 0; k < n; ++k) std::swap(order[k], order[k + rng.Below(order.size() - k)]);
    order.resize(n);
    return order;
  }
};

}  // namespace

std::unique_ptr<AcquisitionFunction> MakeRandomAcquisition(const StrategySettings&) {
  return std::make_unique<RandomPick>();
}

}  // namespace schedfarm
