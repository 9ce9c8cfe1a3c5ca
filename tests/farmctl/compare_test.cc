// The comparison of campaigns (`farmctl compare`) computed on the hand-made campaigns of
// sample_campaigns.h: the runtimes per pipeline and column, baselines that failed or
// never ran, the geometric means over the complete rows, the speedups over the
// baselines, the tally of the measurements, the column headers, the text and the JSON.
#include "farmctl/compare.h"

#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "farmctl/render.h"
#include "sample_campaigns.h"

namespace schedfarm {
namespace {

using testing_support::Compared;
using testing_support::CompareSamples;
using testing_support::EmptyCampaign;
using testing_support::GreedySample;
using testing_support::kConvId;
using testing_support::kFireId;
using testing_support::kVggId;
using testing_support::RandomSample;
using testing_support::SampleCampaign;

// The words of the line of `text` whose first cell is `first`.
std::vector<std::string> RowOf(const std::string& text, const std::string& first) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("  " + first + " ", 0) != 0) continue;
    std::istringstream words(line.substr(first.size() + 2));
    std::vector<std::string> row;
    for (std::string word; words >> word;) row.push_back(word);
    return row;
  }
  return {};
}

TEST(FarmctlCompareTest, TallyCountsEachCandidateOnceAndFailedBaselines) {
  MeasurementTally random = Compared(RandomSample()).tally;
  EXPECT_EQ(random.candidates_by_origin(),
            (std::map<std::string, int64_t>{{"li2018", 4}, {"mullapudi2016", 3}, {"random", 3}}));
  EXPECT_EQ(random.search_seconds(), 0);
  EXPECT_TRUE(random.BaselineFailed(testing_support::kFireId, "mullapudi2016"));
  EXPECT_FALSE(random.BaselineFailed(testing_support::kVggId, "mullapudi2016"));
  EXPECT_FALSE(random.BaselineFailed(testing_support::kConvId, "random")) << "not a baseline";

  MeasurementTally greedy = Compared(GreedySample()).tally;
  EXPECT_DOUBLE_EQ(greedy.search_seconds(), 1.5);
  EXPECT_EQ(greedy.candidates_by_origin().at("greedy"), 4);
  EXPECT_TRUE(greedy.BaselineFailed(testing_support::kResnetId, "li2018"));
}

Measurement Result(const std::string& hash, const std::string& origin, MeasurementStatus status,
                   double median, int64_t finished_unix_ms = 0) {
  Measurement m;
  m.set_finished_unix_ms(finished_unix_ms);
  m.mutable_candidate()->set_pipeline_id("p");
  m.mutable_candidate()->set_schedule_hash(hash);
  m.mutable_candidate()->set_origin(origin);
  m.set_status(status);
  m.mutable_stats()->set_median_seconds(median);
  return m;
}

// --first N: the best among each pipeline's first N candidates, baselines aside, a
// failed candidate counted and its later successful retry taken.
TEST(FarmctlCompareTest, TallyOfTheFirstCandidatesOfEachPipeline) {
  MeasurementTally tally(ComparisonCut{2});
  tally.Add(Result("li2018", "li2018", OK, 0.5));
  tally.Add(Result("a", "greedy", OK, 5.0));
  tally.Add(Result("b", "greedy", CRASH, 0));
  tally.Add(Result("c", "greedy", OK, 1.0));  // the third candidate: beyond the first 2
  tally.Add(Result("b", "greedy", OK, 3.0));  // the retry of the second
  EXPECT_DOUBLE_EQ(tally.BestWithinCut("p"), 3.0);
  EXPECT_EQ(tally.CountedOf("p"), 2);
  EXPECT_EQ(tally.BestWithinCut("q"), 0);
  MeasurementTally all;
  all.Add(Result("a", "greedy", OK, 5.0));
  all.Add(Result("c", "greedy", OK, 1.0));
  EXPECT_FALSE(all.cut().any());
  EXPECT_EQ(all.BestWithinCut("p"), 1.0) << "without a cut every candidate counts";
}

