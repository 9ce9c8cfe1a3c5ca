// A trained PerformanceModel as the search layer's CostModel for one pipeline: each
// schedule is featurized (learner/features.h) and the batch goes to the model in one
// call. Models trained on complete schedules score a partial one as the schedule
// with every undecided stage at the space's default (PartialMeaning
// kDefaultCompletion). Not thread-safe (the featurizer's scratch is per thread).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "learner/features.h"
#include "learner/model.h"
#include "search/cost_model.h"

namespace schedfarm {

class PerformanceCostModel : public CostModel {
 public:
  // `model` is shared by the pipelines of a campaign; `featurizer` outlives this.
  PerformanceCostModel(std::shared_ptr<const PerformanceModel> model, std::string version,
                       const Featurizer& featurizer);

  std::string version() const override { return version_; }
  PartialMeaning partial_meaning() const override { return PartialMeaning::kDefaultCompletion; }
  StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const ScheduleSpec*>& schedules) override;
  // One default-completed state is built and each option written into its slot in
  // turn: copying whole schedules per option would cost more than featurizing them.
  StatusOr<std::vector<RuntimePrediction>> PredictOptions(
      const ScheduleSpec& partial, const std::vector<StageSchedule>& options) override;

 private:
  // Featurizes the schedule into features_[i].
  void FeaturizeInto(size_t i, const ScheduleSpec& schedule);

  std::shared_ptr<const PerformanceModel> model_;
  std::string version_;
  const Featurizer& featurizer_;
  std::vector<PipelineFeatures> features_;  // reused between calls
};

}  // namespace schedfarm
