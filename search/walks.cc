#include "search/walks.h"

#include <algorithm>

#include "search/stage_options.h"

namespace schedfarm {
namespace {

// The options of the next stage of `parent`, each as the state it leads to.
StatusOr<std::vector<WalkState>> Children(const ScheduleSpace& space, const WalkScoring& scoring,
                                          const WalkState& parent, SpaceRng& rng) {
  bool sampled = false;
  std::vector<StageSchedule> options =
      CappedOptions(space, parent.schedule, scoring.options_cap, rng, &sampled);
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<RuntimePrediction> predictions,
                             scoring.model->PredictOptions(parent.schedule, options));
  const std::vector<double> scores =
      AcquisitionScores(*scoring.acquisition, predictions, scoring.incumbent_seconds);
  std::vector<WalkState> children;
  children.reserve(options.size());
  for (size_t i = 0; i < options.size(); ++i) {
    children.push_back({WithOption(space, parent.schedule, options[i]), predictions[i], scores[i],
                        parent.sampled_stages + (sampled ? 1 : 0)});
  }
  return children;
}

}  // namespace

StatusOr<std::vector<WalkState>> GreedyWalk(const ScheduleSpace& space, const WalkScoring& scoring,
                                            const ScheduleSpec& start, double noise,
                                            SpaceRng& rng) {
  std::vector<WalkState> states;
  WalkState state{start, {}, 0, 0};
  while (!IsComplete(space, state.schedule)) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<WalkState> children,
                               Children(space, scoring, state, rng));
    std::vector<double> scores;
    for (const WalkState& child : children) scores.push_back(child.score);
    size_t pick = ArgMax(scores);
    if (noise > 0 && rng.Unit() < noise) pick = rng.Below(children.size());
    state = std::move(children[pick]);
    states.push_back(state);
  }
  return states;
}

StatusOr<std::vector<WalkState>> BeamWalk(const ScheduleSpace& space, const WalkScoring& scoring,
                                          const ScheduleSpec& start, int64_t width,
                                          SpaceRng& rng) {
  std::vector<WalkState> beam = {{start, {}, 0, 0}};
  while (!IsComplete(space, beam[0].schedule)) {
    std::vector<WalkState> children;
    for (const WalkState& parent : beam) {
      SCHEDFARM_ASSIGN_OR_RETURN(std::vector<WalkState> more,
                                 Children(space, scoring, parent, rng));
      std::move(more.begin(), more.end(), std::back_inserter(children));
    }
    const size_t keep = std::min<size_t>(children.size(), static_cast<size_t>(width));
    std::partial_sort(children.begin(), children.begin() + keep, children.end(),
                      [](const WalkState& a, const WalkState& b) { return a.score > b.score; });
    children.resize(keep);
    beam = std::move(children);
  }
  return beam;
}

}  // namespace schedfarm
