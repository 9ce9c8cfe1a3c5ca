// Helpers the strategies share: the options of a stage a walk scores (all of them, or
// a uniform sample when there are more than a cap), a partial schedule extended by one
// option, and a batch of predictions scored by an acquisition function.
#pragma once

#include <cstdint>
#include <vector>

#include "schedfarm.pb.h"
#include "scheduler/schedule_space.h"
#include "search/acquisition.h"
#include "search/cost_model.h"

namespace schedfarm {

// The options of the next stage of `partial`: every one when there are at most `cap`
// (in the space's order), else `cap` distinct uniform samples, and *sampled is set.
// REQUIRES: partial is not complete; cap >= 1.
std::vector<StageSchedule> CappedOptions(const ScheduleSpace& space, const ScheduleSpec& partial,
                                         int64_t cap, SpaceRng& rng, bool* sampled);

// `partial` with `option` decided for its next stage.
ScheduleSpec WithOption(const ScheduleSpace& space, const ScheduleSpec& partial,
                        const StageSchedule& option);

// Whether a schedule decides every stage.
bool IsComplete(const ScheduleSpace& space, const ScheduleSpec& schedule);

// The acquisition's score of each prediction against the incumbent.
std::vector<double> AcquisitionScores(const AcquisitionFunction& acquisition,
                                      const std::vector<RuntimePrediction>& predictions,
                                      double incumbent_seconds);

// The index of the largest score (the first of ties). REQUIRES: !scores.empty().
size_t ArgMax(const std::vector<double>& scores);

}  // namespace schedfarm
