// farm-learner end to end on loopback: the real coordinator, a real worker and the real
// learner as processes run a model-guided campaign. The learner follows the
// measurements, trains and evaluates the models on held-out pipelines, stores them in
// the coordinator's store, and proposes candidates scored by its model.
#include "learner_daemon/learner_daemon.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "learner/features.h"
#include "learner_daemon/daemon_state.h"
#include "tests/support/farm_rig.h"
#include "tests/support/proc_stats.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/submit_campaign.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::CoordinatorProcess;
using testing_support::SubmitZooCampaign;
using testing_support::TestClient;

constexpr char kCampaign[] = R"(name: guided
pipelines:
  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}
  - zoo: {block: squeezenet_fire, spatial_scale: 0.25, channel_scale: 0.25}
  - zoo: {block: resnet18_basic, spatial_scale: 0.25, channel_scale: 0.25}
strategy: {name: model-guided, settings: {batch: 3, sample_size: 60, retrain_every: 9, model: gcn, epsilon: 0.34}}
budget: {benchmarks: 24}
measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}
)";

// Runs the real farmctl with `args` to its end: (exit code, output).
std::pair<int, std::string> Farmctl(const std::vector<std::string>& args) {
  ChildProcess farmctl(FARMCTL_BIN, args);
  const std::optional<int> exit = farmctl.Wait(120000);
  return {exit.has_value() ? WEXITSTATUS(*exit) : -1, farmctl.Log()};
}

// The threads of a process and how many of them computed.
struct BusyThreads {
  int seen = 0;  // threads the process had at any time
  int busy = 0;  // of them, those that used more than 0.2 s of cpu
  bool exited = false;
};

// Watches `process` until it exits (at most `timeout_ms`): every thread's cpu time from
// /proc/PID/task/TID/stat, read every 50 ms.
BusyThreads WatchThreads(ChildProcess& process, int timeout_ms) {
  std::map<std::string, double> cpu;  // by thread id, the most seen
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  BusyThreads out;
  while (std::chrono::steady_clock::now() < deadline && !out.exited) {
    for (const auto& [tid, used] : ThreadCpuSecondsById(process.pid())) {
      cpu[tid] = std::max(cpu[tid], used);
    }
    out.exited = process.Wait(50).has_value();
  }
  out.seen = static_cast<int>(cpu.size());
  for (const auto& [tid, seconds] : cpu) out.busy += seconds > 0.2 ? 1 : 0;
  return out;
}

