// Internal to learner_daemon/: what farm-learner keeps of each campaign it follows and
// the steps of its loop. learner_daemon.cc follows, trains and proposes;
// value_iteration.cc runs the campaigns whose strategy is value-iteration.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "campaign/campaign_yaml.h"
#include "common/elapsed.h"
#include "common/mutex.h"
#include "learner/features.h"
#include "learner/host_featurizers.h"
#include "learner/model.h"
#include "learner/value_targets.h"
#include "learner_daemon/compute_gate.h"
#include "learner_daemon/learner_daemon.h"
#include "network/tasks.h"
#include "pipeline/graph.h"
#include "protocol/control_client.h"
#include "scheduler/schedule_space.h"
#include "search/near_ties.h"
#include "search/pipeline_search.h"
#include "search/task_scheduler.h"

namespace schedfarm {

// A trained model and its stored version.
struct TrainedModel {
  std::shared_ptr<const PerformanceModel> model;
  std::string version;
};

// A stored model (with its weights) loaded back.
StatusOr<TrainedModel> LoadStoredModel(const Model& stored);

// What an assembly of a network took once a worker had it, from its measurement `m`:
// its compile and its run phase (the warm-up and every sample's realizations). Not the
// wait in the queue, nor the network's reference outputs, which a worker computes once
// (ViT-B/16's took 8 minutes before its first assembly and do not recur).
double AssemblyTurnSeconds(const Measurement& m);

// A value-iteration campaign's progress (value_iteration.cc). Everything that must
// survive a restart is in the coordinator: the rounds, the models, the candidates.
struct ValueIterationData {
  bool loaded = false;             // the stored rounds and their models are read
  std::vector<ValueRound> rounds;  // stored, in round order
  std::map<int, TrainedModel> values;  // V_i by round
  std::vector<Candidate> warmup;       // the random warm-up, once planned
  bool warmup_proposed = false;        // by this process
  std::vector<std::vector<MeasuredSchedule>> measured;  // per pipeline index
};

// A network campaign's tasks (network_tuning.cc). Its pipelines are the network, its
// assembly pipeline and its distinct tasks (NetworkCampaignPipelines); everything here is
// rebuilt from the campaign's measurements after a restart.
struct NetworkData {
  static constexpr size_t kFirstTask = 2;  // index of distinct task 0 among the pipelines
  NetworkPartition partition;
  std::unique_ptr<TaskScheduler> scheduler;
  struct TaskProgress {
    std::optional<ScheduleSpec> best;  // its fastest measured schedule
    double best_seconds = 0;
    int64_t results = 0;                     // final results, failures included
    std::map<std::string, int64_t> failures;  // by status
  };
  std::vector<TaskProgress> tasks;  // per distinct task
  // The tasks' estimate of the network's runtime (sum of weight x best) at the newest
  // assembly proposed (the assembled candidate's prediction); 0 before the first.
  double assembled_estimate = 0;
  std::set<std::string> assembled;  // hashes of the assemblies proposed or measured
  std::string assembly_in_flight;    // the newest assembly proposed, until it is measured
  // The templates' assembly was tried (once per learner run: one that does not assemble
  // is not tried again at every turn).
  bool templates_assembly_tried = false;
  // The longest any assembly took once a worker had it (AssemblyTurnSeconds): what the
  // final assembly needs left of a wall-time budget.
  double longest_assembly_seconds = 0;
  bool completed = false;
};

// What the learner keeps of one campaign.
struct CampaignData {
  struct PipelineData {
    std::string id;
    std::unique_ptr<PipelineGraph> graph;
    // The space the searches walk and the features they score: the host of a worker
    // that serves the campaign (ServingWorker) at the campaign's threads.
    std::unique_ptr<ScheduleSpace> space;
    std::unique_ptr<Featurizer> featurizer;
    std::unique_ptr<PipelineSearch> search;  // per-pipeline model strategies only
    // |ln(measured / predicted)| of its newest measurements that a model scored
    // (at most kRecentErrors): what the pipeline still has to teach the model.
    std::deque<double> model_errors;
    // Campaigns that re-measure near-ties (Strategy.remeasure): every schedule measured.
    std::vector<RepeatedSchedule> measured;
    std::map<std::string, size_t> measured_index;  // by schedule hash
  };
  static constexpr size_t kRecentErrors = 8;
  std::string id;
  CampaignConfig config;
  std::vector<PipelineData> pipelines;
  std::map<std::string, size_t> pipeline_index;
  uint64_t next_seq = 0;
  // The vector width of the serving worker the spaces are sized for, which the
  // proposals carry (Candidate.vector_bytes); 0: loaded without one (never proposes).
  int vector_bytes = 0;
  // Each measurement is a sample featurized on the host that measured it.
  HostFeaturizers featurizers;
  std::vector<Sample> samples;
  int64_t since_training = 0;
  std::map<std::string, TrainedModel> newest;  // by kind, trained on this campaign
  TrainedModel scorer;  // the model the searches use: the strategy's kind, newest version
  // The pretrained model the campaign started from (model_from: pretrained): every
  // version of its kind is trained from it (ModelKindInfo::fine_tunes). Null: none.
  TrainedModel pretrained;
  // model_from is settled: its model is the scorer, or there is none to wait for.
  bool seeded = false;
  std::vector<double> share_credit;  // proposals each pipeline is owed (batch_shares.h)
  bool exhausted = false;  // every pipeline's search has nothing left: the campaign completed
  std::unique_ptr<ValueIterationData> value;  // value-iteration campaigns only
  std::unique_ptr<NetworkData> network;      // network campaigns only
  // A replay campaign: every model is scored on its dataset's held-out pipelines, each
  // distinct schedule with its first OK measurement, whatever the campaign measured.
  std::vector<Sample> replay_held_out;
};

// A model to train and store: its training and held-out samples and how it starts.
struct TrainingJob {
  std::string kind;
  std::vector<Sample> train;
  std::vector<Sample> held_out;
  std::vector<std::string> held_out_pipelines;
  // Warm start from this model (TrainOptions::warm_start) for a kind that can
  // (ModelKindInfo::warm_starts); null, or another kind: from scratch.
  std::shared_ptr<const PerformanceModel> start;
  bool fine_tune = false;  // `start` is the campaign's pretrained model: warm start from it
  std::string version_tag;  // in the version: campaign-kind[-tag]-ms
  // The gate it yields to the steps that wait between epochs (its train_seconds leave
  // the wait out); null: it does not yield. A background job's: its priority is the
  // lowest, and a flag stops it there.
  ComputeGate* yields_to = nullptr;
  bool background = false;
  const std::atomic<bool>* stop = nullptr;
};

class BackgroundTrainer;

// The learner's main thread has one, and each campaign's thread one of its own (Fork):
// the same options, a connection of its own, and the gate all of them train through.
struct LearnerDaemon::State {
  LearnerOptions options;  // options.train.threads is set (never 0: the library's default)
  std::unique_ptr<FarmClient> client;
  // The learner's cpus, shared by every campaign and the background trainer.
  std::shared_ptr<ComputeGate> gate;
  // Where a following campaign's retrainings leave the kinds its strategy does not
  // search under; null (farm-learner --train): every kind trains at once.
  BackgroundTrainer* background = nullptr;

