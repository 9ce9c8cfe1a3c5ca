// The control API farmctl and farm-learner speak (docs/FARMCTL.md): submitting,
// pausing, resuming, cancelling and completing campaigns, status and workers (and
// clearing a flagged host), best schedules (of hosts not flagged) and exports,
// proposals, models, value rounds, candidates and backups.
// Reads come from the farm's memory and the store; what changes goes through
// PendingWrites, and a reply that must wait for those writes says so. A client's
// request names a campaign by its id or its name (the newest campaign of that name). A
// retried pause, resume, cancel or backup (same request id) gets the first outcome
// again.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <unordered_map>

#include "common/clock.h"
#include "coordinator/farm_state.h"
#include "coordinator/pending_writes.h"
#include "schedfarm.pb.h"
#include "storage/store.h"

namespace schedfarm {

class ControlApi {
 public:
  ControlApi(FarmState& farm, PendingWrites& writes, Store& store, const Clock& clock)
      : farm_(farm), writes_(writes), store_(store), clock_(clock) {}

  // The reply to `request` (its request id set). *deferred: send it only once this
  // turn's writes are durable (every write's reply, and every reply that shows the
  // farm's state, so that what a client sees is durable).
  ClientReply Handle(const ClientRequest& request, bool* deferred);

 private:
  ClientReply HandleSubmit(const ClientRequest& request, bool* deferred);
  ClientReply HandleControl(const ClientRequest& request, bool* deferred);
  ClientReply HandleStatus(const StatusRequest& request);
  ClientReply HandleWorkers();
  ClientReply HandleBest(const BestRequest& request);
  ClientReply HandleExport(const ExportRequest& request);
  ClientReply HandlePropose(const ProposeCandidates& request);
  ClientReply HandlePipelines(const CampaignRef& request);
  ClientReply HandleStoreModel(const StoreModel& request, bool* deferred);
  ClientReply HandleModels(const ModelsRequest& request);
  ClientReply HandleStoreValueRound(const ValueRound& round, bool* deferred);
  ClientReply HandleValueRounds(const CampaignRef& request);
  ClientReply HandleCandidates(const CandidatesRequest& request);
  ClientReply HandleComplete(const CampaignRef& request, bool* deferred);
  ClientReply HandleBackup(const BackupRequest& request);
  ClientReply HandleClearWorker(const ClearWorker& request, bool* deferred);

  FarmState& farm_;
  PendingWrites& writes_;
  Store& store_;
  const Clock& clock_;
  // Replies to recent pause, resume, cancel and backup requests by request id.
  std::unordered_map<std::string, ClientReply> control_replies_;
  std::deque<std::string> control_reply_order_;
};

}  // namespace schedfarm
