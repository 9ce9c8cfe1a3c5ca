// farm-learner's core. What is where in learner_daemon/:
//   learner_daemon.cc   this file: the campaign list, a thread per campaign, following
//                       measurements, training and storing models, proposals
//   daemon_state.h      what the learner keeps of each campaign, and the steps the
//                       files below share
//   value_iteration.cc  value-iteration campaigns, round by round
//   network_tuning.cc   network campaigns: tasks weighted by the task scheduler
//   compute_gate.h      the learner's cpus: one computation at a time, proposals first
//   background_trainer.h  the kinds no strategy searches under, trained behind proposals
//   main.cc             the flags
// The models are made in learner/kinds/, searched under through search/.
#include "learner_daemon/learner_daemon.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "common/blas_threads.h"
#include "common/cpus.h"
#include "common/log.h"
#include "dataset/dataset.h"
#include "evaluation/metrics.h"
#include "learner/cost_model_adapter.h"
#include "learner/features.h"
#include "learner/kinds/model_kinds.h"
#include "learner/model_evaluation.h"
#include "learner/torch/torch_models.h"
#include "learner_daemon/background_trainer.h"
#include "learner_daemon/daemon_state.h"
#include "pipeline/graph.h"
#include "pretrained/pretrained.h"
#include "scheduler/schedule_space.h"
#include "search/batch_shares.h"
#include "search/pipeline_search.h"
#include "search/registry.h"

namespace schedfarm {

namespace {

constexpr int kExportPageRows = 1000;

// Whether the campaign's strategy has a per-pipeline search that farm-learner runs
// (value iteration runs over the whole campaign instead).
bool PerPipelineSearch(const CampaignConfig& config) {
  const StrategyInfo* info = FindStrategy(config.strategy().name());
  return LearnerProposes(config) && info != nullptr && info->make != nullptr;
}

// The model kind the campaign's strategy scores with.
std::string StrategyModel(const CampaignConfig& config) {
  return config.strategy().model().empty() ? kDefaultModelKind : config.strategy().model();
}

// Zeroes the columns of every stage of `samples` whose names start with one of
// `prefixes` (LearnerOptions::drop_feature_prefixes).
void DropFeatures(const std::vector<std::string>& prefixes, std::vector<Sample>* samples) {
  if (prefixes.empty()) return;
  auto dropped = [&](const std::vector<std::string>& names) {
    std::vector<size_t> columns;
    for (size_t c = 0; c < names.size(); ++c) {
      for (const std::string& prefix : prefixes) {
        if (names[c].compare(0, prefix.size(), prefix) == 0) {
          columns.push_back(c);
          break;
        }
      }
    }
    return columns;
  };
  const FeatureSchema& schema = CurrentFeatureSchema();
  const std::vector<size_t> invariant = dropped(schema.invariant_names);
  const std::vector<size_t> dependent = dropped(schema.dependent_names);
  for (Sample& sample : *samples) {
    PipelineFeatures& f = sample.features;
    for (int s = 0; s < f.num_stages; ++s) {
      for (size_t c : invariant) f.invariant[s * schema.invariant_names.size() + c] = 0;
      for (size_t c : dependent) f.dependent[s * schema.dependent_names.size() + c] = 0;
    }
  }
}

}  // namespace

StatusOr<ClientReply> LearnerDaemon::State::Call(ClientRequest request) {
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, client->Call(std::move(request)));
  if (reply.code() != CLIENT_OK) {
    return Status::Error(ClientErrorCode_Name(reply.code()) + ": " + reply.error());
  }
  return reply;
}

Status LearnerDaemon::State::LoadReplay(CampaignData* data,
                                        std::vector<std::vector<PoolSchedule>>* pools) {
  const ReplaySource& replay = data->config.replay();
  SCHEDFARM_ASSIGN_OR_RETURN(LoadedDataset dataset, ReadDataset(replay.dataset()));
  if (dataset.id != replay.dataset_id()) {
    return Status::Error("campaign " + data->id + " replays dataset " + replay.dataset_id() +
                         ", and '" + dataset.path + "' is now dataset " + dataset.id);
  }
  std::map<std::string, const PipelineSpec*> specs;
  for (int i = 0; i < dataset.data.pipelines_size(); ++i) {
    specs[dataset.pipeline_ids[i]] = &dataset.data.pipelines(i);
  }
  // The pools: every schedule of the searched pipelines, in the order first taken.
  pools->assign(data->pipelines.size(), {});
  std::set<std::string> pooled;
  for (const Measurement& m : dataset.data.measurements()) {
    const Candidate& c = m.candidate();
    if (c.schedule().stages_size() == 0) continue;  // a baseline
    auto pipeline = data->pipeline_index.find(c.pipeline_id());
    if (pipeline == data->pipeline_index.end() ||
        !pooled.insert(DatasetKey(c.pipeline_id(), c.schedule_hash())).second) {
      continue;
    }
    (*pools)[pipeline->second].push_back({c.schedule(), c.schedule_hash()});
  }
  // The held-out samples: each schedule of a held-out pipeline once.
  const std::set<std::string> held_out(replay.held_out_pipelines().begin(),
                                       replay.held_out_pipelines().end());
  std::map<std::string, std::vector<const Measurement*>> by_pipeline;
  for (const auto& [key, m] : FirstOkMeasurements(dataset.data)) {
    if (held_out.count(m->candidate().pipeline_id())) {
      by_pipeline[m->candidate().pipeline_id()].push_back(m);
    }
  }
  for (const auto& [id, measurements] : by_pipeline) {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(*specs.at(id)));
    HostFeaturizers featurizers;
    for (const Measurement* m : measurements) {
      SCHEDFARM_ASSIGN_OR_RETURN(Sample sample, featurizers.SampleOf(graph, *m));
      data->replay_held_out.push_back(std::move(sample));
    }
  }
  LogEvent("info", "replay_loaded",
           {{"campaign", data->id},
            {"dataset", dataset.path},
            {"pool", std::to_string(pooled.size())},
            {"held_out_samples", std::to_string(data->replay_held_out.size())}});
  return Status::Ok();
}

