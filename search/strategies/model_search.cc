#include "search/strategies/model_search.h"

#include "search/registry.h"

namespace schedfarm {

Status ModelSearch::Init(const SearchContext& context) {
  const std::string what = "strategy '" + name() + "'";
  if (context.space == nullptr) return Status::Error(what + ": no schedule space");
  if (context.model == nullptr) return Status::Error(what + " needs a model");
  if (context.acquisition == nullptr) return Status::Error(what + " needs an acquisition function");
  const StrategyInfo* info = FindStrategy(name());
  if (info != nullptr) {
    SCHEDFARM_RETURN_IF_ERROR(CheckSettings(info->settings, context.settings, what));
    const AcquisitionInfo* acquisition = FindAcquisition(context.acquisition->name());
    if (acquisition != nullptr) {
      SCHEDFARM_RETURN_IF_ERROR(CheckStrategyAcquisition(*info, *acquisition));
    }
  }
  if (info != nullptr && info->scores_partial &&
      context.model->partial_meaning() == PartialMeaning::kCompleteOnly) {
    return Status::Error(what + " scores partial schedules, and model " +
                         context.model->version() + " scores complete schedules only");
  }
  context_ = context;
  return Start();
}

void ModelSearch::Notify(const std::vector<SearchResult>& results) {
  for (const SearchResult& result : results) {
    proposed_.insert(result.hash);
    if (!result.ok || !(result.seconds > 0)) continue;
    if (incumbent_seconds_ == 0 || result.seconds < incumbent_seconds_) {
      incumbent_seconds_ = result.seconds;
      best_measured_ = result.schedule;
      OnNewIncumbent();
    }
  }
}

double ModelSearch::Setting(const std::string& name) const {
  auto it = context_.settings.find(name);
  if (it != context_.settings.end()) return it->second;
  const StrategyInfo* info = FindStrategy(this->name());
  for (const SettingSpec& spec : info->settings) {
    if (spec.name == name) return spec.default_value;
  }
  return 0;
}

bool ModelSearch::IsKnown(const std::string& hash) const {
  return proposed_.count(hash) || (context_.known && context_.known(hash));
}

bool ModelSearch::TakeIfNew(const std::string& hash) {
  if (IsKnown(hash)) return false;
  proposed_.insert(hash);
  return true;
}

SearchProposal ModelSearch::MakeProposal(ScheduleSpec schedule, std::string hash,
                                         const RuntimePrediction& prediction,
                                         int sampled_stages) const {
  SearchProposal proposal;
  schedule.set_partial(false);
  proposal.schedule = std::move(schedule);
  proposal.hash = std::move(hash);
  proposal.predicted = true;
  proposal.prediction = prediction;
  proposal.acquisition = context_.acquisition->name();
  proposal.acquisition_score = context_.acquisition->Score(prediction, incumbent_seconds_);
  proposal.sampled_stages = sampled_stages;
  return proposal;
}

}  // namespace schedfarm