TEST(LearnerDaemonTest, TrainsStoresAndProposesForAModelGuidedCampaign) {
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"));
  ASSERT_FALSE(coordinator.endpoint().empty()) << coordinator.Log();
  ChildProcess worker(FARM_WORKER_BIN, {"--coordinator", coordinator.endpoint(), "--id", "w",
                                        "--compile-slots", "1", "--children", "1"});
  ChildProcess learner(
      FARM_LEARNER_BIN,
      {"--coordinator", coordinator.endpoint(), "--models", "gcn,gbt,roofline", "--ensemble", "2",
       "--epochs", "60", "--threads", "1", "--poll-ms", "200", "--min-samples", "9"});
  TestClient client(coordinator.endpoint());

  const std::string id = SubmitZooCampaign(client, kCampaign);
  ASSERT_FALSE(id.empty());
  std::optional<ClientReply> reply;

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(400);
  CampaignState state = CAMPAIGN_RUNNING;
  while (state != CAMPAIGN_DONE && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::optional<ClientReply> status = client.Status(id);
    if (status && status->status().campaigns_size() == 1) {
      state = status->status().campaigns(0).campaign().state();
    }
  }
  ASSERT_EQ(state, CAMPAIGN_DONE) << "learner log:\n" << learner.Log();

  // Models: trained on the campaign, evaluated on held-out pipelines, stored.
  ClientRequest models;
  models.mutable_models()->set_campaign(id);
  reply = client.Call(models);
  ASSERT_TRUE(reply.has_value());
  std::set<std::string> kinds;
  for (const Model& model : reply->models().models()) {
    kinds.insert(model.kind());
    EXPECT_GT(model.training_set_size(), 0);
    EXPECT_EQ(model.held_out_pipelines_size(), 1) << "a fifth of 3 pipelines rounds to 1";
    EXPECT_TRUE(model.metrics().count("mape")) << model.kind();
    EXPECT_TRUE(model.metrics().count("pairwise_accuracy") || model.held_out_size() < 2);
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"gcn", "gbt", "roofline"})) << learner.Log();

  // Candidates: the learner proposed them all (the coordinator proposes none for a
  // model-guided campaign); once a model existed, most were chosen by it.
  std::set<std::string> origins;
  int scored = 0;
  for (const StoredMeasurementRecord& row : client.Export(id)) {
    const Candidate& candidate = row.measurement().candidate();
    origins.insert(candidate.origin());
    if (!candidate.model_version().empty()) {
      ++scored;
      EXPECT_GT(candidate.prediction().mean_seconds(), 0);
    }
  }
  EXPECT_TRUE(origins.count("random")) << "before the first model, and the epsilon share";
  EXPECT_TRUE(origins.count("model-guided")) << learner.Log();
  EXPECT_GT(scored, 0);
  EXPECT_NE(learner.Log().find("event=models_evaluated"), std::string::npos);

  // One training on the finished campaign: every kind asked for, stored, its table
  // printed; an unknown campaign is an error naming it. Its learning rates are scaled
  // for the test, and every model it stores says so.
  ChildProcess once(FARM_LEARNER_BIN,
                    {"--coordinator", coordinator.endpoint(), "--train", id, "--models",
                     "lann,roofline", "--ensemble", "2", "--epochs", "50", "--threads", "1",
                     "--test-learning-rate-scale", "0.5"});
  std::optional<int> exit = once.Wait(120000);
  ASSERT_TRUE(exit.has_value()) << once.Log();
  EXPECT_EQ(WEXITSTATUS(*exit), 0) << once.Log();
  EXPECT_NE(once.Log().find("\nlann "), std::string::npos) << once.Log();
  EXPECT_NE(once.Log().find("\nroofline "), std::string::npos) << once.Log();
  reply = client.Call(models);
  ASSERT_TRUE(reply.has_value());
  int lann = 0;
  for (const Model& model : reply->models().models()) {
    // Only --train trained lann; gcn and gbt the daemon, unscaled.
    if (model.kind() != "roofline") {
      EXPECT_EQ(model.test_learning_rate_scale(), model.kind() == "lann" ? 0.5 : 0)
          << model.version();
    }
    if (model.kind() != "lann") continue;
    ++lann;
    EXPECT_GT(model.training_set_size(), 0);
    EXPECT_TRUE(model.metrics().count("mape"));
  }
  EXPECT_EQ(lann, 1) << "lann was trained only by --train";

  // An ablation: with the columns the roofline reads zeroed, it has nothing to fit.
  ChildProcess ablated(FARM_LEARNER_BIN,
                       {"--coordinator", coordinator.endpoint(), "--train", id, "--models",
                        "roofline", "--drop-features",
                        "float_ops,scalar_float_ops,vector_float_ops,unique_bytes,"
                        "bytes_written_total,flops,bytes_read,bytes_written"});
  exit = ablated.Wait(60000);
  ASSERT_TRUE(exit.has_value()) << ablated.Log();
  EXPECT_NE(ablated.Log().find("event=training_failed"), std::string::npos) << ablated.Log();
  EXPECT_NE(ablated.Log().find("zero flops and bytes"), std::string::npos) << ablated.Log();

  // Threads bounded by --threads, Torch's and XGBoost's alike: training gcn and gbt on
  // one thread, no other thread of the learner computes (more than 0.2 s of cpu); on
  // two, their pools do.
  for (const int threads : {1, 2}) {
    ChildProcess bounded(FARM_LEARNER_BIN,
                         {"--coordinator", coordinator.endpoint(), "--train", id, "--models",
                          "gcn,gbt", "--ensemble", "2", "--epochs", "300", "--threads",
                          std::to_string(threads)});
    const BusyThreads busy = WatchThreads(bounded, 180000);
    ASSERT_TRUE(busy.exited) << bounded.Log();
    std::printf("--threads %d: %d threads computed (%d threads in all)\n", threads, busy.busy,
                busy.seen);
    if (threads == 1) {
      EXPECT_EQ(busy.busy, 1) << bounded.Log();
    } else {
      EXPECT_GE(busy.busy, 2) << "the watch does not see a second computing thread";
    }
  }

  // Exports: the newest gcn and lann as TorchScript that Python loads, with their kind
  // and feature schema; a kind without an export and an unwritable file are errors
  // naming them.
  for (const std::string kind : {"gcn", "lann"}) {
    const std::string file = dir.Sub(kind + ".pt");
    const auto [code, out] = Farmctl({"model", "export", id, "--kind", kind, "--output", file,
                                      "--coordinator", coordinator.endpoint()});
    ASSERT_EQ(code, 0) << out;
    EXPECT_NE(out.find("exported " + kind + " model " + id + "-" + kind), std::string::npos) << out;
    EXPECT_FALSE(std::filesystem::exists(file + ".partial"));
    const auto [python_code, python_out] = [&] {
      ChildProcess python("/usr/bin/python3",
                          {"-c",
                           "import sys, torch\n"
                           "m = torch.jit.load(sys.argv[1])\n"
                           "print('loaded', m.kind, m.feature_schema_version, "
                           "len(m.invariant_names) > 0, len(m.dependent_names) > 0)\n",
                           file});
      const std::optional<int> exit = python.Wait(60000);
      return std::pair{exit.has_value() ? WEXITSTATUS(*exit) : -1, python.Log()};
    }();
    EXPECT_EQ(python_code, 0) << python_out;
    EXPECT_NE(python_out.find("loaded " + kind + " " +
                              std::to_string(CurrentFeatureSchema().version) + " True True"),
              std::string::npos)
        << python_out;
  }
  auto [code, out] = Farmctl({"model", "export", id, "--kind", "roofline", "--output",
                              dir.Sub("roofline.pt"), "--coordinator", coordinator.endpoint()});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("(kind 'roofline') has no TorchScript export"), std::string::npos) << out;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("roofline.pt")));
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("roofline.pt.partial")));
  std::tie(code, out) =
      Farmctl({"model", "export", id, "--kind", "gcn", "--output", dir.Sub("missing/gcn.pt"),
               "--coordinator", coordinator.endpoint()});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("cannot write '" + dir.Sub("missing/gcn.pt.partial") + "'"), std::string::npos)
      << out;
  std::tie(code, out) = Farmctl({"model", "export", id, "--kind", "sage", "--output",
                                 dir.Sub("sage.pt"), "--coordinator", coordinator.endpoint()});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("has no stored 'sage' model"), std::string::npos) << out;
  ChildProcess unknown(FARM_LEARNER_BIN,
                       {"--coordinator", coordinator.endpoint(), "--train", "nope"});
  exit = unknown.Wait(30000);
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(WEXITSTATUS(*exit), 1);
  EXPECT_NE(unknown.Log().find("no campaign 'nope'"), std::string::npos) << unknown.Log();
}

