#include "search/walks.h"

#include <algorithm>

#include "search/stage_options.h"

namespace schedfarm {
namespace {

// The options of the next stage of `parent`, scored.
struct ScoredOptions {
  std::vector<StageSchedule> options;
  std::vector<RuntimePrediction> predictions;
  std::vector<double> scores;
  int sampled_stages = 0;  // the parent's, plus one when these options were sampled
};

StatusOr<ScoredOptions> Score(const ScheduleSpace& space, const WalkScoring& scoring,
                              const WalkState& parent, SpaceRng& rng) {
  ScoredOptions scored;
  bool sampled = false;
  scored.options = CappedOptions(space, parent.schedule, scoring.options_cap, rng, &sampled);
  SCHEDFARM_ASSIGN_OR_RETURN(scored.predictions,
                             scoring.model->PredictOptions(parent.schedule, scored.options));
  scored.scores = AcquisitionScores(*scoring.acquisition, scored.predictions,
                                    scoring.incumbent_seconds);
  scored.sampled_stages = parent.sampled_stages + (sampled ? 1 : 0);
  return scored;
}

// The state option `i` of `scored` leads to from `parent`.
WalkState Child(const ScheduleSpace& space, const WalkState& parent, const ScoredOptions& scored,
                size_t i) {
  return {WithOption(space, parent.schedule, scored.options[i]), scored.predictions[i],
          scored.scores[i], scored.sampled_stages};
}

}  // namespace

StatusOr<std::vector<WalkState>> GreedyWalk(const ScheduleSpace& space, const WalkScoring& scoring,
                                            const ScheduleSpec& start, double noise,
                                            SpaceRng& rng) {
  std::vector<WalkState> states;
  WalkState state{start, {}, 0, 0};
  while (!IsComplete(space, state.schedule)) {
    SCHEDFARM_ASSIGN_OR_RETURN(ScoredOptions scored, Score(space, scoring, state, rng));
    size_t pick = ArgMax(scored.scores);
    if (noise > 0 && rng.Unit() < noise) pick = rng.Below(scored.options.size());
    state = Child(space, state, scored, pick);  // only the chosen option's state is built
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
      SCHEDFARM_ASSIGN_OR_RETURN(ScoredOptions scored, Score(space, scoring, parent, rng));
      for (size_t i = 0; i < scored.options.size(); ++i) {
        children.push_back(Child(space, parent, scored, i));
      }
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
