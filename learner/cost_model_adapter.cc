#include "learner/cost_model_adapter.h"

namespace schedfarm {

PerformanceCostModel::PerformanceCostModel(std::shared_ptr<const PerformanceModel> model,
                                           std::string version, const Featurizer& featurizer)
    : model_(std::move(model)), version_(std::move(version)), featurizer_(featurizer) {}

void PerformanceCostModel::FeaturizeInto(size_t i, const ScheduleSpec& schedule) {
  if (features_.size() <= i) features_.resize(i + 1);
  featurizer_.FeaturizeLegal(schedule, &features_[i]);  // CostModel: every one passes Check
}

StatusOr<std::vector<RuntimePrediction>> PerformanceCostModel::Predict(
    const std::vector<const ScheduleSpec*>& schedules) {
  const ScheduleSpace& space = featurizer_.space();
  const size_t stages = space.decision_order().size();
  for (size_t i = 0; i < schedules.size(); ++i) {
    const ScheduleSpec& schedule = *schedules[i];
    if (static_cast<size_t>(schedule.stages_size()) < stages) {
      FeaturizeInto(i, space.WithDefaults(schedule));
    } else {
      FeaturizeInto(i, schedule);
    }
  }
  std::vector<const PipelineFeatures*> batch;
  for (size_t i = 0; i < schedules.size(); ++i) batch.push_back(&features_[i]);
  return model_->Predict(batch);
}

StatusOr<std::vector<RuntimePrediction>> PerformanceCostModel::PredictOptions(
    const ScheduleSpec& partial, const std::vector<StageSchedule>& options) {
  if (options.empty()) return std::vector<RuntimePrediction>();
  const int slot = partial.stages_size();
  ScheduleSpec state = partial;
  *state.add_stages() = options[0];
  state = featurizer_.space().WithDefaults(state);
  for (size_t i = 0; i < options.size(); ++i) {
    *state.mutable_stages(slot) = options[i];
    FeaturizeInto(i, state);
  }
  std::vector<const PipelineFeatures*> batch;
  for (size_t i = 0; i < options.size(); ++i) batch.push_back(&features_[i]);
  return model_->Predict(batch);
}

}  // namespace schedfarm
