#include "coordinator/campaign_run.h"

#include <algorithm>
#include <cmath>

#include "campaign/campaign_yaml.h"
#include "network/tasks.h"
#include "pipeline/spec.h"
#include "scheduler/templates.h"
#include "scheduler/autoscheduler_names.h"
#include "search/registry.h"
#include "storage/keys.h"
#include "storage/throughput.h"

namespace schedfarm {

namespace {

bool IsFinal(CandidateState state) {
  return state == CANDIDATE_MEASURED || state == CANDIDATE_FAILED || state == CANDIDATE_QUARANTINED;
}

bool Contains(const google::protobuf::RepeatedPtrField<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

}  // namespace

bool IsDeterministicFailure(MeasurementStatus status) {
  return status == COMPILE_ERROR || status == RUNTIME_ERROR || status == WRONG_ANSWER ||
         status == OUTPUT_LIMIT || status == NOT_IN_DATASET;
}

CampaignRun::CampaignRun(Campaign campaign, CampaignConfig config)
    : campaign_(std::move(campaign)), config_(std::move(config)) {}

StatusOr<std::unique_ptr<CampaignRun>> CampaignRun::Create(Campaign campaign, CampaignConfig config,
                                                           std::vector<PipelineSpec> pipelines) {
  std::unique_ptr<CampaignRun> run(new CampaignRun(std::move(campaign), std::move(config)));
  TargetParams target;
  target.cores = std::max(1, run->config_.measurement().threads());
  target.vector_bytes = CampaignVectorBytes(run->config_.workers());
  run->entries_.reserve(pipelines.size());
  for (PipelineSpec& spec : pipelines) {
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
    if (!graph.ok()) return graph.status().WithContext("campaign " + run->id());
    PipelineEntry entry;
    entry.graph = std::make_unique<PipelineGraph>(std::move(*graph));
    entry.id = PipelineId(*entry.graph);
    entry.space = std::make_unique<ScheduleSpace>(*entry.graph, target);
    entry.spec = std::move(spec);
    entry.flops = entry.graph->total_cost().flops;
    entry.bytes = entry.graph->compulsory_bytes();
    if (run->entry_by_id_.count(entry.id)) continue;  // listed twice: one entry
    run->entry_by_id_[entry.id] = run->entries_.size();
    run->specs_.push_back(entry.spec);
    run->entries_.push_back(std::move(entry));
  }
  if (run->config_.has_network() && !run->entries_.empty()) {
    // The weight of each distinct task: the split the submission was checked against.
    StatusOr<NetworkPartition> partition =
        PartitionNetwork(*run->entries_[0].graph, run->config_.fusion());
    if (!partition.ok()) return partition.status().WithContext("campaign " + run->id());
    for (const DistinctTask& task : partition->distinct) {
      auto found = run->entry_by_id_.find(task.pipeline_id);
      if (found == run->entry_by_id_.end()) continue;
      PipelineEntry& entry = run->entries_[found->second];
      entry.task_weight = task.weight();
      entry.task_kind = TaskKind(*entry.graph);
    }
  }
  if (run->campaign_.pipeline_ids().empty()) {  // a new campaign
    for (const PipelineEntry& entry : run->entries_) run->campaign_.add_pipeline_ids(entry.id);
  }
  // Each width's spaces and random streams, where the stored campaign left them.
  for (const CampaignWidth& width : run->campaign_.widths()) {
    SCHEDFARM_RETURN_IF_ERROR(run->SizeFor(width.vector_bytes(), {width.random_positions().begin(),
                                                                  width.random_positions().end()})
                                  .WithContext("campaign " + run->id()));
  }
  run->baselines_proposed_ = run->campaign_.counters().proposed() > 0;
  return run;
}

Status CampaignRun::SizeFor(int vector_bytes, const std::vector<uint64_t>& positions) {
  TargetParams target;
  target.cores = std::max(1, config_.measurement().threads());
  target.vector_bytes = vector_bytes;
  for (size_t e = 0; e < entries_.size(); ++e) {
    PipelineEntry& entry = entries_[e];
    SizedSpace& sized = entry.sized[vector_bytes];
    sized.space = std::make_unique<ScheduleSpace>(*entry.graph, target);
    SearchContext context;
    context.space = sized.space.get();
    context.seed = MixSeed(MixSeed(config_.strategy().seed(), e), vector_bytes);
    context.known = [this, id = entry.id](const std::string& hash) {
      const std::string key = Key(id, hash);
      return live_.count(key) > 0 || final_.count(key) > 0;
    };
    SCHEDFARM_RETURN_IF_ERROR(sized.random.Init(context));
    if (e < positions.size()) sized.random.set_position(positions[e]);
  }
  return Status::Ok();
}

void CampaignRun::AddWidth(int vector_bytes, int64_t now_ms, const ProposalVisitor& added) {
  for (const CampaignWidth& known : campaign_.widths()) {
    if (known.vector_bytes() == vector_bytes) return;
  }
  if (!SizeFor(vector_bytes, {}).ok()) {  // a random stream that cannot start: no width
    for (PipelineEntry& entry : entries_) entry.sized.erase(vector_bytes);
    return;
  }
  CampaignWidth* width = campaign_.add_widths();
  width->set_vector_bytes(vector_bytes);
  width->mutable_random_positions()->Resize(static_cast<int>(entries_.size()), 0);
  // The templates of every pipeline that has them (a fused task's: its cuts); a
  // network's on its tasks (after the network and its assembly pipeline).
  for (size_t e = config_.has_network() ? 2 : 0; config_.templates() && e < entries_.size(); ++e) {
    const PipelineEntry& entry = entries_[e];
    const ScheduleSpace& space = *entry.sized.at(vector_bytes).space;
    for (ScheduleSpec& schedule : TemplateSchedules(space)) {
      Candidate candidate;
      *candidate.mutable_schedule() = std::move(schedule);
      candidate.set_schedule_hash(ScheduleHash(space, candidate.schedule()));
      candidate.set_origin(kTemplateOrigin);
      candidate.set_vector_bytes(vector_bytes);
      if (!Offer(entry, std::move(candidate), now_ms, added)) return;
    }
  }
}

const PipelineSpec* CampaignRun::pipeline(const std::string& pipeline_id) const {
  auto it = entry_by_id_.find(pipeline_id);
  return it == entry_by_id_.end() ? nullptr : &entries_[it->second].spec;
}

bool CampaignRun::Accepts(const HostFingerprint& host) const { return WorkerServes(config_, host); }

std::string CampaignRun::Key(const std::string& pipeline_id, const std::string& slot) {
  return pipeline_id + '\0' + slot;
}

std::string CampaignRun::Key(const Candidate& candidate) {
  return Key(candidate.pipeline_id(),
             store_keys::CandidateSlot(candidate.schedule_hash(), candidate.repeat()));
}

CandidateRecord* CampaignRun::Live(const std::string& key) {
  auto it = live_.find(key);
  return it == live_.end() ? nullptr : &it->second;
}

void CampaignRun::CountWaiting(const Candidate& candidate, int delta) {
  waiting_ += delta;
  waiting_by_width_[candidate.vector_bytes()] += delta;
}

void CampaignRun::Enqueue(const std::string& key, const CandidateRecord& record) {
  CountWaiting(record.candidate(), 1);
  if (record.state() == CANDIDATE_RETRY) {
    retries_.emplace(record.next_attempt_unix_ms(), key);
  } else if (record.candidate().ahead()) {
    queue_.push_front(key);
  } else {
    queue_.push_back(key);
  }
}

void CampaignRun::Restore(CandidateRecord record) {
  const std::string key = Key(record.candidate());
  if (IsFinal(record.state())) {
    final_.insert(key);
    return;
  }
  if (record.state() == CANDIDATE_LEASED) {
    record.set_state(CANDIDATE_QUEUED);
    record.clear_lease_id();
  }
  if (record.candidate().has_audit()) live_audits_.insert(key);
  Enqueue(key, record);
  live_[key] = std::move(record);
}

void CampaignRun::RestoreMeasurement(const Measurement& measurement) {
  auto it = entry_by_id_.find(measurement.candidate().pipeline_id());
  if (measurement.status() != OK) {
    ++failures_[MeasurementStatus_Name(measurement.status())];
  }
  if (it == entry_by_id_.end() || measurement.status() != OK) return;
  const double median = measurement.stats().median_seconds();
  if (!std::isfinite(median) || median <= 0) return;
  PipelineEntry& entry = entries_[it->second];
  OkResult result{
      measurement.candidate().schedule_hash(),
      measurement.candidate().origin(),
      measurement.host().worker_id(),
      median,
      PeakGflops(measurement.host(), MeasuredThreads(measurement.settings())).value_or(0),
      BandwidthGbps(measurement.host(), MeasuredThreads(measurement.settings())).value_or(0),
      {}};
  for (const TorchLayoutRun& run : measurement.torch_layouts()) {
    if (run.status() == OK && run.stats().median_seconds() > 0) {
      result.torch_layouts.emplace_back(run.layout(), run.stats().median_seconds());
    }
  }
  entry.ok_results.push_back(std::move(result));
  Count(entry.ok_results.back(), &entry.all_hosts);
  hosts_measured_.insert(measurement.host().worker_id());
}

void CampaignRun::Count(const OkResult& result, ProgressState* state) const {
  PipelineProgress& progress = state->progress;
  progress.set_measured(progress.measured() + 1);
  if (Contains(config_.baselines(), result.origin) || result.origin == kReferenceOrigin) {
    auto& baselines = *progress.mutable_baseline_seconds();
    auto found = baselines.find(result.origin);
    if (found == baselines.end() || result.seconds < found->second) {
      baselines[result.origin] = result.seconds;
    }
  }
  for (const auto& [layout, seconds] : result.torch_layouts) {
    auto& layouts = *progress.mutable_libtorch_layout_seconds();
    auto found = layouts.find(layout);
    if (found == layouts.end() || seconds < found->second) layouts[layout] = seconds;
  }
  // A schedule measured again stands for the geometric mean of its measurements'
  // medians, as for the near-tie rule (search/near_ties.h).
  ProgressState::Runtime& runtime = state->runtimes[result.hash];
  runtime.sum_log_seconds += std::log(result.seconds);
  ++runtime.count;
  runtime.peak.Add(result.peak_gflops);
  runtime.bandwidth.Add(result.bandwidth_gbps);
  if (runtime.origin.empty()) runtime.origin = result.origin;  // of its first measurement
  const double estimate = runtime.Seconds();
  if (result.hash == progress.best_schedule_hash() && estimate > progress.best_seconds()) {
    progress.set_best_seconds(0);  // the best got slower: the fastest of all again
    for (const auto& [other, measured] : state->runtimes) {
      const double seconds = measured.Seconds();
      if (progress.best_seconds() > 0 && seconds >= progress.best_seconds()) continue;
      progress.set_best_seconds(seconds);
      progress.set_best_schedule_hash(other);
      progress.set_best_origin(measured.origin);
    }
  } else if (progress.best_seconds() == 0 || estimate < progress.best_seconds()) {
    progress.set_best_seconds(estimate);
    progress.set_best_schedule_hash(result.hash);
    progress.set_best_origin(runtime.origin);  // a re-measurement's is "remeasure"
  }
  // The best's hosts' roofs, whichever schedule is the best now (a schedule measured
  // again on another host keeps its place but may lose its roofs).
  const auto best = state->runtimes.find(progress.best_schedule_hash());
  const bool none = best == state->runtimes.end();
  progress.set_best_peak_gflops(none ? 0 : best->second.peak.Mean());
  progress.set_best_bandwidth_gbps(none ? 0 : best->second.bandwidth.Mean());
  if (!IsBaselineName(runtime.origin)) CountFarmBest(result.hash, estimate, state);
}

void CampaignRun::CountFarmBest(const std::string& hash, double estimate, ProgressState* state) {
  PipelineProgress& progress = state->progress;
  if (hash == state->farm_best_hash && estimate > progress.farm_best_seconds()) {
    // The farm's best got slower: the fastest of the farm's schedules again.
    progress.set_farm_best_seconds(0);
    state->farm_best_hash.clear();
    for (const auto& [other, measured] : state->runtimes) {
      const double seconds = measured.Seconds();
      if (IsBaselineName(measured.origin)) continue;
      if (progress.farm_best_seconds() > 0 && seconds >= progress.farm_best_seconds()) continue;
      progress.set_farm_best_seconds(seconds);
      state->farm_best_hash = other;
    }
  } else if (progress.farm_best_seconds() == 0 || estimate < progress.farm_best_seconds()) {
    progress.set_farm_best_seconds(estimate);
    state->farm_best_hash = hash;
  }
  // Its origin and its hosts' roofs, whichever schedule is the farm's best now.
  const auto best = state->runtimes.find(state->farm_best_hash);
  const bool none = best == state->runtimes.end();
  progress.set_farm_best_origin(none ? "" : best->second.origin);
  progress.set_farm_best_peak_gflops(none ? 0 : best->second.peak.Mean());
  progress.set_farm_best_bandwidth_gbps(none ? 0 : best->second.bandwidth.Mean());
}

const CandidateRecord& CampaignRun::Add(const std::string& key, CandidateRecord record) {
  Enqueue(key, record);
  CampaignCounters* counters = campaign_.mutable_counters();
  if (record.candidate().has_audit()) {
    live_audits_.insert(key);
    counters->set_audits(counters->audits() + 1);
  } else {
    counters->set_proposed(counters->proposed() + 1);
  }
  return live_[key] = std::move(record);
}

bool CampaignRun::Offer(const PipelineEntry& entry, Candidate candidate, int64_t now_ms,
                        const ProposalVisitor& added) {
  if (campaign_.counters().finished() + InPlay() >= Budget()) return false;
  const std::string key = Key(entry.id, candidate.schedule_hash());
  if (live_.count(key) || final_.count(key)) return true;
  CandidateRecord record;
  candidate.set_campaign(id());
  candidate.set_pipeline_id(entry.id);
  candidate.mutable_schedule()->set_pipeline_id(entry.id);
  *record.mutable_candidate() = std::move(candidate);
  record.set_state(CANDIDATE_QUEUED);
  record.set_updated_unix_ms(now_ms);
  added(Add(key, std::move(record)));
  return true;
}

void CampaignRun::ProposeBaselines(int64_t now_ms, bool reference, const ProposalVisitor& added) {
  baselines_proposed_ = true;
  // A network campaign's baselines run on the whole network (its first pipeline),
  // then those cheap enough on each distinct task (its pipelines from the third on), so
  // that every task has a target of its own; the assembly pipeline is the learner's.
  const bool network = config_.has_network();
  if (!reference) {
    for (size_t e = 0; e < entries_.size(); ++e) {
      const PipelineEntry& entry = entries_[e];
      if (network && e == 1) continue;
      for (const std::string& baseline : config_.baselines()) {
        if (network && e > 1 && !RunsOnEveryTask(baseline)) continue;
        Candidate candidate;
        candidate.set_schedule_hash(baseline);
        candidate.set_origin(baseline);
        if (!Offer(entry, std::move(candidate), now_ms, added)) return;
      }
    }
    return;
  }
  // The network's reference schedule after the templates: the slowest measurement of
  // the campaign (the whole network compiled unscheduled, seconds a run), it only fills
  // the reference column, and measured first it would share the host with the first
  // assembly.
  if (network) {
    const PipelineEntry& entry = entries_[0];
    Candidate candidate;
    *candidate.mutable_schedule() = entry.space->Reference();
    candidate.set_schedule_hash(ScheduleHash(*entry.space, candidate.schedule()));
    candidate.set_origin(kReferenceOrigin);
    Offer(entry, std::move(candidate), now_ms, added);
  }
}

bool CampaignRun::ProposeRandom(int width_index, int64_t now_ms, const ProposalVisitor& added) {
  CampaignWidth& width = *campaign_.mutable_widths(width_index);
  for (size_t turn = 0; turn < entries_.size(); ++turn) {
    const uint64_t index = campaign_.proposal_index();
    campaign_.set_proposal_index(index + 1);
    const size_t e = index % entries_.size();
    PipelineEntry& entry = entries_[e];
    RandomSearch& random = entry.sized.at(width.vector_bytes()).random;
    if (random.Exhausted()) continue;
    StatusOr<std::vector<SearchProposal>> proposal = random.Propose(1);
    width.set_random_positions(static_cast<int>(e), random.position());
    if (!proposal.ok() || proposal->empty()) continue;
    SearchProposal& chosen = (*proposal)[0];
    std::string key = Key(entry.id, chosen.hash);
    CandidateRecord record;
    Candidate* candidate = record.mutable_candidate();
    candidate->set_campaign(id());
    candidate->set_pipeline_id(entry.id);
    *candidate->mutable_schedule() = std::move(chosen.schedule);
    candidate->set_schedule_hash(std::move(chosen.hash));
    candidate->set_origin(random.name());
    candidate->set_vector_bytes(width.vector_bytes());
    record.set_state(CANDIDATE_QUEUED);
    record.set_updated_unix_ms(now_ms);
    added(Add(key, std::move(record)));
    return true;
  }
  return false;
}

bool CampaignRun::ProposesItself() const { return !LearnerProposes(config_); }

CampaignRun::ProposalOutcome CampaignRun::AddProposal(Candidate candidate, int64_t now_ms,
                                                      const ProposalVisitor& added,
                                                      std::string* why) {
  auto entry = entry_by_id_.find(candidate.pipeline_id());
  if (entry == entry_by_id_.end()) {
    *why = "pipeline " + candidate.pipeline_id() + " is not one of the campaign's";
    return ProposalOutcome::kRefused;
  }
  if (candidate.vector_bytes() != 0) {
    const int width = candidate.vector_bytes();
    if (width != 16 && width != 32 && width != 64) {
      *why = "vector_bytes " + std::to_string(width) + " is not a vector width (16, 32 or 64)";
      return ProposalOutcome::kRefused;
    }
    AddWidth(width, now_ms, added);
  }
  const PipelineEntry& proposed_for = entries_[entry->second];
  const ScheduleSpace& space = candidate.vector_bytes() != 0
                                   ? *proposed_for.sized.at(candidate.vector_bytes()).space
                                   : *proposed_for.space;
  ScheduleSpec& schedule = *candidate.mutable_schedule();
  if (schedule.partial()) {
    *why = "the schedule is partial";
    return ProposalOutcome::kRefused;
  }
  // A replay proposes measured schedules, which may predate a rule of the space.
  Status legal = config_.has_replay() ? space.CheckMeasured(schedule) : space.Check(schedule);
  if (!legal.ok()) {
    *why = legal.message();
    return ProposalOutcome::kRefused;
  }
  schedule.set_pipeline_id(candidate.pipeline_id());
  candidate.set_schedule_hash(ScheduleHash(space, schedule));
  candidate.set_campaign(id());
  if (candidate.origin().empty()) candidate.set_origin("learner");
  if (candidate.repeat() < 0) {
    *why = "repeat is negative";
    return ProposalOutcome::kRefused;
  }
  if (candidate.repeat() >= kAuditRepeatBase || candidate.has_audit()) {
    *why = "repeats from " + std::to_string(kAuditRepeatBase) + " up are the coordinator's audits";
    return ProposalOutcome::kRefused;
  }
  if (candidate.repeat() > 0 &&
      !final_.count(
          Key(candidate.pipeline_id(),
              store_keys::CandidateSlot(candidate.schedule_hash(), candidate.repeat() - 1)))) {
    *why = "a re-measurement (repeat " + std::to_string(candidate.repeat()) +
           ") of a schedule whose measurement " + std::to_string(candidate.repeat() - 1) +
           " is not final";
    return ProposalOutcome::kRefused;
  }
  const std::string key = Key(candidate);
  if (live_.count(key) || final_.count(key)) return ProposalOutcome::kDuplicate;
  if (campaign_.counters().finished() + InPlay() >= Budget()) {
    return ProposalOutcome::kOverBudget;
  }
  CandidateRecord record;
  *record.mutable_candidate() = std::move(candidate);
  record.set_state(CANDIDATE_QUEUED);
  record.set_updated_unix_ms(now_ms);
  added(Add(key, std::move(record)));
  return ProposalOutcome::kAdded;
}

void CampaignRun::Propose(size_t ready_target, int64_t now_ms, const std::set<int>& widths,
                          const ProposalVisitor& added) {
  const bool first = !baselines_proposed_;
  if (first) ProposeBaselines(now_ms, /*reference=*/false, added);
  for (int width : widths) AddWidth(width, now_ms, added);
  if (first) ProposeBaselines(now_ms, /*reference=*/true, added);
  if (!ProposesItself()) return;
  for (int w = 0; w < campaign_.widths_size(); ++w) {
    const int width = campaign_.widths(w).vector_bytes();
    if (!widths.count(width)) continue;  // no live worker of it
    while (waiting_by_width_[width] < ready_target &&
           campaign_.counters().finished() + InPlay() < Budget()) {
      if (!ProposeRandom(w, now_ms, added)) break;
    }
  }
}

const CandidateRecord* CampaignRun::Lease(const std::string& lease_id, int64_t now_ms,
                                          const HostFingerprint& host) {
  // Audits this host may not take, put back once a candidate is found.
  std::vector<std::string> passed_over;
  std::vector<std::pair<int64_t, std::string>> retries_passed_over;
  CandidateRecord* leased = nullptr;
  while (leased == nullptr) {
    std::string key;
    bool from_retries = false;
    if (!retries_.empty() && retries_.top().first <= now_ms) {
      key = retries_.top().second;
      from_retries = true;
      retries_.pop();
    } else if (!queue_.empty()) {
      key = std::move(queue_.front());
      queue_.pop_front();
    } else {
      break;
    }
    CandidateRecord* record = Live(key);
    // A key whose candidate went final or leased meanwhile (a late result) is stale.
    if (record == nullptr ||
        (record->state() != CANDIDATE_QUEUED && record->state() != CANDIDATE_RETRY)) {
      continue;
    }
    if (!ServesCandidate(record->candidate(), host)) {
      if (from_retries) {
        retries_passed_over.emplace_back(record->next_attempt_unix_ms(), std::move(key));
      } else {
        passed_over.push_back(std::move(key));
      }
      continue;
    }
    leased = record;
  }
  queue_.insert(queue_.begin(), passed_over.begin(), passed_over.end());
  for (auto& retry : retries_passed_over) retries_.push(std::move(retry));
  if (leased == nullptr) return nullptr;
  CountWaiting(leased->candidate(), -1);
  ++leased_;
  leased->set_state(CANDIDATE_LEASED);
  leased->set_lease_id(lease_id);
  leased->set_attempts(leased->attempts() + 1);
  leased->set_updated_unix_ms(now_ms);
  return leased;
}

bool CampaignRun::ServesCandidate(const Candidate& candidate, const HostFingerprint& host) {
  if (candidate.vector_bytes() != 0 &&
      candidate.vector_bytes() != VectorBytesOfHalideTarget(host.halide_target())) {
    return false;
  }
  if (!candidate.has_audit()) return true;
  if (host.cpu_model() != candidate.audit().cpu_model()) return false;
  for (const AuditedResult& result : candidate.audit().results()) {
    if (result.worker_id() == host.worker_id()) return false;
  }
  return true;
}

bool CampaignRun::AddAudit(const Candidate& audited, Audit audit, int64_t now_ms,
                           const ProposalVisitor& added) {
  Candidate candidate = audited;
  candidate.set_repeat(audited.repeat() < kAuditRepeatBase ? kAuditRepeatBase + 2 * audited.repeat()
                                                           : audited.repeat() + 1);
  candidate.set_origin(kAuditOrigin);
  candidate.clear_model_version();
  candidate.clear_prediction();
  candidate.clear_acquisition();
  candidate.clear_acquisition_score();
  *candidate.mutable_audit() = std::move(audit);
  const std::string key = Key(candidate);
  if (live_.count(key) || final_.count(key)) return false;
  CandidateRecord record;
  *record.mutable_candidate() = std::move(candidate);
  record.set_state(CANDIDATE_QUEUED);
  record.set_updated_unix_ms(now_ms);
  added(Add(key, std::move(record)));
  return true;
}

void CampaignRun::Unlease(const std::string& pipeline_id, const std::string& slot,
                          const std::string& lease_id) {
  const std::string key = Key(pipeline_id, slot);
  CandidateRecord* record = Live(key);
  if (record == nullptr || record->state() != CANDIDATE_LEASED || record->lease_id() != lease_id) {
    return;
  }
  --leased_;
  CountWaiting(record->candidate(), 1);
  record->set_state(CANDIDATE_QUEUED);
  record->clear_lease_id();
  record->set_attempts(record->attempts() - 1);
  queue_.push_front(key);
}

void CampaignRun::Finalize(const std::string& key, CandidateState state) {
  final_.insert(key);
  live_.erase(key);
  if (live_audits_.erase(key) > 0) return;  // not one of the budget's
  CampaignCounters* counters = campaign_.mutable_counters();
  if (state == CANDIDATE_MEASURED) counters->set_measured(counters->measured() + 1);
  if (state == CANDIDATE_FAILED) counters->set_failed(counters->failed() + 1);
  if (state == CANDIDATE_QUARANTINED) counters->set_quarantined(counters->quarantined() + 1);
  counters->set_finished(counters->finished() + 1);
}

void CampaignRun::FailAttempt(CandidateRecord& record, MeasurementStatus status,
                              const std::string& error, bool conclusive, const RetryPolicy& policy,
                              int64_t now_ms, bool still_leased) {
  record.set_failures(record.failures() + 1);
  record.set_last_status(status);
  record.set_last_error(error);
  record.set_updated_unix_ms(now_ms);
  if (IsDeterministicFailure(status) || conclusive) {
    record.set_state(CANDIDATE_FAILED);
  } else if (record.failures() >= policy.quarantine_after) {
    record.set_state(CANDIDATE_QUARANTINED);
  } else if (!still_leased) {
    const int shift = std::min(record.failures() - 1, 20);
    record.set_state(CANDIDATE_RETRY);
    record.set_next_attempt_unix_ms(now_ms + (policy.backoff_ms << shift));
  }
}

std::optional<CandidateRecord> CampaignRun::FailLease(
    const std::string& pipeline_id, const std::string& slot, const std::string& lease_id,
    MeasurementStatus status, const std::string& error, const RetryPolicy& policy, int64_t now_ms) {
  const std::string key = Key(pipeline_id, slot);
  CandidateRecord* record = Live(key);
  if (record == nullptr || record->state() != CANDIDATE_LEASED || record->lease_id() != lease_id) {
    return std::nullopt;
  }
  --leased_;
  record->clear_lease_id();
  FailAttempt(*record, status, error, /*conclusive=*/false, policy, now_ms, false);
  CandidateRecord copy = *record;
  if (IsFinal(copy.state())) {
    Finalize(key, copy.state());
  } else {
    Enqueue(key, copy);
  }
  return copy;
}

CampaignRun::ResultOutcome CampaignRun::RecordResult(const Measurement& measurement,
                                                     const RetryPolicy& policy, int64_t now_ms,
                                                     CandidateRecord* out) {
  const std::string key = Key(measurement.candidate());
  if (final_.count(key)) return ResultOutcome::kDuplicate;
  CandidateRecord* record = Live(key);
  if (record == nullptr) return ResultOutcome::kUnknown;
  if (Contains(record->recorded_leases(), measurement.lease_id())) {
    return ResultOutcome::kDuplicate;
  }
  record->add_recorded_leases(measurement.lease_id());
  CampaignCounters* counters = campaign_.mutable_counters();
  counters->set_results(counters->results() + 1);
  recent_results_ms_.push_back(now_ms);
  RestoreMeasurement(measurement);

  const bool own_lease =
      record->state() == CANDIDATE_LEASED && record->lease_id() == measurement.lease_id();
  // A late result of an expired lease while another lease of the candidate is out.
  const bool other_lease_out = record->state() == CANDIDATE_LEASED && !own_lease;
  const bool was_waiting =
      record->state() == CANDIDATE_QUEUED || record->state() == CANDIDATE_RETRY;
  if (own_lease) {
    --leased_;
    record->clear_lease_id();
  }
  if (measurement.status() == OK) {
    record->set_state(CANDIDATE_MEASURED);
    record->set_last_status(OK);
    record->clear_last_error();
    record->set_updated_unix_ms(now_ms);
  } else {
    FailAttempt(*record, measurement.status(), measurement.error(), measurement.conclusive(),
                policy, now_ms, other_lease_out);
  }
  if (IsFinal(record->state())) {
    if (was_waiting) CountWaiting(record->candidate(), -1);
    if (other_lease_out) --leased_;
    *out = std::move(*record);  // the live record is forgotten next
    Finalize(key, out->state());
    return ResultOutcome::kRecorded;
  }
  *out = *record;
  if (own_lease) Enqueue(key, *out);
  return ResultOutcome::kRecorded;
}

const char* CampaignRun::DoneReason() const {
  if (campaign_.counters().finished() >= Budget() && live_audits_.empty()) return "budget used";
  if (!live_.empty()) return nullptr;
  if (strategy_complete_) return "the strategy has nothing left";
  if (campaign_.widths().empty()) return nullptr;  // no worker has served it yet
  for (const PipelineEntry& entry : entries_) {
    for (const auto& [width, sized] : entry.sized) {
      if (!sized.random.Exhausted()) return nullptr;
    }
  }
  return "every schedule proposed";
}

const CandidateRecord* CampaignRun::LiveRecord(const std::string& pipeline_id,
                                               const std::string& slot) const {
  auto it = live_.find(Key(pipeline_id, slot));
  return it == live_.end() ? nullptr : &it->second;
}

bool CampaignRun::Finished(const std::string& pipeline_id, const std::string& slot) const {
  return final_.count(Key(pipeline_id, slot)) > 0;
}

std::vector<PipelineProgress> CampaignRun::Progress(
    const std::unordered_set<std::string>& excluded_hosts) const {
  bool excluding = false;
  for (const std::string& host : excluded_hosts) excluding |= hosts_measured_.count(host) > 0;
  std::vector<PipelineProgress> all;
  for (const PipelineEntry& entry : entries_) {
    if (!excluding) {
      all.push_back(entry.all_hosts.progress);
    } else {
      // Rare (a host flagged by audits): counted again without its results.
      ProgressState trusted;
      for (const OkResult& result : entry.ok_results) {
        if (!excluded_hosts.count(result.worker_id)) Count(result, &trusted);
      }
      all.push_back(std::move(trusted.progress));
    }
    all.back().set_pipeline_id(entry.id);
    all.back().set_name(entry.spec.name());
    all.back().set_flops(entry.flops);
    all.back().set_bytes(entry.bytes);
    all.back().set_task_weight(entry.task_weight);
    all.back().set_kind(entry.task_kind);
  }
  return all;
}

double CampaignRun::ResultsPerSecond(int64_t now_ms) {
  constexpr int64_t kWindowMs = 60000;
  while (!recent_results_ms_.empty() && recent_results_ms_.front() < now_ms - kWindowMs) {
    recent_results_ms_.pop_front();
  }
  if (recent_results_ms_.empty()) return 0;
  const int64_t span_ms =
      std::max<int64_t>(1000, std::min(kWindowMs, now_ms - recent_results_ms_.front()));
  return static_cast<double>(recent_results_ms_.size()) * 1000.0 / span_ms;
}

}  // namespace schedfarm
