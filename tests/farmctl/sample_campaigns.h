// Two hand-made campaigns of the same four pipelines for the tests of `farmctl compare`:
// their status entries as the coordinator reports them and their measurements as its
// export pages carry them. The runtimes (seconds):
//
//   pipeline          random c-r   greedy c-g   li2018 (c-r / c-g)   mullapudi2016 (c-r)
//   vgg_block         100e-6       50e-6        200e-6 / 210e-6      400e-6
//   squeezenet_fire   20e-6        10e-6        40e-6 / 38e-6        failed (CRASH)
//   resnet18_basic    none         30e-6        90e-6 / RUN_TIMEOUT  never ran
//   conv_relu         1e-3         0.5e-3       4e-3 / 4.2e-3        1e-3
//
// c-r (quick-random, done, 40/40, CRASH 2) has random candidates r1 (measured twice: a
// crash, then OK), r2 and r3 (a crash), no search time; c-g (quick-greedy, running,
// 12/30) has greedy candidates g1..g4 found in 0.5 + 0.25 + 0.25 + 0.5 s of search.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "campaign/campaign_yaml.h"
#include "farmctl/compare.h"
#include "schedfarm.pb.h"

namespace schedfarm {
namespace testing_support {

inline const std::string kVggId = "11111111111111111111111111111111";
inline const std::string kFireId = "22222222222222222222222222222222";
inline const std::string kResnetId = "33333333333333333333333333333333";
inline const std::string kConvId = "44444444444444444444444444444444";

struct SampleCampaign {
  CampaignStatus status;
  std::vector<Measurement> measurements;
};

// A campaign with its config (strategy and baselines) and counters, without pipelines.
inline SampleCampaign EmptyCampaign(const std::string& id, const std::string& name,
                                    const std::string& strategy,
                                    const std::vector<std::string>& baselines, CampaignState state,
                                    int64_t finished, int64_t budget) {
  CampaignConfig config;
  config.set_name(name);
  config.mutable_strategy()->set_name(strategy);
  for (const std::string& baseline : baselines) config.add_baselines(baseline);
  config.mutable_budget()->set_benchmarks(budget);
  SampleCampaign sample;
  Campaign* c = sample.status.mutable_campaign();
  c->set_id(id);
  c->set_name(name);
  c->set_config_json(CampaignConfigToJson(config));
  c->set_state(state);
  c->set_budget(budget);
  c->mutable_counters()->set_finished(finished);
  return sample;
}

inline void AddProgress(SampleCampaign* sample, const std::string& id, const std::string& name,
                        double best, const std::map<std::string, double>& baselines) {
  PipelineProgress* p = sample->status.add_pipelines();
  p->set_pipeline_id(id);
  p->set_name(name);
  p->set_best_seconds(best);
  p->set_farm_best_seconds(best);
  for (const auto& [baseline, seconds] : baselines)
    (*p->mutable_baseline_seconds())[baseline] = seconds;
}

inline void AddMeasurement(SampleCampaign* sample, const std::string& pipeline_id,
                           const std::string& hash, const std::string& origin,
                           MeasurementStatus status, double search_seconds = 0) {
  Measurement& m = sample->measurements.emplace_back();
  m.mutable_candidate()->set_campaign(sample->status.campaign().id());
  m.mutable_candidate()->set_pipeline_id(pipeline_id);
  m.mutable_candidate()->set_schedule_hash(hash);
  m.mutable_candidate()->set_origin(origin);
  m.mutable_candidate()->set_search_seconds(search_seconds);
  m.set_status(status);
}

inline SampleCampaign RandomSample() {
  SampleCampaign c = EmptyCampaign("c-r", "quick-random", "random", {"li2018", "mullapudi2016"},
                                   CAMPAIGN_DONE, 40, 40);
  AddProgress(&c, kVggId, "vgg_block", 100e-6, {{"li2018", 200e-6}, {"mullapudi2016", 400e-6}});
  AddProgress(&c, kFireId, "squeezenet_fire", 20e-6, {{"li2018", 40e-6}});
  AddProgress(&c, kResnetId, "resnet18_basic", 0, {{"li2018", 90e-6}});
  AddProgress(&c, kConvId, "conv_relu", 1e-3, {{"li2018", 4e-3}, {"mullapudi2016", 1e-3}});
  (*c.status.mutable_failures_by_status())["CRASH"] = 2;
  (*c.status.mutable_failures_by_status())["OK"] = 38;
  for (const std::string& pipeline : {kVggId, kFireId, kResnetId, kConvId}) {
    AddMeasurement(&c, pipeline, "li2018", "li2018", OK);
  }
  AddMeasurement(&c, kVggId, "mullapudi2016", "mullapudi2016", OK);
  AddMeasurement(&c, kFireId, "mullapudi2016", "mullapudi2016", CRASH);
  AddMeasurement(&c, kConvId, "mullapudi2016", "mullapudi2016", OK);
  AddMeasurement(&c, kVggId, "r1", "random", CRASH);
  AddMeasurement(&c, kVggId, "r1", "random", OK);
  AddMeasurement(&c, kFireId, "r2", "random", OK);
  AddMeasurement(&c, kConvId, "r3", "random", CRASH);
  return c;
}

inline SampleCampaign GreedySample() {
  SampleCampaign c =
      EmptyCampaign("c-g", "quick-greedy", "greedy", {"li2018"}, CAMPAIGN_RUNNING, 12, 30);
  AddProgress(&c, kVggId, "vgg_block", 50e-6, {{"li2018", 210e-6}});
  AddProgress(&c, kFireId, "squeezenet_fire", 10e-6, {{"li2018", 38e-6}});
  AddProgress(&c, kResnetId, "resnet18_basic", 30e-6, {});
  AddProgress(&c, kConvId, "conv_relu", 0.5e-3, {{"li2018", 4.2e-3}});
  AddMeasurement(&c, kVggId, "li2018", "li2018", OK);
  AddMeasurement(&c, kFireId, "li2018", "li2018", OK);
  AddMeasurement(&c, kResnetId, "li2018", "li2018", RUN_TIMEOUT);
  AddMeasurement(&c, kConvId, "li2018", "li2018", OK);
  AddMeasurement(&c, kVggId, "g1", "greedy", OK, 0.5);
  AddMeasurement(&c, kFireId, "g2", "greedy", OK, 0.25);
  AddMeasurement(&c, kResnetId, "g3", "greedy", OK, 0.25);
  AddMeasurement(&c, kConvId, "g4", "greedy", OK, 0.5);
  return c;
}

// The sample as `farmctl compare` reads it from the coordinator.
inline ComparedCampaign Compared(const SampleCampaign& sample) {
  ComparedCampaign compared{sample.status, MeasurementTally()};
  for (const Measurement& m : sample.measurements) compared.tally.Add(m);
  return compared;
}

// RandomSample and GreedySample compared, in that order.
inline Comparison CompareSamples() {
  return CompareCampaigns({Compared(RandomSample()), Compared(GreedySample())});
}

}  // namespace testing_support
}  // namespace schedfarm
