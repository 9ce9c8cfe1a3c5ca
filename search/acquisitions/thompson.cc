// thompson: Thompson sampling over the ensemble's members. Each pick of a batch draws
// one member uniformly and takes the schedule, not picked yet, that this member predicts
// fastest, so a schedule is picked about as often as members think it the fastest. A
// prediction without member predictions (a single model) stands for every member with
// its mean. The score recorded on a candidate is the negated mean, as exploit's.
#include <algorithm>

#include "search/factories.h"

namespace schedfarm {
namespace {

class Thompson : public AcquisitionFunction {
 public:
  std::string name() const override { return "thompson"; }
  bool needs_spread() const override { return true; }
  double Score(const RuntimePrediction& p, double) const override { return -p.mean_seconds; }

  std::vector<size_t> Select(const std::vector<RuntimePrediction>& predictions, double,
                             size_t n, SpaceRng& rng) const override {
    size_t members = 0;
    for (const RuntimePrediction& p : predictions) {
      members = std::max(members, p.member_seconds.size());
    }
    std::vector<bool> picked(predictions.size(), false);
    std::vector<size_t> picks;
    while (picks.size() < std::min(n, predictions.size())) {
      const size_t member = members > 0 ? rng.Below(members) : 0;
      size_t best = predictions.size();
      double best_seconds = 0;
      for (size_t i = 0; i < predictions.size(); ++i) {
        if (picked[i]) continue;
        const std::vector<double>& m = predictions[i].member_seconds;
        const double seconds = member < m.size() ? m[member] : predictions[i].mean_seconds;
        if (best == predictions.size() || seconds < best_seconds) {
          best = i;
          best_seconds = seconds;
        }
      }
      picked[best] = true;
      picks.push_back(best);
    }
    return picks;
  }
};

}  // namespace

std::unique_ptr<AcquisitionFunction> MakeThompsonAcquisition(const StrategySettings&) {
  return std::make_unique<Thompson>();
}

}  // namespace schedfarm
