// `farmctl rounds`: a value-iteration campaign as farm-learner ran it (docs/MODELS.md,
// "Value iteration"): its rounds (state, models, prefixes and targets, wall times, the
// held-out metrics of each V_i), then the value-learning paper's Figure 3 on the
// held-out pipelines: the runtime of the schedule that greedy and beam search find
// under each V_i, beside one random schedule (the geometric mean of the random
// warm-up's runtimes), the best of the random warm-up and the baselines, with each
// search's mean wall time, over all of them and per kind of source (the generator's
// pipelines, zoo blocks). A pure function, so tests render hand-made rounds.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "schedfarm.pb.h"

namespace schedfarm {

struct ValueIterationReport {
  CampaignStatus status;  // names of the pipelines, baselines' runtimes
  std::vector<ValueRound> rounds;
  std::vector<Model> models;              // the campaign's (for the V_i's metrics)
  std::vector<Measurement> measurements;  // the campaign's
  // Pipeline id -> PipelineSpec.source ("random:19", "zoo:NAME"): held-out pipelines of
  // more than one kind of source get the comparison per kind too.
  std::map<std::string, std::string> sources;
};

std::string RenderValueRounds(const ValueIterationReport& report);

}  // namespace schedfarm
