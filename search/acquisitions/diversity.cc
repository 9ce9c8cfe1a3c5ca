// diversity: exploit's order (fastest predicted first) with no two picks of one batch
// closer than `min_distance` in the model's feature space, so that a batch does not
// spend itself on near-copies of one schedule. The distance between two schedules is
// the root mean square of their feature differences, each feature in units of its
// standard deviation over the scored sample (features that do not vary are left out);
// two independent draws of the sample are about 1.4 apart. When too few schedules are
// far enough from each other, the batch is filled with the best predicted of the rest.
// Schedules whose prediction carries no features are never too close. The learner also
// serves a campaign's pipelines in proportion to the model's error on them under this
// rule (AcquisitionInfo::shares_by_error).
#include <algorithm>
#include <cmath>

#include "search/factories.h"

namespace schedfarm {
namespace {

// Each feature's standard deviation over the predictions that carry `width` features.
std::vector<double> FeatureSpreads(const std::vector<RuntimePrediction>& predictions,
                                   size_t width) {
  std::vector<double> sum(width, 0), square(width, 0);
  double count = 0;
  for (const RuntimePrediction& p : predictions) {
    if (p.features.size() != width) continue;
    count += 1;
    for (size_t f = 0; f < width; ++f) {
      sum[f] += p.features[f];
      square[f] += static_cast<double>(p.features[f]) * p.features[f];
    }
  }
  std::vector<double> spread(width, 0);
  for (size_t f = 0; f < width && count > 1; ++f) {
    const double mean = sum[f] / count;
    spread[f] = std::sqrt(std::max(0.0, square[f] / count - mean * mean));
  }
  return spread;
}

class Diversity : public AcquisitionFunction {
 public:
  explicit Diversity(double min_distance) : min_distance_(min_distance) {}
  std::string name() const override { return "diversity"; }
  bool needs_spread() const override { return false; }
  double Score(const RuntimePrediction& p, double) const override { return -p.mean_seconds; }

  std::vector<size_t> Select(const std::vector<RuntimePrediction>& predictions,
                             double incumbent_seconds, size_t n, SpaceRng& rng) const override {
    std::vector<size_t> order =
        AcquisitionFunction::Select(predictions, incumbent_seconds, predictions.size(), rng);
    const size_t width = predictions.empty() ? 0 : predictions[order[0]].features.size();
    const std::vector<double> spread = FeatureSpreads(predictions, width);
    auto distance = [&](const RuntimePrediction& a, const RuntimePrediction& b) {
      if (a.features.size() != width || b.features.size() != width) return HUGE_VAL;
      double sum = 0;
      int varying = 0;
      for (size_t f = 0; f < width; ++f) {
        if (spread[f] <= 0) continue;
        const double z = (a.features[f] - b.features[f]) / spread[f];
        sum += z * z;
        ++varying;
      }
      return varying == 0 ? 0.0 : std::sqrt(sum / varying);
    };
    std::vector<size_t> picks;
    std::vector<bool> picked(predictions.size(), false);
    for (size_t i : order) {
      if (picks.size() == n) break;
      bool far = true;
      for (size_t j : picks) far = far && distance(predictions[i], predictions[j]) >= min_distance_;
      if (!far) continue;
      picks.push_back(i);
      picked[i] = true;
    }
    for (size_t i : order) {  // too few far apart: the best predicted of the rest
      if (picks.size() == std::min(n, predictions.size())) break;
      if (!picked[i]) picks.push_back(i);
    }
    return picks;
  }

 private:
  double min_distance_;
};

}  // namespace

std::unique_ptr<AcquisitionFunction> MakeDiversityAcquisition(const StrategySettings& settings) {
  return std::make_unique<Diversity>(settings.at("min_distance"));
}

}  // namespace schedfarm
