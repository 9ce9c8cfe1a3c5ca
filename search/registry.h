// The one registry of names of the search layer: search strategies with their
// settings, acquisition functions and the performance model kinds. The campaign
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

// One numeric setting of a strategy: its range, default and meaning.
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
};

struct AcquisitionInfo {
  std::string name;
  std::string summary;
  bool needs_spread = false;  // reads the ensemble's stddev
  std::unique_ptr<AcquisitionFunction> (*make)() = nullptr;
};

// A performance model kind as farm-learner trains it (learner/daemon): what its
// predictions of partial schedules mean, whether it has a spread (an ensemble) and
// whether it can continue training from a trained model (TrainOptions.warm_start).
struct ModelKindInfo {
  std::string name;
  std::string summary;
  PartialMeaning partial = PartialMeaning::kCompleteOnly;
  bool has_spread = false;
  bool warm_starts = false;
};

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
// per-pipeline search.
StatusOr<std::unique_ptr<SearchStrategy>> MakeSearchStrategy(const std::string& name);
StatusOr<std::unique_ptr<AcquisitionFunction>> MakeAcquisition(const std::string& name);
StatusOr<const ModelKindInfo*> ModelKindNamed(const std::string& name);

// Whether a strategy can search under a model kind with an acquisition: a strategy
// that scores partial schedules needs a kind that can, an acquisition that reads the
// spread needs a kind that has one. The error says which.
Status CheckStrategyModel(const StrategyInfo& strategy, const ModelKindInfo& model,
                          const AcquisitionInfo& acquisition);

// The strategy's settings from a validated config: every setting the registry lists
// for it, the config's value where it has one, else the default.
StrategySettings ResolvedSettings(const Strategy& strategy);

}  // namespace schedfarm