  StatusOr<std::unique_ptr<State>> Fork() const;
  // The thread of campaign `id` (LearnerDaemon::Run), until it ends or `stop` is set.
  void FollowCampaign(const std::string& id, const std::atomic<bool>& stop);
  Status Step(CampaignData& data, const CampaignStatus& status, bool added);

  // The coordinator's reply, or an error for a transport failure or a refusal.
  StatusOr<ClientReply> Call(ClientRequest request);

  // A live worker that serves the campaign (WorkerServes) and the audits trust, or none.
  StatusOr<std::optional<HostFingerprint>> ServingWorker(const CampaignConfig& config);
  // The campaign's pipelines, spaces and searches; `worker`: the host the searches
  // featurize for (none: the campaign's target without a host's speed or caches).
  Status Load(const Campaign& campaign, const std::optional<HostFingerprint>& worker,
              CampaignData* data);
  // A replay campaign's dataset: each pipeline's pool and the held-out samples.
  Status LoadReplay(CampaignData* data, std::vector<std::vector<PoolSchedule>>* pools);
  Status CompleteIfExhausted(CampaignData& data);
  Status Follow(CampaignData& data);
  StatusOr<std::optional<TrainingJob>> TrainingSetOf(const CampaignData& data);
  Status Train(CampaignData& data, std::vector<NamedMetrics>* table,
               const std::vector<std::string>& only = {});
  // Trains the job's model, evaluates it on the held-out samples and stores it with
  // its metrics as a model of `campaign`; *metrics gets them when there are held-out
  // samples. The caller holds the gate.
  StatusOr<TrainedModel> TrainAndStore(const std::string& campaign, const TrainingJob& job,
                                       std::vector<NamedMetrics>* metrics);
  // The newest stored model of `kind` of campaign `source` (with weights), or null.
  StatusOr<std::optional<TrainedModel>> NewestStoredModel(const std::string& source,
                                                          const std::string& kind);
  // Settles the campaign's model_from (found among every campaign the coordinator
  // holds): true once its model scores or there is none to wait for.
  StatusOr<bool> Seed(CampaignData& data);
  StatusOr<bool> SeedPretrained(CampaignData& data);
  // A campaign found running with a stored model of its own (the learner restarted):
  // the newest of the strategy's kind scores at once, retraining (warm where the kind
  // can) waits for the samples it has not seen, and one that does not load (another
  // feature schema, a truncated blob) is an event, after which the campaign trains its
  // own as if it had none.
  Status Resume(CampaignData& data);
  Status Propose(CampaignData& data, const CampaignStatus& status);
  void SearchUnder(CampaignData& data);
  // Sends candidates to the coordinator, logged as `what`.
  Status ProposeCandidatesOf(CampaignData& data, std::vector<Candidate> candidates,
                             const std::string& what);

