// One campaign in the coordinator's memory: its configuration and pipelines, its
// candidates with their dispatch state, the candidates ready for a lease (queued, or
// due for a retry), the random strategy's proposals, and the progress status replies
// show. No sockets and no store: the coordinator persists the records it is handed.
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "campaign/campaign_yaml.h"
#include "common/status.h"
#include "coordinator/host_audit.h"
#include "pipeline/graph.h"
#include "schedfarm.pb.h"
#include "scheduler/schedule_space.h"
#include "search/strategies/random_search.h"

namespace schedfarm {

// How failed attempts are retried: a candidate that failed `quarantine_after` times
// (crashes, timeouts, out of memory, lost workers) is quarantined; before that it waits
// backoff_ms * 2^(failures - 1) before its next lease. Deterministic failures (compile
// error, runtime error, wrong answer, output limit) and conclusive run timeouts are
// final at once.
struct RetryPolicy {
  int quarantine_after = 3;
  int64_t backoff_ms = 1000;
};

// Whether a failure of this status is a property of the schedule rather than of the
// attempt, so that running it again would give the same failure.
bool IsDeterministicFailure(MeasurementStatus status);

class CampaignRun {
 public:
  // The run of a campaign, with its pipelines in the order of config.pipelines
  // expanded (each random range in seed order; a pipeline listed twice once). A new
  // campaign (no pipeline_ids yet) gets their ids. Fails when a pipeline does not build.
  static StatusOr<std::unique_ptr<CampaignRun>> Create(Campaign campaign, CampaignConfig config,
                                                       std::vector<PipelineSpec> pipelines);

  const std::string& id() const { return campaign_.id(); }
  Campaign& campaign() { return campaign_; }
  const Campaign& campaign() const { return campaign_; }
  const CampaignConfig& config() const { return config_; }
  // The pipeline of `pipeline_id`, or nullptr.
  const PipelineSpec* pipeline(const std::string& pipeline_id) const;
  const std::vector<PipelineSpec>& pipelines() const { return specs_; }

  // Whether a worker with this fingerprint meets the campaign's worker requirements
  // (a replay worker: a replay campaign of its dataset).
  bool Accepts(const HostFingerprint& host) const;

  // Restores a stored candidate at start-up. A candidate that was leased goes back to
  // the queue: its lease died with the previous coordinator process.
  void Restore(CandidateRecord record);
  // Restores the progress figures from a stored measurement.
  void RestoreMeasurement(const Measurement& measurement);

  // New candidates, within the budget: the baselines first; then for each vector width
  // of `widths` (those of the live workers it accepts: VectorBytesOfHalideTarget) new to
  // the campaign, its spaces and its templates (AddWidth); then random schedules of the
  // pipelines in turn, in each width's space, until `ready_target` of that width wait
  // for a lease. `added` sees each new record (state QUEUED) for the caller to persist,
  // with the campaign record.
  using ProposalVisitor = std::function<void(const CandidateRecord&)>;
  void Propose(size_t ready_target, int64_t now_ms, const std::set<int>& widths,
               const ProposalVisitor& added);
  // A worker of this vector width serves the campaign: one space per pipeline sized for
  // it, its random streams, and its templates proposed. Nothing when it has the width.
  void AddWidth(int vector_bytes, int64_t now_ms, const ProposalVisitor& added);

  // Whether the coordinator proposes this campaign's candidates itself (random), or
  // farm-learner does (the baselines are always the coordinator's).
  bool ProposesItself() const;

  enum class ProposalOutcome { kAdded, kDuplicate, kOverBudget, kRefused };
  // A candidate proposed from outside (farm-learner, a person): its schedule must fit its
  // pipeline's space of its vector width (a width new to the campaign is added; 0: the
  // campaign's own target) (*why says how it does not); its hash is recomputed. With
  // kAdded, `added` sees the new record.
  ProposalOutcome AddProposal(Candidate candidate, int64_t now_ms, const ProposalVisitor& added,
                              std::string* why);

