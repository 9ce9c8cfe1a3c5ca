// The targets of value iteration (value-learning paper, Alg. 2): the value of a prefix
// (a partial schedule) is the least runtime measured of the complete schedules that
// extend it. Only OK measurements take part: a completion that failed (compile error,
// timeout, wrong answer) gives its prefixes nothing, and the model's own prediction of
// the prefix takes no part either (rule "measured"). Free of Halide and Torch.
#pragma once

#include <string>
#include <vector>

#include "schedfarm.pb.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

// An OK measurement of a complete schedule of a pipeline.
struct MeasuredSchedule {
  std::string hash;
  ScheduleSpec schedule;
  double seconds = 0;  // median
  double stddev_seconds = 0;
};

// Sets prefix->target_seconds, target_hash and target_stddev_seconds from the fastest of
// `measured` (schedules of the prefix's pipeline) whose first prefix->stages() decisions
// are the prefix; all three cleared when none is.
void SetPrefixTarget(const ScheduleSpace& space, const std::vector<MeasuredSchedule>& measured,
                     ValuePrefix* prefix);

}  // namespace schedfarm
