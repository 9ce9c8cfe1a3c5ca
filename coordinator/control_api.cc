#include "coordinator/control_api.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "common/elapsed.h"
#include "common/log.h"
#include "common/sha256.h"
#include "protocol/state_names.h"

namespace schedfarm {

namespace {

constexpr int kDefaultExportRows = 500;
constexpr int kMaxExportRows = 5000;
constexpr int kMaxBestK = 100;
constexpr size_t kRememberedControlReplies = 1000;

std::string Slug(const std::string& name) {
  std::string slug;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    slug += keep ? c : '-';
  }
  return slug.empty() ? "campaign" : slug.substr(0, 48);
}

ClientReply Refuse(ClientErrorCode code, const std::string& error) {
  ClientReply reply;
  reply.set_code(code);
  reply.set_error(error);
  return reply;
}

}  // namespace

ClientReply ControlApi::Handle(const ClientRequest& request, bool* deferred) {
  *deferred = false;
  ClientReply reply;
  switch (request.body_case()) {
    case ClientRequest::kSubmit:
      reply = HandleSubmit(request, deferred);
      break;
    case ClientRequest::kStatus:
      reply = HandleStatus(request.status());
      break;
    case ClientRequest::kWorkers:
      reply = HandleWorkers();
      break;
    case ClientRequest::kBest:
      reply = HandleBest(request.best());
      break;
    case ClientRequest::kExportMeasurements:
      reply = HandleExport(request.export_measurements());
      break;
    case ClientRequest::kPause:
    case ClientRequest::kResume:
    case ClientRequest::kCancel:
    case ClientRequest::kBackup:
      if (auto done = control_replies_.find(request.request_id());
          done != control_replies_.end() && !request.request_id().empty()) {
        reply = done->second;  // a retry: the first outcome, not a second action
        *deferred = true;
        break;
      }
      reply = request.has_backup() ? HandleBackup(request.backup())
                                   : HandleControl(request, deferred);
      if (!request.request_id().empty()) {
        control_replies_[request.request_id()] = reply;
        control_reply_order_.push_back(request.request_id());
        if (control_reply_order_.size() > kRememberedControlReplies) {
          control_replies_.erase(control_reply_order_.front());
          control_reply_order_.pop_front();
        }
      }
      break;
    case ClientRequest::kPropose:
      reply = HandlePropose(request.propose());
      *deferred = reply.code() == CLIENT_OK;  // answered once the candidates are durable
      break;
    case ClientRequest::kPipelines:
      reply = HandlePipelines(request.pipelines());
      break;
    case ClientRequest::kStoreModel:
      reply = HandleStoreModel(request.store_model(), deferred);
      break;
    case ClientRequest::kModels:
      reply = HandleModels(request.models());
      break;
    case ClientRequest::kStoreValueRound:
      reply = HandleStoreValueRound(request.store_value_round(), deferred);
      break;
    case ClientRequest::kValueRounds:
      reply = HandleValueRounds(request.value_rounds());
      break;
    case ClientRequest::kCandidates:
      reply = HandleCandidates(request.candidates());
      break;
    case ClientRequest::kComplete:
      reply = HandleComplete(request.complete(), deferred);
      break;
    case ClientRequest::kClearWorker:
      reply = HandleClearWorker(request.clear_worker(), deferred);
      break;
    case ClientRequest::BODY_NOT_SET:
      reply.set_code(CLIENT_INVALID_ARGUMENT);
      reply.set_error("the request has no body");
      break;
  }
  // A reply that shows the farm's state in memory waits, as the writes' replies do,
  // until everything before it is durable: a client never sees a result the store could
  // still lose, and an export sent after a status finds every record the status counted.
  switch (request.body_case()) {
    case ClientRequest::kStatus:
    case ClientRequest::kWorkers:
    case ClientRequest::kBest:
    case ClientRequest::kPipelines:
    case ClientRequest::kModels:
    case ClientRequest::kValueRounds:
    case ClientRequest::kCandidates:
      *deferred = true;
      break;
    default:
      break;
  }
  reply.set_request_id(request.request_id());
  return reply;
}

