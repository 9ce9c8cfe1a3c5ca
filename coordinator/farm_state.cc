#include "coordinator/farm_state.h"

#include <utility>

#include "common/log.h"
#include "coordinator/pending_writes.h"

namespace schedfarm {

WorkerState StateOf(const WorkerEntry& worker) {
  if (!worker.alive) return worker.left ? WORKER_LEFT : WORKER_DEAD;
  if (worker.credits == 0) return WORKER_DRAINING;
  return worker.leases.empty() ? WORKER_IDLE : WORKER_BUSY;
}

bool Active(CampaignState state) { return state == CAMPAIGN_RUNNING || state == CAMPAIGN_PAUSED; }

CampaignRun* FarmState::FindCampaign(const std::string& id) {
  auto found = campaigns.find(id);
  return found == campaigns.end() ? nullptr : found->second.get();
}

CampaignRun* FarmState::CampaignByIdOrName(const std::string& ref) {
  if (CampaignRun* by_id = FindCampaign(ref)) return by_id;
  CampaignRun* newest = nullptr;
  for (const auto& [id, run] : campaigns) {
    if (run->campaign().name() == ref &&
        (newest == nullptr ||
         run->campaign().submitted_unix_ms() > newest->campaign().submitted_unix_ms())) {
      newest = run.get();
    }
  }
  return newest;
}

void FarmState::AddCampaign(std::unique_ptr<CampaignRun> run) {
  const std::string id = run->id();
  campaign_order.push_back(id);
  campaigns[id] = std::move(run);
}

std::unordered_set<std::string> FarmState::FlaggedHosts() const {
  std::unordered_set<std::string> flagged;
  for (const auto& [id, worker] : workers) {
    if (worker.record.flagged()) flagged.insert(id);
  }
  return flagged;
}

void FinishCampaign(CampaignRun& run, CampaignState state, const std::string& why, int64_t now_ms,
                    PendingWrites& writes) {
  run.campaign().set_state(state);
  run.campaign().set_finished_unix_ms(now_ms);
  run.campaign().set_finish_reason(why);
  writes.CampaignChanged(run.id());
  const char* kind = state == CAMPAIGN_DONE ? "campaign_done" : "campaign_cancelled";
  writes.AddEvent(now_ms, kind, run.id(), "", "", why);
  LogEvent("info", kind,
           {{"campaign", run.id()},
            {"why", why},
            {"measured", std::to_string(run.campaign().counters().measured())},
            {"finished", std::to_string(run.campaign().counters().finished())}});
}

void FinishIfDone(CampaignRun& run, int64_t now_ms, PendingWrites& writes) {
  if (run.campaign().state() != CAMPAIGN_RUNNING) return;
  if (const char* why = run.DoneReason()) FinishCampaign(run, CAMPAIGN_DONE, why, now_ms, writes);
}

}  // namespace schedfarm
