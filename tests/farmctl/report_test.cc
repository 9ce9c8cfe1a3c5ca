// RenderCampaignReport on hand-made campaigns: the sections and their charts with the
// points they draw, baselines as flat lines, a network campaign's task table and its
// whole-network chart first, escaping, and the texts of a campaign without results, failures or
// models.
#include "farmctl/report.h"

#include <gtest/gtest.h>

#include <string>

#include "campaign/campaign_yaml.h"

namespace schedfarm {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The number in data-points of the figure `id`, or -1 without it.
int Points(const std::string& html, const std::string& id) {
  const size_t at = html.find("id=\"" + id + "\" data-points=\"");
  if (at == std::string::npos) return -1;
  return std::stoi(html.substr(at + id.size() + 19));
}

Measurement Result(const std::string& pipeline, const std::string& origin, double seconds,
                   const std::string& worker, int64_t finished_ms,
                   MeasurementStatus status = OK) {
  Measurement m;
  m.mutable_candidate()->set_pipeline_id(pipeline);
  m.mutable_candidate()->set_origin(origin);
  m.mutable_host()->set_worker_id(worker);
  m.set_status(status);
  m.mutable_stats()->set_median_seconds(status == OK ? seconds : 0);
  m.set_finished_unix_ms(finished_ms);
  return m;
}

PipelineProgress Progress(const std::string& id, const std::string& name) {
  PipelineProgress p;
  p.set_pipeline_id(id);
  p.set_name(name);
  return p;
}

ReportInput SampleCampaign() {
  ReportInput input;
  Campaign& c = *input.status.mutable_campaign();
  c.set_id("c-1");
  c.set_name("blocks <&>");
  c.set_state(CAMPAIGN_DONE);
  c.set_budget(8);
  c.mutable_counters()->set_results(8);
  PipelineProgress a = Progress("pa", "alpha");
  a.set_measured(4);
  a.set_best_seconds(0.002);
  a.set_best_origin("random");
  a.set_farm_best_seconds(0.002);
  a.set_farm_best_origin("random");
  a.set_flops(5e7);
  a.set_farm_best_peak_gflops(40);
  a.set_bytes(1e7);
  a.set_farm_best_bandwidth_gbps(20);
  (*a.mutable_baseline_seconds())["mullapudi2016"] = 0.004;
  *input.status.add_pipelines() = a;
  *input.status.add_pipelines() = Progress("pb", "beta");
  (*input.status.mutable_failures_by_status())["CRASH"] = 1;
  const int64_t t0 = 1700000000000;
  input.measurements = {
      Result("pa", "mullapudi2016", 0.004, "w1", t0),
      Result("pa", "random", 0.008, "w1", t0 + 60000),
      Result("pa", "random", 0.003, "w2", t0 + 120000),
      Result("pa", "model-guided", 0.002, "w2", t0 + 180000),
      Result("pb", "random", 0.010, "w1", t0 + 240000),
      Result("pb", "random", 0, "w2", t0 + 300000, CRASH),
      Result("pb", "model-guided", 0.012, "w1", t0 + 360000),
      Result("pb", "model-guided", 0.009, "w2", t0 + 420000),
  };
  for (int i = 0; i < 2; ++i) {
    Model m;
    m.set_kind("gbt");
    m.set_version("gbt-" + std::to_string(i));
    m.set_training_set_size(4 + 4 * i);
    m.set_created_unix_ms(t0 + i);
    (*m.mutable_metrics())["pairwise_accuracy"] = 0.6 + 0.1 * i;
    (*m.mutable_metrics())["top1_regret"] = 1.5 - 0.2 * i;
    input.models.push_back(m);
  }
  return input;
}

TEST(CampaignReportTest, DrawsEverySectionWithItsPoints) {
  const std::string html = RenderCampaignReport(SampleCampaign());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_TRUE(Contains(html, "<title>schedfarm report: blocks &lt;&amp;&gt;</title>"));
  EXPECT_FALSE(Contains(html, "<script"));
  // alpha: 3 search results (the baseline is a flat line of 2 points); beta: 4
  // search benchmarks, one of them failed.
  EXPECT_EQ(Points(html, "best-so-far-1"), 3 + 2);
  EXPECT_EQ(Points(html, "best-so-far-2"), 3);
  EXPECT_TRUE(Contains(html, ">mullapudi2016</text>"));
  EXPECT_TRUE(Contains(html, "4 ms (2.00x)")) << "the pipeline table's speedup";
  // alpha's best: 5e7 FLOPs in 2 ms, 25 GFLOP/s, 62.5% of a 40 GFLOP/s peak, and 10 MB,
  // 5 GB/s, 25% of a 20 GB/s bandwidth; beta's: none measured.
  EXPECT_TRUE(Contains(html, "<th>FARM'S BEST</th><th>GFLOP/S</th><th>PEAK</th>")) << html;
  EXPECT_TRUE(Contains(html, "<th>PEAK</th><th>GB/S</th><th>BANDWIDTH</th>")) << html;
  EXPECT_TRUE(Contains(html,
                       "<td>2 ms</td><td>25</td><td>62.5%</td><td>5</td><td>25%</td>"
                       "<td>random</td>"))
      << html;
  EXPECT_TRUE(Contains(html, "<td>2.00x mullapudi2016</td>")) << "the fastest contender";
  EXPECT_TRUE(Contains(html, "<td>-</td><td>-</td><td>-</td><td>-</td>")) << html;
  // Histogram: one step line per origin of the search, 2 points per bin.
  EXPECT_GT(Points(html, "runtime-distribution"), 0);
  EXPECT_EQ(Points(html, "runtime-distribution") % 4, 0);
  EXPECT_TRUE(Contains(html, ">CRASH</text>"));
  EXPECT_EQ(Points(html, "failures-over-time"), 21) << "the origin and 20 buckets";
  EXPECT_EQ(Points(html, "worker-throughput"), 2 * 20);
  EXPECT_TRUE(Contains(html, ">w1</text>") && Contains(html, ">w2</text>"));
  EXPECT_EQ(Points(html, "model-pairwise_accuracy"), 2);
  EXPECT_EQ(Points(html, "model-top1_regret"), 2);
  EXPECT_TRUE(Contains(html, "<td>gbt-1</td><td>gbt</td><td>8</td>"));
  EXPECT_TRUE(Contains(html, "<td>0.700</td>"));
}

TEST(CampaignReportTest, SaysWhatIsMissing) {
  ReportInput input = SampleCampaign();
  input.measurements.clear();
  input.models.clear();
  input.status.clear_failures_by_status();
  const std::string html = RenderCampaignReport(input);
  EXPECT_FALSE(Contains(html, "<figure"));
  EXPECT_TRUE(Contains(html, "No results yet."));
  // A pipeline whose every result failed is named, not drawn.
  input.measurements = {Result("pb", "random", 0, "w1", 1700000000000, CRASH)};
  const std::string failed = RenderCampaignReport(input);
  EXPECT_EQ(Points(failed, "best-so-far-1"), -1);
  EXPECT_TRUE(Contains(failed, "No measured result yet: beta.")) << failed;
  EXPECT_TRUE(Contains(html, "No measured runtimes yet."));
  EXPECT_TRUE(Contains(html, "No failed results."));
  EXPECT_TRUE(Contains(html, "No model was trained for this campaign."));
}

TEST(CampaignReportTest, ANetworkCampaignShowsTheWholeNetworkFirst) {
  ReportInput input = SampleCampaign();
  CampaignConfig config;
  config.set_name("net");
  config.mutable_network()->set_yaml_path("net.yaml");
  input.status.mutable_campaign()->set_config_json(CampaignConfigToJson(config));
  // pa is the network (its baselines), pb the assembly pipeline (the search).
  const std::string html = RenderCampaignReport(input);
  ASSERT_GT(Points(html, "best-so-far-network"), 0) << html;
  EXPECT_EQ(Points(html, "best-so-far-network"), 3 + 2) << "beta's 3 results, one baseline";
  EXPECT_LT(html.find("best-so-far-network"), html.find("runtime-distribution"));
  EXPECT_EQ(Points(html, "best-so-far-1"), -1) << "no task pipelines";
  EXPECT_FALSE(Contains(html, "<table id=\"tasks\">")) << "no task to list";

  // A task with the farm's best and libtorch's: the task table, before the charts.
  PipelineProgress task = Progress("pc", "net.task0");
  task.set_task_weight(2);
  task.set_flops(4e6);
  task.set_farm_best_seconds(0.002);
  (*task.mutable_baseline_seconds())["libtorch"] = 0.001;
  (*task.mutable_libtorch_layout_seconds())["nchw"] = 0.001;
  *input.status.add_pipelines() = task;
  const std::string with_task = RenderCampaignReport(input);
  const size_t table = with_task.find("<table id=\"tasks\">");
  ASSERT_NE(table, std::string::npos) << with_task;
  EXPECT_LT(table, with_task.find("best-so-far-network"));
  const std::string tasks = with_task.substr(table, with_task.find("</table>", table) - table);
  EXPECT_TRUE(Contains(tasks, "<th>VS FASTEST</th>")) << tasks;
  EXPECT_TRUE(Contains(tasks,
                       "<td>net.task0</td><td>-</td><td>2</td><td>4 MFLOP</td><td>2 ms</td>"
                       "<td>1 ms</td><td>nchw</td><td>-</td><td>0.50x libtorch</td><td>2</td>"))
      << tasks;
  EXPECT_TRUE(Contains(tasks, "<td>all tasks</td>")) << tasks;
}

}  // namespace
}  // namespace schedfarm