// A campaign's column is the best of its own schedules: a baseline faster than all of
// them is in the baseline's column only.
TEST(FarmctlCompareTest, ACampaignsBestIsOfItsOwnSchedules) {
  SampleCampaign a = EmptyCampaign("c-a", "a", "random", {"libtorch"}, CAMPAIGN_DONE, 3, 3);
  testing_support::AddProgress(&a, kVggId, "vgg_block", 1e-3, {{"libtorch", 1e-3}});
  a.status.mutable_pipelines(0)->set_farm_best_seconds(2e-3);
  const Comparison c = CompareCampaigns({Compared(a)});
  ASSERT_EQ(c.rows.size(), 1u);
  EXPECT_EQ(c.rows[0].runtimes[0].seconds, 2e-3);
  EXPECT_EQ(c.rows[0].runtimes[1].seconds, 1e-3);
}

// --time D: the candidates measured within D of the campaign's submission; a retry
// that finished after it does not count, nor does a baseline.
TEST(FarmctlCompareTest, TallyOfTheCandidatesMeasuredWithinATime) {
  const int64_t submitted = 1'000'000;
  MeasurementTally tally(ComparisonCut{0, 60}, submitted);
  tally.Add(Result("li2018", "li2018", OK, 0.5, submitted + 5'000));
  tally.Add(Result("a", "greedy", OK, 5.0, submitted + 10'000));
  tally.Add(Result("b", "greedy", CRASH, 0, submitted + 50'000));
  tally.Add(Result("c", "greedy", OK, 1.0, submitted + 70'000));  // after the minute
  tally.Add(Result("b", "greedy", OK, 3.0, submitted + 80'000));  // the retry, after it too
  EXPECT_DOUBLE_EQ(tally.BestWithinCut("p"), 5.0);
  EXPECT_EQ(tally.CountedOf("p"), 2);
  MeasurementTally both(ComparisonCut{1, 60}, submitted);
  both.Add(Result("a", "greedy", OK, 5.0, submitted + 10'000));
  both.Add(Result("d", "greedy", OK, 2.0, submitted + 20'000));  // the second: beyond 1
  EXPECT_DOUBLE_EQ(both.BestWithinCut("p"), 5.0);
}

// The candidates a pipeline took to come within 5% of its best: a retried candidate
// keeps the position of its first attempt.
TEST(FarmctlCompareTest, CandidatesToComeNearTheBestCountFromTheFirstCandidate) {
  MeasurementTally tally;
  tally.Add(Result("a", "greedy", OK, 10.0));
  tally.Add(Result("b", "greedy", CRASH, 0));
  tally.Add(Result("c", "greedy", OK, 4.15));  // the third, within 5% of 4.0
  tally.Add(Result("d", "greedy", OK, 4.0));
  EXPECT_EQ(tally.CandidatesToNearBest("p", kNearBest), 3);
  EXPECT_EQ(tally.CandidatesToNearBest("p", 0), 4);
  tally.Add(Result("b", "greedy", OK, 4.1));  // the retry of the second
  EXPECT_EQ(tally.CandidatesToNearBest("p", kNearBest), 2);
  EXPECT_EQ(tally.CandidatesToNearBest("q", kNearBest), 0) << "no candidate";
}

// A network campaign's tasks (their weights) add up to the tasks' estimate of each
// column that has every task; the assembly (weight 0) is not a task.
TEST(FarmctlCompareTest, NetworkCampaignsShowTheTasksEstimate) {
  SampleCampaign a =
      EmptyCampaign("c-a", "tune-net", "model-guided", {"libtorch"}, CAMPAIGN_DONE, 10, 10);
  testing_support::AddProgress(&a, kVggId, "net.task0", 1e-3, {{"libtorch", 2e-3}});
  testing_support::AddProgress(&a, kFireId, "net.task1", 3e-3, {{"libtorch", 1e-3}});
  testing_support::AddProgress(&a, kConvId, "net.assembly", 6e-3, {{"libtorch", 4e-3}});
  a.status.mutable_pipelines(0)->set_task_weight(2);
  a.status.mutable_pipelines(1)->set_task_weight(1);
  SampleCampaign b = EmptyCampaign("c-b", "tune-net", "random", {"libtorch"}, CAMPAIGN_DONE, 1, 10);
  testing_support::AddProgress(&b, kVggId, "net.task0", 0.5e-3, {});
  testing_support::AddProgress(&b, kFireId, "net.task1", 0, {});
  b.status.mutable_pipelines(0)->set_task_weight(2);
  b.status.mutable_pipelines(1)->set_task_weight(1);
  const Comparison c = CompareCampaigns({Compared(a), Compared(b)});
  ASSERT_EQ(c.task_estimates.size(), 3u);
  EXPECT_NEAR(c.task_estimates[0], 5e-3, 1e-12);
  EXPECT_EQ(c.task_estimates[1], 0) << "task1 has no runtime in c-b";
  EXPECT_NEAR(c.task_estimates[2], 5e-3, 1e-12) << "libtorch: 2 x 2 ms + 1 ms";
  const std::string text = RenderComparison(c);
  EXPECT_EQ(RowOf(text, "tasks' estimate (weight x runtime)"),
            (std::vector<std::string>{"5", "ms", "-", "5", "ms"}))
      << text;
  EXPECT_EQ(RenderComparison(CompareSamples()).find("tasks' estimate"), std::string::npos)
      << "not a network";
}

TEST(FarmctlCompareTest, RowsHoldEachCampaignsBestAndTheBaselinesBestOverTheCampaigns) {
  const Comparison c = CompareSamples();
  EXPECT_EQ(c.headers, (std::vector<std::string>{"random", "greedy"}));
  EXPECT_EQ(c.baselines, (std::vector<std::string>{"li2018", "mullapudi2016"}));
  ASSERT_EQ(c.rows.size(), 4u);
  const auto seconds = [&](size_t row) {
    std::vector<double> values;
    for (const ComparedRuntime& r : c.rows[row].runtimes) values.push_back(r.seconds);
    return values;
  };
  EXPECT_EQ(c.rows[0].name, "vgg_block");
  EXPECT_EQ(seconds(0), (std::vector<double>{100e-6, 50e-6, 200e-6, 400e-6}));
  EXPECT_EQ(c.rows[1].name, "squeezenet_fire");
  EXPECT_EQ(seconds(1), (std::vector<double>{20e-6, 10e-6, 38e-6, 0}));
  EXPECT_TRUE(c.rows[1].runtimes[3].failed) << "mullapudi2016 crashed on it";
  EXPECT_EQ(c.rows[2].name, "resnet18_basic");
  EXPECT_EQ(seconds(2), (std::vector<double>{0, 30e-6, 90e-6, 0}));
  EXPECT_FALSE(c.rows[2].runtimes[2].failed) << "li2018's timeout in c-g, a runtime in c-r";
  EXPECT_FALSE(c.rows[2].runtimes[3].failed) << "mullapudi2016 never ran on it";
  EXPECT_EQ(seconds(3), (std::vector<double>{1e-3, 0.5e-3, 4e-3, 1e-3}));
}

TEST(FarmctlCompareTest, GeomeansCoverThePipelinesWhereEveryColumnHasARuntime) {
  const Comparison c = CompareSamples();
  // vgg_block and conv_relu only.
  EXPECT_EQ(c.geomean_pipelines, 2);
  ASSERT_EQ(c.geomeans.size(), 4u);
  EXPECT_NEAR(c.geomeans[0], std::sqrt(100e-6 * 1e-3), 1e-12);
  EXPECT_NEAR(c.geomeans[1], std::sqrt(50e-6 * 0.5e-3), 1e-12);
  EXPECT_NEAR(c.geomeans[2], std::sqrt(200e-6 * 4e-3), 1e-12);
  EXPECT_NEAR(c.geomeans[3], std::sqrt(400e-6 * 1e-3), 1e-12);
}

TEST(FarmctlCompareTest, SpeedupsAreGeomeansOverThePipelinesWhereBothHaveARuntime) {
  const Comparison c = CompareSamples();
  ASSERT_EQ(c.speedups.size(), 2u);
  // random over li2018: vgg 200/100, fire 38/20, conv 4/1 (none on resnet).
  EXPECT_NEAR(c.speedups[0][0].value, std::cbrt(2 * 1.9 * 4), 1e-9);
  EXPECT_EQ(c.speedups[0][0].pipelines, 3);
  // random over mullapudi2016: vgg 400/100, conv 1/1.
  EXPECT_NEAR(c.speedups[0][1].value, 2, 1e-9);
  EXPECT_EQ(c.speedups[0][1].pipelines, 2);
  // greedy over li2018: 200/50, 38/10, 90/30, 4/0.5.
  EXPECT_NEAR(c.speedups[1][0].value, std::pow(4 * 3.8 * 3 * 8, 0.25), 1e-9);
  EXPECT_EQ(c.speedups[1][0].pipelines, 4);
  EXPECT_NEAR(c.speedups[1][1].value, 4, 1e-9);
  // Over the fastest contender of each pipeline: li2018 everywhere but conv_relu, where
  // mullapudi2016's 1 ms is the fastest. random: 200/100, 38/20, 1/1; greedy: 200/50,
  // 38/10, 90/30, 1/0.5.
  ASSERT_EQ(c.over_fastest.size(), 2u);
  EXPECT_NEAR(c.over_fastest[0].value, std::cbrt(2 * 1.9 * 1), 1e-9);
  EXPECT_EQ(c.over_fastest[0].pipelines, 3);
  EXPECT_NEAR(c.over_fastest[1].value, std::pow(4 * 3.8 * 3 * 2, 0.25), 1e-9);
  EXPECT_EQ(c.over_fastest[1].pipelines, 4);
  EXPECT_NE(RenderComparison(c).find("FASTEST CONTENDER"), std::string::npos);
}

TEST(FarmctlCompareTest, SharedStrategiesAreHeadedByNameThenById) {
  const auto random = [](const std::string& id, const std::string& name) {
    return Compared(EmptyCampaign(id, name, "random", {}, CAMPAIGN_DONE, 1, 1));
  };
  EXPECT_EQ(
      CompareCampaigns({random("c-1", "a"), random("c-2", "b"), Compared(GreedySample())}).headers,
      (std::vector<std::string>{"a", "b", "greedy"}));
  EXPECT_EQ(CompareCampaigns({random("c-1", "a"), random("c-2", "a")}).headers,
            (std::vector<std::string>{"c-1", "c-2"}));
}

TEST(FarmctlCompareTest, TextShowsRuntimesGeomeansSpeedupsAndTheCampaigns) {
  const std::string text = RenderComparison(CompareSamples());
  EXPECT_EQ(text.rfind("best runtime per pipeline: 2 campaigns, 2 baselines, 4 pipelines\n", 0), 0u)
      << text;
  EXPECT_EQ(RowOf(text, "PIPELINE"),
            (std::vector<std::string>{"random", "greedy", "li2018", "mullapudi2016"}));
  EXPECT_EQ(RowOf(text, "vgg_block"),
            (std::vector<std::string>{"100", "us", "50", "us", "200", "us", "400", "us"}));
  EXPECT_EQ(RowOf(text, "squeezenet_fire"),
            (std::vector<std::string>{"20", "us", "10", "us", "38", "us", "failed"}));
  EXPECT_EQ(RowOf(text, "resnet18_basic"),
            (std::vector<std::string>{"-", "30", "us", "90", "us", "-"}));
  EXPECT_EQ(RowOf(text, "conv_relu"),
            (std::vector<std::string>{"1", "ms", "500", "us", "4", "ms", "1", "ms"}));
  EXPECT_EQ(RowOf(text, "geomean (2 of 4)"),
            (std::vector<std::string>{"316", "us", "158", "us", "894", "us", "632", "us"}))
      << text;
  EXPECT_EQ(RowOf(text, "random"),
            (std::vector<std::string>{"2.48x", "(3", "pipelines)", "2.00x", "(2", "pipelines)",
                                      "1.56x", "(3", "pipelines)"}))
      << text;
  EXPECT_EQ(RowOf(text, "greedy"),
            (std::vector<std::string>{"4.37x", "(4", "pipelines)", "4.00x", "(2", "pipelines)",
                                      "3.09x", "(4", "pipelines)"}))
      << text;
  // The campaigns table: the rows after the "campaigns" line.
  const std::string campaigns = text.substr(text.find("\ncampaigns\n"));
  EXPECT_EQ(RowOf(campaigns, "random"),
            (std::vector<std::string>{"c-r", "quick-random", "done", "40/40", "CRASH", "2", "-",
                                      "-", "li2018", "4,", "mullapudi2016", "3,", "random", "3"}))
      << text;
  EXPECT_EQ(RowOf(campaigns, "greedy"),
            (std::vector<std::string>{"c-g", "quick-greedy", "running", "12/30", "none", "1.5", "s",
                                      "-", "greedy", "4,", "li2018", "4"}))
      << text;
}

TEST(FarmctlCompareTest, WithoutBaselinesThereIsNoSpeedupTable) {
  SampleCampaign a = EmptyCampaign("c-1", "a", "random", {}, CAMPAIGN_DONE, 1, 1);
  testing_support::AddProgress(&a, testing_support::kVggId, "", 2e-3, {});
  const std::string text = RenderComparison(CompareCampaigns({Compared(a)}));
  EXPECT_EQ(text.find("speedup"), std::string::npos) << text;
  EXPECT_NE(text.find("1 campaign, 0 baselines, 1 pipeline\n"), std::string::npos) << text;
  EXPECT_EQ(RowOf(text, "111111111111"), (std::vector<std::string>{"2", "ms"}))
      << "a pipeline without a name is named by its id:\n"
      << text;
}

TEST(FarmctlCompareTest, JsonCarriesTheComparison) {
  const std::string line = ToJsonLine(ComparisonToJson(CompareSamples()));
  EXPECT_EQ(line.find('\n'), std::string::npos);
  google::protobuf::Struct json;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &json).ok()) << line;
  const auto& f = json.fields();
  ASSERT_EQ(f.at("columns").list_value().values_size(), 4);
  EXPECT_EQ(f.at("columns").list_value().values(3).string_value(), "mullapudi2016");
  const auto& fire = f.at("pipelines").list_value().values(1).struct_value().fields();
  EXPECT_EQ(fire.at("name").string_value(), "squeezenet_fire");
  EXPECT_EQ(fire.at("seconds").list_value().values(0).number_value(), 20e-6);
  EXPECT_EQ(fire.at("seconds").list_value().values(3).string_value(), "failed");
  const auto& resnet = f.at("pipelines").list_value().values(2).struct_value().fields();
  EXPECT_TRUE(resnet.at("seconds").list_value().values(0).has_null_value());
  EXPECT_EQ(f.at("geomean").struct_value().fields().at("pipelines").number_value(), 2);
  EXPECT_NEAR(
      f.at("geomean").struct_value().fields().at("seconds").list_value().values(0).number_value(),
      std::sqrt(100e-6 * 1e-3), 1e-12);
  const auto& greedy = f.at("campaigns").list_value().values(1).struct_value().fields();
  EXPECT_EQ(greedy.at("column").string_value(), "greedy");
  EXPECT_EQ(greedy.at("id").string_value(), "c-g");
  EXPECT_EQ(greedy.at("strategy").string_value(), "greedy");
  EXPECT_EQ(greedy.at("finished").number_value(), 12);
  EXPECT_EQ(greedy.at("budget").number_value(), 30);
  EXPECT_EQ(greedy.at("search_seconds").number_value(), 1.5);
  EXPECT_EQ(greedy.at("candidates_by_origin").struct_value().fields().at("greedy").number_value(),
            4);
  const auto& li2018 = greedy.at("speedups").struct_value().fields().at("li2018").struct_value();
  EXPECT_NEAR(li2018.fields().at("geomean").number_value(), std::pow(4 * 3.8 * 3 * 8, 0.25), 1e-9);
  EXPECT_EQ(li2018.fields().at("pipelines").number_value(), 4);
  const auto& fastest =
      greedy.at("speedups").struct_value().fields().at("fastest contender").struct_value();
  EXPECT_NEAR(fastest.fields().at("geomean").number_value(), std::pow(4 * 3.8 * 3 * 2, 0.25), 1e-9);
  const auto& random = f.at("campaigns").list_value().values(0).struct_value().fields();
  EXPECT_EQ(random.at("failures").struct_value().fields().at("CRASH").number_value(), 2);
  EXPECT_EQ(random.at("failures").struct_value().fields().count("OK"), 0u);
}

}  // namespace
}  // namespace schedfarm
