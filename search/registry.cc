#include "search/registry.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "common/text.h"
#include "search/factories.h"

namespace schedfarm {
namespace {

template <typename Info>
const Info* Find(const std::vector<Info>& infos, const std::string& name) {
  for (const Info& info : infos) {
    if (info.name == name) return &info;
  }
  return nullptr;
}

template <typename Info>
std::vector<std::string> Names(const std::vector<Info>& infos) {
  std::vector<std::string> names;
  for (const Info& info : infos) names.push_back(info.name);
  return names;
}

// The entry named `name`, or an error naming the known ones.
template <typename Info>
StatusOr<const Info*> Named(const std::vector<Info>& infos, const std::string& name,
                            const std::string& what) {
  if (const Info* info = Find(infos, name)) return info;
  return Status::Error("unknown " + what + " '" + name + "' (known: " + Join(Names(infos), ", ") +
                       ")");
}

SettingSpec Options(double default_value) {
  return {"options", 1, 1e6, default_value, true,
          "options of a stage scored at each step; a stage with more is sampled uniformly"};
}

// value-iteration: enough pipelines for a round and the held-out ones, a V0 to start
// from, and the value as the only ranking.
Status CheckValueIteration(const Strategy& strategy, int pipelines, std::string* at) {
  const StrategySettings settings = ResolvedSettings(strategy);
  const int per_round = static_cast<int>(settings.at("pipelines_per_round"));
  const int held_out = static_cast<int>(settings.at("held_out"));
  if (per_round + held_out > pipelines) {
    *at = "pipelines_per_round";
    return Status::Error("pipelines_per_round (" + std::to_string(per_round) + ") plus held_out (" +
                         std::to_string(held_out) + ") is more than the campaign's " +
                         std::to_string(pipelines) + " pipelines");
  }
  if (settings.at("warmup") == 0 && strategy.model_from().empty()) {
    *at = "warmup";
    return Status::Error(
        "warmup 0 leaves nothing to train V0 on: benchmark some random schedules, or take V0 "
        "from another campaign with model_from");
  }
  if (strategy.acquisition() != "exploit") {
    *at = "acquisition";
    return Status::Error("value-iteration ranks by the value alone (acquisition exploit), not '" +
                         strategy.acquisition() + "'");
  }
  return Status::Ok();
}

}  // namespace

const std::vector<StrategyInfo>& SearchStrategies() {
  static const std::vector<StrategyInfo> strategies = {
      {"random", "uniform random schedules, proposed by the coordinator", false, false, "", {},
       MakeRandomSearch, "", nullptr},
      {"model-guided",
       "the best predicted of a sample of random schedules (Ansor's policy)",
       true,
       false,
       "exploit",
       {{"sample_size", 1, 1e6, 256, true, "random schedules scored per proposal batch"}},
       MakeModelGuidedSearch, "", nullptr, true},
      {"uncertainty",
       "the schedules of a random sample where the model's ensemble disagrees most",
       true,
       false,
       "uncertainty",
       {{"sample_size", 1, 1e6, 256, true, "random schedules scored per proposal batch"}},
       MakeUncertaintySearch, "", nullptr, true},
      {"greedy",
       "one decision per stage, outputs first, the model's best option each time "
       "(value-learning paper, Alg. 1); later walks take a random option with "
       "probability `noise`",
       true,
       true,
       "exploit",
       {Options(1000),
        {"noise", 0, 1, 0.1, false,
         "walks after the first: probability of a random decision at each stage"}},
       MakeGreedySearch, "", nullptr},
      {"beam",
       "the greedy walk keeping the `width` best partial schedules; when their complete "
       "schedules are measured, the beam doubles up to `max_width`",
       true,
       true,
       "exploit",
       {{"width", 1, 4096, 32, true, "partial schedules kept at each stage"},
        Options(64),
        {"max_width", 1, 65536, 256, true, "the widest beam tried"}},
       MakeBeamSearch, "", nullptr},
      {"anneal",
       "simulated annealing over complete schedules screened by the model (TPU paper's "
       "autotuner): a move redecides one stage, Metropolis acceptance on the predicted "
       "log runtime; the walk restarts from the best measured schedule",
       true,
       false,
       "exploit",
       {{"steps", 1, 1e6, 300, true, "annealing steps per proposal batch"},
        {"neighbors", 1, 1024, 16, true, "moves scored per step, in one model call"},
        {"temperature", 1e-6, 100, 0.5, false,
         "initial temperature, in units of log predicted runtime"},
        {"cooling", 1e-6, 1, 0.99, false, "temperature factor per step"}},
       MakeAnnealSearch, "", nullptr},
      {"relaxed",
       "best-first backtracking over partial schedules: a state is expanded while its "
       "prediction is at most alpha x the best complete one found (relaxed graph "
       "substitutions report)",
       true,
       true,
       "exploit",
       {{"alpha", 1, 10, 1.05, false, "expand states predicted at most alpha x the best"},
        {"expansions", 1, 1e7, 400, true, "states expanded per proposal batch"},
        Options(32)},
       MakeRelaxedSearch, "", nullptr},
      {"value-iteration",
       "the value-learning paper's Algorithm 2 on the farm: V0 from random schedules, then "
       "rounds of noisy greedy rollouts under V_{i-1}, every prefix completed by beam search "
       "and benchmarked, V_i fitted to the least runtime measured from each prefix; greedy "
       "and beam search under every V_i benchmarked on held-out pipelines",
       true,
       true,
       "exploit",
       {{"rounds", 1, 10, 2, true, "value iterations after V0"},
        {"pipelines_per_round", 1, 1000, 4, true,
         "pipelines whose rollouts a round runs, taken in turn from those not held out"},
        {"rollouts", 1, 100, 3, true, "noisy greedy rollouts per pipeline and round"},
        {"noise", 0, 1, 0.2, false,
         "rollouts after the first: probability of a random decision at each stage"},
        {"beam", 1, 1024, 8, true,
         "beam width of the prefixes' completions and of the evaluation's beam search"},
        Options(48),
        {"held_out", 1, 1000, 2, true,
         "the campaign's last pipelines, kept out of every round; each V_i is evaluated on "
         "them"},
        {"warmup", 0, 10000, 16, true,
         "random schedules benchmarked per pipeline first: V0's training set, the held-out "
         "metrics and the random baseline"},
        {"read_at_defaults", 0, 1, 1, true,
         "1: every V_i reads a prefix as V0 does, its undecided stages at the space's "
         "defaults; 0: V_i (i >= 1) reads the prefix itself, undecided stages as zeros, "
         "as the paper's value function"}},
       nullptr,
       "bilstm",
       CheckValueIteration},
  };
  return strategies;
}

const std::vector<AcquisitionInfo>& Acquisitions() {
  static const std::vector<AcquisitionInfo> acquisitions = {
      {"exploit", "the predicted mean: fastest predicted first", false, false, {},
       MakeExploitAcquisition},
      {"uncertainty", "the ensemble's stddev over its mean: most uncertain first", true, false,
       {}, MakeUncertaintyAcquisition},
      {"lcb", "the lower confidence bound of the runtime, mean - kappa x stddev: lowest first",
       true, false,
       {{"kappa", 0, 10, 1, false, "lcb: stddevs taken off the predicted mean"}},
       MakeLcbAcquisition},
      {"ei",
       "expected improvement over the best measured runtime, in log runtime; before the "
       "first measurement the fastest predicted first",
       true, false, {}, MakeEiAcquisition},
      {"thompson",
       "Thompson sampling: each pick draws one ensemble member and takes the schedule it "
       "predicts fastest",
       true, true, {}, MakeThompsonAcquisition},
      {"random", "uniform picks, the predictions unread: the baseline of active learning", false,
       true, {}, MakeRandomAcquisition},
      {"diversity",
       "fastest predicted first, no two picks of a batch closer than min_distance in feature "
       "space; pipelines served in proportion to the model's error on them",
       false,
       true,
       {{"min_distance", 0, 100, 0.5, false,
         "diversity: least distance between two picks of a batch, in standard deviations of "
         "the sample's schedule features"}},
       MakeDiversityAcquisition,
       true},
  };
  return acquisitions;
}

const std::vector<ModelKindInfo>& ModelKinds() {
  static const std::vector<ModelKindInfo> kinds = {
      {"gcn", "graph-convolutional network of the GNN paper, seed ensemble",
       PartialMeaning::kDefaultCompletion, true, false, true},
      {"gcn-rank",
       "the GCN trained on a pairwise rank loss within each pipeline, seed ensemble",
       PartialMeaning::kDefaultCompletion, true, false, true},
      {"sage",
       "GraphSAGE of the TPU paper with a pairwise rank loss within each pipeline, seed "
       "ensemble",
       PartialMeaning::kDefaultCompletion, true, false, true},
      {"gcn0", "the GCN without message passing, seed ensemble",
       PartialMeaning::kDefaultCompletion, true, false, true},
      {"lann", "lightweight augmented network, seed ensemble", PartialMeaning::kDefaultCompletion,
       true},
      {"bilstm",
       "BiLSTM over the stages, the value-learning paper's value function (value iteration "
       "fits it to prefixes)",
       PartialMeaning::kDefaultCompletion, false, true, true},
      {"gbt", "TVM-style gradient-boosted trees (XGBoost), bootstrap ensemble",
       PartialMeaning::kDefaultCompletion, true, false, true},
      {"roofline",
       "analytic FLOPs/bytes roofline with fitted efficiencies, bootstrap ensemble",
       PartialMeaning::kDefaultCompletion, true},
  };
  return kinds;
}

const StrategyInfo* FindStrategy(const std::string& name) { return Find(SearchStrategies(), name); }
const AcquisitionInfo* FindAcquisition(const std::string& name) {
  return Find(Acquisitions(), name);
}
const ModelKindInfo* FindModelKind(const std::string& name) { return Find(ModelKinds(), name); }

std::vector<std::string> StrategyNames() { return Names(SearchStrategies()); }
std::vector<std::string> AcquisitionNames() { return Names(Acquisitions()); }
std::vector<std::string> ModelKindNames() { return Names(ModelKinds()); }

StatusOr<std::unique_ptr<SearchStrategy>> MakeSearchStrategy(const std::string& name) {
  SCHEDFARM_ASSIGN_OR_RETURN(const StrategyInfo* info,
                             Named(SearchStrategies(), name, "strategy"));
  if (info->make == nullptr) {
    return Status::Error("strategy '" + name +
                         "' runs over the whole campaign in farm-learner; it has no "
                         "per-pipeline search");
  }
  return info->make();
}

StatusOr<std::unique_ptr<AcquisitionFunction>> MakeAcquisition(const std::string& name,
                                                                const StrategySettings& settings) {
  SCHEDFARM_ASSIGN_OR_RETURN(const AcquisitionInfo* info,
                             Named(Acquisitions(), name, "acquisition"));
  SCHEDFARM_RETURN_IF_ERROR(CheckSettings(info->settings, settings, "acquisition '" + name + "'"));
  StrategySettings own;
  for (const SettingSpec& spec : info->settings) {
    const auto it = settings.find(spec.name);
    own[spec.name] = it != settings.end() ? it->second : spec.default_value;
  }
  return info->make(own);
}

StatusOr<const ModelKindInfo*> ModelKindNamed(const std::string& name) {
  return Named(ModelKinds(), name, "model kind");
}

Status CheckStrategyModel(const StrategyInfo& strategy, const ModelKindInfo& model,
                          const AcquisitionInfo& acquisition) {
  if (strategy.scores_partial && model.partial == PartialMeaning::kCompleteOnly) {
    return Status::Error("strategy '" + strategy.name +
                         "' scores partial schedules, and model kind '" + model.name +
                         "' scores complete schedules only");
  }
  if (acquisition.needs_spread && !model.has_spread) {
    return Status::Error("acquisition '" + acquisition.name +
                         "' reads the ensemble's spread, and model kind '" + model.name +
                         "' has none (kinds with a spread: " + [] {
                           std::vector<std::string> names;
                           for (const ModelKindInfo& kind : ModelKinds()) {
                             if (kind.has_spread) names.push_back(kind.name);
                           }
                           return Join(names, ", ");
                         }() +
                         ")");
  }
  return Status::Ok();
}

Status CheckStrategyAcquisition(const StrategyInfo& strategy, const AcquisitionInfo& acquisition) {
  if (!acquisition.select_only || strategy.selects) return Status::Ok();
  std::vector<std::string> selecting;
  for (const StrategyInfo& info : SearchStrategies()) {
    if (info.selects) selecting.push_back(info.name);
  }
  return Status::Error(
      "acquisition '" + acquisition.name +
      "' picks a batch out of a scored sample, and strategy '" + strategy.name +
      "' ranks its options by score (strategies that pick batches: " + Join(selecting, ", ") + ")");
}

Status CheckSettings(const std::vector<SettingSpec>& specs, const StrategySettings& values,
                     const std::string& what) {
  for (const SettingSpec& spec : specs) {
    const auto it = values.find(spec.name);
    if (it == values.end()) continue;
    const double value = it->second;
    if (value >= spec.min && value <= spec.max && (!spec.integer || value == std::floor(value))) {
      continue;
    }
    std::ostringstream message;
    message << what << ": setting " << spec.name << " = " << value << " is not "
            << (spec.integer ? "an integer" : "a number") << " in [" << spec.min << ", "
            << spec.max << "]";
    return Status::Error(message.str());
  }
  return Status::Ok();
}

StrategySettings ResolvedSettings(const Strategy& strategy) {
  StrategySettings settings;
  const StrategyInfo* info = FindStrategy(strategy.name());
  if (info == nullptr) return settings;
  for (const SettingSpec& spec : info->settings) settings[spec.name] = spec.default_value;
  if (const AcquisitionInfo* acquisition = FindAcquisition(strategy.acquisition())) {
    for (const SettingSpec& spec : acquisition->settings) settings[spec.name] = spec.default_value;
  }
  for (const StrategySetting& setting : strategy.settings()) {
    if (settings.count(setting.name())) settings[setting.name()] = setting.value();
  }
  return settings;
}

}  // namespace schedfarm
