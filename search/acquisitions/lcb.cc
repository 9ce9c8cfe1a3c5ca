// lcb: the lower confidence bound of the runtime, mean - kappa x stddev. A low bound is
// worth measuring, so the score is its negation, kappa x stddev - mean: kappa 0 is
// exploit, a larger kappa gives more weight to what the ensemble is unsure of.
#include "search/factories.h"

namespace schedfarm {
namespace {

class LowerConfidenceBound : public AcquisitionFunction {
 public:
  explicit LowerConfidenceBound(double kappa) : kappa_(kappa) {}
  std::string name() const override { return "lcb"; }
  bool needs_spread() const override { return true; }
  double Score(const RuntimePrediction& p, double) const override {
    return kappa_ * p.stddev_seconds - p.mean_seconds;
  }

 private:
  double kappa_;
};

}  // namespace

std::unique_ptr<AcquisitionFunction> MakeLcbAcquisition(const StrategySettings& settings) {
  return std::make_unique<LowerConfidenceBound>(settings.at("kappa"));
}

}  // namespace schedfarm
