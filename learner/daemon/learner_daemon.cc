#include "learner/daemon/learner_daemon.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>
#include <unordered_set>

#include "campaign/campaign_yaml.h"
#include "common/log.h"
#include "learner/features.h"
#include "learner/gbt/gbt_model.h"
#include "learner/metrics.h"
#include "learner/roofline.h"
#include "learner/split.h"
#include "learner/torch/torch_models.h"
#include "pipeline/graph.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

namespace {

constexpr int kExportPageRows = 1000;

std::string Key(const std::string& pipeline_id, const std::string& schedule_hash) {
  return pipeline_id + '\0' + schedule_hash;
}

bool LearnerStrategy(const Strategy& strategy) {
  return strategy.kind() == STRATEGY_MODEL_GUIDED || strategy.kind() == STRATEGY_UNCERTAINTY;
}

}  // namespace

StatusOr<std::unique_ptr<PerformanceModel>> MakePerformanceModel(const std::string& kind) {
  if (kind == "gcn" || kind == "gcn0" || kind == "lann") return MakeTorchModel(kind);
  if (kind == "gbt") return std::unique_ptr<PerformanceModel>(std::make_unique<GbtModel>());
  if (kind == "roofline") {
    return std::unique_ptr<PerformanceModel>(std::make_unique<RooflineModel>());
  }
  return Status::Error("unknown model kind '" + kind + "' (known: gcn, gcn0, lann, gbt, roofline)");
}

// What the learner keeps of one campaign.
struct CampaignData {
  struct PipelineData {
    std::string id;
    std::unique_ptr<PipelineGraph> graph;
    std::unique_ptr<ScheduleSpace> space;
    std::unique_ptr<Featurizer> featurizer;
  };
  std::string id;
  CampaignConfig config;
  std::vector<PipelineData> pipelines;
  std::map<std::string, size_t> pipeline_index;
  uint64_t next_seq = 0;
  std::vector<Sample> samples;
  std::unordered_set<std::string> known;  // measured or proposed: pipeline\0hash
  int64_t since_training = 0;
  std::unique_ptr<PerformanceModel> scorer;  // the strategy's model, latest version
  std::string scorer_version;
  uint64_t next_sample_index = 0;
};

struct LearnerDaemon::State {
  LearnerOptions options;
  std::unique_ptr<FarmClient> client;
  std::map<std::string, CampaignData> campaigns;

  StatusOr<ClientReply> Call(ClientRequest request) {
    SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, client->Call(std::move(request)));
    if (reply.code() != CLIENT_OK) {
      return Status::Error(ClientErrorCode_Name(reply.code()) + ": " + reply.error());
    }
    return reply;
  }

  Status Load(const Campaign& campaign, CampaignData* data);
  Status Follow(CampaignData& data);
  Status Train(CampaignData& data, std::vector<NamedMetrics>* table);
  Status Propose(CampaignData& data, const CampaignStatus& status);
};

Status LearnerDaemon::State::Load(const Campaign& campaign, CampaignData* data) {
  data->id = campaign.id();
  SCHEDFARM_ASSIGN_OR_RETURN(data->config, CampaignConfigFromJson(campaign.config_json()));
  ClientRequest request;
  request.mutable_pipelines()->set_campaign(campaign.id());
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(request));
  for (const PipelineSpec& spec : reply.pipelines().pipelines()) {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(spec));
    CampaignData::PipelineData pipeline;
    pipeline.graph = std::make_unique<PipelineGraph>(std::move(graph));
    pipeline.space = std::make_unique<ScheduleSpace>(*pipeline.graph);
    pipeline.id = pipeline.space->pipeline_id();
    pipeline.featurizer = std::make_unique<Featurizer>(*pipeline.space);
    data->pipeline_index[pipeline.id] = data->pipelines.size();
    data->pipelines.push_back(std::move(pipeline));
  }
  LogEvent("info", "campaign_followed",
           {{"campaign", data->id},
            {"pipelines", std::to_string(data->pipelines.size())},
            {"strategy", StrategyKind_Name(data->config.strategy().kind())}});
  return Status::Ok();
}

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
      data.known.insert(Key(m.candidate().pipeline_id(), m.candidate().schedule_hash()));
      const double median = m.stats().median_seconds();
      if (m.status() != OK || !(median > 0) || m.candidate().schedule().stages_size() == 0) {
        continue;
      }
      auto pipeline = data.pipeline_index.find(m.candidate().pipeline_id());
      if (pipeline == data.pipeline_index.end()) continue;
      Sample sample;
      sample.pipeline_id = m.candidate().pipeline_id();
      sample.schedule_hash = m.candidate().schedule_hash();
      sample.seconds = median;
      sample.stddev_seconds = m.stats().stddev_seconds();
      Status featurized = data.pipelines[pipeline->second].featurizer->Featurize(
          m.candidate().schedule(), &sample.features);
      if (!featurized.ok()) {
        LogEvent("warn", "sample_skipped",
                 {{"campaign", data.id},
                  {"seq", std::to_string(row.seq())},
                  {"error", featurized.message()}});
        continue;
      }
      data.samples.push_back(std::move(sample));
      ++data.since_training;
    }
    data.next_seq = std::max(data.next_seq, page.next_seq());
    if (page.done()) return Status::Ok();
  }
}