  // The next candidate ready at `now_ms` for a worker of `host` (a due retry first),
  // now LEASED under `lease_id`; nullptr when none is ready. A candidate of a vector
  // width goes only to a host of that width; an audit only to a host of its CPU model
  // that has not measured it yet.
  const CandidateRecord* Lease(const std::string& lease_id, int64_t now_ms,
                               const HostFingerprint& host = HostFingerprint());
  // Whether a worker of `host` may measure the candidate: its vector width, and for an
  // audit not the hosts it checks, and only their CPU model.
  static bool ServesCandidate(const Candidate& candidate, const HostFingerprint& host);
  // Queues an audit of `audited` (coordinator/host_audit.h): the same schedule to be
  // measured by another host, with the results it checks. Audits are beyond the budget
  // and counted apart (counters.audits), and a campaign is done only once its audits
  // are. False when that audit exists already.
  bool AddAudit(const Candidate& audited, Audit audit, int64_t now_ms,
                const ProposalVisitor& added);
  // A lease that was never delivered goes back to the front of the queue. A candidate
  // is named by its pipeline and slot (store_keys::CandidateSlot: hash and repeat).
  void Unlease(const std::string& pipeline_id, const std::string& slot,
               const std::string& lease_id);
  // A lease that ended without a result (its worker died: WORKER_LOST; or refused it)
  // counts a failed attempt. Returns the record to persist, or nothing when the lease
  // was no longer the candidate's.
  std::optional<CandidateRecord> FailLease(const std::string& pipeline_id,
                                           const std::string& slot,
                                           const std::string& lease_id, MeasurementStatus status,
                                           const std::string& error, const RetryPolicy& policy,
                                           int64_t now_ms);

  enum class ResultOutcome {
    kRecorded,   // a new result: persist the measurement, the record and the campaign
    kDuplicate,  // this lease's result was recorded already, or the candidate is final
    kUnknown,    // no such candidate in this campaign
  };
  // Takes a worker's result. With kRecorded, *record is the candidate's new record.
  ResultOutcome RecordResult(const Measurement& measurement, const RetryPolicy& policy,
                             int64_t now_ms, CandidateRecord* record);

  // Candidates waiting for a lease (queued or waiting for a retry), and leased.
  size_t waiting() const { return waiting_; }
  size_t leased() const { return leased_; }
  // Why the campaign is done, or nullptr while it is not: the budget of benchmarks is
  // used up, or no candidate is left to propose (the random stream is exhausted, or the
  // learner's strategy said it has nothing left: CompleteStrategy) and none is waiting
  // or leased.
  const char* DoneReason() const;
  // farm-learner's strategy proposes nothing more: the campaign is done once its
  // candidates are final. Not persisted: the learner says it again after a restart.
  void CompleteStrategy() { strategy_complete_ = true; }

  // The record of a candidate that is not final yet; nullptr when it is final or unknown.
  const CandidateRecord* LiveRecord(const std::string& pipeline_id,
                                    const std::string& slot) const;
  // Whether the candidate reached a final state (measured, failed or quarantined).
  bool Finished(const std::string& pipeline_id, const std::string& slot) const;

  // Progress, for status replies (best runtime and baselines per pipeline), without the
  // results of `excluded_hosts` (worker ids).
  std::vector<PipelineProgress> Progress(
      const std::unordered_set<std::string>& excluded_hosts = {}) const;
  const std::map<std::string, int64_t>& failures_by_status() const { return failures_; }
  // Results recorded in the minute before `now_ms`, per second.
  double ResultsPerSecond(int64_t now_ms);

 private:
  // An OK measurement, as progress needs it.
  struct OkResult {
    std::string hash;
    std::string origin;
    std::string worker_id;
    double seconds = 0;  // its median
    // Its host's fp32 peak and memory bandwidth at the measurement's threads
    // (storage/throughput.h); 0: none.
    double peak_gflops = 0;
    double bandwidth_gbps = 0;
    // The libtorch baseline's median in each layout that matched (Measurement.torch_layouts).
    std::vector<std::pair<std::string, double>> torch_layouts;
  };
  // The geometric mean of a host roof (peak, bandwidth) over a schedule's measurements;
  // 0 once one of its hosts had none.
  struct HostRoofMean {
    double sum_log = 0;
    int count = 0;
    bool every = true;
    void Add(double roof) {
      if (roof > 0) sum_log += std::log(roof);
      every = every && roof > 0;
      ++count;
    }
    double Mean() const { return every && count > 0 ? std::exp(sum_log / count) : 0; }
  };
  // A pipeline's progress over some of its OK measurements, and each schedule's runtime.
  struct ProgressState {
    PipelineProgress progress;
    struct Runtime {
      double sum_log_seconds = 0;
      int count = 0;
      std::string origin;
      HostRoofMean peak;       // of its hosts' fp32 peaks
      HostRoofMean bandwidth;  // of its hosts' memory bandwidths
      double Seconds() const { return std::exp(sum_log_seconds / count); }
    };
    std::map<std::string, Runtime> runtimes;
    std::string farm_best_hash;  // the schedule of progress.farm_best_seconds
  };
  // A pipeline's space for workers of one vector width, and its random stream there.
  struct SizedSpace {
    std::unique_ptr<ScheduleSpace> space;
    RandomSearch random;
  };
  struct PipelineEntry {
    PipelineSpec spec;
    std::string id;
    std::unique_ptr<PipelineGraph> graph;
    // The campaign's own target (its threads; the width its worker requirements name):
    // hashes, the reference schedule and proposals of no width.
    std::unique_ptr<ScheduleSpace> space;
    std::map<int, SizedSpace> sized;  // by vector width (Campaign.widths)
    ProgressState all_hosts;  // kept as results come
    std::vector<OkResult> ok_results;  // to count again without a flagged host
    double flops = 0;                  // per run of the pipeline
    double bytes = 0;                  // its compulsory bytes (PipelineGraph::compulsory_bytes)
    int task_weight = 0;               // a network campaign's distinct task: its occurrences
    std::string task_kind;             // and its operator kind (network/tasks.h TaskKind)
  };