StatusOr<std::optional<HostFingerprint>> LearnerDaemon::State::ServingWorker(
    const CampaignConfig& config) {
  ClientRequest request;
  request.mutable_workers();
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply workers, Call(request));
  for (const WorkerStatus& worker : workers.workers().workers()) {
    const bool alive = worker.state() == WORKER_BUSY || worker.state() == WORKER_IDLE;
    if (alive && !worker.record().flagged() && WorkerServes(config, worker.record().host())) {
      return std::optional<HostFingerprint>(worker.record().host());
    }
  }
  return std::optional<HostFingerprint>();
}

Status LearnerDaemon::State::Load(const Campaign& campaign,
                                  const std::optional<HostFingerprint>& worker,
                                  CampaignData* data) {
  data->id = campaign.id();
  SCHEDFARM_ASSIGN_OR_RETURN(data->config, CampaignConfigFromJson(campaign.config_json()));
  const int threads = std::max(1, data->config.measurement().threads());
  TargetParams target = worker ? TargetOf(*worker, threads) : TargetParams();
  target.cores = threads;
  data->vector_bytes = worker ? target.vector_bytes : 0;
  ClientRequest request;
  request.mutable_pipelines()->set_campaign(campaign.id());
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(request));
  for (const PipelineSpec& spec : reply.pipelines().pipelines()) {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(spec));
    CampaignData::PipelineData pipeline;
    pipeline.graph = std::make_unique<PipelineGraph>(std::move(graph));
    pipeline.space = std::make_unique<ScheduleSpace>(*pipeline.graph, target);
    pipeline.id = pipeline.space->pipeline_id();
    pipeline.featurizer = std::make_unique<Featurizer>(*pipeline.space);
    data->pipeline_index[pipeline.id] = data->pipelines.size();
    data->pipelines.push_back(std::move(pipeline));
  }
  std::vector<std::vector<PoolSchedule>> pools(data->pipelines.size());
  if (data->config.has_replay()) SCHEDFARM_RETURN_IF_ERROR(LoadReplay(data, &pools));
  const Strategy& strategy = data->config.strategy();
  // A network campaign searches its tasks only, not the network or its assembly.
  const size_t first_searched = data->config.has_network() ? NetworkData::kFirstTask : 0;
  for (size_t p = first_searched; p < data->pipelines.size() && PerPipelineSearch(data->config);
       ++p) {
    PipelineSearch::Options options;
    options.strategy = strategy.name();
    options.settings = ResolvedSettings(strategy);
    options.acquisition = strategy.acquisition();
    options.seed = MixSeed(strategy.seed(), p);
    options.epsilon = strategy.epsilon();
    options.pool = std::move(pools[p]);
    CampaignData::PipelineData& pipeline = data->pipelines[p];
    SCHEDFARM_ASSIGN_OR_RETURN(pipeline.search, PipelineSearch::Create(*pipeline.space, options));
  }
  if (data->config.has_network()) SCHEDFARM_RETURN_IF_ERROR(LoadNetwork(*data));
  if (LearnerProposes(data->config) && !PerPipelineSearch(data->config)) {
    data->value = std::make_unique<ValueIterationData>();
    data->value->measured.resize(data->pipelines.size());
  }
  LogEvent("info", "campaign_followed",
           {{"campaign", data->id},
            {"pipelines", std::to_string(data->pipelines.size())},
            {"strategy", data->config.strategy().name()}});
  return Status::Ok();
}

namespace {

// A measurement of a campaign that re-measures near-ties: its schedule's medians, and
// the repeat its next measurement takes.
void TrackMeasured(const Measurement& m, CampaignData::PipelineData* pipeline) {
  const Candidate& candidate = m.candidate();
  auto [it, added] =
      pipeline->measured_index.try_emplace(candidate.schedule_hash(), pipeline->measured.size());
  if (added) {
    pipeline->measured.emplace_back();
    pipeline->measured.back().hash = candidate.schedule_hash();
    pipeline->measured.back().schedule = candidate.schedule();
  }
  RepeatedSchedule& schedule = pipeline->measured[it->second];
  schedule.next_repeat = std::max(schedule.next_repeat, candidate.repeat() + 1);
  if (candidate.repeat() > 0) schedule.pending = false;
  if (m.status() == OK && m.stats().median_seconds() > 0) {
    schedule.medians.push_back(m.stats().median_seconds());
  }
}

}  // namespace