// Trains every kind on the same split, evaluates each on the held-out pipelines and
// stores it; the strategy's kind becomes the campaign's scorer.
Status LearnerDaemon::State::Train(CampaignData& data, std::vector<NamedMetrics>* table) {
  std::vector<std::string> ids;
  for (const Sample& sample : data.samples) ids.push_back(sample.pipeline_id);
  const std::set<std::string> distinct(ids.begin(), ids.end());
  PipelineSplit split;
  if (distinct.size() >= 2) {
    SCHEDFARM_ASSIGN_OR_RETURN(split,
                               SplitByPipeline(ids, options.seed, options.held_out_fraction));
  } else {
    split.train.assign(distinct.begin(), distinct.end());  // one pipeline: nothing to hold out
  }
  std::vector<Sample> train;
  std::vector<Sample> held_out;
  SCHEDFARM_RETURN_IF_ERROR(SplitSamples(data.samples, split, &train, &held_out));
  if (train.empty()) return Status::Ok();

  const std::string strategy_model =
      data.config.strategy().model().empty() ? "gcn" : data.config.strategy().model();
  std::vector<std::string> kinds = options.kinds;
  if (std::find(kinds.begin(), kinds.end(), strategy_model) == kinds.end()) {
    kinds.push_back(strategy_model);
  }
  table->clear();
  for (const std::string& kind : kinds) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::unique_ptr<PerformanceModel> model, MakePerformanceModel(kind));
    const auto started = std::chrono::steady_clock::now();
    Status trained = model->Train(train, options.train);
    if (!trained.ok()) {
      LogEvent("warn", "training_failed",
               {{"campaign", data.id}, {"model", kind}, {"error", trained.message()}});
      continue;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    Model record;
    record.set_kind(kind);
    record.set_created_unix_ms(UnixMillis());
    // Unique across retrainings, restarts and learners: the store keys models by version.
    record.set_version(data.id + "-" + kind + "-" + std::to_string(record.created_unix_ms()));
    record.set_campaign(data.id);
    record.set_training_set_size(static_cast<int64_t>(train.size()));
    record.set_feature_schema_version(CurrentFeatureSchema().version);
    for (const std::string& id : split.held_out) record.add_held_out_pipelines(id);
    record.set_held_out_size(static_cast<int64_t>(held_out.size()));
    if (!held_out.empty()) {
      StatusOr<EvalMetrics> metrics = EvaluateModel(*model, held_out);
      if (metrics.ok()) {
        for (const auto& [name, value] : MetricsAsMap(*metrics)) {
          (*record.mutable_metrics())[name] = value;
        }
        table->push_back({kind, *metrics});
      }
    }
    (*record.mutable_metrics())["train_seconds"] = seconds;
    SCHEDFARM_ASSIGN_OR_RETURN(std::string weights, model->Save());
    record.set_weights(std::move(weights));
    ClientRequest request;
    *request.mutable_store_model()->mutable_model() = record;
    SCHEDFARM_RETURN_IF_ERROR(Call(request).status());
    LogEvent("info", "model_trained",
             {{"campaign", data.id},
              {"model", record.version()},
              {"train", std::to_string(train.size())},
              {"held_out", std::to_string(held_out.size())},
              {"seconds", std::to_string(seconds)}});
    if (kind == strategy_model) {
      data.scorer = std::move(model);
      data.scorer_version = record.version();
    }
  }
  if (!table->empty()) {
    LogEvent("info", "models_evaluated",
             {{"campaign", data.id}, {"table", "\n" + FormatMetricsTable(*table)}});
  }
  data.since_training = 0;
  return Status::Ok();
}

