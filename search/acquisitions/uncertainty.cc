// uncertainty: where the ensemble disagrees most, relative to its mean (the
// coefficient of variation), so fast and slow schedules compare.
#include <algorithm>

#include "search/factories.h"

namespace schedfarm {
namespace {

class Uncertainty : public AcquisitionFunction {
 public:
  std::string name() const override { return "uncertainty"; }
  bool needs_spread() const override { return true; }
  double Score(const RuntimePrediction& p, double) const override {
    return p.stddev_seconds / std::max(p.mean_seconds, 1e-12);
  }
};

}  // namespace

std::unique_ptr<AcquisitionFunction> MakeUncertaintyAcquisition(const StrategySettings&) {
  return std::make_unique<Uncertainty>();
}

}  // namespace schedfarm
