// value-iteration campaigns: the value-learning paper's Algorithm 2 with benchmarks
// from the farm (docs/MODELS.md, "Value iteration"). Every step is decided from what
// the coordinator holds (the stored rounds, models and candidates), so a restarted
// learner goes on where the last one stopped:
//   warm-up  `warmup` random schedules of every pipeline;
//   round 0  V0, the strategy's model kind trained on the warm-up of the pipelines not
//            held out (or the model_from campaign's model);
//   round i  noisy greedy rollouts under V_{i-1} on `pipelines_per_round` pipelines,
//            every prefix completed by beam search under V_{i-1}; the completions are
//            proposed, then the round is stored (planned). Once they are all final,
//            each prefix's target is the least runtime measured of the campaign's
//            complete schedules that extend it (V_{i-1}'s own prediction takes no part),
//            and V_i is V_{i-1} trained further on the complete schedules and the
//            prefixes of rounds 1..i (at their default completion, as V0 reads them,
//            or with read_at_defaults: 0 as they are); the round is stored again;
//   every V_i greedy and beam search under it on each held-out pipeline, benchmarked;
//   the end once the last round is fitted and its evaluations are final, the learner
//            completes the campaign.
// Candidates are always proposed before the round that lists them is stored, so a
// stored round's candidates are with the coordinator (or were refused by it).
#include <algorithm>
#include <set>

#include "common/log.h"
#include "learner/cost_model_adapter.h"
#include "learner_daemon/daemon_state.h"
#include "learner/value_targets.h"
#include "search/registry.h"
#include "search/stage_options.h"
#include "search/strategies/random_search.h"
#include "search/walks.h"

namespace schedfarm {
namespace {

using CandidateKeys = std::vector<std::pair<std::string, std::string>>;  // pipeline, hash

constexpr char kTargetRule[] = "measured";
constexpr int kProposeChunk = 64;  // candidates per propose request

struct ValueSettings {
  int rounds = 0;
  int pipelines_per_round = 0;
  int rollouts = 0;
  double noise = 0;
  int beam = 0;
  int64_t options = 0;
  int held_out = 0;
  int warmup = 0;
  bool read_at_defaults = false;
};

ValueSettings SettingsOf(const Strategy& strategy) {
  const StrategySettings s = ResolvedSettings(strategy);
  ValueSettings v;
  v.rounds = static_cast<int>(s.at("rounds"));
  v.pipelines_per_round = static_cast<int>(s.at("pipelines_per_round"));
  v.rollouts = static_cast<int>(s.at("rollouts"));
  v.noise = s.at("noise");
  v.beam = static_cast<int>(s.at("beam"));
  v.options = static_cast<int64_t>(s.at("options"));
  v.held_out = static_cast<int>(s.at("held_out"));
  v.warmup = static_cast<int>(s.at("warmup"));
  v.read_at_defaults = s.at("read_at_defaults") != 0;
  return v;
}

// The held-out pipelines are the campaign's last `held_out` ones.
size_t FirstHeldOut(const CampaignData& data, const ValueSettings& settings) {
  return data.pipelines.size() - std::min<size_t>(data.pipelines.size(), settings.held_out);
}

// A training job for V_`round` on the campaign's complete schedules: those of the
// held-out pipelines held out, the others to train on.
TrainingJob ValueJob(const CampaignData& data, const ValueSettings& settings, int round) {
  TrainingJob job;
  job.kind = data.config.strategy().model();
  job.version_tag = "v" + std::to_string(round);
  const size_t first_held_out = FirstHeldOut(data, settings);
  for (size_t p = first_held_out; p < data.pipelines.size(); ++p) {
    job.held_out_pipelines.push_back(data.pipelines[p].id);
  }
  for (const Sample& sample : data.samples) {
    const bool held_out = data.pipeline_index.at(sample.pipeline_id) >= first_held_out;
    (held_out ? job.held_out : job.train).push_back(sample);
  }
  return job;
}

// How V_i reads a partial schedule: V0 as its kind was trained; every later V_i, which
// predicts the best runtime reachable, from the prefix completed with the space's
// defaults as V0 reads it, or with read_at_defaults: 0 from the prefix itself.
PartialMeaning MeaningOf(const TrainedModel& value, int round, const ValueSettings& settings) {
  if (round == 0) return FindModelKind(value.model->kind())->partial;
  return settings.read_at_defaults ? PartialMeaning::kDefaultCompletion
                                   : PartialMeaning::kBestReachable;
}

// The random warm-up: the first `count` schedules of each pipeline's random stream.
StatusOr<std::vector<Candidate>> WarmupCandidates(const CampaignData& data, int count) {
  std::vector<Candidate> out;
  for (size_t p = 0; p < data.pipelines.size(); ++p) {
    RandomSearch random;
    SearchContext context;
    context.space = data.pipelines[p].space.get();
    context.seed = MixSeed(data.config.strategy().seed(), p);
    SCHEDFARM_RETURN_IF_ERROR(random.Init(context));
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<SearchProposal> proposals, random.Propose(count));
    for (SearchProposal& proposal : proposals) {
      out.push_back(ProposalCandidate(data.pipelines[p].id, std::move(proposal), random.name(), ""));
    }
  }
  return out;
}

CandidateKeys KeysOf(const std::vector<Candidate>& candidates) {
  CandidateKeys keys;
  for (const Candidate& c : candidates) keys.emplace_back(c.pipeline_id(), c.schedule_hash());
  return keys;
}

// A searched schedule as a candidate of `origin` under the value function `value`,
// scored by `acquisition`.
Candidate SearchedCandidate(const std::string& pipeline_id, const ScheduleSpace& space,
                            const WalkState& state, const std::string& origin,
                            const TrainedModel& value, const AcquisitionFunction& acquisition) {
  SearchProposal proposal;
  proposal.schedule = state.schedule;
  proposal.hash = ScheduleHash(space, state.schedule);
  proposal.predicted = true;
  proposal.prediction = state.prediction;
  proposal.acquisition = acquisition.name();
  proposal.acquisition_score = state.score;
  proposal.sampled_stages = state.sampled_stages;
  return ProposalCandidate(pipeline_id, std::move(proposal), origin, value.version);
}

}  // namespace

