// An acquisition function decides which schedules are worth measuring next from their
// predictions and the pipeline's incumbent (its best measured runtime): Score rates one
// prediction (higher is measured first; the candidate records it), Select picks a batch
// out of many. Implementations live in search/acquisitions/, one file each, made by
// name through the registry (search/registry.h) with their settings. docs/SEARCH.md
// gives each rule. Stateless and thread-compatible.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "scheduler/schedule_space.h"
#include "search/cost_model.h"

namespace schedfarm {

class AcquisitionFunction {
 public:
  virtual ~AcquisitionFunction() = default;
  virtual std::string name() const = 0;
  // Whether the rule reads the prediction's spread (the model needs an ensemble).
  virtual bool needs_spread() const = 0;
  // The worth of measuring a schedule with prediction `p`; `incumbent_seconds` is the
  // pipeline's best measured runtime, 0 when nothing is measured yet.
  virtual double Score(const RuntimePrediction& p, double incumbent_seconds) const = 0;
  // The indices of the min(n, predictions.size()) predictions to measure, distinct, in
  // pick order. The default: the highest scores, ties in index order. A rule that picks
  // at random draws from `rng`, so that one seed gives one batch.
  virtual std::vector<size_t> Select(const std::vector<RuntimePrediction>& predictions,
                                     double incumbent_seconds, size_t n, SpaceRng& rng) const;
};

}  // namespace schedfarm
