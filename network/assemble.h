// The network's schedule assembled from one schedule per distinct task.
//
// Each task occurrence takes its distinct task's schedule, its stage names mapped
// from the task pipeline the schedule was made for to the occurrence's own stages
// (by CanonicalStageOrder); a task without a schedule gets the reference schedule
// (every stage computed at root, no other directive). The result is a complete
// schedule of NetworkPartition::assembly, where every task output is an output and
// so computed at root, checked by the assembly's schedule space.
#pragma once

#include <vector>

#include "common/status.h"
#include "network/tasks.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

// `task_schedules[d]` is distinct task d's schedule (of DistinctTask::spec), or
// nullptr for the reference schedule. `assembly_space` is the space of
// partition.assembly. Errors name the task whose schedule does not fit.
StatusOr<ScheduleSpec> AssembleSchedule(const NetworkPartition& partition,
                                        const ScheduleSpace& assembly_space,
                                        const std::vector<const ScheduleSpec*>& task_schedules);

// Distinct task schedule `schedule` (of DistinctTask::spec) for task occurrence `t`:
// its stage names mapped to the occurrence's (OccurrenceSpec). Fails, naming the task, if
// it does not decide the task's stages.
StatusOr<ScheduleSpec> OccurrenceSchedule(const NetworkPartition& partition, int t,
                                          const ScheduleSpec& schedule);

}  // namespace schedfarm