// Lines of a process log from the first that contains `from` on.
std::string LogFrom(const std::string& log, const std::string& from) {
  const size_t at = log.find(from);
  return at == std::string::npos ? "" : log.substr(at);
}

// Waits until `process`'s log contains `text` after the first `after` (from the start
// when `after` is empty) or the timeout passes.
bool WaitForLogAfter(const ChildProcess& process, const std::string& after, const std::string& text,
                     int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (LogFrom(process.Log(), after).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

bool WaitForLog(const ChildProcess& process, const std::string& text, int seconds) {
  return WaitForLogAfter(process, "", text, seconds);
}

// A learner restarted mid-campaign proposes with the campaign's newest stored model
// before it trains anything; a newest stored model that does not load (a truncated
// blob) is an event naming its version, and the learner trains its own.
TEST(LearnerDaemonTest, ARestartedLearnerProposesWithItsStoredModelAtOnce) {
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"));
  ASSERT_FALSE(coordinator.endpoint().empty()) << coordinator.Log();
  ChildProcess worker(FARM_WORKER_BIN, {"--coordinator", coordinator.endpoint(), "--id", "w",
                                        "--compile-slots", "1", "--children", "1"});
  const std::vector<std::string> learner_flags = {"--coordinator", coordinator.endpoint(),
                                                  "--models",      "gcn",
                                                  "--ensemble",    "2",
                                                  "--epochs",      "20",
                                                  "--threads",     "1",
                                                  "--poll-ms",     "200",
                                                  "--min-samples", "9"};
  auto first = std::make_unique<ChildProcess>(FARM_LEARNER_BIN, learner_flags);
  TestClient client(coordinator.endpoint());

  std::string long_campaign = kCampaign;
  long_campaign.replace(long_campaign.find("benchmarks: 24"), 14, "benchmarks: 400");
  const std::string id = SubmitZooCampaign(client, long_campaign);
  ASSERT_FALSE(id.empty());
  std::optional<ClientReply> reply;

  // The first learner trains and stores a model, and is killed.
  ASSERT_TRUE(WaitForLog(*first, "event=model_trained", 300)) << first->Log();
  first->Signal(SIGKILL);
  first->Wait(10000);
  ClientRequest models;
  models.mutable_models()->set_campaign(id);
  models.mutable_models()->set_kind("gcn");
  models.mutable_models()->set_with_weights(true);
  reply = client.Call(models);
  ASSERT_TRUE(reply && reply->models().models_size() > 0);
  const std::string stored = reply->models().models(0).version();

  // The second proposes with it at once: resumed, then proposed under it, before any
  // training of its own.
  auto second = std::make_unique<ChildProcess>(FARM_LEARNER_BIN, learner_flags);
  ASSERT_TRUE(WaitForLog(*second, "event=proposed", 120)) << second->Log();
  const std::string log = second->Log();
  EXPECT_NE(log.find("event=model_resumed"), std::string::npos) << log;
  EXPECT_NE(log.find("model=" + stored), std::string::npos) << log;
  const std::string proposed = LogFrom(log, "event=proposed");
  EXPECT_NE(proposed.substr(0, proposed.find('\n')).find("model=" + stored), std::string::npos)
      << "the first proposal is scored by the stored model:\n"
      << log;
  EXPECT_LT(log.find("event=proposed"), log.find("event=model_trained")) << log;
  second->Signal(SIGKILL);
  second->Wait(10000);

  // A training that diverges (every learning rate times 1e36) stores nothing: the
  // learner says why, keeps the newest stored model and goes on proposing with it.
  reply = client.Call(models);
  ASSERT_TRUE(reply && reply->models().models_size() > 0);
  const std::string kept = reply->models().models(0).version();
  std::vector<std::string> diverging_flags = learner_flags;
  diverging_flags.insert(diverging_flags.end(), {"--test-learning-rate-scale", "1e36"});
  ChildProcess diverging(FARM_LEARNER_BIN, diverging_flags);
  ASSERT_TRUE(WaitForLog(diverging, "event=training_failed", 300)) << diverging.Log();
  const std::string failed = LogFrom(diverging.Log(), "event=training_failed");
  EXPECT_NE(failed.substr(0, failed.find('\n')).find("diverged (loss"), std::string::npos)
      << failed;
  ASSERT_TRUE(WaitForLogAfter(diverging, "event=training_failed", "event=proposed", 120))
      << diverging.Log();
  // The first proposal after the failed training.
  const std::string after =
      LogFrom(LogFrom(diverging.Log(), "event=training_failed"), "event=proposed");
  EXPECT_NE(after.substr(0, after.find('\n')).find("model=" + kept), std::string::npos)
      << diverging.Log();
  reply = client.Call(models);
  ASSERT_TRUE(reply && reply->models().models_size() > 0);
  EXPECT_EQ(reply->models().models(0).version(), kept);
  diverging.Signal(SIGKILL);
  diverging.Wait(10000);

  // A truncated blob as the newest stored model: an event naming it, then training.
  ClientRequest store;
  Model* bad = store.mutable_store_model()->mutable_model();
  bad->set_kind("gcn");
  bad->set_version("truncated-version");
  bad->set_campaign(id);
  bad->set_created_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count() +
                           1000);
  bad->set_training_set_size(10);
  bad->set_feature_schema_version(CurrentFeatureSchema().version);
  const std::string weights = reply->models().models(0).weights();
  bad->set_weights(weights.substr(0, 100));
  ASSERT_TRUE(client.Call(store).has_value());
  reply = client.Call(models);
  ASSERT_TRUE(reply && reply->models().models_size() > 0);
  ASSERT_EQ(reply->models().models(0).version(), "truncated-version");
  ChildProcess third(FARM_LEARNER_BIN, learner_flags);
  ASSERT_TRUE(WaitForLog(third, "event=stored_model_unusable", 60)) << third.Log();
  const std::string unusable = LogFrom(third.Log(), "event=stored_model_unusable");
  EXPECT_NE(unusable.find("truncated-version"), std::string::npos) << unusable;
  EXPECT_NE(unusable.find("not a saved Torch model"), std::string::npos) << unusable;
  const auto [code, out] =
      Farmctl({"model", "export", id, "--kind", "gcn", "--version", "truncated-version", "--output",
               dir.Sub("truncated.pt"), "--coordinator", coordinator.endpoint()});
  EXPECT_EQ(code, 1) << out;
  EXPECT_NE(out.find("model truncated-version (kind 'gcn') does not load"), std::string::npos)
      << out;
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("truncated.pt")));
  EXPECT_TRUE(WaitForLog(third, "event=model_trained", 300)) << third.Log();

  // A model of another feature-schema version: the export names the version and both
  // schema versions.
  bad->set_version("other-schema");
  bad->set_feature_schema_version(CurrentFeatureSchema().version + 1);
  bad->set_weights(weights);
  ASSERT_TRUE(client.Call(store).has_value());
  const auto [schema_code, schema_out] =
      Farmctl({"model", "export", id, "--kind", "gcn", "--version", "other-schema", "--output",
               dir.Sub("other.pt"), "--coordinator", coordinator.endpoint()});
  EXPECT_EQ(schema_code, 1) << schema_out;
  EXPECT_NE(schema_out.find("model other-schema (kind 'gcn') was trained on feature schema "
                            "version " +
                            std::to_string(CurrentFeatureSchema().version + 1) +
                            "; this build reads version " +
                            std::to_string(CurrentFeatureSchema().version)),
            std::string::npos)
      << schema_out;
}