ClientReply ControlApi::HandleSubmit(const ClientRequest& request, bool* deferred) {
  const SubmitCampaign& submit = request.submit();
  if (request.request_id().empty()) {
    return Refuse(CLIENT_INVALID_ARGUMENT, "submit: the request has no request_id");
  }
  StatusOr<CampaignConfig> config =
      ParseCampaignYaml(submit.yaml_source(), submit.file_name(), /*check_files=*/false);
  if (!config.ok()) return Refuse(CLIENT_INVALID_ARGUMENT, config.status().message());
  if (config->has_replay()) {
    // The dataset is where farmctl ran: the split comes with the submission.
    const ReplaySource& replay = submit.replay();
    if (replay.dataset_id().empty() || replay.held_out() != config->replay().held_out() ||
        replay.split_seed() != config->replay().split_seed()) {
      return Refuse(CLIENT_INVALID_ARGUMENT,
                    submit.file_name() + ": a replay campaign's submission must carry its "
                                         "dataset's id and split as its file gives them");
    }
    *config->mutable_replay() = replay;
  }
  std::vector<PipelineSpec> pipelines(submit.pipelines().begin(), submit.pipelines().end());
  Status checked = CheckCampaignPipelines(*config, pipelines);
  if (!checked.ok()) {
    return Refuse(CLIENT_INVALID_ARGUMENT, checked.WithContext(submit.file_name()).message());
  }
  // The id comes from the request id, so a retried submit finds its campaign.
  const std::string id = Slug(config->name()) + "-" + Sha256Hex(request.request_id()).substr(0, 8);
  ClientReply reply;
  *deferred = true;
  if (auto existing = farm_.campaigns.find(id); existing != farm_.campaigns.end()) {
    *reply.mutable_submitted() = existing->second->campaign();
    return reply;
  }
  Campaign campaign;
  campaign.set_id(id);
  campaign.set_name(config->name());
  campaign.set_yaml_source(submit.yaml_source());
  campaign.set_config_json(CampaignConfigToJson(*config));
  campaign.set_state(CAMPAIGN_RUNNING);
  campaign.set_budget(BenchmarkLimit(config->budget()));
  campaign.set_submitted_unix_ms(clock_.NowMs());
  StatusOr<std::unique_ptr<CampaignRun>> run =
      CampaignRun::Create(campaign, *config, std::move(pipelines));
  if (!run.ok()) return Refuse(CLIENT_INVALID_ARGUMENT, run.status().message());
  Campaign& created = (*run)->campaign();
  for (int i = 0; i < created.pipeline_ids_size(); ++i) {
    writes_.batch().PutPipeline(created.pipeline_ids(i), (*run)->pipelines()[i]);
  }
  writes_.CampaignChanged(id);
  writes_.AddEvent(clock_.NowMs(), "campaign_submitted", id, "", "", submit.file_name());
  LogEvent("info", "campaign_submitted",
           {{"campaign", id},
            {"pipelines", std::to_string(created.pipeline_ids_size())},
            {"budget", std::to_string(created.budget())}});
  *reply.mutable_submitted() = created;
  farm_.AddCampaign(std::move(*run));
  farm_.dispatch_needed = true;
  return reply;
}

ClientReply ControlApi::HandleControl(const ClientRequest& request, bool* deferred) {
  const CampaignRef& ref = request.has_pause()    ? request.pause()
                           : request.has_resume() ? request.resume()
                                                  : request.cancel();
  CampaignRun* found = farm_.CampaignByIdOrName(ref.campaign());
  if (found == nullptr) return Refuse(CLIENT_NOT_FOUND, "no campaign '" + ref.campaign() + "'");
  CampaignRun& run = *found;
  const CampaignState state = run.campaign().state();
  const std::string state_name = CampaignState_Name(state);
  if (request.has_pause()) {
    if (state != CAMPAIGN_RUNNING) {
      return Refuse(CLIENT_FAILED_PRECONDITION,
                    "campaign " + run.id() + " is " + state_name + ", not running");
    }
    run.campaign().set_state(CAMPAIGN_PAUSED);
    writes_.AddEvent(clock_.NowMs(), "campaign_paused", run.id(), "", "", "");
  } else if (request.has_resume()) {
    if (state != CAMPAIGN_PAUSED) {
      return Refuse(CLIENT_FAILED_PRECONDITION,
                    "campaign " + run.id() + " is " + state_name + ", not paused");
    }
    run.campaign().set_state(CAMPAIGN_RUNNING);
    writes_.AddEvent(clock_.NowMs(), "campaign_resumed", run.id(), "", "", "");
    farm_.dispatch_needed = true;
  } else {
    if (!Active(state)) {
      return Refuse(CLIENT_FAILED_PRECONDITION,
                    "campaign " + run.id() + " is " + state_name + " already");
    }
    FinishCampaign(run, CAMPAIGN_CANCELLED, "cancelled by a client", clock_.NowMs(), writes_);
  }
  writes_.CampaignChanged(run.id());
  *deferred = true;
  ClientReply reply;
  *reply.mutable_campaign() = run.campaign();
  return reply;
}