// One batch: random schedules of the pipelines in turn, scored by the model when there
// is one; the best predicted (model-guided) or the most uncertain (uncertainty) of each
// pipeline's share, plus an epsilon share of random ones.
Status LearnerDaemon::State::Propose(CampaignData& data, const CampaignStatus& status) {
  const Strategy& strategy = data.config.strategy();
  const int batch = std::max(1, strategy.batch());
  if (status.campaign().counters().queued() >= batch || data.pipelines.empty()) {
    return Status::Ok();
  }
  const size_t num_pipelines = data.pipelines.size();
  const int64_t sample_size = std::max<int64_t>(strategy.sample_size(), batch);
  ProposeCandidates proposal;
  proposal.set_campaign(data.id);
  for (size_t p = 0; p < num_pipelines; ++p) {
    const int share = batch / static_cast<int>(num_pipelines) +
                      (static_cast<int>(p) < batch % static_cast<int>(num_pipelines) ? 1 : 0);
    if (share == 0) continue;
    CampaignData::PipelineData& pipeline = data.pipelines[p];
    // Distinct new schedules of this pipeline.
    std::vector<ScheduleSpec> schedules;
    std::vector<std::string> hashes;
    std::unordered_set<std::string> seen;
    const int64_t wanted =
        std::max<int64_t>(share, sample_size / static_cast<int64_t>(num_pipelines));
    for (int64_t attempt = 0;
         attempt < wanted * 4 && static_cast<int64_t>(schedules.size()) < wanted; ++attempt) {
      ScheduleSpec schedule =
          pipeline.space->RandomSchedule(MixSeed(strategy.seed(), data.next_sample_index++));
      std::string hash = ScheduleHash(*pipeline.space, schedule);
      if (data.known.count(Key(pipeline.id, hash)) || !seen.insert(hash).second) continue;
      schedules.push_back(std::move(schedule));
      hashes.push_back(std::move(hash));
    }
    if (schedules.empty()) continue;
    std::vector<RuntimePrediction> predictions(schedules.size());
    std::vector<size_t> order(schedules.size());
    std::iota(order.begin(), order.end(), 0);
    int random_share = share;
    if (data.scorer) {
      std::vector<PipelineFeatures> features(schedules.size());
      std::vector<const PipelineFeatures*> pointers;
      for (size_t i = 0; i < schedules.size(); ++i) {
        SCHEDFARM_RETURN_IF_ERROR(pipeline.featurizer->Featurize(schedules[i], &features[i]));
        pointers.push_back(&features[i]);
      }
      SCHEDFARM_ASSIGN_OR_RETURN(predictions, data.scorer->Predict(pointers));
      const bool uncertainty = strategy.kind() == STRATEGY_UNCERTAINTY;
      auto score = [&](size_t i) {
        const RuntimePrediction& r = predictions[i];
        return uncertainty ? -(r.stddev_seconds / std::max(r.mean_seconds, 1e-12)) : r.mean_seconds;
      };
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return score(a) < score(b); });
      random_share = static_cast<int>(std::lround(strategy.epsilon() * share));
    }
    const int guided = share - random_share;
    std::vector<size_t> chosen(order.begin(),
                               order.begin() + std::min<size_t>(guided, order.size()));
    std::vector<size_t> rest(order.begin() + chosen.size(), order.end());
    std::mt19937_64 rng(MixSeed(strategy.seed(), data.next_sample_index++));
    std::shuffle(rest.begin(), rest.end(), rng);
    for (size_t i = 0; i < rest.size() && static_cast<int>(chosen.size()) < share; ++i) {
      chosen.push_back(rest[i]);
    }
    for (size_t rank = 0; rank < chosen.size(); ++rank) {
      const size_t i = chosen[rank];
      Candidate* candidate = proposal.add_candidates();
      candidate->set_pipeline_id(pipeline.id);
      *candidate->mutable_schedule() = schedules[i];
      candidate->set_schedule_hash(hashes[i]);
      const bool by_model = data.scorer && static_cast<int>(rank) < guided;
      candidate->set_origin(
          by_model ? (strategy.kind() == STRATEGY_UNCERTAINTY ? "uncertainty" : "model-guided")
                   : "random");
      if (data.scorer) {
        candidate->set_model_version(data.scorer_version);
        candidate->mutable_prediction()->set_mean_seconds(predictions[i].mean_seconds);
        candidate->mutable_prediction()->set_stddev_seconds(predictions[i].stddev_seconds);
      }
      data.known.insert(Key(pipeline.id, hashes[i]));
    }
  }
  if (proposal.candidates_size() == 0) return Status::Ok();
  ClientRequest request;
  *request.mutable_propose() = std::move(proposal);
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(request));
  LogEvent("info", "proposed",
           {{"campaign", data.id},
            {"accepted", std::to_string(reply.proposed().accepted())},
            {"duplicates", std::to_string(reply.proposed().duplicates())},
            {"refused", std::to_string(reply.proposed().refused_size())},
            {"model", data.scorer_version.empty() ? "none" : data.scorer_version}});
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
  SCHEDFARM_ASSIGN_OR_RETURN(state->client, FarmClient::Create(options.client));
  return std::unique_ptr<LearnerDaemon>(new LearnerDaemon(std::move(state)));
}

