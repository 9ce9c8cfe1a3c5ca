// The search strategies as campaigns on a farm of real processes on loopback: the
// coordinator, one worker and farm-learner. Four campaigns (greedy, beam, anneal,
// relaxed) run side by side; the learner trains their model on the campaign's cadence
// and each strategy proposes under it. Every campaign finishes within its budget, its
// candidates carry the strategy as origin with the model version, the prediction and the
// acquisition score, and nothing is measured twice. Campaigns step on threads of their
// own, and a campaign whose space is exhausted ends with that reason.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "learner/gbt/gbt_model.h"
#include "pretrained/pretrained.h"
#include "scheduler/templates.h"
#include "tests/support/farm_rig.h"
#include "tests/support/learner_farm.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/submit_campaign.h"
#include "tests/support/synthetic_samples.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::CoordinatorProcess;
using testing_support::LearnerFarm;
using testing_support::SubmitZooCampaign;
using testing_support::TestClient;
using testing_support::WorkerHost;

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

// Two small zoo blocks, measured twice each with no minimum time to speak of.
const std::string kTwoBlocks = R"(pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
  - zoo: {block: squeezenet_fire, spatial_scale: 0.25, channel_scale: 0.25}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
)";

// The learner of these tests: lann (2 members) on one thread.
LearnerFarm LannFarm(const std::string& epochs = "200", const std::string& poll_ms = "200",
                     const std::string& min_samples = "8") {
  return LearnerFarm({"--models", "lann", "--ensemble", "2", "--epochs", epochs, "--threads", "1",
                      "--poll-ms", poll_ms, "--min-samples", min_samples});
}

TEST(SearchCampaignTest, EveryStrategyRunsAsACampaignUnderTheLearnersModel) {
  LearnerFarm farm = LannFarm();
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
  LearnerFarm farm = LannFarm();
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  TestClient& client = farm.client;
  const std::string dataset =
      SubmitZooCampaign(client, "name: seedset\n" + kTwoBlocks + "budget: {benchmarks: 20}\n");
  const std::string search = SubmitZooCampaign(
      client, "name: seeded\n" + kTwoBlocks +
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

// The ts= of a log line.
int64_t LogTime(const std::string& line) {
  const size_t at = line.find("ts=");
  return at == std::string::npos ? -1 : std::stoll(line.substr(at + 3));
}

// The log's lines that have every one of `parts`.
std::vector<std::string> LinesWith(const std::string& log, const std::vector<std::string>& parts) {
  std::vector<std::string> out;
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    bool all = true;
    for (const std::string& part : parts) all = all && line.find(part) != std::string::npos;
    if (all) out.push_back(line);
  }
  return out;
}

// One campaign's long training does not hold back another's proposals: the campaigns
// step on threads of their own, and a training gives the learner's cpus to the steps
// that wait between two of its epochs. "slow" trains a GCN for many epochs; "steady"
// never trains and proposes random schedules through the learner all along.
TEST(SearchCampaignTest, OneCampaignsTrainingDoesNotHoldBackAnothersProposals) {
  LearnerFarm farm = LannFarm(/*epochs=*/"3000", /*poll_ms=*/"100", /*min_samples=*/"6");
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  TestClient& client = farm.client;
  ChildProcess& learner = farm.learner;
  const std::string slow = SubmitZooCampaign(
      client, "name: slow\n" + kTwoBlocks +
                  "budget: {benchmarks: 12}\nstrategy: {name: greedy, settings: {batch: 2, "
                  "retrain_every: 6, model: gcn, options: 20}}\n");
  const std::string steady = SubmitZooCampaign(
      client, "name: steady\n" + kTwoBlocks +
                  "budget: {benchmarks: 60}\nstrategy: {name: greedy, settings: {batch: 1, "
                  "retrain_every: 1000000, model: lann}}\n");
  ASSERT_FALSE(slow.empty());
  ASSERT_FALSE(steady.empty());

  // The slow campaign's GCN training: its end and how long it took.
  std::vector<std::string> trained;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  while (trained.empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    trained = LinesWith(learner.Log(), {"event=model_trained", "campaign=" + slow, "-gcn-"});
  }
  ASSERT_FALSE(trained.empty()) << learner.Log();
  const std::string& line = trained.front();
  const int64_t end_ms = LogTime(line);
  const double seconds = std::stod(line.substr(line.find("seconds=") + 8));
  ASSERT_GT(seconds, 3) << "the training is too short to tell: " << line;
  const int64_t start_ms = end_ms - static_cast<int64_t>(seconds * 1000);

  // The steady campaign proposed while it trained, and kept being measured.
  int during = 0;
  for (const std::string& proposed :
       LinesWith(learner.Log(), {"event=proposed", "campaign=" + steady})) {
    const int64_t at = LogTime(proposed);
    during += at > start_ms + 500 && at < end_ms - 500 ? 1 : 0;
  }
  std::printf("the slow campaign's GCN trained for %.1f s; the steady one proposed %d times "
              "meanwhile\n", seconds, during);
  EXPECT_GE(during, 2) << "training from " << start_ms << " to " << end_ms << " ms\n"
                       << learner.Log();
}

// A search campaign over a space smaller than its budget: once every schedule is
// proposed, the learner completes it and it ends with the reason, every schedule
// measured once.
TEST(SearchCampaignTest, AnExhaustedSearchCampaignEndsWithItsReason) {
  LearnerFarm farm = LannFarm(/*epochs=*/"50", /*poll_ms=*/"100", /*min_samples=*/"2");
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  TestClient& client = farm.client;
  ChildProcess& learner = farm.learner;
  const ScratchDir& dir = farm.dir;
  CoordinatorProcess& coordinator = farm.coordinator;
  std::ofstream(dir.Sub("tiny.yaml")) << R"(name: tiny
inputs:
  - {name: x, shape: [2]}
stages:
  - {name: y, op: relu, inputs: [x]}
outputs: [y]
)";
  std::ofstream(dir.Sub("campaign.yaml"))
      << "name: exhausted\npipelines:\n  - yaml: {path: tiny.yaml}\n"
         "strategy: {name: greedy, settings: {batch: 2, retrain_every: 2, model: lann}}\n"
         "budget: {benchmarks: 200}\nmeasurement: {samples: 2, max_samples: 2, "
         "min_sample_time: 1ms}\n";
  ChildProcess submit(FARMCTL_BIN, {"--coordinator", coordinator.endpoint(), "submit",
                                    dir.Sub("campaign.yaml")});
  ASSERT_EQ(submit.Wait(60000), std::optional<int>(0)) << submit.Log();
  // "submitted campaign ID (exhausted): ..."
  const std::string printed = submit.Log();
  const size_t at = printed.find("submitted campaign ");
  ASSERT_NE(at, std::string::npos) << printed;
  const std::string id = printed.substr(at + 19, printed.find(' ', at + 19) - at - 19);

  std::optional<ClientReply> status;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    status = client.Status(id);
    if (status && status->status().campaigns_size() == 1 &&
        status->status().campaigns(0).campaign().state() == CAMPAIGN_DONE) {
      break;
    }
  }
  ASSERT_TRUE(status && status->status().campaigns_size() == 1) << id;
  const Campaign& campaign = status->status().campaigns(0).campaign();
  ASSERT_EQ(campaign.state(), CAMPAIGN_DONE) << learner.Log();
  EXPECT_EQ(campaign.finish_reason(), "the strategy has nothing left");
  EXPECT_LT(campaign.counters().finished(), 200);
  std::set<std::string> hashes;
  for (const StoredMeasurementRecord& row : client.Export(id)) {
    EXPECT_TRUE(hashes.insert(row.measurement().candidate().schedule_hash()).second);
  }
  EXPECT_GT(hashes.size(), 1u);
  std::printf("%zu schedules measured, then: %s\n", hashes.size(),
              campaign.finish_reason().c_str());
  EXPECT_NE(learner.Log().find("event=search_exhausted"), std::string::npos) << learner.Log();
}