// Takes the campaign's new measurements: every OK one with a schedule becomes a sample.
Status LearnerDaemon::State::Follow(CampaignData& data) {
  while (true) {
    ClientRequest request;
    request.mutable_export_measurements()->set_campaign(data.id);
    request.mutable_export_measurements()->set_from_seq(data.next_seq);
    request.mutable_export_measurements()->set_max_rows(kExportPageRows);
    SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(request));
    const ExportReply& page = reply.export_page();
    for (const StoredMeasurementRecord& row : page.rows()) {
      const Measurement& m = row.measurement();
      const double median = m.stats().median_seconds();
      auto pipeline = data.pipeline_index.find(m.candidate().pipeline_id());
      if (pipeline == data.pipeline_index.end()) continue;
      CampaignData::PipelineData& entry = data.pipelines[pipeline->second];
      const bool ok = m.status() == OK && median > 0;
      if (entry.search) {
        if (m.candidate().schedule().stages_size() == 0) {
          entry.search->MarkKnown(m.candidate().schedule_hash());  // a baseline
        } else {
          entry.search->Notify(
              {m.candidate().schedule_hash(), m.candidate().schedule(), ok, ok ? median : 0});
        }
      }
      if (data.network) FollowNetwork(data, pipeline->second, m);
      if (data.config.strategy().remeasure() > 0 && m.candidate().schedule().stages_size() > 0) {
        TrackMeasured(m, &entry);
      }
      if (!ok || m.candidate().schedule().stages_size() == 0) continue;
      const double predicted = m.candidate().prediction().mean_seconds();
      if (!m.candidate().model_version().empty() && predicted > 0) {
        entry.model_errors.push_back(std::fabs(std::log(median / predicted)));
        if (entry.model_errors.size() > CampaignData::kRecentErrors) {
          entry.model_errors.pop_front();
        }
      }
      if (data.value) {
        data.value->measured[pipeline->second].push_back({m.candidate().schedule_hash(),
                                                          m.candidate().schedule(), median,
                                                          m.stats().stddev_seconds()});
      }
      StatusOr<Sample> sample = data.featurizers.SampleOf(*entry.graph, m);
      if (!sample.ok()) {
        LogEvent("warn", "sample_skipped",
                 {{"campaign", data.id},
                  {"seq", std::to_string(row.seq())},
                  {"error", sample.status().message()}});
        continue;
      }
      sample->worker_id = m.host().worker_id();
      data.samples.push_back(std::move(sample).value());
      ++data.since_training;
    }
    data.next_seq = std::max(data.next_seq, page.next_seq());
    if (page.done()) return Status::Ok();
  }
}

// The campaign's samples from hosts the coordinator's audits trust, split by pipeline
// into a training set and held-out pipelines (a replay campaign's held-out samples are
// its dataset's); no value when there is nothing to train on.
StatusOr<std::optional<TrainingJob>> LearnerDaemon::State::TrainingSetOf(const CampaignData& data) {
  // Hosts flagged by the coordinator's audits (coordinator/host_audit.h) do not train.
  ClientRequest workers_request;
  workers_request.mutable_workers();
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply workers, Call(workers_request));
  std::set<std::string> flagged;
  for (const WorkerStatus& worker : workers.workers().workers()) {
    if (worker.record().flagged()) flagged.insert(worker.record().host().worker_id());
  }
  std::vector<Sample> trusted;
  for (const Sample& sample : data.samples) {
    if (!flagged.count(sample.worker_id)) trusted.push_back(sample);
  }
  std::vector<std::string> ids;
  for (const Sample& sample : trusted) ids.push_back(sample.pipeline_id);
  const std::set<std::string> distinct(ids.begin(), ids.end());
  PipelineSplit split;
  if (data.config.has_replay()) {  // held out of the campaign: every sample trains
    split.train.assign(distinct.begin(), distinct.end());
  } else if (distinct.size() >= 2) {
    SCHEDFARM_ASSIGN_OR_RETURN(split,
                               SplitByPipeline(ids, options.seed, options.held_out_fraction));
  } else {
    split.train.assign(distinct.begin(), distinct.end());  // one pipeline: nothing to hold out
  }
  TrainingJob job;
  SCHEDFARM_RETURN_IF_ERROR(SplitSamples(trusted, split, &job.train, &job.held_out));
  if (options.train_samples > 0 && options.train_samples < static_cast<int64_t>(job.train.size())) {
    std::mt19937_64 rng(options.seed);
    std::shuffle(job.train.begin(), job.train.end(), rng);
    job.train.resize(options.train_samples);
  }
  job.held_out_pipelines = split.held_out;
  if (data.config.has_replay()) {
    job.held_out = data.replay_held_out;
    job.held_out_pipelines.assign(data.config.replay().held_out_pipelines().begin(),
                                  data.config.replay().held_out_pipelines().end());
  }
  if (job.train.empty()) return std::optional<TrainingJob>();
  DropFeatures(options.drop_feature_prefixes, &job.train);
  DropFeatures(options.drop_feature_prefixes, &job.held_out);
  return std::optional<TrainingJob>(std::move(job));
}

// Trains the given kinds, else --models and the strategy's, on the same split,
// evaluates each on the held-out pipelines and stores it; the strategy's kind becomes
// the campaign's scorer. A retraining of a campaign that follows (the kinds not given)
// trains only the strategy's kind now and hands the others to the background trainer.
Status LearnerDaemon::State::Train(CampaignData& data, std::vector<NamedMetrics>* table,
                                   const std::vector<std::string>& only) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::optional<TrainingJob> job, TrainingSetOf(data));
  if (!job) return Status::Ok();
  job->yields_to = gate.get();  // to the other campaigns' steps
  const std::string strategy_model = StrategyModel(data.config);
  // A replay campaign simulates one model's active learning: only that kind trains.
  std::vector<std::string> kinds = !only.empty()              ? only
                                   : data.config.has_replay() ? std::vector<std::string>{}
                                                              : options.kinds;
  if (only.empty() && std::find(kinds.begin(), kinds.end(), strategy_model) == kinds.end()) {
    kinds.push_back(strategy_model);
  }
  std::vector<std::string> later;
  if (background != nullptr && only.empty()) {
    const bool searched_under = LearnerProposes(data.config);
    for (const std::string& kind : kinds) {
      if (!searched_under || kind != strategy_model) later.push_back(kind);
    }
    kinds = searched_under ? std::vector<std::string>{strategy_model} : std::vector<std::string>{};
  }
  table->clear();
  for (const std::string& kind : kinds) {
    job->kind = kind;
    const auto newest = data.newest.find(kind);
    job->start = newest != data.newest.end() ? newest->second.model : nullptr;
    const ModelKindInfo* info = FindModelKind(kind);
    job->fine_tune = data.pretrained.model != nullptr && data.pretrained.model->kind() == kind &&
                     info != nullptr && info->fine_tunes;
    if (job->fine_tune) job->start = data.pretrained.model;
    StatusOr<TrainedModel> trained = TrainAndStore(data.id, *job, table);
    if (!trained.ok()) {
      LogEvent("warn", "training_failed",
               {{"campaign", data.id}, {"model", kind}, {"error", trained.status().message()}});
      continue;
    }
    data.newest[kind] = *trained;
    if (kind == strategy_model && LearnerProposes(data.config)) {
      data.scorer = data.newest[kind];
      SearchUnder(data);
    }
  }
  if (!table->empty()) {
    LogEvent("info", "models_evaluated",
             {{"campaign", data.id}, {"table", "\n" + FormatMetricsTable(*table)}});
  }
  if (!later.empty()) {
    job->start = nullptr;
    job->fine_tune = false;
    background->Add(data.id, std::move(later), std::move(*job));
  }
  data.since_training = 0;
  return Status::Ok();
}

