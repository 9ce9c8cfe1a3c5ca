#include "learner/cost_model_adapter.h"

#include <cmath>

namespace schedfarm {

ScheduleSpec ScheduleAsRead(const ScheduleSpace& space, const ScheduleSpec& schedule,
                            PartialMeaning meaning) {
  const bool partial = static_cast<size_t>(schedule.stages_size()) < space.decision_order().size();
  if (partial && meaning == PartialMeaning::kDefaultCompletion) return space.WithDefaults(schedule);
  return schedule;
}

PerformanceCostModel::PerformanceCostModel(std::shared_ptr<const PerformanceModel> model,
                                           std::string version, const Featurizer& featurizer,
                                           PartialMeaning meaning)
    : model_(std::move(model)),
      version_(std::move(version)),
      featurizer_(featurizer),
      meaning_(meaning) {}

void PerformanceCostModel::FeaturizeInto(size_t i, const ScheduleSpec& schedule) {
  if (features_.size() <= i) features_.resize(i + 1);
  featurizer_.FeaturizeLegal(schedule, &features_[i]);  // CostModel: every one passes Check
}

ScheduleSpec PerformanceCostModel::AsRead(const ScheduleSpec& schedule) const {
  return ScheduleAsRead(featurizer_.space(), schedule, meaning_);
}

StatusOr<std::vector<RuntimePrediction>> PerformanceCostModel::Predict(
    const std::vector<const ScheduleSpec*>& schedules) {
  for (size_t i = 0; i < schedules.size(); ++i) FeaturizeInto(i, AsRead(*schedules[i]));
  std::vector<const PipelineFeatures*> batch;
  for (size_t i = 0; i < schedules.size(); ++i) batch.push_back(&features_[i]);
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<RuntimePrediction> predictions, model_->Predict(batch));
  for (size_t i = 0; i < predictions.size(); ++i) {
    // Counts and sizes span orders of magnitude: compared in signed log scale.
    std::vector<float>& out = predictions[i].features;
    out.clear();
    for (float x : features_[i].dependent) {
      out.push_back(std::copysign(std::log1p(std::fabs(x)), x));
    }
  }
  return predictions;
}

StatusOr<std::vector<RuntimePrediction>> PerformanceCostModel::PredictOptions(
    const ScheduleSpec& partial, const std::vector<StageSchedule>& options) {
  if (options.empty()) return std::vector<RuntimePrediction>();
  const int slot = partial.stages_size();
  ScheduleSpec state = partial;
  *state.add_stages() = options[0];
  state = AsRead(state);
  for (size_t i = 0; i < options.size(); ++i) {
    *state.mutable_stages(slot) = options[i];
    FeaturizeInto(i, state);
  }
  std::vector<const PipelineFeatures*> batch;
  for (size_t i = 0; i < options.size(); ++i) batch.push_back(&features_[i]);
  return model_->PredictVariants(features_[0], batch);  // they differ in one stage's reach
}

}  // namespace schedfarm