ClientReply ControlApi::HandleStatus(const StatusRequest& request) {
  ClientReply reply;
  StatusReply* status = reply.mutable_status();
  std::vector<CampaignRun*> runs;
  if (!request.campaign().empty()) {
    CampaignRun* found = farm_.CampaignByIdOrName(request.campaign());
    if (found == nullptr) {
      return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
    }
    runs.push_back(found);
  } else {
    for (auto& [id, run] : farm_.campaigns) runs.push_back(run.get());
  }
  std::sort(runs.begin(), runs.end(), [](const CampaignRun* a, const CampaignRun* b) {
    return a->campaign().submitted_unix_ms() > b->campaign().submitted_unix_ms();
  });
  const int64_t now = clock_.NowMs();
  const std::unordered_set<std::string> flagged = farm_.FlaggedHosts();
  for (CampaignRun* run : runs) {
    CampaignStatus* entry = status->add_campaigns();
    *entry->mutable_campaign() = run->campaign();
    entry->mutable_campaign()->mutable_counters()->set_queued(static_cast<int64_t>(run->waiting()));
    entry->mutable_campaign()->mutable_counters()->set_leased(static_cast<int64_t>(run->leased()));
    for (PipelineProgress& progress : run->Progress(flagged)) {
      *entry->add_pipelines() = std::move(progress);
    }
    for (const auto& [name, count] : run->failures_by_status()) {
      (*entry->mutable_failures_by_status())[name] = count;
    }
    entry->set_results_per_second(run->ResultsPerSecond(now));
  }
  for (const auto& [id, worker] : farm_.workers) {
    (*status->mutable_workers_by_state())[WorkerState_Name(StateOf(worker))]++;
  }
  return reply;
}

namespace {

void AddWorkerStatus(const WorkerEntry& worker, WorkersReply* reply) {
  WorkerStatus* entry = reply->add_workers();
  *entry->mutable_record() = worker.record;
  entry->mutable_record()->set_last_seen_unix_ms(
      std::max(worker.record.last_seen_unix_ms(), worker.last_heard_ms));
  entry->set_state(StateOf(worker));
  entry->set_credits(worker.credits);
  entry->set_leases(static_cast<int32_t>(worker.leases.size()));
}

}  // namespace

ClientReply ControlApi::HandleWorkers() {
  ClientReply reply;
  reply.mutable_workers();  // an empty list is still an answer
  std::vector<const WorkerEntry*> sorted;
  for (const auto& [id, worker] : farm_.workers) sorted.push_back(&worker);
  std::sort(sorted.begin(), sorted.end(),
            [](const WorkerEntry* a, const WorkerEntry* b) { return a->id < b->id; });
  for (const WorkerEntry* worker : sorted) AddWorkerStatus(*worker, reply.mutable_workers());
  return reply;
}

ClientReply ControlApi::HandleClearWorker(const ClearWorker& request, bool* deferred) {
  auto found = farm_.workers.find(request.worker_id());
  if (found == farm_.workers.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no worker '" + request.worker_id() + "'");
  }
  WorkerRecord& record = found->second.record;
  const std::string was = record.flagged() ? "flagged: " + record.flag_reason() : "not flagged";
  record.clear_audits_agreed();
  record.clear_audits_deviated();
  record.clear_audits_deviated_status();
  record.clear_audits_inconclusive();
  record.clear_audit_log_ratio_sum();
  record.clear_audits_timed();
  record.clear_flagged();
  record.clear_flag_reason();
  record.clear_flagged_unix_ms();
  writes_.WorkerChanged(request.worker_id());
  writes_.AddEvent(clock_.NowMs(), "host_cleared", "", request.worker_id(), "", was);
  LogEvent("info", "host_cleared", {{"worker", request.worker_id()}, {"was", was}});
  *deferred = true;
  ClientReply reply;
  AddWorkerStatus(found->second, reply.mutable_workers());
  return reply;
}

