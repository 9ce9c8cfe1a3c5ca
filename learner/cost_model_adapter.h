// A trained PerformanceModel as the search layer's CostModel for one pipeline: each
// schedule is featurized (learner/features.h) and the batch goes to the model in one
// call. What a partial schedule's features are depends on what the model's
// predictions of it mean: a model trained on complete schedules
// (PartialMeaning::kDefaultCompletion) scores the schedule with every undecided stage
// at the space's default; a value function (kBestReachable) reads the partial
// schedule itself, undecided stages as zeros. Predict also gives each prediction the
// schedule's dependent features (signed log scale), which diversity compares; the
// options of a walk get none. Not thread-safe (the featurizer's
// scratch is per thread).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "learner/features.h"
#include "learner/model.h"
#include "search/cost_model.h"

namespace schedfarm {

// The schedule a model whose partial predictions mean `meaning` reads for `schedule`:
// a partial schedule default-completed under kDefaultCompletion, else the schedule itself.
ScheduleSpec ScheduleAsRead(const ScheduleSpace& space, const ScheduleSpec& schedule,
                            PartialMeaning meaning);

class PerformanceCostModel : public CostModel {
 public:
  // `model` is shared by the pipelines of a campaign; `featurizer` outlives this.
  // REQUIRES: meaning is kDefaultCompletion or kBestReachable.
  PerformanceCostModel(std::shared_ptr<const PerformanceModel> model, std::string version,
                       const Featurizer& featurizer, PartialMeaning meaning);

  std::string version() const override { return version_; }
  PartialMeaning partial_meaning() const override { return meaning_; }
  StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const ScheduleSpec*>& schedules) override;
  // One state is built and each option written into its slot in turn: copying whole
  // schedules per option would cost more than featurizing them.
  StatusOr<std::vector<RuntimePrediction>> PredictOptions(
      const ScheduleSpec& partial, const std::vector<StageSchedule>& options) override;

 private:
  // Featurizes the schedule into features_[i].
  void FeaturizeInto(size_t i, const ScheduleSpec& schedule);
  // ScheduleAsRead under this model's space and meaning.
  ScheduleSpec AsRead(const ScheduleSpec& schedule) const;

  std::shared_ptr<const PerformanceModel> model_;
  std::string version_;
  const Featurizer& featurizer_;
  PartialMeaning meaning_;
  std::vector<PipelineFeatures> features_;  // reused between calls
};

}  // namespace schedfarm
