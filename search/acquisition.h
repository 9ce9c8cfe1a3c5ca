// An acquisition function turns a prediction into how much a schedule is worth
// measuring next, against the pipeline's incumbent (its best measured runtime).
// Higher scores are measured first. Implementations live in search/acquisitions/, one
// file each, and are made by name through the registry (search/registry.h).
// Stateless and thread-compatible.
#pragma once

#include <string>

#include "search/cost_model.h"

namespace schedfarm {

class AcquisitionFunction {
 public:
  virtual ~AcquisitionFunction() = default;
  virtual std::string name() const = 0;
  // Whether the score reads the prediction's stddev (the model needs an ensemble).
  virtual bool needs_spread() const = 0;
  // The worth of measuring a schedule with prediction `p`; `incumbent_seconds` is the
  // pipeline's best measured runtime, 0 when nothing is measured yet.
  virtual double Score(const RuntimePrediction& p, double incumbent_seconds) const = 0;
};

}  // namespace schedfarm
