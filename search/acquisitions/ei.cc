// ei: the expected improvement over the incumbent, in log runtime. The prediction is
// read as a log-normal runtime with the predicted mean and stddev (moment matching:
// sigma^2 = ln(1 + (std/mean)^2), mu = ln(mean) - sigma^2/2), and the score is
//   EI = (ln inc - mu) Phi(z) + sigma phi(z),   z = (ln inc - mu) / sigma,
// the expected log speedup over the incumbent; sigma 0 gives max(ln inc - mu, 0).
// Log space because runtimes span six orders of magnitude and an ensemble's spread is
// multiplicative: a Normal in seconds would put weight on negative runtimes, and the
// score would not compare a 2x gain on a fast pipeline with one on a slow pipeline.
// Before the first measurement (incumbent 0) there is nothing to improve on, and the
// score is the negated mean, so that the fastest predicted schedules go first.
#include <algorithm>
#include <cmath>

#include "search/factories.h"

namespace schedfarm {
namespace {

constexpr double kSqrtTwoPi = 2.5066282746310002;

class ExpectedImprovement : public AcquisitionFunction {
 public:
  std::string name() const override { return "ei"; }
  bool needs_spread() const override { return true; }
  double Score(const RuntimePrediction& p, double incumbent_seconds) const override {
    if (incumbent_seconds <= 0) return -p.mean_seconds;
    const double mean = std::max(p.mean_seconds, 1e-15);
    const double ratio = p.stddev_seconds / mean;
    const double variance = std::log1p(ratio * ratio);
    const double sigma = std::sqrt(variance);
    const double gain = std::log(incumbent_seconds) - (std::log(mean) - variance / 2);
    if (sigma == 0) return std::max(gain, 0.0);
    const double z = gain / sigma;
    const double cdf = 0.5 * std::erfc(-z / std::sqrt(2.0));
    const double pdf = std::exp(-z * z / 2) / kSqrtTwoPi;
    return gain * cdf + sigma * pdf;
  }
};

}  // namespace

std::unique_ptr<AcquisitionFunction> MakeEiAcquisition(const StrategySettings&) {
  return std::make_unique<ExpectedImprovement>();
}

}  // namespace schedfarm