StatusOr<TrainedModel> LearnerDaemon::State::TrainAndStore(const std::string& campaign,
                                                           const TrainingJob& job,
                                                           std::vector<NamedMetrics>* metrics) {
  SCHEDFARM_ASSIGN_OR_RETURN(std::unique_ptr<PerformanceModel> model,
                             MakePerformanceModel(job.kind));
  TrainOptions train_options = options.train;
  double waited = 0;  // for foreground work, between epochs
  if (job.yields_to != nullptr) {
    train_options.between_epochs = [&job, &waited] {
      const auto yielded = std::chrono::steady_clock::now();
      job.yields_to->YieldToSteps(job.background);
      waited += SecondsSince(yielded);
      return job.stop == nullptr || !job.stop->load();
    };
  }
  const ModelKindInfo* kind = FindModelKind(job.kind);
  const bool warm_start =
      job.start != nullptr && kind != nullptr && (kind->warm_starts || job.fine_tune);
  if (warm_start) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string start, job.start->Save());
    SCHEDFARM_RETURN_IF_ERROR(model->Load(start));
    train_options.warm_start = true;
  }
  const auto started = std::chrono::steady_clock::now();
  SCHEDFARM_RETURN_IF_ERROR(model->Train(job.train, train_options));
  const double seconds = SecondsSince(started) - waited;
  Model record;
  record.set_kind(job.kind);
  record.set_created_unix_ms(UnixMillis());
  // Unique across retrainings, restarts and learners: the store keys models by version.
  record.set_version(campaign + "-" + job.kind + (job.version_tag.empty() ? "" : "-") +
                     job.version_tag + "-" + std::to_string(record.created_unix_ms()));
  record.set_campaign(campaign);
  record.set_training_set_size(static_cast<int64_t>(job.train.size()));
  record.set_feature_schema_version(CurrentFeatureSchema().version);
  if (train_options.learning_rate_scale != 1) {
    record.set_test_learning_rate_scale(train_options.learning_rate_scale);
  }
  for (const std::string& id : job.held_out_pipelines) record.add_held_out_pipelines(id);
  record.set_held_out_size(static_cast<int64_t>(job.held_out.size()));
  if (!job.held_out.empty()) {
    StatusOr<EvalMetrics> evaluated = EvaluateModel(*model, job.held_out);
    if (evaluated.ok()) {
      for (const auto& [name, value] : MetricsAsMap(*evaluated)) {
        (*record.mutable_metrics())[name] = value;
      }
      metrics->push_back({job.kind, *evaluated});
    }
  }
  (*record.mutable_metrics())["train_seconds"] = seconds;
  SCHEDFARM_ASSIGN_OR_RETURN(std::string weights, model->Save());
  record.set_weights(std::move(weights));
  ClientRequest request;
  *request.mutable_store_model()->mutable_model() = record;
  SCHEDFARM_RETURN_IF_ERROR(Call(request).status());
  LogEvent("info", "model_trained",
           {{"campaign", campaign},
            {"model", record.version()},
            {"train", std::to_string(job.train.size())},
            {"held_out", std::to_string(job.held_out.size())},
            {"warm_start", !warm_start     ? "no"
                           : job.fine_tune ? "from the pretrained model"
                                           : "yes"},
            {"seconds", std::to_string(seconds)}});
  return TrainedModel{std::move(model), record.version()};
}

StatusOr<TrainedModel> LoadStoredModel(const Model& stored) {
  const std::string what = "stored model '" + stored.version() + "'";
  StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(stored.kind());
  if (!model.ok()) return model.status().WithContext(what);
  SCHEDFARM_RETURN_IF_ERROR((*model)->Load(stored.weights()).WithContext(what));
  return TrainedModel{std::move(*model), stored.version()};
}

Status LearnerDaemon::State::Resume(CampaignData& data) {
  if (!PerPipelineSearch(data.config) || !data.config.strategy().model_from().empty() ||
      data.config.has_replay()) {
    return Status::Ok();
  }
  const std::string kind = StrategyModel(data.config);
  ClientRequest request;
  request.mutable_models()->set_campaign(data.id);
  request.mutable_models()->set_kind(kind);
  request.mutable_models()->set_with_weights(true);
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(request));
  if (reply.models().models_size() == 0) return Status::Ok();
  const Model& stored = reply.models().models(0);  // newest first
  StatusOr<TrainedModel> model = LoadStoredModel(stored);
  if (!model.ok()) {
    LogEvent(
        "warn", "stored_model_unusable",
        {{"campaign", data.id}, {"model", stored.version()}, {"error", model.status().message()}});
    return Status::Ok();  // the campaign trains its own as if it had none
  }
  data.newest[kind] = *model;
  data.scorer = std::move(*model);
  // Retraining waits for what the stored model did not see (its training and
  // held-out samples were the campaign's samples when it was trained).
  const int64_t seen = stored.training_set_size() + stored.held_out_size();
  data.since_training = std::max<int64_t>(0, static_cast<int64_t>(data.samples.size()) - seen);
  LogEvent("info", "model_resumed",
           {{"campaign", data.id},
            {"model", stored.version()},
            {"samples", std::to_string(data.samples.size())},
            {"new_since", std::to_string(data.since_training)}});
  SearchUnder(data);
  return Status::Ok();
}

