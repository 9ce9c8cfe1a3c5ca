// farm-learner's side of a network campaign (docs/NETWORKS.md): rounds of proposals
// spread over the network's distinct tasks by the task scheduler, and the network's
// schedule assembled from each task's best, proposed again when it got faster enough.
#include <algorithm>
#include <cmath>
#include <optional>

#include "campaign/campaign_pipelines.h"
#include "common/log.h"
#include "learner_daemon/daemon_state.h"
#include "network/assemble.h"
#include "pipeline/spec.h"
#include "scheduler/autoscheduler_names.h"
#include "scheduler/templates.h"

namespace schedfarm {
namespace {

// The assembly is proposed again once the tasks' estimate of the network's runtime has
// fallen this much below the estimate of the newest assembly, and that assembly is
// measured: less is within what the measurement noise and the boundaries between tasks
// blur, and each assembly costs a compile of the whole network (about 20 s for
// ResNet-18 at 224x224).
constexpr double kReassembleGain = 0.05;
// A campaign with a wall-time budget stops proposing tasks for this share of it at the
// end, or for three times the longest an assembly took (AssemblyTurnSeconds) when that
// is more, so that the final assembly is compiled and timed before the campaign ends:
// twice was short for ViT-B/16, whose final assembly, proposed 4m51s before the end of
// a 30-minute tune, was still compiling when it ended (its first compiled in 155 s while
// the rest of the host waited for it; the final one beside a busy host and learner).
constexpr double kFinalAssemblyShare = 0.1;
constexpr double kFinalAssemblyTurns = 3;

std::string TaskGroup(const PipelineGraph& network, const NetworkTask& task) {
  if (task.anchor < 0) return "none";
  const Stage& anchor = network.stage(task.anchor);
  return OpKind_Name(anchor.op()) + " " + DataTypeName(anchor.dtype());
}

// The assembly of `schedules` (one per distinct task, null for its reference) as a
// candidate of the assembly pipeline, ahead of the queue, with the tasks' estimate
// `predicted` (0: none); none where it was proposed before or does not assemble.
std::optional<Candidate> AssemblyCandidate(CampaignData& data,
                                           const std::vector<const ScheduleSpec*>& schedules,
                                           double predicted, const char* which) {
  NetworkData& network = *data.network;
  const CampaignData::PipelineData& assembly = data.pipelines[1];
  StatusOr<ScheduleSpec> assembled =
      AssembleSchedule(network.partition, *assembly.space, schedules);
  if (!assembled.ok()) {
    LogEvent("warn", "assembly_failed",
             {{"campaign", data.id}, {"error", assembled.status().message()}});
    return std::nullopt;
  }
  const std::string hash = ScheduleHash(*assembly.space, *assembled);
  if (!network.assembled.insert(hash).second) return std::nullopt;
  Candidate candidate;
  candidate.set_pipeline_id(assembly.id);
  *candidate.mutable_schedule() = std::move(*assembled);
  candidate.set_schedule_hash(hash);
  candidate.set_origin(kAssembledOrigin);
  candidate.set_ahead(true);
  candidate.mutable_prediction()->set_mean_seconds(predicted);
  if (predicted > 0) network.assembled_estimate = predicted;
  network.assembly_in_flight = hash;
  LogEvent(
      "info", "network_assembled",
      {{"campaign", data.id}, {"estimate_seconds", std::to_string(predicted)}, {"which", which}});
  return candidate;
}

}  // namespace

double AssemblyTurnSeconds(const Measurement& m) {
  const double runs = 1 + static_cast<double>(m.repeats_per_sample()) * m.samples_seconds_size();
  return m.compile_seconds() + runs * m.stats().median_seconds();
}

Status LearnerDaemon::State::LoadNetwork(CampaignData& data) {
  if (data.pipelines.size() < NetworkData::kFirstTask) {
    return Status::Error("network campaign " + data.id + " has " +
                         std::to_string(data.pipelines.size()) + " pipelines");
  }
  auto network = std::make_unique<NetworkData>();
  const PipelineGraph& graph = *data.pipelines[0].graph;
  SCHEDFARM_ASSIGN_OR_RETURN(network->partition, PartitionNetwork(graph, data.config.fusion()));
  const std::vector<PipelineSpec> expected = NetworkCampaignPipelines(graph.spec(), network->partition);
  if (expected.size() != data.pipelines.size()) {
    return Status::Error("network campaign " + data.id + ": its network splits into " +
                         std::to_string(expected.size()) + " pipelines, the campaign holds " +
                         std::to_string(data.pipelines.size()));
  }
  std::vector<TaskScheduler::Task> tasks;
  for (size_t d = 0; d < network->partition.distinct.size(); ++d) {
    const DistinctTask& distinct = network->partition.distinct[d];
    if (distinct.pipeline_id != data.pipelines[NetworkData::kFirstTask + d].id) {
      return Status::Error("network campaign " + data.id + ": task " + std::to_string(d) +
                           " is " + data.pipelines[NetworkData::kFirstTask + d].id +
                           ", the network's split gives " + distinct.pipeline_id);
    }
    const NetworkTask& first = network->partition.tasks[distinct.occurrences.front()];
    TaskScheduler::Task task;
    task.weight = distinct.weight();
    for (int s : first.stages) task.flops += graph.cost(s).flops;
    task.group = TaskGroup(graph, first);
    tasks.push_back(task);
  }
  network->scheduler = std::make_unique<TaskScheduler>(std::move(tasks));
  network->tasks.resize(network->partition.distinct.size());
  data.network = std::move(network);
  return Status::Ok();
}

void LearnerDaemon::State::FollowNetwork(CampaignData& data, size_t pipeline, const Measurement& m) {
  NetworkData& network = *data.network;
  const double median = m.stats().median_seconds();
  if (pipeline == 1 && m.candidate().origin() == kAssembledOrigin) {
    network.assembled.insert(m.candidate().schedule_hash());
    if (m.candidate().schedule_hash() == network.assembly_in_flight) {
      network.assembly_in_flight.clear();
      network.longest_assembly_seconds =
          std::max(network.longest_assembly_seconds, AssemblyTurnSeconds(m));
    }
    const double estimate = m.candidate().prediction().mean_seconds();
    if (estimate > 0 && (network.assembled_estimate == 0 || estimate < network.assembled_estimate)) {
      network.assembled_estimate = estimate;
    }
    return;
  }
  if (pipeline < NetworkData::kFirstTask) return;
  // A task's baselines (libtorch, the autoschedulers) are its targets, not its
  // schedules: the task scheduler and the assembly take the farm's own.
  if (IsBaselineName(m.candidate().origin())) return;
  const size_t d = pipeline - NetworkData::kFirstTask;
  NetworkData::TaskProgress& task = network.tasks[d];
  ++task.results;
  if (m.status() != OK || median <= 0) {
    ++task.failures[MeasurementStatus_Name(m.status())];
    // A task whose first round (a batch of results) all failed gets no more rounds.
    const int t = static_cast<int>(d);
    if (!task.best && task.results >= std::max(1, data.config.strategy().batch()) &&
        !network.scheduler->dead(t)) {
      network.scheduler->SetDead(t);
      std::string classes;
      for (const auto& [status, count] : task.failures) {
        classes += (classes.empty() ? "" : ",") + status + ":" + std::to_string(count);
      }
      LogEvent("warn", "task_failed",
               {{"campaign", data.id},
                {"task", std::to_string(d)},
                {"pipeline", data.pipelines[pipeline].id},
                {"what", network.partition.distinct[d].summary},
                {"failures", classes},
                {"assembled_with", "the reference schedule"}});
    }
    return;
  }
  network.scheduler->SetBest(static_cast<int>(d), median);
  if (!task.best || median < task.best_seconds) {
    task.best = m.candidate().schedule();
    task.best_seconds = median;
  }
}

Status LearnerDaemon::State::ProposeTemplatesAssembly(CampaignData& data) {
  NetworkData& network = *data.network;
  if (network.completed || network.templates_assembly_tried || !network.assembled.empty() ||
      !data.config.templates()) {
    return Status::Ok();
  }
  network.templates_assembly_tried = true;
  std::vector<std::optional<ScheduleSpec>> templates(network.tasks.size());
  std::vector<const ScheduleSpec*> schedules;
  for (size_t d = 0; d < network.tasks.size(); ++d) {
    // A fused task's first template: its producers in its strips.
    std::vector<ScheduleSpec> specs =
        TemplateSchedules(*data.pipelines[NetworkData::kFirstTask + d].space);
    if (!specs.empty()) templates[d] = std::move(specs.front());
    schedules.push_back(templates[d] ? &*templates[d] : nullptr);
  }
  std::optional<Candidate> candidate = AssemblyCandidate(data, schedules, 0, "templates");
  if (!candidate) return Status::Ok();
  std::vector<Candidate> candidates;
  candidates.push_back(std::move(*candidate));
  return ProposeCandidatesOf(data, std::move(candidates), "assembly");
}

Status LearnerDaemon::State::ProposeNetworkRound(CampaignData& data, const CampaignStatus& status) {
  NetworkData& network = *data.network;
  if (network.completed) return Status::Ok();
  const Campaign& campaign = status.campaign();
  const CampaignCounters& counters = campaign.counters();
  const int64_t remaining =
      campaign.budget() - counters.finished() - counters.queued() - counters.leased();
  const double wall_time = data.config.budget().wall_time_seconds();
  const double reserve = std::max(kFinalAssemblyShare * wall_time,
                                  kFinalAssemblyTurns * network.longest_assembly_seconds);
  const bool final_stretch =
      remaining <= 1 || (wall_time > 0 && campaign.running_seconds() >= wall_time - reserve);
  // The last assembly waits for the results in flight, which may still improve a task.
  const bool in_flight = counters.queued() + counters.leased() > 0;

  // The tasks' estimate of the network, and whether every task has had its say: each
  // has a measured schedule or has failed for good.
  double estimate = 0;
  bool every_task_known = true;
  for (size_t d = 0; d < network.tasks.size(); ++d) {
    const NetworkData::TaskProgress& task = network.tasks[d];
    if (task.best) {
      estimate += network.partition.distinct[d].weight() * task.best_seconds;
    } else if (!network.scheduler->dead(static_cast<int>(d))) {
      every_task_known = false;
    }
  }
  std::vector<Candidate> candidates;
  // At the end, whatever is known: a task without a measured schedule takes the
  // reference schedule.
  const bool assembly_due =
      (final_stretch && !in_flight) ||
      (!final_stretch && every_task_known && network.assembly_in_flight.empty() &&
       (network.assembled_estimate == 0 ||
        estimate <= (1 - kReassembleGain) * network.assembled_estimate));
  if (assembly_due && candidates.empty()) {
    std::vector<const ScheduleSpec*> schedules;
    for (const NetworkData::TaskProgress& task : network.tasks) {
      schedules.push_back(task.best ? &*task.best : nullptr);
    }
    std::optional<Candidate> candidate =
        AssemblyCandidate(data, schedules, estimate, final_stretch ? "final" : "tasks' best");
    if (candidate) candidates.push_back(std::move(*candidate));
  }

  // A round of the task the scheduler picks, leaving one benchmark for the last assembly.
  const int batch = std::max(1, data.config.strategy().batch());
  const int64_t room = remaining - 1 - static_cast<int64_t>(candidates.size());
  int task = -1;
  if (!final_stretch && room > 0) {
    for (size_t d = 0; d < network.tasks.size(); ++d) {
      const PipelineSearch* search = data.pipelines[NetworkData::kFirstTask + d].search.get();
      if (search == nullptr || search->Exhausted()) network.scheduler->SetDead(static_cast<int>(d));
    }
    task = network.scheduler->NextRound();
  }
  if (task >= 0) {
    CampaignData::PipelineData& pipeline = data.pipelines[NetworkData::kFirstTask + task];
    std::string failure;
    const auto started = std::chrono::steady_clock::now();
    std::vector<Candidate> round =
        pipeline.search->Propose(static_cast<int>(std::min<int64_t>(batch, room)), &failure);
    const double seconds = SecondsSince(started);
    for (Candidate& candidate : round) {
      candidate.set_search_seconds(seconds / static_cast<double>(round.size()));
      candidates.push_back(std::move(candidate));
    }
    if (!failure.empty()) {
      LogEvent("warn", "search_failed",
               {{"campaign", data.id}, {"pipeline", pipeline.id}, {"error", failure}});
    }
  }
  if (candidates.empty()) {
    // Nothing left to propose: once the last assembly is measured, the campaign is done.
    if ((final_stretch || task < 0) && !in_flight) {
      ClientRequest request;
      request.mutable_complete()->set_campaign(data.id);
      SCHEDFARM_RETURN_IF_ERROR(Call(std::move(request)).status());
      network.completed = true;
      LogEvent("info", "network_tuned", {{"campaign", data.id}, {"estimate_seconds", std::to_string(estimate)}});
    }
    return Status::Ok();
  }
  return ProposeCandidatesOf(data, std::move(candidates),
                             task >= 0 ? "task " + std::to_string(task) : "assembly");
}

}  // namespace schedfarm
