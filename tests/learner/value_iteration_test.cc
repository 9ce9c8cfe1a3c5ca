// Value iteration as a campaign on a farm of real processes on loopback: the
// coordinator, one worker and farm-learner training the bilstm value function. The
// learner is killed with SIGKILL once round 1 is planned, while its completions are
// being measured; a new learner resumes the round from the stored prefixes and
// measurements, and the campaign runs to its end: V0, V1 and V2 fitted and stored,
// each round starting from the previous one's model, every target the fastest OK
// measurement extending its prefix, the held-out pipeline evaluated under every V_i,
// and no schedule measured twice; with every V_i reading prefixes as they are, and at
// their default completion (read_at_defaults).
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "tests/support/farm_rig.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::CoordinatorProcess;
using testing_support::TestClient;

// Four small random pipelines: three take turns in the rounds, the last is held out;
// every V_i reads prefixes as they are, or at their default completion.
std::string CampaignYaml(bool read_at_defaults) {
  return std::string(R"(name: vi
pipelines:
  - random: {seeds: [1, 4], max_ops: 3, max_elements: 4096, max_flops: 1e6}
strategy:
  name: value-iteration
  settings: {seed: 3, rounds: 2, pipelines_per_round: 2, rollouts: 2, noise: 0.3, beam: 2,
             options: 12, held_out: 1, warmup: 8, read_at_defaults: )") +
         (read_at_defaults ? "1" : "0") + R"(}
budget: {benchmarks: 400}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
)";
}

std::unique_ptr<ChildProcess> StartLearner(const std::string& endpoint) {
  return std::make_unique<ChildProcess>(
      FARM_LEARNER_BIN, std::vector<std::string>{"--coordinator", endpoint, "--epochs", "20",
                                                 "--threads", "1", "--poll-ms", "200"});
}

std::vector<ValueRound> Rounds(TestClient& client, const std::string& campaign) {
  ClientRequest request;
  request.mutable_value_rounds()->set_campaign(campaign);
  std::optional<ClientReply> reply = client.Call(request);
  if (!reply || reply->code() != CLIENT_OK) return {};
  return {reply->value_rounds().rounds().begin(), reply->value_rounds().rounds().end()};
}

class ValueIterationTest : public testing::TestWithParam<bool> {};