Status LearnerDaemon::State::ProposeCandidatesOf(CampaignData& data,
                                                 std::vector<Candidate> candidates,
                                                 const std::string& what) {
  int accepted = 0, duplicates = 0, over_budget = 0, refused = 0;
  for (size_t begin = 0; begin < candidates.size(); begin += kProposeChunk) {
    ClientRequest request;
    ProposeCandidates* proposal = request.mutable_propose();
    proposal->set_campaign(data.id);
    const size_t end = std::min(candidates.size(), begin + kProposeChunk);
    for (size_t i = begin; i < end; ++i) {
      candidates[i].set_vector_bytes(data.vector_bytes);  // the width its spaces are sized for
      *proposal->add_candidates() = std::move(candidates[i]);
    }
    SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(std::move(request)));
    accepted += reply.proposed().accepted();
    duplicates += reply.proposed().duplicates();
    over_budget += reply.proposed().over_budget();
    refused += reply.proposed().refused_size();
    for (const std::string& why : reply.proposed().refused()) {
      LogEvent("warn", "candidate_refused", {{"campaign", data.id}, {"what", what}, {"why", why}});
    }
  }
  LogEvent("info", "proposed",
           {{"campaign", data.id},
            {"what", what},
            {"accepted", std::to_string(accepted)},
            {"duplicates", std::to_string(duplicates)},
            {"over_budget", std::to_string(over_budget)},
            {"refused", std::to_string(refused)}});
  return Status::Ok();
}

