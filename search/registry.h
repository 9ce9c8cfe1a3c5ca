// The one registry of names of the search layer: search strategies and acquisition
// functions with their settings, and the performance model kinds. The campaign
// parser, the coordinator, farm-learner and farmctl all ask it; no other list of
// these names exists. Free of Halide and Torch.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"
#include "search/acquisition.h"
#include "search/search_strategy.h"

namespace schedfarm {

// One numeric setting of a strategy or an acquisition: its range, default and meaning.
// A campaign writes both kinds in strategy.settings, so no acquisition's setting has
// the name of a strategy's.
struct SettingSpec {
  std::string name;
  double min = 0;
  double max = 0;
  double default_value = 0;
  bool integer = false;
  std::string help;
};

struct StrategyInfo {
  std::string name;
  std::string summary;
  // Whether the strategy scores schedules with a model (farm-learner proposes its
  // candidates) or not (the coordinator proposes them itself).
  bool uses_model = false;
  // Whether it scores partial schedules (greedy, beam, relaxed).
  bool scores_partial = false;
  std::string default_acquisition;  // for strategies that use a model
  std::vector<SettingSpec> settings;
  // The per-pipeline search; null for a strategy that farm-learner runs over the whole
  // campaign instead (value-iteration).
  std::unique_ptr<SearchStrategy> (*make)() = nullptr;
  std::string default_model;  // empty: the campaign default
  // Checks the settings against each other and the campaign's pipeline count; on an
  // error, *at names the setting to blame ("model" for the model kind).
  Status (*check)(const Strategy& strategy, int pipelines, std::string* at) = nullptr;
  // Whether it picks each batch out of a scored sample with the acquisition's Select
  // (model-guided, uncertainty), rather than ranking one option at a time by Score.
  bool selects = false;
};

struct AcquisitionInfo {
  std::string name;
  std::string summary;
  bool needs_spread = false;  // reads the ensemble's spread (stddev or members)
  // Whether its rule is the batch pick alone (Select) and Score does not rank: only
  // strategies that select may use it.
  bool select_only = false;
  std::vector<SettingSpec> settings;
  // Gets the resolved settings: every one of `settings`, in range.
  std::unique_ptr<AcquisitionFunction> (*make)(const StrategySettings& settings) = nullptr;
  // Whether farm-learner serves a campaign's pipelines in proportion to what they still
  // have to teach (the model's recent error on each) instead of evenly.
  bool shares_by_error = false;
};

// A performance model kind as farm-learner trains it (learner_daemon): what its
// predictions of partial schedules mean, whether it has a spread (an ensemble), whether
// a campaign's retrainings continue from its previous model and whether it can be
// fine-tuned (TrainOptions.warm_start) from a pretrained model.
// How each is made is learner/kinds/model_kinds.h, one maker per kind of this list.
struct ModelKindInfo {
  std::string name;
  std::string summary;
  PartialMeaning partial = PartialMeaning::kCompleteOnly;
  bool has_spread = false;
  bool warm_starts = false;  // each retraining continues from the campaign's newest
  // A campaign that starts from a pretrained model of this kind (model_from:
  // pretrained) trains each version from that model, on the campaign's results.
  bool fine_tunes = false;
};

// The kind a model strategy scores with when neither its campaign file nor the
// strategy's own default (StrategyInfo::default_model) names one.
inline constexpr char kDefaultModelKind[] = "gcn";

const std::vector<StrategyInfo>& SearchStrategies();
const std::vector<AcquisitionInfo>& Acquisitions();
const std::vector<ModelKindInfo>& ModelKinds();

// nullptr for an unknown name.
const StrategyInfo* FindStrategy(const std::string& name);
const AcquisitionInfo* FindAcquisition(const std::string& name);
const ModelKindInfo* FindModelKind(const std::string& name);

// The names, in registry order, e.g. for "known: ..." hints.
std::vector<std::string> StrategyNames();
std::vector<std::string> AcquisitionNames();
std::vector<std::string> ModelKindNames();

// An error naming the known ones for an unknown name, or for a strategy without a
// per-pipeline search. The acquisition takes its settings from `settings` (which may
// hold the strategy's too), its defaults for those missing; an error for one out of
// range.
StatusOr<std::unique_ptr<SearchStrategy>> MakeSearchStrategy(const std::string& name);
StatusOr<std::unique_ptr<AcquisitionFunction>> MakeAcquisition(
    const std::string& name, const StrategySettings& settings = {});
StatusOr<const ModelKindInfo*> ModelKindNamed(const std::string& name);

// Whether a strategy can search under a model kind with an acquisition: a strategy
// that scores partial schedules needs a kind that can, an acquisition that reads the
// spread needs a kind that has one. The error says which.
Status CheckStrategyModel(const StrategyInfo& strategy, const ModelKindInfo& model,
                          const AcquisitionInfo& acquisition);

// Whether a strategy can pick with an acquisition: one whose rule is its batch pick
// alone (select_only) needs a strategy that selects. The error says which can.
Status CheckStrategyAcquisition(const StrategyInfo& strategy, const AcquisitionInfo& acquisition);

// An error, naming `what` and the setting, for the first value of `values` outside its
// spec (range, integer); values the specs do not list are not checked.
Status CheckSettings(const std::vector<SettingSpec>& specs, const StrategySettings& values,
                     const std::string& what);

// The settings from a validated config: every setting the registry lists for the
// strategy and for its acquisition, the config's value where it has one, else the
// default.
StrategySettings ResolvedSettings(const Strategy& strategy);

}  // namespace schedfarm