ClientReply ControlApi::HandleBest(const BestRequest& request) {
  const CampaignRun* found = farm_.CampaignByIdOrName(request.campaign());
  if (found == nullptr) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  const CampaignRun& run = *found;
  const size_t k =
      static_cast<size_t>(std::clamp(request.k() == 0 ? 1 : request.k(), 1, kMaxBestK));
  const std::unordered_set<std::string> flagged = farm_.FlaggedHosts();
  ClientReply reply;
  BestReply* best = reply.mutable_best();
  bool any = false;
  for (const std::string& pipeline_id : run.campaign().pipeline_ids()) {
    if (!request.pipeline_id().empty() && pipeline_id != request.pipeline_id()) continue;
    any = true;
    *best->add_pipelines() = *run.pipeline(pipeline_id);
    // The k best of hosts not flagged: more are read while flagged ones push them out.
    for (size_t asked = k;; asked *= 4) {
      StatusOr<std::vector<StoredMeasurement>> measurements =
          store_.BestMeasurements(pipeline_id, asked, run.id());
      if (!measurements.ok()) return Refuse(CLIENT_INTERNAL, measurements.status().message());
      std::vector<StoredMeasurement> trusted;
      for (StoredMeasurement& m : *measurements) {
        if (trusted.size() < k && !flagged.count(m.measurement.host().worker_id())) {
          trusted.push_back(std::move(m));
        }
      }
      if (trusted.size() < k && measurements->size() == asked) continue;
      for (StoredMeasurement& m : trusted) {
        StoredMeasurementRecord* row = best->add_best();
        row->set_seq(m.seq);
        *row->mutable_measurement() = std::move(m.measurement);
      }
      break;
    }
  }
  if (!any) {
    return Refuse(CLIENT_NOT_FOUND,
                  "campaign " + run.id() + " has no pipeline '" + request.pipeline_id() + "'");
  }
  return reply;
}

ClientReply ControlApi::HandleExport(const ExportRequest& request) {
  const CampaignRun* run = farm_.CampaignByIdOrName(request.campaign());
  if (run == nullptr) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  const int max_rows = std::clamp(request.max_rows() == 0 ? kDefaultExportRows : request.max_rows(),
                                  1, kMaxExportRows);
  ClientReply reply;
  ExportReply* page = reply.mutable_export_page();
  page->set_done(true);
  page->set_next_seq(request.from_seq());
  Status scanned = store_.ScanMeasurements(run->id(), request.from_seq(),
                                            [&](const StoredMeasurement& m) {
                                              if (page->rows_size() >= max_rows) {
                                                page->set_done(false);
                                                return false;
                                              }
                                              StoredMeasurementRecord* row = page->add_rows();
                                              row->set_seq(m.seq);
                                              *row->mutable_measurement() = m.measurement;
                                              page->set_next_seq(m.seq + 1);
                                              return true;
                                            });
  if (!scanned.ok()) return Refuse(CLIENT_INTERNAL, scanned.message());
  return reply;
}