StatusOr<bool> LearnerDaemon::State::AllFinal(const CampaignData& data, const CandidateKeys& keys) {
  ClientRequest request;
  request.mutable_candidates()->set_campaign(data.id);
  for (const auto& [pipeline_id, hash] : keys) {
    CandidatesRequest::Key* key = request.mutable_candidates()->add_keys();
    key->set_pipeline_id(pipeline_id);
    key->set_schedule_hash(hash);
  }
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(std::move(request)));
  for (const CandidateRecord& record : reply.candidates().candidates()) {
    const CandidateState state = record.state();
    if (state != CANDIDATE_MEASURED && state != CANDIDATE_FAILED &&
        state != CANDIDATE_QUARANTINED) {
      return false;
    }
  }
  return true;
}

Status LearnerDaemon::State::StoreRound(CampaignData& data, const ValueRound& round) {
  ClientRequest request;
  *request.mutable_store_value_round() = round;
  SCHEDFARM_RETURN_IF_ERROR(Call(std::move(request)).status());
  std::vector<ValueRound>& rounds = data.value->rounds;
  if (!rounds.empty() && rounds.back().round() == round.round()) {
    rounds.back() = round;
  } else {
    rounds.push_back(round);
  }
  return Status::Ok();
}

Status LearnerDaemon::State::LoadValueRounds(CampaignData& data) {
  ValueIterationData& value = *data.value;
  ClientRequest request;
  request.mutable_value_rounds()->set_campaign(data.id);
  SCHEDFARM_ASSIGN_OR_RETURN(ClientReply reply, Call(std::move(request)));
  value.rounds.assign(reply.value_rounds().rounds().begin(), reply.value_rounds().rounds().end());
  if (!value.rounds.empty()) {
    ClientRequest models;
    models.mutable_models()->set_campaign(data.id);
    models.mutable_models()->set_kind(data.config.strategy().model());
    models.mutable_models()->set_with_weights(true);
    SCHEDFARM_ASSIGN_OR_RETURN(ClientReply stored, Call(std::move(models)));
    for (const ValueRound& round : value.rounds) {
      if (round.state() != VALUE_ROUND_FITTED) continue;
      if (round.round() == 0 && data.scorer.version == round.fitted_model()) {
        value.values[0] = data.scorer;  // V0 of the model_from campaign
        continue;
      }
      const auto model = std::find_if(
          stored.models().models().begin(), stored.models().models().end(),
          [&](const Model& m) { return m.version() == round.fitted_model(); });
      if (model == stored.models().models().end()) {
        return Status::Error("value round " + std::to_string(round.round()) + " names model " +
                             round.fitted_model() + ", which the coordinator does not have");
      }
      SCHEDFARM_ASSIGN_OR_RETURN(value.values[round.round()], LoadStoredModel(*model));
    }
  }
  value.loaded = true;
  LogEvent("info", "value_rounds_loaded",
           {{"campaign", data.id}, {"rounds", std::to_string(value.rounds.size())}});
  return Status::Ok();
}

Status LearnerDaemon::State::Evaluate(CampaignData& data, const TrainedModel& value,
                                      ValueRound* round) {
  const ValueSettings settings = SettingsOf(data.config.strategy());
  SCHEDFARM_ASSIGN_OR_RETURN(std::unique_ptr<AcquisitionFunction> exploit,
                             MakeAcquisition("exploit"));
  std::vector<Candidate> candidates;
  for (size_t p = FirstHeldOut(data, settings); p < data.pipelines.size(); ++p) {
    const CampaignData::PipelineData& pipeline = data.pipelines[p];
    PerformanceCostModel model(value.model, value.version, *pipeline.featurizer,
                               MeaningOf(value, round->round(), settings));
    const WalkScoring scoring = {&model, exploit.get(), 0, settings.options};
    for (const std::string search : {"greedy", "beam"}) {
      SpaceRng rng(MixSeed(MixSeed(data.config.strategy().seed(), round->round()), p));
      const auto started = std::chrono::steady_clock::now();
      StatusOr<std::vector<WalkState>> found =
          search == "greedy" ? GreedyWalk(*pipeline.space, scoring, pipeline.space->Empty(), 0, rng)
                             : BeamWalk(*pipeline.space, scoring, pipeline.space->Empty(),
                                        settings.beam, rng);
      SCHEDFARM_RETURN_IF_ERROR(found.status());
      const WalkState& best = search == "greedy" ? found->back() : found->front();
      ValueEvaluation* evaluation = round->add_evaluations();
      evaluation->set_pipeline_id(pipeline.id);
      evaluation->set_search(search);
      evaluation->set_schedule_hash(ScheduleHash(*pipeline.space, best.schedule));
      evaluation->set_predicted_seconds(best.prediction.mean_seconds);
      evaluation->set_search_seconds(SecondsSince(started));
      candidates.push_back(
          SearchedCandidate(pipeline.id, *pipeline.space, best, search, value, *exploit));
    }
  }
  return ProposeCandidatesOf(data, std::move(candidates),
                               "evaluation of V" + std::to_string(round->round()));
}