StatusOr<std::optional<TrainedModel>> LearnerDaemon::State::NewestStoredModel(
    const std::string& source, const std::string& kind) {
  ClientRequest request;
  request.mutable_models()->set_campaign(source);
  request.mutable_models()->set_kind(kind);
  request.mutable_models()->set_with_weights(true);
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(request));
  if (reply.models().models_size() == 0) return std::optional<TrainedModel>();
  const Model& stored = reply.models().models(0);  // newest first
  SCHEDFARM_ASSIGN_OR_RETURN(TrainedModel model, LoadStoredModel(stored));
  return std::optional<TrainedModel>(std::move(model));
}

// A campaign that starts under a pretrained model (model_from: pretrained, or
// pretrained:NAME; pretrained/pretrained.h): the model of the strategy's kind for the
// host kind of the farm's workers becomes the scorer and the start of the campaign's
// first training (a fine-tuning where the kind warm-starts). False while no worker that
// measures is alive: the host kind is not known yet. A model that does not fit (another
// kind, schema or host kind) is refused and none found is said so; either way the
// campaign goes on as without one.
StatusOr<bool> LearnerDaemon::State::SeedPretrained(CampaignData& data) {
  SCHEDFARM_ASSIGN_OR_RETURN(const std::optional<HostFingerprint> host, ServingWorker(data.config));
  if (!host) return false;
  const std::string& model_from = data.config.strategy().model_from();
  const std::string kind = StrategyModel(data.config);
  data.seeded = true;
  bool found = false;
  std::string why_none, host_note;
  StatusOr<PretrainedModel> pretrained =
      ResolvePretrained(options.pretrained_dir, model_from, kind, CurrentFeatureSchema().version,
                        *host, &found, &why_none, &host_note);
  if (!pretrained.ok()) {
    LogEvent("warn", "pretrained_refused",
             {{"campaign", data.id}, {"model_from", model_from},
              {"error", pretrained.status().message()}});
    return true;
  }
  if (!found) {
    LogEvent("warn", "pretrained_missing", {{"campaign", data.id}, {"why", why_none}});
    return true;
  }
  StatusOr<TrainedModel> model = LoadStoredModel(pretrained->model());
  if (!model.ok()) {
    LogEvent("warn", "pretrained_refused",
             {{"campaign", data.id}, {"model_from", model_from},
              {"error", "pretrained model '" + pretrained->name() + "': " +
                            model.status().message()}});
    return true;
  }
  model->version = "pretrained:" + pretrained->model().version();
  data.pretrained = *model;
  data.scorer = *model;
  data.newest[kind] = std::move(*model);
  LogEvent("info", "model_seeded",
           {{"campaign", data.id},
            {"model", data.scorer.version},
            {"from", PretrainedPath(options.pretrained_dir, pretrained->name())},
            {"host", host_note.empty() ? "the model's own host kind" : host_note}});
  SearchUnder(data);
  return true;
}

// A campaign whose strategy starts under another campaign's model (model_from): the
// newest stored model of the strategy's kind of that campaign (by id, else the newest
// of that name) becomes the scorer; trained on it first when it ended without one.
// False while that campaign still runs: the searches wait for its model.
StatusOr<bool> LearnerDaemon::State::Seed(CampaignData& data) {
  const Strategy& strategy = data.config.strategy();
  if (IsPretrainedSource(strategy.model_from())) return SeedPretrained(data);
  ClientRequest request;
  request.mutable_status();  // every campaign: model_from names one by id or name
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply statuses, Call(request));
  const Campaign* source = nullptr;
  for (const CampaignStatus& status : statuses.status().campaigns()) {
    const Campaign& c = status.campaign();
    if (c.id() == data.id) continue;  // its own models come from its own retraining
    if (c.id() == strategy.model_from()) {
      source = &c;
      break;
    }
    if (c.name() == strategy.model_from() &&
        (source == nullptr || c.submitted_unix_ms() > source->submitted_unix_ms())) {
      source = &c;
    }
  }
  if (source == nullptr) {
    LogEvent("warn", "model_source_missing",
             {{"campaign", data.id}, {"model_from", strategy.model_from()}});
    data.seeded = true;  // random proposals until the campaign trains its own
    return true;
  }
  if (source->state() == CAMPAIGN_RUNNING || source->state() == CAMPAIGN_PAUSED) return false;
  SCHEDFARM_ASSIGN_OR_RETURN(std::optional<TrainedModel> stored,
                             NewestStoredModel(source->id(), strategy.model()));
  if (stored) {
    data.scorer = std::move(*stored);
  } else {
    CampaignData trained;
    SCHEDFARM_RETURN_IF_ERROR(Load(*source, std::nullopt, &trained));
    SCHEDFARM_RETURN_IF_ERROR(Follow(trained));
    std::vector<NamedMetrics> table;
    SCHEDFARM_RETURN_IF_ERROR(Train(trained, &table, {strategy.model()}));
    if (trained.newest.count(strategy.model()) == 0) {
      return Status::Error("campaign " + source->id() + " (model_from) gave no " +
                           strategy.model() + " model: " + std::to_string(trained.samples.size()) +
                           " samples");
    }
    data.scorer = trained.newest[strategy.model()];
  }
  data.seeded = true;
  LogEvent("info", "model_seeded",
           {{"campaign", data.id}, {"model", data.scorer.version}, {"from", source->id()}});
  SearchUnder(data);
  return true;
}