ClientReply ControlApi::HandlePropose(const ProposeCandidates& request) {
  auto found = farm_.campaigns.find(request.campaign());
  if (found == farm_.campaigns.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  CampaignRun& run = *found->second;
  if (!Active(run.campaign().state())) {
    return Refuse(CLIENT_FAILED_PRECONDITION,
                  "campaign " + run.id() + " is " + CampaignState_Name(run.campaign().state()));
  }
  ClientReply reply;
  ProposeReply* proposed = reply.mutable_proposed();
  const int64_t now = clock_.NowMs();
  for (int i = 0; i < request.candidates_size(); ++i) {
    std::string why;
    switch (run.AddProposal(
        request.candidates(i), now,
        [&](const CandidateRecord& record) { writes_.batch().PutCandidate(record); }, &why)) {
      case CampaignRun::ProposalOutcome::kAdded:
        proposed->set_accepted(proposed->accepted() + 1);
        break;
      case CampaignRun::ProposalOutcome::kDuplicate:
        proposed->set_duplicates(proposed->duplicates() + 1);
        break;
      case CampaignRun::ProposalOutcome::kOverBudget:
        proposed->set_over_budget(proposed->over_budget() + 1);
        break;
      case CampaignRun::ProposalOutcome::kRefused:
        proposed->add_refused("candidates[" + std::to_string(i) + "]: " + why);
        break;
    }
  }
  for (const std::string& failure : request.search_failures()) {
    writes_.AddEvent(clock_.NowMs(), "search_failed", run.id(), "", "", failure);
    LogEvent("warn", "search_failed", {{"campaign", run.id()}, {"error", failure}});
  }
  if (proposed->accepted() > 0) {
    writes_.CampaignChanged(run.id());
    farm_.dispatch_needed = true;
  }
  return reply;
}

ClientReply ControlApi::HandlePipelines(const CampaignRef& request) {
  const CampaignRun* found = farm_.CampaignByIdOrName(request.campaign());
  if (found == nullptr) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  ClientReply reply;
  PipelinesReply* pipelines = reply.mutable_pipelines();
  for (const std::string& id : found->campaign().pipeline_ids()) {
    *pipelines->add_pipelines() = *found->pipeline(id);
  }
  return reply;
}

ClientReply ControlApi::HandleStoreModel(const StoreModel& request, bool* deferred) {
  const Model& model = request.model();
  if (model.kind().empty() || model.version().empty()) {
    return Refuse(CLIENT_INVALID_ARGUMENT, "store_model: a model needs a kind and a version");
  }
  if (!model.campaign().empty() && !farm_.campaigns.count(model.campaign())) {
    return Refuse(CLIENT_NOT_FOUND, "store_model: no campaign '" + model.campaign() + "'");
  }
  writes_.batch().PutModel(model);
  ++farm_.models_stored;
  writes_.AddEvent(clock_.NowMs(), "model_stored", model.campaign(), "", "",
           model.kind() + " " + model.version() + " trained on " +
               std::to_string(model.training_set_size()));
  *deferred = true;
  ClientReply reply;
  *reply.mutable_stored_model() = model;
  reply.mutable_stored_model()->clear_weights();
  return reply;
}

ClientReply ControlApi::HandleModels(const ModelsRequest& request) {
  std::string campaign;  // every campaign's when empty
  if (!request.campaign().empty()) {
    const CampaignRun* found = farm_.CampaignByIdOrName(request.campaign());
    if (found == nullptr) {
      return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
    }
    campaign = found->id();
  }
  std::vector<Model> models;
  Status scanned = store_.ScanModels([&](const Model& model) {
    if ((campaign.empty() || model.campaign() == campaign) &&
        (request.kind().empty() || model.kind() == request.kind())) {
      models.push_back(model);
      if (!request.with_weights()) models.back().clear_weights();
    }
    return true;
  });
  if (!scanned.ok()) return Refuse(CLIENT_INTERNAL, scanned.message());
  std::sort(models.begin(), models.end(), [](const Model& a, const Model& b) {
    return a.created_unix_ms() > b.created_unix_ms();
  });
  ClientReply reply;
  reply.mutable_models();  // set also when the campaign has no models
  for (Model& model : models) *reply.mutable_models()->add_models() = std::move(model);
  return reply;
}

ClientReply ControlApi::HandleStoreValueRound(const ValueRound& round, bool* deferred) {
  if (!farm_.campaigns.count(round.campaign())) {
    return Refuse(CLIENT_NOT_FOUND, "store_value_round: no campaign '" + round.campaign() + "'");
  }
  if (round.round() < 0) {
    return Refuse(CLIENT_INVALID_ARGUMENT,
                  "store_value_round: round " + std::to_string(round.round()) + " is negative");
  }
  if (round.state() != VALUE_ROUND_PLANNED && round.state() != VALUE_ROUND_FITTED) {
    return Refuse(CLIENT_INVALID_ARGUMENT, "store_value_round: round " +
                                               std::to_string(round.round()) +
                                               " is neither planned nor fitted");
  }
  writes_.batch().PutValueRound(round);
  writes_.AddEvent(clock_.NowMs(), "value_round_stored", round.campaign(), "", "",
           "round " + std::to_string(round.round()) + " " + ValueRoundState_Name(round.state()) +
               (round.fitted_model().empty() ? "" : " " + round.fitted_model()));
  *deferred = true;
  ClientReply reply;
  *reply.mutable_value_rounds()->add_rounds() = round;
  return reply;
}

ClientReply ControlApi::HandleValueRounds(const CampaignRef& request) {
  const CampaignRun* found = farm_.CampaignByIdOrName(request.campaign());
  if (found == nullptr) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  ClientReply reply;
  ValueRoundsReply* rounds = reply.mutable_value_rounds();
  Status scanned = store_.ScanValueRounds(found->id(), [&](const ValueRound& round) {
    *rounds->add_rounds() = round;
    return true;
  });
  if (!scanned.ok()) return Refuse(CLIENT_INTERNAL, scanned.message());
  return reply;
}

ClientReply ControlApi::HandleCandidates(const CandidatesRequest& request) {
  auto found = farm_.campaigns.find(request.campaign());
  if (found == farm_.campaigns.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  const CampaignRun& run = *found->second;
  ClientReply reply;
  CandidatesReply* candidates = reply.mutable_candidates();
  for (const CandidatesRequest::Key& key : request.keys()) {
    if (const CandidateRecord* live = run.LiveRecord(key.pipeline_id(), key.schedule_hash())) {
      *candidates->add_candidates() = *live;
      continue;
    }
    if (!run.Finished(key.pipeline_id(), key.schedule_hash())) continue;
    // Final records live in the store only (the proposal's reply came after its commit).
    StatusOr<std::optional<CandidateRecord>> stored =
        store_.GetCandidate(run.id(), key.pipeline_id(), key.schedule_hash());
    if (!stored.ok()) return Refuse(CLIENT_INTERNAL, stored.status().message());
    if (*stored) *candidates->add_candidates() = std::move(**stored);
  }
  return reply;
}

ClientReply ControlApi::HandleComplete(const CampaignRef& request, bool* deferred) {
  auto found = farm_.campaigns.find(request.campaign());
  if (found == farm_.campaigns.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  CampaignRun& run = *found->second;
  if (!Active(run.campaign().state())) {
    return Refuse(CLIENT_FAILED_PRECONDITION, "campaign " + run.id() + " is " +
                                                  CampaignState_Name(run.campaign().state()) +
                                                  " already");
  }
  if (run.ProposesItself()) {
    return Refuse(CLIENT_FAILED_PRECONDITION,
                  "campaign " + run.id() + " proposes its own candidates: only a strategy of "
                  "farm-learner completes a campaign");
  }
  run.CompleteStrategy();
  FinishIfDone(run, clock_.NowMs(), writes_);
  writes_.CampaignChanged(run.id());
  *deferred = true;
  ClientReply reply;
  *reply.mutable_campaign() = run.campaign();
  return reply;
}

// The checkpoint holds every result acknowledged before the request (each was durable
// before its Ack) and is opened before the reply: the counts are the copy's own.
ClientReply ControlApi::HandleBackup(const BackupRequest& request) {
  const std::string& dir = request.dir();
  if (dir.empty() || dir[0] != '/') {
    return Refuse(CLIENT_INVALID_ARGUMENT,
                  "backup: '" + dir + "' is not an absolute path on the coordinator's host");
  }
  std::error_code error;
  if (std::filesystem::exists(dir, error)) {
    return Refuse(CLIENT_INVALID_ARGUMENT, "backup: '" + dir + "' exists already");
  }
  const auto start = std::chrono::steady_clock::now();
  Status copied = store_.Checkpoint(dir);
  if (!copied.ok()) return Refuse(CLIENT_INTERNAL, "backup: " + copied.message());
  StatusOr<std::unique_ptr<Store>> copy = Store::Open(dir);
  if (!copy.ok()) {
    return Refuse(CLIENT_INTERNAL, "backup: the copy does not open: " + copy.status().message());
  }
  ClientReply reply;
  BackupReply* backup = reply.mutable_backup();
  backup->set_dir(dir);
  backup->set_last_measurement_seq((*copy)->last_measurement_seq());
  // A campaign's results counter is written with its results: their sum is the copy's
  // measurements, without reading them all.
  int64_t campaigns = 0;
  Status counted = (*copy)->ScanCampaigns([&](const Campaign& c) {
    ++campaigns;
    backup->set_measurements(backup->measurements() + c.counters().results());
    return true;
  });
  if (!counted.ok()) return Refuse(CLIENT_INTERNAL, "backup: reading the copy: " + counted.message());
  backup->set_campaigns(campaigns);
  backup->set_seconds(SecondsSince(start));
  LogEvent("info", "backup_taken",
           {{"dir", dir},
            {"campaigns", std::to_string(campaigns)},
            {"measurements", std::to_string(backup->measurements())},
            {"seconds", std::to_string(backup->seconds())}});
  return reply;
}

}  // namespace schedfarm