// A pretrained GBT (trained on synthetic samples of the current schema) of `host`,
// written to `dir` under `name`.
void WritePretrainedGbt(const std::string& dir, const std::string& name,
                        const HostFingerprint& host, bool host_description = true) {
  GbtModel model;
  TrainOptions options;
  options.threads = 1;
  options.epochs = 20;
  ASSERT_TRUE(model.Train(testing_support::SyntheticSamples(8, 8, 3), options).ok());
  PretrainedModel pretrained;
  pretrained.set_name(name);
  *pretrained.mutable_host() = host;
  pretrained.mutable_host()->clear_worker_id();
  if (host_description) *pretrained.add_hosts() = pretrained.host();
  Model& record = *pretrained.mutable_model();
  record.set_kind("gbt");
  record.set_version(name + "-1");
  record.set_feature_schema_version(CurrentFeatureSchema().version);
  record.set_weights(*model.Save());
  ASSERT_TRUE(WritePretrained(PretrainedPath(dir, name), pretrained).ok());
}

// The farm of the tests of pretrained models: its learner and the campaign files the
// test checks look for them in a folder of their own (SCHEDFARM_PRETRAINED_DIR, set
// before the learner starts and while the farm lives), and the host of its worker.
struct PretrainedFarm {
  struct ModelsDir {
    explicit ModelsDir(const std::string& dir) {
      setenv("SCHEDFARM_PRETRAINED_DIR", dir.c_str(), 1);
    }
    ~ModelsDir() { unsetenv("SCHEDFARM_PRETRAINED_DIR"); }
  };
  ScratchDir models;
  ModelsDir models_dir{models.path()};
  LearnerFarm farm = LannFarm();
  HostFingerprint host = WorkerHost(farm.client);
};

