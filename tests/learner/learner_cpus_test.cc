// farm-learner's use of its cpus, end to end on loopback with the real coordinator,
// worker and learner: the model a campaign's strategy searches under trains first and
// the campaign proposes at once, the other kinds training behind the proposals, so the
// worker does not wait for them; and however many campaigns it follows, the learner
// computes on no more than its --threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/farm_rig.h"
#include "tests/support/learner_farm.h"
#include "tests/support/proc_stats.h"
#include "tests/support/submit_campaign.h"

namespace schedfarm {
namespace {

using testing_support::ChildProcess;
using testing_support::LearnerFarm;
using testing_support::SubmitZooCampaign;

// The quarter-size blocks of the learner's tests, under `strategy`, for `budget`
// benchmarks.
std::string Campaign(const std::string& name, const std::string& strategy, int budget) {
  return "name: " + name +
         "\n"
         "pipelines:\n"
         "  - zoo: {block: vgg_block, spatial_scale: 0.25, channel_scale: 0.25}\n"
         "  - zoo: {block: squeezenet_fire, spatial_scale: 0.25, channel_scale: 0.25}\n"
         "  - zoo: {block: resnet18_basic, spatial_scale: 0.25, channel_scale: 0.25}\n"
         "strategy: " +
         strategy + "\nbudget: {benchmarks: " + std::to_string(budget) +
         "}\n"
         "measurement: {samples: 2, max_samples: 2, min_sample_time: 1ms}\n";
}

// The seconds of a worker's log, from its first lease to its last result, when it held
// no lease (event=lease_started to event=lease_finished).
double IdleSeconds(const std::string& worker_log) {
  const std::regex event(R"(ts=(\d+) \S+ event=(lease_started|lease_finished) lease=(\S+))");
  std::map<std::string, double> open;  // lease -> started
  double idle = 0;
  double idle_since = -1;
  std::istringstream lines(worker_log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, event)) continue;
    const double ts = std::stod(m[1]) / 1000;
    if (m[2] == "lease_started") {
      if (open.empty() && idle_since >= 0) idle += ts - idle_since;
      open.emplace(m[3], ts);
    } else if (open.erase(m[3]) && open.empty()) {
      idle_since = ts;
    }
  }
  return idle;
}

// The seconds the learner's log says models of `kind` took to train (event=model_trained).
double TrainedSeconds(const std::string& learner_log, const std::string& kind) {
  const std::regex event("event=model_trained .*model=\\S+-" + kind + "-\\d+ .*seconds=([0-9.]+)");
  double seconds = 0;
  std::istringstream lines(learner_log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, event)) seconds += std::stod(m[1]);
  }
  return seconds;
}

// A greedy campaign under the GBT while the learner also trains a slow GCN for the
// evaluation table: the GBT trains and the campaign proposes at once (a batch already
// queued while it trains), the GCN behind the proposals. The worker's idle time between
// its first lease and its last result stays a small part of the GCN's training time,
// which it was before (every kind trained one after another, then the proposals).
TEST(LearnerCpusTest, TheWorkerDoesNotWaitForKindsTheStrategyDoesNotSearchUnder) {
  LearnerFarm farm({"--models", "gcn,gbt", "--ensemble", "4", "--epochs", "800", "--threads", "1",
                    "--poll-ms", "200", "--min-samples", "6"});
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  const ChildProcess& worker = farm.worker;
  const ChildProcess& learner = farm.learner;
  const std::string id = SubmitZooCampaign(
      farm.client, Campaign("greedy-gbt",
                            "{name: greedy, settings: {options: 16, batch: 4, retrain_every: 6, "
                            "model: gbt, epsilon: 0}}",
                            40));
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(farm.WaitDone({id}, 500)) << "learner log:\n" << learner.Log();
  // On a loaded host the campaign can end before the GCN's first training does: the
  // worker did not wait for it either way, so its time counts once it ends.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (TrainedSeconds(learner.Log(), "gcn") == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }

  const double idle = IdleSeconds(worker.Log());
  const double gcn = TrainedSeconds(learner.Log(), "gcn");
  const double gbt = TrainedSeconds(learner.Log(), "gbt");
  std::printf(
      "worker idle %.1f s between its first lease and its last result; the learner "
      "trained the GCN for %.1f s and the GBT for %.1f s\n",
      idle, gcn, gbt);
  ASSERT_GT(gbt, 0) << learner.Log();
  ASSERT_GE(gcn, 5) << "the GCN trained too briefly to show a stall:\n" << learner.Log();
  EXPECT_LT(idle, 0.25 * gcn) << "worker log:\n"
                              << worker.Log() << "\nlearner log:\n"
                              << learner.Log();
}

// Three campaigns whose strategies search under the GCN, on a learner given one thread:
// their searches and trainings take turns, where each campaign once searched on a
// thread of its own beside the trainings. Sampled every 100 ms, the learner almost never
// has two threads running or ready to run (the cores may be busy with the worker, so
// what it asks for, not what it gets), and its cpu time grows by at most about one
// second per second over any 1 s window.
TEST(LearnerCpusTest, ThreeCampaignsComputeOnNoMoreThanTheLearnersThreads) {
  LearnerFarm farm({"--models", "gcn", "--ensemble", "2", "--epochs", "200", "--threads", "1",
                    "--poll-ms", "200", "--min-samples", "6"});
  ASSERT_FALSE(farm.coordinator.endpoint().empty()) << farm.coordinator.Log();
  const ChildProcess& learner = farm.learner;
  std::vector<std::string> ids;
  for (const std::string name : {"first", "second", "third"}) {
    ids.push_back(SubmitZooCampaign(
        farm.client, Campaign(name,
                              "{name: model-guided, settings: {batch: 3, sample_size: 2000, "
                              "retrain_every: 6, model: gcn, epsilon: 0}}",
                              12)));
    ASSERT_FALSE(ids.back().empty());
  }
  constexpr double kWindowSeconds = 1;
  std::deque<std::pair<std::chrono::steady_clock::time_point, double>> samples;
  double most = 0;             // cpu seconds per second, the most over any window
  int looks = 0, crowded = 0;  // samples, and those with two threads runnable or more
  const bool done = farm.WaitDone(ids, 500, [&] {
    ++looks;
    crowded += RunnableThreads(learner.pid()) >= 2 ? 1 : 0;
    const auto now = std::chrono::steady_clock::now();
    samples.emplace_back(now, ProcessCpuSeconds(learner.pid()));
    while (std::chrono::duration<double>(now - samples.front().first).count() > kWindowSeconds) {
      const double wall = std::chrono::duration<double>(now - samples.front().first).count();
      most = std::max(most, (samples.back().second - samples.front().second) / wall);
      samples.pop_front();
    }
  });
  ASSERT_TRUE(done) << "learner log:\n" << learner.Log();
  std::printf(
      "the learner on --threads 1: %.1f cpu seconds in all, at most %.2f cpu seconds "
      "per second over %.0f s windows; two threads or more runnable in %d of %d "
      "samples\n",
      ProcessCpuSeconds(learner.pid()), most, kWindowSeconds, crowded, looks);
  ASSERT_GT(TrainedSeconds(learner.Log(), "gcn"), 0) << learner.Log();
  EXPECT_LE(crowded, looks / 10) << learner.Log();
  EXPECT_LE(most, 1.15) << learner.Log();
}

}  // namespace
}  // namespace schedfarm
