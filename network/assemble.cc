#include "network/assemble.h"

#include <map>
#include <string>

namespace schedfarm {
namespace {

using NameMap = std::map<std::string, std::string>;

void RenameLoop(const NameMap& names, LoopRef* loop) {
  auto it = names.find(loop->stage());
  if (it != names.end()) loop->set_stage(it->second);
}

void RenameDefinition(const NameMap& names, DefinitionSchedule* definition) {
  for (LoopRef& loop : *definition->mutable_loop_order()) RenameLoop(names, &loop);
  for (LoopRef& loop : *definition->mutable_parallel()) RenameLoop(names, &loop);
  for (LoopRef& loop : *definition->mutable_unroll()) RenameLoop(names, &loop);
  if (definition->has_vectorize()) RenameLoop(names, definition->mutable_vectorize());
}

StageSchedule Renamed(const NameMap& names, StageSchedule stage) {
  stage.set_stage(names.at(stage.stage()));
  if (stage.has_compute_at()) RenameLoop(names, stage.mutable_compute_at());
  if (stage.has_store_at()) RenameLoop(names, stage.mutable_store_at());
  if (stage.has_pure()) RenameDefinition(names, stage.mutable_pure());
  if (stage.has_update()) RenameDefinition(names, stage.mutable_update());
  return stage;
}

}  // namespace

StatusOr<ScheduleSpec> OccurrenceSchedule(const NetworkPartition& partition, int t,
                                          const ScheduleSpec& schedule) {
  const NetworkTask& task = partition.tasks[t];
  const DistinctTask& distinct = partition.distinct[task.distinct];
  const std::string where = "task " + std::to_string(t) + " (" + distinct.summary + ")";
  // The distinct task's pipeline is its first occurrence: names map by position.
  const NetworkTask& first = partition.tasks[distinct.occurrences.front()];
  NameMap names;
  for (size_t i = 0; i < task.canonical.size(); ++i) names[first.canonical[i]] = task.canonical[i];
  if (schedule.stages_size() != static_cast<int>(task.canonical.size())) {
    return Status::Error(where + ": its schedule decides " +
                         std::to_string(schedule.stages_size()) + " stages of " +
                         std::to_string(task.canonical.size()));
  }
  ScheduleSpec renamed;
  for (const StageSchedule& stage : schedule.stages()) {
    if (!names.count(stage.stage())) {
      return Status::Error(where + ": its schedule names stage '" + stage.stage() +
                           "', which the task does not have");
    }
    *renamed.add_stages() = Renamed(names, stage);
  }
  return renamed;
}

StatusOr<ScheduleSpec> AssembleSchedule(const NetworkPartition& partition,
                                        const ScheduleSpace& assembly_space,
                                        const std::vector<const ScheduleSpec*>& task_schedules) {
  if (task_schedules.size() != partition.distinct.size()) {
    return Status::Error("assembly: " + std::to_string(task_schedules.size()) +
                         " task schedules for " + std::to_string(partition.distinct.size()) +
                         " distinct tasks");
  }
  std::map<std::string, StageSchedule> decisions;  // by network stage name
  for (size_t t = 0; t < partition.tasks.size(); ++t) {
    const NetworkTask& task = partition.tasks[t];
    const ScheduleSpec* schedule = task_schedules[task.distinct];
    if (schedule == nullptr) {
      for (const std::string& name : task.canonical) {
        StageSchedule root;
        root.set_stage(name);
        root.set_compute(ROOT);
        decisions[name] = root;
      }
      continue;
    }
    SCHEDFARM_ASSIGN_OR_RETURN(ScheduleSpec renamed,
                               OccurrenceSchedule(partition, static_cast<int>(t), *schedule));
    for (const StageSchedule& stage : renamed.stages()) decisions[stage.stage()] = stage;
  }

  ScheduleSpec spec;
  spec.set_pipeline_id(assembly_space.pipeline_id());
  for (int s : assembly_space.decision_order()) {
    const std::string& name = assembly_space.graph().stage(s).name();
    auto it = decisions.find(name);
    if (it == decisions.end()) return Status::Error("assembly: no task decides stage '" + name + "'");
    *spec.add_stages() = it->second;
  }
  const Status checked = assembly_space.Check(spec);
  if (!checked.ok()) {
    return Status::Error("assembly: the assembled schedule is not legal: " + checked.message());
  }
  return spec;
}

}  // namespace schedfarm