TEST_P(ValueIterationTest, RoundsResumeAfterTheLearnerIsKilledAndTheCampaignRunsToItsEnd) {
  const bool read_at_defaults = GetParam();
  const std::string yaml = CampaignYaml(read_at_defaults);
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"));
  ASSERT_FALSE(coordinator.endpoint().empty()) << coordinator.Log();
  ChildProcess worker(FARM_WORKER_BIN, {"--coordinator", coordinator.endpoint(), "--id", "w",
                                        "--compile-slots", "1", "--children", "1"});
  TestClient client(coordinator.endpoint());

  StatusOr<CampaignConfig> config = ParseCampaignYaml(yaml, "vi.yaml");
  ASSERT_TRUE(config.ok()) << config.status().message();
  ClientRequest submit;
  submit.mutable_submit()->set_yaml_source(yaml);
  submit.mutable_submit()->set_file_name("vi.yaml");
  const RandomPipelines& random = config->pipelines(0).random();
  for (uint64_t seed = random.first_seed(); seed < random.first_seed() + random.count(); ++seed) {
    StatusOr<PipelineSpec> pipeline = BuildRandomPipeline(random, seed);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status().message();
    *submit.mutable_submit()->add_pipelines() = *pipeline;
  }
  std::optional<ClientReply> submitted = client.Call(submit);
  ASSERT_TRUE(submitted && submitted->code() == CLIENT_OK)
      << (submitted ? submitted->error() : "no reply");
  const std::string id = submitted->submitted().id();
  const std::vector<std::string> pipelines(submitted->submitted().pipeline_ids().begin(),
                                           submitted->submitted().pipeline_ids().end());
  ASSERT_EQ(pipelines.size(), 4u);

  // The first learner runs until round 1 is planned, and is killed.
  std::unique_ptr<ChildProcess> learner = StartLearner(coordinator.endpoint());
  ValueRound planned;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(400);
  while (planned.round() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (const ValueRound& round : Rounds(client, id)) {
      if (round.round() == 1) planned = round;
    }
  }
  ASSERT_EQ(planned.round(), 1) << "learner log:\n" << learner->Log();
  learner->Signal(SIGKILL);
  learner->Wait(5000);
  const std::string first_log = learner->Log();
  EXPECT_EQ(planned.state(), VALUE_ROUND_PLANNED) << "killed before the round was fitted";
  EXPECT_EQ(planned.pipeline_ids_size(), 2);
  EXPECT_GT(planned.prefixes_size(), 0);

  // A new learner resumes the round and runs the campaign to its end.
  learner = StartLearner(coordinator.endpoint());
  bool done = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(500);
  while (!done && std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::optional<ClientReply> status = client.Status(id);
    done = status && status->status().campaigns_size() == 1 &&
           status->status().campaigns(0).campaign().state() == CAMPAIGN_DONE;
  }
  ASSERT_TRUE(done) << "first learner:\n" << first_log << "\nsecond learner:\n" << learner->Log();
  EXPECT_NE(learner->Log().find("event=value_rounds_loaded"), std::string::npos);
  EXPECT_NE(learner->Log().find("event=value_iteration_done"), std::string::npos);
  EXPECT_NE(
      learner->Log().find(read_at_defaults ? "prefixes_read=at_defaults" : "prefixes_read=as_is"),
      std::string::npos);

  // Measurements: each OK schedule once; their runtimes by pipeline and hash.
  std::map<std::string, double> seconds;  // pipeline + hash -> median
  std::map<std::string, int> warmup;      // pipeline -> random schedules
  std::set<std::string> finished;         // pipeline + hash, any status
  for (const StoredMeasurementRecord& row : client.Export(id)) {
    const Measurement& m = row.measurement();
    finished.insert(m.candidate().pipeline_id() + m.candidate().schedule_hash());
    if (m.status() != OK) continue;
    const std::string key = m.candidate().pipeline_id() + m.candidate().schedule_hash();
    EXPECT_TRUE(seconds.emplace(key, m.stats().median_seconds()).second)
        << "measured twice: " << m.candidate().schedule_hash();
    if (m.candidate().origin() == "random") ++warmup[m.candidate().pipeline_id()];
  }
  // 8 random schedules of each pipeline (one may fail at run time: Halide 14's bugs).
  for (const std::string& pipeline : pipelines) EXPECT_GE(warmup[pipeline], 7) << pipeline;

  const std::vector<ValueRound> rounds = Rounds(client, id);
  ASSERT_EQ(rounds.size(), 3u);
  ClientRequest models;
  models.mutable_models()->set_campaign(id);
  std::optional<ClientReply> stored = client.Call(models);
  ASSERT_TRUE(stored.has_value());
  std::map<std::string, Model> by_version;
  for (const Model& m : stored->models().models()) by_version[m.version()] = m;
  for (size_t i = 0; i < rounds.size(); ++i) {
    const ValueRound& round = rounds[i];
    SCOPED_TRACE("round " + std::to_string(i));
    EXPECT_EQ(round.round(), static_cast<int>(i));
    EXPECT_EQ(round.state(), VALUE_ROUND_FITTED);
    EXPECT_EQ(round.target_rule(), "measured");
    ASSERT_EQ(by_version.count(round.fitted_model()), 1u) << round.fitted_model();
    const Model& model = by_version[round.fitted_model()];
    EXPECT_EQ(model.kind(), "bilstm");
    ASSERT_EQ(model.held_out_pipelines_size(), 1);
    EXPECT_EQ(model.held_out_pipelines(0), pipelines.back());
    EXPECT_GT(model.held_out_size(), 0);
    EXPECT_EQ(model.metrics().count("mape"), 1u);
    if (i > 0) {
      EXPECT_EQ(round.start_model(), rounds[i - 1].fitted_model());
      EXPECT_GT(round.prefixes_size(), 0);
    }
    int targets = 0;
    for (const ValuePrefix& prefix : round.prefixes()) {
      EXPECT_NE(prefix.pipeline_id(), pipelines.back()) << "a held-out pipeline in a round";
      const auto completion = seconds.find(prefix.pipeline_id() + prefix.completion_hash());
      if (completion == seconds.end()) {
        continue;  // the completion failed: no measurement to reach
      }
      ++targets;
      EXPECT_GT(prefix.target_seconds(), 0);
      EXPECT_LE(prefix.target_seconds(), completion->second)
          << "the target is the least runtime reachable, the completion's at most";
      const auto target = seconds.find(prefix.pipeline_id() + prefix.target_hash());
      ASSERT_NE(target, seconds.end()) << "the target is a measured schedule";
      EXPECT_EQ(target->second, prefix.target_seconds());
    }
    if (i > 0) {
      EXPECT_GT(targets, 0);
    }
    // Greedy and beam on the held-out pipeline, each schedule benchmarked.
    ASSERT_EQ(round.evaluations_size(), 2);
    for (const ValueEvaluation& evaluation : round.evaluations()) {
      EXPECT_EQ(evaluation.pipeline_id(), pipelines.back());
      EXPECT_EQ(finished.count(evaluation.pipeline_id() + evaluation.schedule_hash()), 1u)
          << evaluation.search() << " under V" << i << " was not benchmarked";
    }
  }
  // The resumed round kept the plan the first learner stored.
  EXPECT_EQ(rounds[1].start_model(), planned.start_model());
  ASSERT_EQ(rounds[1].prefixes_size(), planned.prefixes_size());
  for (int k = 0; k < planned.prefixes_size(); ++k) {
    EXPECT_EQ(rounds[1].prefixes(k).completion_hash(), planned.prefixes(k).completion_hash());
  }
}

INSTANTIATE_TEST_SUITE_P(PrefixReadings, ValueIterationTest, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& info) {
                           return info.param ? "AtDefaults" : "AsIs";
                         });

}  // namespace
}  // namespace schedfarm
