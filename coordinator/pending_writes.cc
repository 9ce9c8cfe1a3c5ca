#include "coordinator/pending_writes.h"

#include <utility>

#include "common/log.h"
#include "coordinator/farm_state.h"
#include "protocol/wire.h"

namespace schedfarm {

void PendingWrites::AddEvent(int64_t now_ms, const std::string& kind, const std::string& campaign,
                             const std::string& worker, const std::string& lease,
                             const std::string& text) {
  Event event;
  event.set_unix_ms(now_ms);
  event.set_kind(kind);
  event.set_campaign(campaign);
  event.set_worker_id(worker);
  event.set_lease_id(lease);
  event.set_text(text);
  batch_.AddEvent(event);
  // The other kinds have log lines of their own.
  if (kind == "lease_lost" || kind == "quarantined" || kind == "duplicate_result" ||
      kind == "result_for_unknown_candidate") {
    LogEvent("warn", kind, {{"campaign", campaign}, {"worker", worker}, {"lease", lease}, {"why", text}});
  }
}

void PendingWrites::DeferToWorker(const std::string& worker_id, const Envelope& envelope,
                                  int64_t received_ms) {
  deferred_.push_back(DeferredReply{true, worker_id, EncodeEnvelope(envelope), received_ms});
}

void PendingWrites::DeferToClient(const std::string& peer, const Envelope& envelope) {
  deferred_.push_back(DeferredReply{false, peer, EncodeEnvelope(envelope)});
}

bool PendingWrites::Take(const FarmState& farm, Store::Batch* batch,
                         std::vector<DeferredReply>* replies) {
  for (const std::string& id : changed_campaigns_) {
    batch_.PutCampaign(farm.campaigns.at(id)->campaign());
  }
  for (const std::string& id : changed_workers_) batch_.PutWorker(farm.workers.at(id).record);
  changed_campaigns_.clear();
  changed_workers_.clear();
  if (batch_.empty() && deferred_.empty()) return false;
  *batch = std::exchange(batch_, Store::Batch());
  *replies = std::exchange(deferred_, {});
  return true;
}

}  // namespace schedfarm