Status LearnerDaemon::State::FitV0(CampaignData& data) {
  ValueIterationData& value = *data.value;
  const ValueSettings settings = SettingsOf(data.config.strategy());
  SCHEDFARM_ASSIGN_OR_RETURN(bool final, AllFinal(data, KeysOf(value.warmup)));
  if (!final) return Status::Ok();
  SCHEDFARM_RETURN_IF_ERROR(Follow(data));  // the measurements that just became final
  const auto started = std::chrono::steady_clock::now();
  TrainedModel v0;
  if (data.scorer.model) {
    v0 = data.scorer;  // model_from
  } else {
    const TrainingJob job = ValueJob(data, settings, 0);
    if (static_cast<int>(job.train.size()) < options.min_training_samples) {
      return Status::Error("V0: the warm-up gave " + std::to_string(job.train.size()) +
                           " OK measurements of pipelines not held out; training needs " +
                           std::to_string(options.min_training_samples));
    }
    std::vector<NamedMetrics> metrics;
    SCHEDFARM_ASSIGN_OR_RETURN(v0, TrainAndStore(data.id, job, &metrics));
  }
  ValueRound round;
  round.set_campaign(data.id);
  round.set_round(0);
  round.set_state(VALUE_ROUND_FITTED);
  round.set_fitted_model(v0.version);
  round.set_fitted_unix_ms(UnixMillis());
  round.set_fit_seconds(SecondsSince(started));
  round.set_target_rule(kTargetRule);
  SCHEDFARM_RETURN_IF_ERROR(Evaluate(data, v0, &round));
  SCHEDFARM_RETURN_IF_ERROR(StoreRound(data, round));
  value.values[0] = v0;
  LogEvent("info", "value_round_fitted",
           {{"campaign", data.id}, {"round", "0"}, {"model", v0.version}});
  return Status::Ok();
}

