// The search strategies as campaigns on a farm of real processes on loopback: the
// coordinator, one worker and farm-learner. Four campaigns (greedy, beam, anneal,
// relaxed) run side by side; the learner trains their model on the campaign's cadence
// and each strategy proposes under it. Every campaign finishes within its budget, its
// candidates carry the strategy as origin with the model version, the prediction and the
// acquisition score, and nothing is measured twice.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "scheduler/templates.h"
#include "tests/support/farm_rig.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/submit_campaign.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::CoordinatorProcess;
using testing_support::SubmitZooCampaign;
using testing_support::TestClient;

std::string CampaignFor(const std::string& strategy, const std::string& settings) {
  return "name: " + strategy + R"(
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
  - zoo: {block: squeezenet_fire, spatial_scale: 0.25, channel_scale: 0.25}
strategy: {name: )" +
         strategy + ", settings: {batch: 2, retrain_every: 8, model: lann, epsilon: 0, " +
         settings + R"(}}
budget: {benchmarks: 24}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
)";
}

// The farm: a coordinator, one worker and a learner that trains LANN ensembles.
struct LocalFarm {
  ScratchDir dir;
  CoordinatorProcess coordinator{FARM_COORDINATOR_BIN, dir.Sub("store")};
  ChildProcess worker{FARM_WORKER_BIN,
                      {"--coordinator", coordinator.endpoint(), "--id", "w", "--compile-slots", "1",
                       "--children", "1"}};
  ChildProcess learner{
      FARM_LEARNER_BIN,
      {"--coordinator", coordinator.endpoint(), "--models", "lann", "--ensemble", "2", "--epochs",
       "200", "--threads", "1", "--poll-ms", "200", "--min-samples", "8"}};
  TestClient client{coordinator.endpoint()};

  // The measurements of the campaign.
  std::vector<Measurement> Measurements(const std::string& campaign) {
    std::vector<Measurement> out;
    for (const StoredMeasurementRecord& row : client.Export(campaign)) {
      out.push_back(row.measurement());
    }
    return out;
  }

  // Whether every campaign ended DONE within `seconds`.
  bool WaitDone(const std::vector<std::string>& campaigns, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      bool done = true;
      for (const std::string& id : campaigns) {
        std::optional<ClientReply> status = client.Status(id);
        done = done && status && status->status().campaigns_size() == 1 &&
               status->status().campaigns(0).campaign().state() == CAMPAIGN_DONE;
      }
      if (done) return true;
    }
    return false;
  }
};

TEST(SearchCampaignTest, EveryStrategyRunsAsACampaignUnderTheLearnersModel) {
  LocalFarm farm;
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  TestClient& client = farm.client;

  // Small option caps and step counts keep each search to a fraction of a second.
  const std::map<std::string, std::string> strategies = {
      {"greedy", "options: 40, noise: 0.3"},
      {"beam", "width: 4, options: 12, max_width: 16"},
      {"anneal", "steps: 20, neighbors: 8"},
      {"relaxed", "alpha: 1.2, expansions: 40, options: 12"}};
  std::map<std::string, std::string> ids;
  for (const auto& [strategy, settings] : strategies) {
    ids[strategy] = SubmitZooCampaign(client, CampaignFor(strategy, settings));
    ASSERT_FALSE(ids[strategy].empty());
  }

  std::vector<std::string> campaigns;
  for (const auto& [strategy, id] : ids) campaigns.push_back(id);
  ASSERT_TRUE(farm.WaitDone(campaigns, 500)) << "learner log:\n" << farm.learner.Log();

  for (const auto& [strategy, id] : ids) {
    SCOPED_TRACE(strategy);
    const std::vector<Measurement> measurements = farm.Measurements(id);
    EXPECT_EQ(measurements.size(), 24u);
    std::set<std::string> keys;
    int searched = 0;
    for (const Measurement& m : measurements) {
      const Candidate& candidate = m.candidate();
      EXPECT_TRUE(keys.insert(candidate.pipeline_id() + candidate.schedule_hash()).second)
          << "measured twice: " << candidate.schedule_hash();
      // Before the first model, and the template the coordinator proposes first.
      if (candidate.origin() == "random" || candidate.origin() == kTemplateOrigin) continue;
      EXPECT_EQ(candidate.origin(), strategy);
      EXPECT_FALSE(candidate.model_version().empty());
      EXPECT_NE(candidate.model_version().find("-lann-"), std::string::npos);
      EXPECT_GT(candidate.prediction().mean_seconds(), 0);
      EXPECT_EQ(candidate.acquisition_score(), -candidate.prediction().mean_seconds())
          << "exploit scores the predicted mean";
      ++searched;
    }
    EXPECT_GT(searched, 0) << "no candidate of the strategy was measured\n" << farm.learner.Log();
  }
  // Greedy's option cap is far below the blocks' branching factors: its walks sampled.
  int sampled = 0;
  for (const Measurement& m : farm.Measurements(ids["greedy"])) {
    sampled += m.candidate().origin() == "greedy" && m.candidate().sampled_stages() > 0 ? 1 : 0;
  }
  EXPECT_GT(sampled, 0);
  EXPECT_EQ(farm.learner.Log().find("event=search_failed"), std::string::npos)
      << farm.learner.Log();
}

// A search that starts under another campaign's model (model_from): it waits while that
// campaign runs, the learner trains the model on it once it ended, and every candidate
// of the search is then scored by that model (no retraining: retrain_every is large).
TEST(SearchCampaignTest, ASearchStartsUnderAnotherCampaignsModel) {
  LocalFarm farm;
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  TestClient& client = farm.client;
  const std::string pipelines = R"(pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
  - zoo: {block: squeezenet_fire, spatial_scale: 0.25, channel_scale: 0.25}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
)";
  const std::string dataset =
      SubmitZooCampaign(client, "name: seedset\n" + pipelines + "budget: {benchmarks: 20}\n");
  const std::string search = SubmitZooCampaign(
      client, "name: seeded\n" + pipelines +
                  "budget: {benchmarks: 8}\nstrategy: {name: greedy, settings: {model: lann, "
                  "model_from: seedset, retrain_every: 1000000, epsilon: 0, options: 30}}\n");
  ASSERT_FALSE(dataset.empty());
  ASSERT_FALSE(search.empty());
  ASSERT_TRUE(farm.WaitDone({search}, 300)) << "learner log:\n" << farm.learner.Log();
  const std::vector<Measurement> measurements = farm.Measurements(search);
  EXPECT_EQ(measurements.size(), 8u);
  for (const Measurement& m : measurements) {
    if (m.candidate().origin() == kTemplateOrigin) continue;  // the coordinator's own
    EXPECT_EQ(m.candidate().origin(), "greedy");
    EXPECT_EQ(m.candidate().model_version().rfind(dataset + "-lann-", 0), 0u)
        << m.candidate().model_version();
  }
  EXPECT_NE(farm.learner.Log().find("event=model_seeded"), std::string::npos) << farm.learner.Log();
  // The dataset's model is stored under the dataset campaign.
  ClientRequest models;
  models.mutable_models()->set_campaign(dataset);
  std::optional<ClientReply> reply = client.Call(models);
  ASSERT_TRUE(reply.has_value());
  ASSERT_EQ(reply->models().models_size(), 1);
  EXPECT_EQ(reply->models().models(0).kind(), "lann");
}

}  // namespace
}  // namespace schedfarm
