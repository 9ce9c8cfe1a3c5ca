// What `farmctl watch` prints off a terminal: a line per meaningful change (the start,
// each tenth of the budget or 30 seconds of results, a baseline's first time, a farm's
// best that improves by 1% or more with its ratio to the fastest contender, new failures,
// a change of state), nothing for a refresh that changed nothing; a baseline faster than
// the farm is never told as the farm's best.
#include "farmctl/watch_log.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace schedfarm {
namespace {

CampaignStatus Status(int64_t finished, double best_seconds, int64_t crashes,
                      CampaignState state = CAMPAIGN_RUNNING, double onnxruntime_seconds = 0) {
  CampaignStatus status;
  Campaign& c = *status.mutable_campaign();
  c.set_id("c-1");
  c.set_name("demo");
  c.set_state(state);
  c.set_budget(100);
  c.add_pipeline_ids("p1");
  c.mutable_counters()->set_finished(finished);
  c.mutable_counters()->set_measured(finished - crashes);
  c.mutable_counters()->set_failed(crashes);
  PipelineProgress& p = *status.add_pipelines();
  p.set_pipeline_id("p1");
  p.set_name("conv");
  p.set_farm_best_seconds(best_seconds);
  p.set_farm_best_origin("model-guided");
  p.set_best_seconds(best_seconds);
  p.set_best_origin("model-guided");
  if (onnxruntime_seconds > 0) {
    (*p.mutable_baseline_seconds())["onnxruntime"] = onnxruntime_seconds;
    if (onnxruntime_seconds < best_seconds) {  // the best of every origin is the baseline's
      p.set_best_seconds(onnxruntime_seconds);
      p.set_best_origin("onnxruntime");
    }
  }
  if (crashes > 0) (*status.mutable_failures_by_status())["CRASH"] = crashes;
  return status;
}

TEST(WatchLogTest, OneLinePerMeaningfulChange) {
  WatchLog log;
  std::vector<std::string> lines = log.Update(Status(0, 0, 0), 0);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "demo: campaign c-1 running, 0/100 benchmarks (0%), 1 pipelines");
  EXPECT_TRUE(log.Update(Status(0, 0, 0), 1).empty()) << "nothing changed";
  EXPECT_TRUE(log.Update(Status(5, 2e-3, 0), 2).empty()) << "a first best is no improvement";
  // A best 0.5% faster is noise; 10% faster is news.
  EXPECT_TRUE(log.Update(Status(6, 1.99e-3, 0), 3).empty());
  lines = log.Update(Status(7, 1.79e-3, 0), 4);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "demo: conv farm's best 1.79 ms (was 1.99 ms), origin model-guided");
  // A contender's first time is news once; then the farm's next best says its ratio to it.
  lines = log.Update(Status(8, 1.79e-3, 0, CAMPAIGN_RUNNING, 1.2e-3), 4.5);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "demo: conv baseline onnxruntime 1.2 ms");
  EXPECT_TRUE(log.Update(Status(9, 1.79e-3, 0, CAMPAIGN_RUNNING, 1.2e-3), 4.6).empty());
  lines = log.Update(Status(9, 1.5e-3, 0, CAMPAIGN_RUNNING, 1.2e-3), 4.7);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "demo: conv farm's best 1.5 ms (was 1.79 ms), origin model-guided, vs fastest 0.80x "
            "onnxruntime");
  // A tenth of the budget: progress; new failures, by class.
  lines = log.Update(Status(10, 1.5e-3, 2), 5);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "demo: 2 more CRASH (2 in all)");
  EXPECT_EQ(lines[1].rfind("demo: 10/100 benchmarks (10%), 0.00 results/s, measured 8, failed 2", 0),
            0u)
      << lines[1];
  // Fewer than a tenth more: progress only once 30 seconds have passed.
  EXPECT_TRUE(log.Update(Status(12, 1.5e-3, 2), 20).empty());
  lines = log.Update(Status(13, 1.5e-3, 2), 36);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("13/100 benchmarks"), std::string::npos) << lines[0];
  // The end: the last progress and the state.
  lines = log.Update(Status(14, 1.5e-3, 2, CAMPAIGN_DONE), 37);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("14/100 benchmarks"), std::string::npos) << lines[0];
  EXPECT_EQ(lines[1], "demo: running -> done");
}

}  // namespace
}  // namespace schedfarm
