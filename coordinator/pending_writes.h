// This turn's writes and the replies that wait for them (the write hand-off): the
// records the rules change go into one batch, each campaign and worker whose record
// changed is written once when the turn hands over, and an Ack or a deferred client
// reply is released only after everything handed over with it is durable
// (coordinator/group_commit.h). No sockets, no store access.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "coordinator/group_commit.h"
#include "schedfarm.pb.h"
#include "storage/store.h"

namespace schedfarm {

struct FarmState;

class PendingWrites {
 public:
  Store::Batch& batch() { return batch_; }
  // The campaign's or worker's record is written at hand-over.
  void CampaignChanged(const std::string& campaign_id) { changed_campaigns_.insert(campaign_id); }
  void WorkerChanged(const std::string& worker_id) { changed_workers_.insert(worker_id); }
  // An event of the store's log. What went wrong with a lease or a result is logged as
  // well, for whoever reads the log of a network fault.
  void AddEvent(int64_t now_ms, const std::string& kind, const std::string& campaign,
                const std::string& worker, const std::string& lease, const std::string& text);
  // `received_ms`: when the result an Ack acknowledges arrived, for the metrics.
  void DeferToWorker(const std::string& worker_id, const Envelope& envelope,
                     int64_t received_ms = 0);
  void DeferToClient(const std::string& peer, const Envelope& envelope);

  // Moves everything pending into *batch and *replies, with the records of the changed
  // campaigns and workers of `farm`. False (and nothing moved) when nothing is pending.
  bool Take(const FarmState& farm, Store::Batch* batch, std::vector<DeferredReply>* replies);

 private:
  Store::Batch batch_;
  std::vector<DeferredReply> deferred_;
  std::unordered_set<std::string> changed_campaigns_;
  // A worker's result counts are written in the batch of the results they count, so
  // after any crash they agree with the store.
  std::unordered_set<std::string> changed_workers_;
};

}  // namespace schedfarm