Status LearnerDaemon::State::PlanRound(CampaignData& data, int round_index) {
  const ValueSettings settings = SettingsOf(data.config.strategy());
  const TrainedModel& start = data.value->values.at(round_index - 1);
  SCHEDFARM_ASSIGN_OR_RETURN(std::unique_ptr<AcquisitionFunction> exploit,
                             MakeAcquisition("exploit"));
  const auto started = std::chrono::steady_clock::now();
  ValueRound round;
  round.set_campaign(data.id);
  round.set_round(round_index);
  round.set_state(VALUE_ROUND_PLANNED);
  round.set_start_model(start.version);
  round.set_target_rule(kTargetRule);
  // The pipelines not held out take turns: round i runs the next pipelines_per_round.
  const size_t trainable = FirstHeldOut(data, settings);
  std::vector<Candidate> completions;
  std::set<std::string> completion_hashes;
  for (int k = 0; k < settings.pipelines_per_round; ++k) {
    const size_t p = ((round_index - 1) * settings.pipelines_per_round + k) % trainable;
    const CampaignData::PipelineData& pipeline = data.pipelines[p];
    const ScheduleSpace& space = *pipeline.space;
    round.add_pipeline_ids(pipeline.id);
    PerformanceCostModel model(start.model, start.version, *pipeline.featurizer,
                               MeaningOf(start, round_index - 1, settings));
    const WalkScoring scoring = {&model, exploit.get(), 0, settings.options};
    const ScheduleSpec empty = space.Empty();
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<RuntimePrediction> empty_value, model.Predict({&empty}));
    std::set<std::string> prefix_hashes;
    for (int r = 0; r < settings.rollouts; ++r) {
      const uint64_t rollout_seed =
          MixSeed(MixSeed(MixSeed(data.config.strategy().seed(), round_index), p), r);
      SpaceRng rng(rollout_seed);
      SCHEDFARM_ASSIGN_OR_RETURN(
          std::vector<WalkState> walk,
          GreedyWalk(space, scoring, space.Empty(), r == 0 ? 0 : settings.noise, rng));
      walk.insert(walk.begin(), WalkState{empty, empty_value[0], 0, 0});
      for (size_t j = 0; j < walk.size(); ++j) {
        const WalkState& state = walk[j];
        if (!prefix_hashes.insert(ScheduleHash(space, state.schedule)).second) continue;
        WalkState completion = state;
        if (!IsComplete(space, state.schedule)) {
          SpaceRng beam_rng(MixSeed(rollout_seed, j));
          SCHEDFARM_ASSIGN_OR_RETURN(std::vector<WalkState> beam,
                                     BeamWalk(space, scoring, state.schedule, settings.beam,
                                              beam_rng));
          completion = std::move(beam.front());
        }
        Candidate candidate =
            SearchedCandidate(pipeline.id, space, completion, "value-iteration", start, *exploit);
        ValuePrefix* prefix = round.add_prefixes();
        prefix->set_pipeline_id(pipeline.id);
        prefix->set_rollout(r);
        prefix->set_stages(static_cast<int>(j));
        *prefix->mutable_prefix() = state.schedule;
        prefix->set_completion_hash(candidate.schedule_hash());
        prefix->set_start_prediction_seconds(state.prediction.mean_seconds);
        if (completion_hashes.insert(candidate.schedule_hash()).second) {
          completions.push_back(std::move(candidate));
        }
      }
    }
  }
  round.set_plan_seconds(SecondsSince(started));
  round.set_planned_unix_ms(UnixMillis());
  const size_t proposed = completions.size();
  SCHEDFARM_RETURN_IF_ERROR(ProposeCandidatesOf(
      data, std::move(completions), "completions of round " + std::to_string(round_index)));
  SCHEDFARM_RETURN_IF_ERROR(StoreRound(data, round));
  LogEvent("info", "value_round_planned",
           {{"campaign", data.id},
            {"round", std::to_string(round_index)},
            {"start_model", start.version},
            {"prefixes", std::to_string(round.prefixes_size())},
            {"completions", std::to_string(proposed)},
            {"seconds", std::to_string(round.plan_seconds())}});
  return Status::Ok();
}