// Runs farm-learner with `args`: a usage error (exit code 2) whose output says `message`.
void ExpectUsageError(const std::vector<std::string>& args, const std::string& message) {
  ChildProcess learner(FARM_LEARNER_BIN, args);
  const std::optional<int> status = learner.Wait(10000);
  ASSERT_TRUE(status.has_value());
  EXPECT_EQ(WEXITSTATUS(*status), 2);
  EXPECT_NE(learner.Log().find(message), std::string::npos) << learner.Log();
}

// A campaign's connection the learner cannot open (here: no file descriptor is left
// when it opens one for the campaign it finds) ends Run with an error naming the
// campaign, every campaign thread joined, where it once ended the process in
// std::terminate.
TEST(LearnerDaemonTest, AConnectionItCannotOpenIsAnErrorNamingTheCampaignNotAnAbort) {
  ScratchDir dir;
  CoordinatorProcess coordinator(FARM_COORDINATOR_BIN, dir.Sub("store"));
  ASSERT_FALSE(coordinator.endpoint().empty()) << coordinator.Log();
  TestClient client(coordinator.endpoint());
  const std::string id = SubmitZooCampaign(client, kCampaign);
  ASSERT_FALSE(id.empty());
  LearnerOptions options;
  options.client.endpoint = coordinator.endpoint();
  options.poll_interval_ms = 50;
  options.kinds = {"roofline"};
  StatusOr<std::unique_ptr<LearnerDaemon>> learner = LearnerDaemon::Create(options);
  ASSERT_TRUE(learner.ok()) << learner.status().ToString();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its own link is up

  // From here on no new file descriptor: the limit is the lowest free one.
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int lowest_free = dup(0);
  ASSERT_GE(lowest_free, 0);
  close(lowest_free);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest_free);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  // Stopped after 20 s should it serve on (a thread needs no file descriptor).
  std::atomic<bool> stop{false};
  std::thread deadline([&stop] {
    for (int i = 0; i < 400 && !stop.load(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    stop.store(true);
  });
  const Status ran = (*learner)->Run(stop);
  stop.store(true);
  deadline.join();
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);

  ASSERT_FALSE(ran.ok());
  std::printf("the learner's error: %s\n", ran.message().c_str());
  EXPECT_NE(ran.message().find("following campaign '" + id + "'"), std::string::npos)
      << ran.message();
}

