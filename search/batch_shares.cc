#include "search/batch_shares.h"

#include <cstddef>

namespace schedfarm {

std::vector<int> ShareBatch(int batch, const std::vector<double>& weights,
                            std::vector<double>* credit) {
  credit->resize(weights.size(), 0.0);
  std::vector<int> shares(weights.size(), 0);
  double total = 0;
  for (double w : weights) total += w;
  if (total <= 0) return shares;
  for (size_t p = 0; p < weights.size(); ++p) (*credit)[p] += batch * weights[p] / total;
  for (int given = 0; given < batch; ++given) {
    size_t owed = weights.size();
    for (size_t p = 0; p < weights.size(); ++p) {
      if (weights[p] <= 0) continue;
      if (owed == weights.size() || (*credit)[p] > (*credit)[owed]) owed = p;
    }
    ++shares[owed];
    (*credit)[owed] -= 1;
  }
  return shares;
}

}  // namespace schedfarm