  CampaignRun(Campaign campaign, CampaignConfig config);
  static std::string Key(const std::string& pipeline_id, const std::string& slot);
  static std::string Key(const Candidate& candidate);
  CandidateRecord* Live(const std::string& key);
  void Enqueue(const std::string& key, const CandidateRecord& record);
  // Moves a candidate to a final state: counted, and forgotten but for its key.
  void Finalize(const std::string& key, CandidateState state);
  // One failed attempt: final when the failure is deterministic or `conclusive`
  // (Measurement.conclusive), quarantined after policy.quarantine_after, else retried.
  void FailAttempt(CandidateRecord& record, MeasurementStatus status, const std::string& error,
                   bool conclusive, const RetryPolicy& policy, int64_t now_ms, bool still_leased);
  // Adds an OK measurement to a pipeline's progress.
  void Count(const OkResult& result, ProgressState* state) const;
  // Keeps progress.farm_best_seconds, the best of the farm's own schedules, after the
  // runtime of schedule `hash` became `estimate`.
  static void CountFarmBest(const std::string& hash, double estimate, ProgressState* state);
  // Queues a new candidate and counts it as proposed.
  const CandidateRecord& Add(const std::string& key, CandidateRecord record);
  // The baselines, and with `reference` the network's reference schedule.
  void ProposeBaselines(int64_t now_ms, bool reference, const ProposalVisitor& added);
  // Queues a candidate of `entry` unless known; false once the budget is spoken for.
  bool Offer(const PipelineEntry& entry, Candidate candidate, int64_t now_ms,
             const ProposalVisitor& added);
  // The spaces and random streams of a width, the streams at `positions`.
  Status SizeFor(int vector_bytes, const std::vector<uint64_t>& positions);
  // One random schedule of a width, the pipelines in turn; false when none is left.
  bool ProposeRandom(int width_index, int64_t now_ms, const ProposalVisitor& added);
  void CountWaiting(const Candidate& candidate, int delta);
  // Candidates of the budget not final yet (audits are beyond the budget).
  int64_t InPlay() const { return static_cast<int64_t>(live_.size() - live_audits_.size()); }
  int64_t Budget() const { return BenchmarkLimit(config_.budget()); }

  Campaign campaign_;
  CampaignConfig config_;
  std::vector<PipelineSpec> specs_;
  std::vector<PipelineEntry> entries_;
  std::unordered_map<std::string, size_t> entry_by_id_;
  // Candidates not yet final, by Key; final ones are only remembered by Key.
  std::unordered_map<std::string, CandidateRecord> live_;
  std::unordered_set<std::string> final_;
  std::unordered_set<std::string> live_audits_;  // the keys of live_ that are audits
  std::unordered_set<std::string> hosts_measured_;  // workers with an OK measurement
  std::deque<std::string> queue_;                   // QUEUED keys, oldest first but those `ahead`
  // RETRY keys by due time, earliest first.
  std::priority_queue<std::pair<int64_t, std::string>, std::vector<std::pair<int64_t, std::string>>,
                      std::greater<>>
      retries_;
  size_t waiting_ = 0;
  std::map<int, size_t> waiting_by_width_;  // of waiting_, by Candidate.vector_bytes
  size_t leased_ = 0;
  bool baselines_proposed_ = false;
  bool strategy_complete_ = false;
  std::map<std::string, int64_t> failures_;
  std::deque<int64_t> recent_results_ms_;
};

}  // namespace schedfarm
