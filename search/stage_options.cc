#include "search/stage_options.h"

#include <string>
#include <unordered_set>

namespace schedfarm {

std::vector<StageSchedule> CappedOptions(const ScheduleSpace& space, const ScheduleSpec& partial,
                                         int64_t cap, SpaceRng& rng, bool* sampled) {
  *sampled = false;
  if (space.CountOptions(partial) <= cap) return space.Options(partial);
  *sampled = true;
  std::vector<StageSchedule> options;
  std::unordered_set<std::string> seen;
  // Distinct samples; a space this large rarely repeats, the attempt limit keeps a
  // space just above the cap from drawing forever.
  for (int64_t attempt = 0; attempt < 4 * cap && static_cast<int64_t>(options.size()) < cap;
       ++attempt) {
    StageSchedule option = space.SampleOption(partial, rng);
    if (seen.insert(option.SerializeAsString()).second) options.push_back(std::move(option));
  }
  return options;
}

ScheduleSpec WithOption(const ScheduleSpace& space, const ScheduleSpec& partial,
                        const StageSchedule& option) {
  ScheduleSpec child = partial;
  *child.add_stages() = option;
  child.set_partial(child.stages_size() < static_cast<int>(space.decision_order().size()));
  return child;
}

bool IsComplete(const ScheduleSpace& space, const ScheduleSpec& schedule) {
  return schedule.stages_size() == static_cast<int>(space.decision_order().size());
}

std::vector<double> AcquisitionScores(const AcquisitionFunction& acquisition,
                                      const std::vector<RuntimePrediction>& predictions,
                                      double incumbent_seconds) {
  std::vector<double> scores;
  scores.reserve(predictions.size());
  for (const RuntimePrediction& p : predictions) {
    scores.push_back(acquisition.Score(p, incumbent_seconds));
  }
  return scores;
}

size_t ArgMax(const std::vector<double>& scores) {
  size_t best = 0;
  for (size_t i = 1; i < scores.size(); ++i) {
    if (scores[i] > scores[best]) best = i;
  }
  return best;
}

}  // namespace schedfarm
