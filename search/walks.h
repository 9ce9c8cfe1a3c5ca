// The two walks over partial schedules that searches share: the greedy walk (one
// decision per stage, the acquisition's best option each time, or with probability
// `noise` a random one) and the beam walk (the `width` best partial schedules kept at
// every stage). Both start from any partial schedule, so value iteration completes
// the prefixes of its rollouts with them; greedy and beam are these walks from the
// empty schedule.
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"
#include "scheduler/schedule_space.h"
#include "search/acquisition.h"
#include "search/cost_model.h"

namespace schedfarm {

// How a walk scores: the model, the acquisition and the incumbent it compares with,
// and the options of a stage scored at most (a uniform sample beyond).
struct WalkScoring {
  CostModel* model = nullptr;
  const AcquisitionFunction* acquisition = nullptr;
  double incumbent_seconds = 0;
  int64_t options_cap = 1;
};

// A partial or complete schedule reached by a walk, with the model's prediction of it.
struct WalkState {
  ScheduleSpec schedule;
  RuntimePrediction prediction;
  double score = 0;        // the acquisition's
  int sampled_stages = 0;  // stages whose options were sampled on the way
};

// The greedy walk from `start` to a complete schedule: the states after each decision,
// in order (the last is complete; none when `start` is complete already).
StatusOr<std::vector<WalkState>> GreedyWalk(const ScheduleSpace& space, const WalkScoring& scoring,
                                            const ScheduleSpec& start, double noise,
                                            SpaceRng& rng);

// The beam walk from `start`: the complete schedules of the last beam, best score
// first (just `start` when it is complete).
StatusOr<std::vector<WalkState>> BeamWalk(const ScheduleSpace& space, const WalkScoring& scoring,
                                          const ScheduleSpec& start, int64_t width, SpaceRng& rng);

}  // namespace schedfarm