// Every pipeline's search goes on under the campaign's newest model.
void LearnerDaemon::State::SearchUnder(CampaignData& data) {
  for (CampaignData::PipelineData& pipeline : data.pipelines) {
    if (!pipeline.search) continue;
    Status set = pipeline.search->SetModel(std::make_unique<PerformanceCostModel>(
        data.scorer.model, data.scorer.version, *pipeline.featurizer,
        FindModelKind(data.scorer.model->kind())->partial));
    if (!set.ok()) {
      LogEvent("warn", "search_refused_model",
               {{"campaign", data.id}, {"pipeline", pipeline.id}, {"error", set.message()}});
    }
  }
}

namespace {

// How much each pipeline is served (batch_shares.h): nothing when its search has
// nothing left; evenly; or, for an acquisition that shares by error, by the mean of its
// recent model errors, floored at a noise-level 0.05 so that none starves, a pipeline
// no model has scored yet weighing as much as the most wrong one.
std::vector<double> PipelineWeights(const CampaignData& data) {
  const AcquisitionInfo* acquisition = FindAcquisition(data.config.strategy().acquisition());
  const bool by_error = acquisition != nullptr && acquisition->shares_by_error;
  std::vector<double> weights;
  double most_wrong = 0;
  for (const CampaignData::PipelineData& pipeline : data.pipelines) {
    double weight = 1;
    if (by_error && !pipeline.model_errors.empty()) {
      double sum = 0;
      for (double error : pipeline.model_errors) sum += error;
      weight = std::max(0.05, sum / static_cast<double>(pipeline.model_errors.size()));
      most_wrong = std::max(most_wrong, weight);
    } else if (by_error) {
      weight = -1;  // not scored yet: set below
    }
    if (!pipeline.search || pipeline.search->Exhausted()) weight = 0;
    weights.push_back(weight);
  }
  for (double& weight : weights) {
    if (weight < 0) weight = most_wrong > 0 ? most_wrong : 1;
  }
  return weights;
}

// Up to `n` re-measurements of the campaign's most uncertain near-ties
// (search/near_ties.h), at most one per pipeline; returns how many were added.
int AddRemeasurements(CampaignData& data, int n, ProposeCandidates* proposal) {
  std::vector<const RepeatedSchedule*> all;
  for (const CampaignData::PipelineData& pipeline : data.pipelines) {
    for (const RepeatedSchedule& schedule : pipeline.measured) all.push_back(&schedule);
  }
  const double noise = MeasurementNoise(all);
  std::vector<std::pair<NearTie, size_t>> ties;  // with the pipeline's index
  for (size_t p = 0; p < data.pipelines.size(); ++p) {
    if (std::optional<NearTie> tie = FindNearTie(data.pipelines[p].measured, noise)) {
      ties.emplace_back(*tie, p);
    }
  }
  std::stable_sort(ties.begin(), ties.end(),
                   [](const auto& a, const auto& b) { return a.first.gap_z < b.first.gap_z; });
  ties.resize(std::min(ties.size(), static_cast<size_t>(std::max(n, 0))));
  for (const auto& [tie, p] : ties) {
    RepeatedSchedule& schedule = data.pipelines[p].measured[tie.remeasure];
    Candidate* candidate = proposal->add_candidates();
    candidate->set_pipeline_id(data.pipelines[p].id);
    *candidate->mutable_schedule() = schedule.schedule;
    candidate->set_schedule_hash(schedule.hash);
    candidate->set_origin("remeasure");
    candidate->set_acquisition("near-tie");
    candidate->set_acquisition_score(-tie.gap_z);
    candidate->set_repeat(schedule.next_repeat++);
    schedule.pending = true;
  }
  return static_cast<int>(ties.size());
}

}  // namespace

// One batch, spread over the pipelines: each pipeline's search proposes its share.
Status LearnerDaemon::State::Propose(CampaignData& data, const CampaignStatus& status) {
  const Strategy& strategy = data.config.strategy();
  const int batch = std::max(1, strategy.batch());
  if (status.campaign().counters().queued() >= batch || data.pipelines.empty()) {
    return Status::Ok();
  }
  if (data.network) return ProposeNetworkRound(data, status);
  ProposeCandidates proposal;
  proposal.set_campaign(data.id);
  const auto started = std::chrono::steady_clock::now();
  const int remeasured =
      strategy.remeasure() > 0
          ? AddRemeasurements(data, static_cast<int>(std::lround(strategy.remeasure() * batch)),
                              &proposal)
          : 0;
  const std::vector<int> shares =
      ShareBatch(batch - remeasured, PipelineWeights(data), &data.share_credit);
  for (size_t p = 0; p < data.pipelines.size(); ++p) {
    const int share = shares[p];
    CampaignData::PipelineData& pipeline = data.pipelines[p];
    if (share == 0 || !pipeline.search) continue;
    std::string failure;
    const auto search_started = std::chrono::steady_clock::now();
    std::vector<Candidate> candidates = pipeline.search->Propose(share, &failure);
    const double search_seconds = SecondsSince(search_started);
    for (Candidate& candidate : candidates) {
      candidate.set_search_seconds(search_seconds / static_cast<double>(candidates.size()));
      *proposal.add_candidates() = std::move(candidate);
    }
    if (!failure.empty()) {
      LogEvent("warn", "search_failed",
               {{"campaign", data.id}, {"pipeline", pipeline.id}, {"error", failure}});
      proposal.add_search_failures("pipeline " + pipeline.id + ": " + failure);
    }
  }
  if (proposal.candidates_size() == 0 && proposal.search_failures_size() == 0) {
    return CompleteIfExhausted(data);
  }
  const double seconds = SecondsSince(started);
  for (Candidate& candidate : *proposal.mutable_candidates()) {
    candidate.set_vector_bytes(data.vector_bytes);  // the width its spaces are sized for
  }
  ClientRequest request;
  *request.mutable_propose() = std::move(proposal);
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(request));
  LogEvent("info", "proposed",
           {{"campaign", data.id},
            {"strategy", strategy.name()},
            {"accepted", std::to_string(reply.proposed().accepted())},
            {"duplicates", std::to_string(reply.proposed().duplicates())},
            {"refused", std::to_string(reply.proposed().refused_size())},
            {"search_seconds", std::to_string(seconds)},
            {"model", data.scorer.version.empty() ? "none" : data.scorer.version}});
  return Status::Ok();
}