Status LearnerDaemon::State::FitRound(CampaignData& data) {
  ValueIterationData& value = *data.value;
  ValueRound round = value.rounds.back();
  CandidateKeys keys;
  for (const ValuePrefix& prefix : round.prefixes()) {
    keys.emplace_back(prefix.pipeline_id(), prefix.completion_hash());
  }
  SCHEDFARM_ASSIGN_OR_RETURN(bool final, AllFinal(data, keys));
  if (!final) return Status::Ok();
  SCHEDFARM_RETURN_IF_ERROR(Follow(data));  // the measurements that just became final
  const auto started = std::chrono::steady_clock::now();
  const ValueSettings settings = SettingsOf(data.config.strategy());
  int targets = 0;
  for (ValuePrefix& prefix : *round.mutable_prefixes()) {
    const size_t p = data.pipeline_index.at(prefix.pipeline_id());
    SetPrefixTarget(*data.pipelines[p].space, value.measured[p], &prefix);
    targets += prefix.target_seconds() > 0 ? 1 : 0;
  }
  TrainingJob job = ValueJob(data, settings, round.round());
  const TrainedModel& start = value.values.at(round.round() - 1);
  job.start = start.model;
  // V_i is fitted to its prefixes as it will read them.
  const PartialMeaning reading = MeaningOf(start, round.round(), settings);
  // The partial prefixes of every round so far, with the targets they were fitted to
  // (complete prefixes are among the complete schedules already).
  int prefix_samples = 0;
  for (const ValueRound& earlier : value.rounds) {
    const ValueRound& fitted = earlier.round() == round.round() ? round : earlier;
    for (const ValuePrefix& prefix : fitted.prefixes()) {
      const CampaignData::PipelineData& pipeline =
          data.pipelines[data.pipeline_index.at(prefix.pipeline_id())];
      if (prefix.target_seconds() <= 0 || IsComplete(*pipeline.space, prefix.prefix())) continue;
      Sample sample;
      sample.pipeline_id = prefix.pipeline_id();
      sample.schedule_hash = ScheduleHash(*pipeline.space, prefix.prefix());
      sample.seconds = prefix.target_seconds();
      sample.stddev_seconds = prefix.target_stddev_seconds();
      pipeline.featurizer->FeaturizeLegal(ScheduleAsRead(*pipeline.space, prefix.prefix(), reading),
                                          &sample.features);
      job.train.push_back(std::move(sample));
      ++prefix_samples;
    }
  }
  std::vector<NamedMetrics> metrics;
  SCHEDFARM_ASSIGN_OR_RETURN(TrainedModel fitted, TrainAndStore(data.id, job, &metrics));
  round.set_state(VALUE_ROUND_FITTED);
  round.set_fitted_model(fitted.version);
  round.set_fitted_unix_ms(UnixMillis());
  round.set_fit_seconds(SecondsSince(started));
  SCHEDFARM_RETURN_IF_ERROR(Evaluate(data, fitted, &round));
  SCHEDFARM_RETURN_IF_ERROR(StoreRound(data, round));
  value.values[round.round()] = fitted;
  LogEvent("info", "value_round_fitted",
           {{"campaign", data.id},
            {"round", std::to_string(round.round())},
            {"model", fitted.version},
            {"target_rule", kTargetRule},
            {"prefixes", std::to_string(round.prefixes_size())},
            {"targets", std::to_string(targets)},
            {"prefix_samples", std::to_string(prefix_samples)},
            {"prefixes_read",
             reading == PartialMeaning::kDefaultCompletion ? "at_defaults" : "as_is"},
            {"complete_samples", std::to_string(job.train.size() - prefix_samples)}});
  return Status::Ok();
}

Status LearnerDaemon::State::StepValueIteration(CampaignData& data) {
  ValueIterationData& value = *data.value;
  const ValueSettings settings = SettingsOf(data.config.strategy());
  if (!value.loaded) SCHEDFARM_RETURN_IF_ERROR(LoadValueRounds(data));
  if (settings.warmup > 0 && value.warmup.empty()) {
    SCHEDFARM_ASSIGN_OR_RETURN(value.warmup, WarmupCandidates(data, settings.warmup));
  }
  if (!value.warmup_proposed && !value.warmup.empty()) {
    SCHEDFARM_RETURN_IF_ERROR(ProposeCandidatesOf(data, value.warmup, "warm-up"));
  }
  value.warmup_proposed = true;
  if (value.rounds.empty()) return FitV0(data);
  const ValueRound& last = value.rounds.back();
  if (last.state() == VALUE_ROUND_PLANNED) return FitRound(data);
  if (last.round() < settings.rounds) return PlanRound(data, last.round() + 1);
  CandidateKeys evaluations;
  for (const ValueRound& round : value.rounds) {
    for (const ValueEvaluation& e : round.evaluations()) {
      evaluations.emplace_back(e.pipeline_id(), e.schedule_hash());
    }
  }
  SCHEDFARM_ASSIGN_OR_RETURN(bool final, AllFinal(data, evaluations));
  if (!final) return Status::Ok();
  ClientRequest request;
  request.mutable_complete()->set_campaign(data.id);
  SCHEDFARM_RETURN_IF_ERROR(Call(std::move(request)).status());
  LogEvent("info", "value_iteration_done",
           {{"campaign", data.id}, {"rounds", std::to_string(last.round())}});
  return Status::Ok();
}

}  // namespace schedfarm