// The final assembly of a network is proposed with three times the longest assembly's turn
// left of a wall-time budget: its compile and its run phase, not its wait in the queue.
TEST(LearnerDaemonTest, AnAssemblysTurnIsItsCompileAndItsRunPhase) {
  Measurement m;
  m.set_compile_seconds(155);
  m.mutable_stats()->set_median_seconds(0.1);
  m.set_repeats_per_sample(2);
  for (int i = 0; i < 5; ++i) m.add_samples_seconds(0.1);
  EXPECT_DOUBLE_EQ(AssemblyTurnSeconds(m), 155 + 0.1 * (1 + 2 * 5));
}

TEST(LearnerDaemonTest, RefusesBadArguments) {
  const std::string endpoint = "tcp://127.0.0.1:1";
  ExpectUsageError({}, "--coordinator is required");
  ExpectUsageError({"--coordinator", endpoint, "--models", "gcn,forest"},
                   "unknown model kind 'forest'");
  ExpectUsageError({"--coordinator", endpoint, "--min-samples", "1"},
                   "--min-samples must be an integer in [2, ");
  ExpectUsageError({"--coordinator", endpoint, "--train-samples", "-5"},
                   "--train-samples must be an integer in [0, ");
  ExpectUsageError({"--coordinator", endpoint, "--drop-features", "loop"},
                   "--drop-features is for --train");
  ExpectUsageError({"--coordinator", endpoint, "--train", "c", "--drop-features", "loop,,ops_"},
                   "--drop-features: an empty prefix");
  ExpectUsageError({"--coordinator", endpoint, "--test-learning-rate-scale", "-1"},
                   "--test-learning-rate-scale must be a positive number, got '-1'");
}

}  // namespace
}  // namespace schedfarm
