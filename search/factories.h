// The factories of every implementation, one per file of search/strategies/ and
// search/acquisitions/. Only the registry (registry.cc) calls them: everyone else
// makes strategies and acquisition functions by name. An acquisition's factory gets
// the resolved settings: every one the registry lists for it, in range.
#pragma once

#include <memory>

#include "search/acquisition.h"
#include "search/search_strategy.h"

namespace schedfarm {

std::unique_ptr<SearchStrategy> MakeRandomSearch();
std::unique_ptr<SearchStrategy> MakeModelGuidedSearch();
std::unique_ptr<SearchStrategy> MakeUncertaintySearch();
std::unique_ptr<SearchStrategy> MakeGreedySearch();
std::unique_ptr<SearchStrategy> MakeBeamSearch();
std::unique_ptr<SearchStrategy> MakeAnnealSearch();
std::unique_ptr<SearchStrategy> MakeRelaxedSearch();

std::unique_ptr<AcquisitionFunction> MakeExploitAcquisition(const StrategySettings& settings);
std::unique_ptr<AcquisitionFunction> MakeUncertaintyAcquisition(const StrategySettings& settings);
std::unique_ptr<AcquisitionFunction> MakeLcbAcquisition(const StrategySettings& settings);
std::unique_ptr<AcquisitionFunction> MakeEiAcquisition(const StrategySettings& settings);
std::unique_ptr<AcquisitionFunction> MakeThompsonAcquisition(const StrategySettings& settings);
std::unique_ptr<AcquisitionFunction> MakeRandomAcquisition(const StrategySettings& settings);
std::unique_ptr<AcquisitionFunction> MakeDiversityAcquisition(const StrategySettings& settings);

}  // namespace schedfarm
