// What the coordinator holds in memory between turns of its loop: the campaigns in
// their order of dispatch, the worker registry, the leases in flight and the workers
// with free credits. Plain data shared by the worker protocol
// (coordinator/worker_protocol.h), the control API (coordinator/control_api.h) and
// start-up (coordinator/recovery.h); one thread uses it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "coordinator/campaign_run.h"
#include "schedfarm.pb.h"

namespace schedfarm {

class PendingWrites;

struct WorkerEntry {
  std::string id;
  std::string peer;  // routing id of its connection, empty when dead
  std::string instance;
  WorkerRecord record;
  int credits = 0;
  std::unordered_set<std::string> leases;
  int64_t last_heard_ms = 0;
  bool alive = false;
  bool left = false;  // disconnected on its own (a drained worker)
};

struct LeaseInfo {
  std::string campaign;
  std::string pipeline_id;
  std::string slot;  // store_keys::CandidateSlot: the schedule hash and the repeat
  std::string worker_id;
  int64_t sent_ms = 0;
};

// Left (drained and disconnected), dead, draining (no credits), idle or busy.
WorkerState StateOf(const WorkerEntry& worker);
// Running or paused: not finished.
bool Active(CampaignState state);

struct FarmState {
  std::map<std::string, std::unique_ptr<CampaignRun>> campaigns;
  std::vector<std::string> campaign_order;  // round-robin order of dispatch
  size_t next_campaign = 0;
  std::unordered_map<std::string, WorkerEntry> workers;
  std::unordered_map<std::string, std::string> worker_of_peer;
  std::unordered_map<std::string, LeaseInfo> leases;
  std::unordered_set<std::string> hungry;  // alive workers with fewer leases than credits
  bool dispatch_needed = true;
  int64_t models_stored = 0;  // model versions in the store, for the metrics

  // The campaign of `id`, or nullptr.
  CampaignRun* FindCampaign(const std::string& id);
  // The campaign of id `ref`, else the newest campaign named `ref`, or nullptr: how a
  // client names a campaign (docs/FARMCTL.md); the learner's requests carry ids.
  CampaignRun* CampaignByIdOrName(const std::string& ref);
  // Adds a campaign last in the order of dispatch.
  void AddCampaign(std::unique_ptr<CampaignRun> run);
  // The workers flagged by audits (coordinator/host_audit.h): their results count
  // neither in the best nor in training.
  std::unordered_set<std::string> FlaggedHosts() const;
};

// Ends a campaign (DONE or CANCELLED) at `now_ms`, with its event and log line.
void FinishCampaign(CampaignRun& run, CampaignState state, const std::string& why, int64_t now_ms,
                    PendingWrites& writes);
// A running campaign whose DoneReason is set becomes DONE.
void FinishIfDone(CampaignRun& run, int64_t now_ms, PendingWrites& writes);

}  // namespace schedfarm