// A campaign with model_from: pretrained starts its search under a pretrained model
// trained on a host that differs from its worker's by an ISA flag and the core count
// (its first candidates carry that model's version; the learner's log names what
// differs), and every retraining fine-tunes that model on the campaign's results.
TEST(SearchCampaignTest, ASearchStartsWarmOnAHostThatDiffersFromTheTrainingHostAndFineTunes) {
  PretrainedFarm rig;
  LearnerFarm& farm = rig.farm;
  const std::string& models = rig.models.path();
  const HostFingerprint& host = rig.host;
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  ASSERT_FALSE(host.cpu_model().empty()) << farm.worker.Log();
  // The training host: twice the cores, and without one of the worker's ISA flags that
  // are not its vector ISA's.
  HostFingerprint trained = host;
  trained.set_cores(host.cores() * 2);
  std::string dropped;
  trained.clear_isa_flags();
  for (const std::string& flag : host.isa_flags()) {
    if (dropped.empty() && flag != "avx512f" && flag != "avx2" && flag != "fma") {
      dropped = flag;
    } else {
      trained.add_isa_flags(flag);
    }
  }
  ASSERT_FALSE(dropped.empty()) << host.DebugString();
  WritePretrainedGbt(models, PretrainedName("gbt", host), trained);
  const std::string search = SubmitZooCampaign(
      farm.client, "name: warm\n" + kTwoBlocks +
                       "budget: {benchmarks: 16}\nstrategy: {name: greedy, settings: {model: gbt, "
                       "batch: 2, model_from: pretrained, retrain_every: 4, epsilon: 0, "
                       "options: 30}}\n");
  ASSERT_FALSE(search.empty());
  ASSERT_TRUE(farm.WaitDone({search}, 300)) << "learner log:\n" << farm.learner.Log();
  int pretrained = 0, fine_tuned = 0;
  for (const Measurement& m : farm.Measurements(search)) {
    const std::string& version = m.candidate().model_version();
    if (version.rfind("pretrained:" + PretrainedName("gbt", host) + "-1", 0) == 0) ++pretrained;
    if (version.rfind(search + "-gbt-", 0) == 0) ++fine_tuned;
  }
  EXPECT_GT(pretrained, 0) << farm.learner.Log();
  EXPECT_GT(fine_tuned, 0) << farm.learner.Log();
  EXPECT_FALSE(LinesWith(farm.learner.Log(),
                         {"event=model_seeded", "pretrained:",
                          std::to_string(trained.cores()) + " cores", "this worker", "+" + dropped})
                   .empty())
      << farm.learner.Log();
  EXPECT_FALSE(LinesWith(farm.learner.Log(),
                         {"event=model_trained", "campaign=" + search, "from the pretrained model"})
                   .empty())
      << farm.learner.Log();
}

// A named pretrained model of another host kind, written before models took the host
// as input (no host description: it serves its exact host kind only), is refused with
// both hosts named, and `pretrained` without a model that fits says that the campaign
// starts cold and which host kinds the models cover; both campaigns go on as without one.
TEST(SearchCampaignTest, APretrainedModelOfAnotherHostKindIsRefusedNamingBoth) {
  PretrainedFarm rig;
  LearnerFarm& farm = rig.farm;
  const std::string& models = rig.models.path();
  const HostFingerprint& host = rig.host;
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  ASSERT_FALSE(host.cpu_model().empty()) << farm.worker.Log();
  HostFingerprint other = host;
  other.set_cpu_model("Other CPU 9000");
  WritePretrainedGbt(models, "gbt-other", other, /*host_description=*/false);
  const std::string settings =
      "budget: {benchmarks: 6}\nstrategy: {name: greedy, settings: {model: gbt, retrain_every: "
      "1000000, epsilon: 0, options: 30, model_from: ";
  const std::string named = SubmitZooCampaign(
      farm.client, "name: named\n" + kTwoBlocks + settings + "'pretrained:gbt-other'}}\n");
  const std::string any =
      SubmitZooCampaign(farm.client, "name: any\n" + kTwoBlocks + settings + "pretrained}}\n");
  ASSERT_FALSE(named.empty());
  ASSERT_FALSE(any.empty());
  ASSERT_TRUE(farm.WaitDone({named, any}, 300)) << "learner log:\n" << farm.learner.Log();
  const std::vector<std::string> refused =
      LinesWith(farm.learner.Log(), {"event=pretrained_refused", "campaign=" + named});
  ASSERT_EQ(refused.size(), 1u) << farm.learner.Log();
  EXPECT_NE(refused[0].find("Other CPU 9000"), std::string::npos) << refused[0];
  EXPECT_NE(refused[0].find(host.cpu_model()), std::string::npos) << refused[0];
  const std::vector<std::string> missing =
      LinesWith(farm.learner.Log(), {"event=pretrained_missing", "campaign=" + any});
  ASSERT_EQ(missing.size(), 1u) << farm.learner.Log();
  EXPECT_NE(missing[0].find(PretrainedName("gbt", host)), std::string::npos) << missing[0];
  EXPECT_NE(missing[0].find("gbt-other (Other CPU 9000"), std::string::npos)
      << "lists the host kinds the models cover: " << missing[0];
  EXPECT_NE(missing[0].find("starts cold"), std::string::npos) << missing[0];
  for (const std::string& id : {named, any}) {
    for (const Measurement& m : farm.Measurements(id)) {
      EXPECT_EQ(m.candidate().model_version().rfind("pretrained:", 0), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace schedfarm
