// farmctl curves on hand-made replay campaigns: groups by acquisition, seed averages
// on the benchmark grid, the share of pipelines within 5% of the dataset's best, the
// headline ratios, and the SVG charts.
#include "farmctl/curves.h"

#include <gtest/gtest.h>

#include "campaign/campaign_yaml.h"
#include "farmctl/svg_chart.h"

namespace schedfarm {
namespace {

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A replay campaign of pipelines "p0" and "p1" with `results` results alternating
// between them; pipeline p's k-th result has runtime 2 - k * step_p (dataset best 1.0),
// and a model after every 100 results whose held-out tau is tau_per_100 * hundreds.
CurveCampaign Campaign(const std::string& strategy, const std::string& acquisition,
                       double epsilon, int results, double tau_per_100, double step) {
  CampaignConfig config;
  config.mutable_strategy()->set_name(strategy);
  config.mutable_strategy()->set_acquisition(acquisition);
  config.mutable_strategy()->set_epsilon(epsilon);
  config.mutable_strategy()->set_model("gbt");
  config.mutable_replay()->add_pipeline_ids("p0");
  config.mutable_replay()->add_pipeline_ids("p1");
  CurveCampaign c;
  c.status.mutable_campaign()->set_config_json(CampaignConfigToJson(config));
  for (int i = 0; i < results; ++i) {
    Measurement m;
    m.mutable_candidate()->set_pipeline_id(i % 2 ? "p1" : "p0");
    m.set_status(OK);
    m.mutable_stats()->set_median_seconds(std::max(1.0, 2.0 - (i / 2) * step));
    c.measurements.push_back(m);
  }
  for (int n = 100; n <= results; n += 100) {
    Model model;
    model.set_kind("gbt");
    model.set_training_set_size(n);
    (*model.mutable_metrics())["kendall_tau"] = tau_per_100 * n / 100;
    (*model.mutable_metrics())["top1_regret"] = 1 + 1.0 / n;
    c.models.push_back(model);
    model.set_kind("gcn");  // another kind: not the campaign's curve
    (*model.mutable_metrics())["kendall_tau"] = -1;
    c.models.push_back(model);
  }
  return c;
}

TEST(FarmctlCurvesTest, GroupsAveragesAndHeadlineRatios) {
  const std::map<std::string, double> best = {{"p0", 1.0}, {"p1", 1.0}};
  // random: tau 0.1 per 100 results, reaches 0.4 at 400; one pipeline step per result.
  // uncertainty: twice as fast (0.4 at 200); exploit + 10%: finds the best sooner.
  const std::vector<CurveCampaign> campaigns = {
      Campaign("random", "exploit", 0, 400, 0.10, 0.011),
      Campaign("random", "exploit", 0, 400, 0.10, 0.011),
      Campaign("model-guided", "uncertainty", 0, 400, 0.20, 0.011),
      Campaign("model-guided", "uncertainty", 0, 400, 0.20, 0.011),
      Campaign("model-guided", "exploit", 0.1, 400, 0.10, 0.022),
  };
  const CurveReport report = RenderLearningCurves(campaigns, best);
  const std::string& t = report.text;
  EXPECT_TRUE(Contains(t, "5 campaigns in 3 groups")) << t;
  EXPECT_TRUE(Contains(t, "| benchmarks | random | exploit + 10% random | uncertainty |")) << t;
  EXPECT_TRUE(Contains(t, "| 100 | 0.100 | 0.100 | 0.200 |")) << t;
  EXPECT_TRUE(Contains(t, "| 400 | 0.400 | 0.400 | 0.800 |")) << t;
  // Within 5% (runtime <= 1.05): step 0.011 needs 88 results of each pipeline (176
  // benchmarks), step 0.022 needs 45 (90 benchmarks).
  EXPECT_TRUE(Contains(t, "| 100 | 0.00 | 1.00 | 0.00 |")) << t;
  EXPECT_TRUE(Contains(t, "| 200 | 1.00 | 1.00 | 1.00 |")) << t;
  EXPECT_TRUE(Contains(t, "benchmarks to random's final tau (0.400)")) << t;
  EXPECT_TRUE(Contains(t, "| random | 2 | 0.400 | 400 | 1.00 | 88.00 | 4/4 | 1.96 |")) << t;
  EXPECT_TRUE(Contains(t, "| uncertainty | 2 | 0.800 | 200 | 0.50 | 88.00 | 4/4 | 1.96 |")) << t;
  EXPECT_TRUE(Contains(t, "| exploit + 10% random | 1 | 0.400 | 400 | 1.00 | 45.00 | 2/2 | 1.00 |"))
      << t;

  // A curve that crosses the goal and falls back reaches it only where it stays: lcb's
  // tau 0.5, 0.3, 0.4, 0.45 reaches 0.4 at 300, not at 100.
  std::vector<CurveCampaign> crossing = campaigns;
  crossing.push_back(Campaign("model-guided", "lcb", 0, 400, 0.10, 0.011));
  const double taus[] = {0.5, 0.3, 0.4, 0.45};
  for (Model& model : crossing.back().models) {
    if (model.kind() == "gbt") {
      (*model.mutable_metrics())["kendall_tau"] = taus[model.training_set_size() / 100 - 1];
    }
  }
  EXPECT_TRUE(Contains(RenderLearningCurves(crossing, best).text,
                       "| lcb | 1 | 0.450 | 300 | 0.75 |"))
      << RenderLearningCurves(crossing, best).text;

  ASSERT_EQ(report.charts.size(), 3u);
  const std::string& svg = report.charts.at("tau.svg");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  size_t lines = 0;
  for (size_t at = svg.find("class=\"series\""); at != std::string::npos;
       at = svg.find("class=\"series\"", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 3u);
  EXPECT_TRUE(Contains(svg, ">uncertainty</text>"));
}

TEST(FarmctlCurvesTest, GroupNames) {
  CampaignConfig config;
  config.mutable_strategy()->set_name("random");
  EXPECT_EQ(CurveGroup(config), "random");
  config.mutable_strategy()->set_name("greedy");
  config.mutable_strategy()->set_acquisition("exploit");
  EXPECT_EQ(CurveGroup(config), "exploit [greedy]");
  config.mutable_strategy()->set_name("model-guided");
  config.mutable_strategy()->set_epsilon(0.05);
  EXPECT_EQ(CurveGroup(config), "exploit + 5% random");
  config.mutable_strategy()->set_remeasure(0.25);
  EXPECT_EQ(CurveGroup(config), "exploit + 5% random + 25% near-ties");
}

TEST(SvgLineChartTest, EscapesTextAndDrawsEmptyCharts) {
  LineChart chart;
  chart.title = "a < b & c";
  chart.series.push_back({"none", {}});
  const std::string svg = RenderSvgLineChart(chart);
  EXPECT_TRUE(Contains(svg, "a &lt; b &amp; c"));
  EXPECT_FALSE(Contains(svg, "class=\"series\""));
  EXPECT_TRUE(Contains(svg, ">none</text>"));
  EXPECT_TRUE(Contains(svg, "</svg>"));
}

}  // namespace
}  // namespace schedfarm