// A campaign none of whose searches has anything left to propose (a replay campaign
// whose pool is measured, a space smaller than the budget) is completed: the
// coordinator ends it once its candidates in flight are final.
Status LearnerDaemon::State::CompleteIfExhausted(CampaignData& data) {
  if (data.exhausted) return Status::Ok();
  for (const CampaignData::PipelineData& pipeline : data.pipelines) {
    if (!pipeline.search || !pipeline.search->Exhausted()) return Status::Ok();
  }
  ClientRequest request;
  request.mutable_complete()->set_campaign(data.id);
  SCHEDFARM_RETURN_IF_ERROR(Call(std::move(request)).status());
  data.exhausted = true;
  LogEvent("info", "search_exhausted", {{"campaign", data.id}});
  return Status::Ok();
}

LearnerDaemon::LearnerDaemon(std::unique_ptr<State> state) : state_(std::move(state)) {}
LearnerDaemon::~LearnerDaemon() = default;

StatusOr<std::unique_ptr<LearnerDaemon>> LearnerDaemon::Create(const LearnerOptions& options) {
  for (const std::string& kind : options.kinds) {
    SCHEDFARM_RETURN_IF_ERROR(MakePerformanceModel(kind).status());
  }
  auto state = std::make_unique<State>();
  state->options = options;
  // Bounded whatever the kind: the library defaults take every cpu, which beside busy
  // workers makes OpenMP's threads wait on each other.
  if (state->options.train.threads == 0) {
    state->options.train.threads = std::max<int>(1, static_cast<int>(AllowedCpus().size()));
  }
  if (state->options.pretrained_dir.empty()) state->options.pretrained_dir = DefaultPretrainedDir();
  // OpenBLAS's pool is the process's: sized once, never while a thread may be inside it.
  SetBlasThreads(state->options.train.threads);
  state->gate = std::make_shared<ComputeGate>();
  SCHEDFARM_ASSIGN_OR_RETURN(state->client, FarmClient::Create(options.client));
  return std::unique_ptr<LearnerDaemon>(new LearnerDaemon(std::move(state)));
}

// One turn of a campaign: follow its new measurements, retrain when due, settle the
// model it starts from and propose. `added`: the campaign's first turn in this thread.
// The caller holds the gate in the foreground.
Status LearnerDaemon::State::Step(CampaignData& data, const CampaignStatus& status,
                                  bool added) {
  const Campaign& campaign = status.campaign();
  if (added) {
    SCHEDFARM_ASSIGN_OR_RETURN(const CampaignConfig config,
                               CampaignConfigFromJson(campaign.config_json()));
    SCHEDFARM_ASSIGN_OR_RETURN(const std::optional<HostFingerprint> worker, ServingWorker(config));
    // A campaign the learner proposes for waits for a worker: its searches featurize
    // schedules for that worker's host.
    if (!worker && LearnerProposes(config)) return Status::Ok();
    SCHEDFARM_RETURN_IF_ERROR(Load(campaign, worker, &data));
  }
  SCHEDFARM_RETURN_IF_ERROR(Follow(data));
  if (added) SCHEDFARM_RETURN_IF_ERROR(Resume(data));
  if (data.network && LearnerProposes(data.config) && campaign.state() == CAMPAIGN_RUNNING) {
    SCHEDFARM_RETURN_IF_ERROR(ProposeTemplatesAssembly(data));
  }
  const Strategy& strategy = data.config.strategy();
  // Proposals come from the learner, under a model settled or none to wait for.
  const auto proposes = [&] {
    return LearnerProposes(data.config) && (strategy.model_from().empty() || data.seeded) &&
           campaign.state() == CAMPAIGN_RUNNING;
  };
  const int every =
      strategy.retrain_every() > 0 ? strategy.retrain_every() : options.default_retrain_every;
  // A value-iteration campaign trains its own V_i instead (value_iteration.cc).
  const int64_t trained_on = static_cast<int64_t>(data.samples.size()) - data.since_training;
  const double due = std::max<double>(every, strategy.retrain_growth() * trained_on);
  CampaignStatus now = status;
  if (!data.value && data.since_training >= due &&
      static_cast<int>(data.samples.size()) >= options.min_training_samples) {
    // The workers keep a batch to measure, chosen under the model before, while the
    // new one trains.
    if (proposes()) {
      SCHEDFARM_RETURN_IF_ERROR(Propose(data, status));
      ClientRequest request;
      request.mutable_status()->set_campaign(data.id);
      SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(request));
      if (reply.status().campaigns_size() != 1) return Status::Ok();
      now = reply.status().campaigns(0);
    }
    std::vector<NamedMetrics> table;
    SCHEDFARM_RETURN_IF_ERROR(Train(data, &table));
  }
  if (!LearnerProposes(data.config)) return Status::Ok();
  if (!strategy.model_from().empty() && !data.seeded) {
    StatusOr<bool> seeded = Seed(data);
    if (!seeded.ok()) {
      data.seeded = true;  // random proposals go on
      return seeded.status();
    }
    if (!*seeded) return Status::Ok();
  }
  if (now.campaign().state() != CAMPAIGN_RUNNING) return Status::Ok();
  return data.value ? StepValueIteration(data) : Propose(data, now);
}

