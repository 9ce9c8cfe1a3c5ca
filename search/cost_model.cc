#include "search/cost_model.h"

namespace schedfarm {

const char* PartialMeaningName(PartialMeaning meaning) {
  switch (meaning) {
    case PartialMeaning::kCompleteOnly:
      return "complete schedules only";
    case PartialMeaning::kDefaultCompletion:
      return "the runtime with every undecided stage at its default";
    case PartialMeaning::kBestReachable:
      return "the best runtime reachable";
  }
  return "?";
}

StatusOr<std::vector<RuntimePrediction>> CostModel::PredictOptions(
    const ScheduleSpec& partial, const std::vector<StageSchedule>& options) {
  // Each state keeps the parent's partial flag: a spec marked partial may decide every
  // stage (ScheduleSpace::Check), so the model needs no space to build them.
  std::vector<ScheduleSpec> states(options.size(), partial);
  std::vector<const ScheduleSpec*> pointers;
  pointers.reserve(states.size());
  for (size_t i = 0; i < options.size(); ++i) {
    *states[i].add_stages() = options[i];
    pointers.push_back(&states[i]);
  }
  return Predict(pointers);
}

}  // namespace schedfarm
