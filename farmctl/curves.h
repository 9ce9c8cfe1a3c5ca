// `farmctl curves`: replay campaigns (docs/ACTIVE_LEARNING.md) compared as learning
// curves. The campaigns are grouped by how they choose what to measure (the strategy,
// its acquisition and epsilon share); the campaigns of a group are its seeds, averaged
// at every 100 benchmarks. Per group and benchmark count: the held-out Kendall tau and
// top-1 regret of the newest model trained on at most that many results, and the share
// of pipelines whose best schedule so far is within 5% of the dataset's best. Then the
// headline ratios: benchmarks to reach random sampling's final held-out tau (and stay
// at or above it) over random's own, and each pipeline's benchmarks until it is within 5% of the dataset's
// best over epsilon-greedy's. A pure function, so tests render hand-made campaigns.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedfarm.pb.h"

namespace schedfarm {

struct CurveCampaign {
  CampaignStatus status;                  // campaign.config_json says the group
  std::vector<Model> models;              // the campaign's, any order
  std::vector<Measurement> measurements;  // the campaign's, in seq order
};

struct CurveReport {
  std::string text;                           // the tables and the headline ratios
  std::map<std::string, std::string> charts;  // file name (e.g. "tau.svg") -> SVG
};

// How a campaign chooses what to measure: "random", or its acquisition with the epsilon
// share and the strategy when it is not model-guided, e.g. "exploit + 10% random".
std::string CurveGroup(const CampaignConfig& config);

// `dataset_best`: each pipeline's best runtime in the dataset (DatasetBestRuntimes).
CurveReport RenderLearningCurves(const std::vector<CurveCampaign>& campaigns,
                                 const std::map<std::string, double>& dataset_best);

// Each pipeline's best median among its schedules' first OK measurements
// (FirstOkMeasurements: what a campaign that measures every schedule once can find).
std::map<std::string, double> DatasetBestRuntimes(const Dataset& dataset);

}  // namespace schedfarm
