#include "search/acquisition.h"

#include <algorithm>
#include <numeric>

#include "search/stage_options.h"

namespace schedfarm {

std::vector<size_t> AcquisitionFunction::Select(const std::vector<RuntimePrediction>& predictions,
                                                double incumbent_seconds, size_t n,
                                                SpaceRng&) const {
  const std::vector<double> scores = AcquisitionScores(*this, predictions, incumbent_seconds);
  std::vector<size_t> order(predictions.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  order.resize(std::min(n, order.size()));
  return order;
}

}  // namespace schedfarm
