#include "search/cost_model.h"

#include <cmath>

namespace schedfarm {

RuntimePrediction EnsemblePrediction(std::vector<double> member_seconds) {
  RuntimePrediction p;
  const double n = static_cast<double>(member_seconds.size());
  for (double s : member_seconds) p.mean_seconds += s / n;
  double variance = 0;
  for (double s : member_seconds) variance += (s - p.mean_seconds) * (s - p.mean_seconds) / n;
  p.stddev_seconds = std::sqrt(variance);
  if (member_seconds.size() > 1) p.member_seconds = std::move(member_seconds);
  return p;
}

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