Status LearnerDaemon::Run(const std::atomic<bool>& stop) {
  State& s = *state_;
  while (!stop.load()) {
    const auto turn = std::chrono::steady_clock::now();
    ClientRequest request;
    request.mutable_status();
    StatusOr<ClientReply> reply = s.Call(request);
    if (!reply.ok()) {
      LogEvent("warn", "coordinator_unavailable", {{"error", reply.status().message()}});
    } else {
      for (const CampaignStatus& status : reply->status().campaigns()) {
        const Campaign& campaign = status.campaign();
        const bool active =
            campaign.state() == CAMPAIGN_RUNNING || campaign.state() == CAMPAIGN_PAUSED;
        if (!active || stop.load()) continue;
        auto [it, added] = s.campaigns.try_emplace(campaign.id());
        CampaignData& data = it->second;
        Status step = added ? s.Load(campaign, &data) : Status::Ok();
        if (step.ok()) step = s.Follow(data);
        const Strategy& strategy = data.config.strategy();
        const int every = strategy.retrain_every() > 0 ? strategy.retrain_every()
                                                       : s.options.default_retrain_every;
        if (step.ok() && data.since_training >= every &&
            static_cast<int>(data.samples.size()) >= s.options.min_training_samples) {
          std::vector<NamedMetrics> table;
          step = s.Train(data, &table);
        }
        if (step.ok() && LearnerStrategy(strategy) && campaign.state() == CAMPAIGN_RUNNING) {
          step = s.Propose(data, status);
        }
        if (!step.ok()) {
          LogEvent("warn", "campaign_step_failed",
                   {{"campaign", campaign.id()}, {"error", step.message()}});
          if (added && data.pipelines.empty()) s.campaigns.erase(campaign.id());
        }
      }
    }
    const auto next = turn + std::chrono::milliseconds(s.options.poll_interval_ms);
    while (!stop.load() && std::chrono::steady_clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return Status::Ok();
}

StatusOr<std::vector<NamedMetrics>> LearnerDaemon::TrainCampaign(const std::string& campaign_id) {
  State& s = *state_;
  ClientRequest request;
  request.mutable_status()->set_campaign(campaign_id);
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, s.Call(request));
  if (reply.status().campaigns_size() != 1) {
    return Status::Error("the coordinator has no campaign '" + campaign_id + "'");
  }
  CampaignData data;
  SCHEDFARM_RETURN_IF_ERROR(s.Load(reply.status().campaigns(0).campaign(), &data));
  SCHEDFARM_RETURN_IF_ERROR(s.Follow(data));
  if (static_cast<int>(data.samples.size()) < s.options.min_training_samples) {
    return Status::Error("campaign '" + campaign_id + "' has " +
                         std::to_string(data.samples.size()) +
                         " OK measurements of scheduled candidates; training needs " +
                         std::to_string(s.options.min_training_samples));
  }
  std::vector<NamedMetrics> table;
  SCHEDFARM_RETURN_IF_ERROR(s.Train(data, &table));
  return table;
}

}  // namespace schedfarm
