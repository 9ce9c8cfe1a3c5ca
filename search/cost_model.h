// What a search needs from a performance model: predicted runtimes, with an
// uncertainty, for a batch of complete or partial schedules of one pipeline. Lower
// seconds are better. The learner adapts its PerformanceModels to this interface
// (learner/cost_model_adapter.h); tests may implement it directly. Free of Halide and
// Torch. Not thread-safe: one search calls its model from one thread.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

struct RuntimePrediction {
  RuntimePrediction() = default;
  RuntimePrediction(double mean, double stddev, std::vector<double> members = {})
      : mean_seconds(mean), stddev_seconds(stddev), member_seconds(std::move(members)) {}

  double mean_seconds = 0;
  double stddev_seconds = 0;  // ensemble disagreement; 0 for a single deterministic model
  // Each ensemble member's prediction, in member order; empty for a single model.
  // mean_seconds and stddev_seconds are their mean and population stddev.
  std::vector<double> member_seconds;
  // The schedule as the model reads it, one number per feature, for rules that compare
  // schedules (diversity); empty when the model gives none.
  std::vector<float> features;
};

// The prediction of an ensemble from its members' predictions: their mean, their
// population stddev and the members themselves (kept only when there are two or more).
// REQUIRES: !member_seconds.empty().
RuntimePrediction EnsemblePrediction(std::vector<double> member_seconds);

// What a prediction of a partial schedule stands for.
enum class PartialMeaning {
  // Only complete schedules can be scored.
  kCompleteOnly,
  // The runtime of the partial schedule with every undecided stage given the space's
  // default (ScheduleSpace::WithDefaults: inline where legal, else compute_root):
  // models trained on complete schedules score partial ones this way.
  kDefaultCompletion,
  // The best runtime reachable from the partial schedule (a value function).
  kBestReachable,
};
const char* PartialMeaningName(PartialMeaning meaning);

class CostModel {
 public:
  virtual ~CostModel() = default;
  // The model version recorded on every candidate it scored ("" for none).
  virtual std::string version() const = 0;
  virtual PartialMeaning partial_meaning() const = 0;
  // One prediction per schedule, in order; every schedule is of the pipeline the model
  // was made for and passes its space's Check. An error (the model failed, a partial
  // schedule given to a kCompleteOnly model) fails the whole batch.
  virtual StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const ScheduleSpec*>& schedules) = 0;
  // One prediction per option of the next stage of `partial` (the states partial +
  // option). The default builds each state and calls Predict; a model may share the
  // work the options have in common.
  virtual StatusOr<std::vector<RuntimePrediction>> PredictOptions(
      const ScheduleSpec& partial, const std::vector<StageSchedule>& options);
};

}  // namespace schedfarm