  // value_iteration.cc: one step of a value-iteration campaign, and its parts.
  // network_tuning.cc: a network campaign's partition and task scheduler, what each of
  // its measurements tells them, and one round of proposals.
  Status LoadNetwork(CampaignData& data);
  void FollowNetwork(CampaignData& data, size_t pipeline, const Measurement& m);
  // Once, at the campaign's first turn: the assembly of every task's template (its
  // reference where it has none), ahead of the queue and of any model, so that a
  // measured network comes within minutes and tells how long an assembly takes.
  Status ProposeTemplatesAssembly(CampaignData& data);
  Status ProposeNetworkRound(CampaignData& data, const CampaignStatus& status);

  Status StepValueIteration(CampaignData& data);
  Status LoadValueRounds(CampaignData& data);
  Status FitV0(CampaignData& data);
  Status PlanRound(CampaignData& data, int round);
  Status FitRound(CampaignData& data);
  // Greedy and beam search under V_i (`value`) on every held-out pipeline: the
  // evaluations go into `round` and their candidates are proposed.
  Status Evaluate(CampaignData& data, const TrainedModel& value, ValueRound* round);
  Status StoreRound(CampaignData& data, const ValueRound& round);
  // Whether every candidate of `keys` (pipeline id, hash) is final: measured, failed or
  // quarantined, or not kept by the campaign (refused, over budget).
  StatusOr<bool> AllFinal(const CampaignData& data,
                          const std::vector<std::pair<std::string, std::string>>& keys);
};

}  // namespace schedfarm
