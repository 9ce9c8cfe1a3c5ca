#include "learner/cost_model_adapter.h"

namespace schedfarm {

PerformanceCostModel::PerformanceCostModel(std::shared_ptr<const PerformanceModel> model,
                                           std::string version, const Featurizer& featurizer)
    : model_(std::move(model)), version_(std::move(version)), featurizer_(featurizer) {}

StatusOr<std::vector<RuntimePrediction>> PerformanceCostModel::Predict(
    const std::vector<const ScheduleSpec*>& schedules) {
  const ScheduleSpace& space = featurizer_.space();
  const size_t stages = space.decision_order().size();
  if (features_.size() < schedules.size()) features_.resize(schedules.size());
  std::vector<const PipelineFeatures*> batch;
  batch.reserve(schedules.size());
  ScheduleSpec completed;
  for (size_t i = 0; i < schedules.size(); ++i) {
    const ScheduleSpec* schedule = schedules[i];
    if (static_cast<size_t>(schedule->stages_size()) < stages || schedule->partial()) {
      completed = space.WithDefaults(*schedule);
      schedule = &completed;
    }
    SCHEDFARM_RETURN_IF_ERROR(featurizer_.Featurize(*schedule, &features_[i]));
    batch.push_back(&features_[i]);
  }
  return model_->Predict(batch);
}

}  // namespace schedfarm