namespace {

// Sleeps until `deadline` or until `stop` is set.
void SleepUntil(std::chrono::steady_clock::time_point deadline, const std::atomic<bool>& stop) {
  while (!stop.load() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool Active(const Campaign& campaign) {
  return campaign.state() == CAMPAIGN_RUNNING || campaign.state() == CAMPAIGN_PAUSED;
}

}  // namespace

// A campaign's thread: a connection of its own, and the campaign stepped every poll
// interval until it is no longer active or the learner stops.
void LearnerDaemon::State::FollowCampaign(const std::string& id, const std::atomic<bool>& stop) {
  SetTorchThreads(options.train.threads);  // OpenMP's thread count is the calling thread's
  CampaignData data;
  bool loaded = false;
  while (!stop.load()) {
    const auto turn = std::chrono::steady_clock::now();
    ClientRequest request;
    request.mutable_status()->set_campaign(id);
    StatusOr<ClientReply> reply = Call(request);
    if (!reply.ok()) {
      LogEvent("warn", "coordinator_unavailable",
               {{"campaign", id}, {"error", reply.status().message()}});
    } else {
      if (reply->status().campaigns_size() != 1) return;
      const CampaignStatus& status = reply->status().campaigns(0);
      if (!Active(status.campaign())) return;
      const Status step = [&] {
        ComputeGate::Hold hold = gate->Foreground();
        return Step(data, status, !loaded);
      }();
      if (!data.pipelines.empty()) loaded = true;  // (empty: waiting for a serving worker)
      if (!step.ok()) {
        LogEvent("warn", "campaign_step_failed", {{"campaign", id}, {"error", step.message()}});
        if (!loaded) data = CampaignData();  // loaded again next turn
      }
    }
    SleepUntil(turn + std::chrono::milliseconds(options.poll_interval_ms), stop);
  }
}

Status LearnerDaemon::Run(const std::atomic<bool>& stop) {
  State& s = *state_;
  // Each active campaign steps on a thread of its own, so one campaign's search or
  // training never holds back another's proposals.
  struct Follower {
    std::unique_ptr<State> state;
    std::atomic<bool> done{false};
    std::thread thread;
  };
  // The kinds the campaigns' strategies do not search under train on a thread of its
  // own, behind the followers' work; started with the first follower.
  std::unique_ptr<BackgroundTrainer> trainer;
  std::map<std::string, std::unique_ptr<Follower>> followers;
  // The followers' stop: the caller's, or an error here. Every follower is joined before
  // Run returns, whatever ends it.
  std::atomic<bool> halt{false};
  Status ended = Status::Ok();
  // A campaign's follower, or an error naming the campaign (its connection or its
  // thread could not be made).
  auto follow = [&](const std::string& id) -> Status {
    auto follower = std::make_unique<Follower>();
    try {
      if (trainer == nullptr) {
        StatusOr<std::unique_ptr<State>> state = s.Fork();
        if (!state.ok()) return state.status();
        trainer = std::make_unique<BackgroundTrainer>(std::move(*state));
      }
      StatusOr<std::unique_ptr<State>> state = s.Fork();
      if (!state.ok()) return state.status();
      follower->state = std::move(*state);
      follower->state->background = trainer.get();
      Follower* f = follower.get();
      f->thread = std::thread([f, id, &halt] {
        f->state->FollowCampaign(id, halt);
        f->done.store(true);
      });
    } catch (const std::exception& e) {  // zmq::error_t, std::system_error
      return Status::Error(e.what());
    }
    followers.emplace(id, std::move(follower));
    return Status::Ok();
  };
  while (!stop.load() && ended.ok()) {
    const auto turn = std::chrono::steady_clock::now();
    for (auto it = followers.begin(); it != followers.end();) {
      if (!it->second->done.load()) {
        ++it;
        continue;
      }
      it->second->thread.join();
      it = followers.erase(it);
    }
    ClientRequest request;
    request.mutable_status();
    StatusOr<ClientReply> reply = s.Call(request);
    if (!reply.ok()) {
      LogEvent("warn", "coordinator_unavailable", {{"error", reply.status().message()}});
    } else {
      for (const CampaignStatus& status : reply->status().campaigns()) {
        const std::string& id = status.campaign().id();
        if (!Active(status.campaign()) || followers.count(id)) continue;
        ended = follow(id).WithContext("following campaign '" + id + "'");
        if (!ended.ok()) break;
      }
    }
    if (ended.ok()) SleepUntil(turn + std::chrono::milliseconds(s.options.poll_interval_ms), stop);
  }
  halt.store(true);
  for (auto& [id, follower] : followers) follower->thread.join();
  trainer.reset();
  return ended;
}

StatusOr<std::unique_ptr<LearnerDaemon::State>> LearnerDaemon::State::Fork() const {
  auto state = std::make_unique<State>();
  state->options = options;
  state->gate = gate;
  SCHEDFARM_ASSIGN_OR_RETURN(state->client, FarmClient::Create(options.client));
  return state;
}

StatusOr<std::vector<NamedMetrics>> LearnerDaemon::TrainCampaign(const std::string& campaign_id) {
  State& s = *state_;
  SetTorchThreads(s.options.train.threads);
  ClientRequest request;
  request.mutable_status()->set_campaign(campaign_id);
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, s.Call(request));
  if (reply.status().campaigns_size() != 1) {
    return Status::Error("the coordinator has no campaign '" + campaign_id + "'");
  }
  CampaignData data;
  SCHEDFARM_RETURN_IF_ERROR(s.Load(reply.status().campaigns(0).campaign(), std::nullopt, &data));
  SCHEDFARM_RETURN_IF_ERROR(s.Follow(data));
  if (static_cast<int>(data.samples.size()) < s.options.min_training_samples) {
    return Status::Error("campaign '" + campaign_id + "' has " +
                         std::to_string(data.samples.size()) +
                         " OK measurements of scheduled candidates; training needs " +
                         std::to_string(s.options.min_training_samples));
  }
  std::vector<NamedMetrics> table;
  ComputeGate::Hold hold = s.gate->Foreground();
  SCHEDFARM_RETURN_IF_ERROR(s.Train(data, &table, s.options.kinds));  // every kind, replays too
  return table;
}

}  // namespace schedfarm
