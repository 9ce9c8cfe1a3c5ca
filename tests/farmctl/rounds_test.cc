// `farmctl rounds` on hand-made rounds, models and measurements: the rounds table and
// the comparison of the value functions on the held-out pipelines.
#include "farmctl/rounds.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace schedfarm {
namespace {

Measurement Measured(const std::string& pipeline, const std::string& hash,
                     const std::string& origin, double seconds, MeasurementStatus status = OK) {
  Measurement m;
  m.mutable_candidate()->set_pipeline_id(pipeline);
  m.mutable_candidate()->set_schedule_hash(hash);
  m.mutable_candidate()->set_origin(origin);
  m.set_status(status);
  m.mutable_stats()->set_median_seconds(seconds);
  return m;
}

// The words of the line of `text` that holds `start`, from it on; none without one.
std::vector<std::string> WordsFrom(const std::string& text, const std::string& start) {
  const size_t at = text.find(start);
  if (at == std::string::npos) return {};
  std::istringstream cells(text.substr(at, text.find('\n', at) - at));
  std::vector<std::string> words;
  for (std::string cell; cells >> cell;) words.push_back(cell);
  return words;
}

ValueIterationReport Report() {
  ValueIterationReport report;
  report.status.mutable_campaign()->set_id("vi-1");
  report.status.mutable_campaign()->set_state(CAMPAIGN_DONE);
  for (const char* name : {"train", "held_a", "held_b"}) {
    PipelineProgress* p = report.status.add_pipelines();
    p->set_pipeline_id(std::string("id_") + name);
    p->set_name(name);
  }
  (*report.status.mutable_pipelines(1)->mutable_baseline_seconds())["li2018"] = 0.004;
  (*report.status.mutable_pipelines(2)->mutable_baseline_seconds())["li2018"] = 0.009;
  for (int r = 0; r < 2; ++r) {
    ValueRound round;
    round.set_campaign("vi-1");
    round.set_round(r);
    round.set_state(VALUE_ROUND_FITTED);
    round.set_fitted_model("bilstm-v" + std::to_string(r));
    round.set_target_rule("measured");
    round.set_fit_seconds(65);
    if (r == 1) {
      round.add_pipeline_ids("id_train");
      round.set_plan_seconds(12);
      for (int k = 0; k < 3; ++k) {
        ValuePrefix* prefix = round.add_prefixes();
        prefix->set_pipeline_id("id_train");
        prefix->set_target_seconds(k < 2 ? 0.001 : 0);  // the third's completion failed
      }
    }
    for (const char* pipeline : {"id_held_a", "id_held_b"}) {
      for (const char* search : {"greedy", "beam"}) {
        ValueEvaluation* e = round.add_evaluations();
        e->set_pipeline_id(pipeline);
        e->set_search(search);
        e->set_schedule_hash(std::string(pipeline) + search + std::to_string(r));
        e->set_search_seconds(std::string(search) == "greedy" ? 0.5 : 1.5);
      }
    }
    report.rounds.push_back(round);
  }
  Model v1;
  v1.set_version("bilstm-v1");
  (*v1.mutable_metrics())["mape"] = 12.5;
  (*v1.mutable_metrics())["kendall_tau"] = 0.61;
  report.models.push_back(v1);
  // Random warm-up: held_a 2 ms and 8 ms (one random: 4 ms geomean, best 2 ms).
  report.measurements = {
      Measured("id_held_a", "r1", "random", 0.002),
      Measured("id_held_a", "r2", "random", 0.008),
      Measured("id_held_b", "r3", "random", 0.010),
      Measured("id_held_b", "r4", "random", 0.5, CRASH),
      Measured("id_held_a", "id_held_agreedy0", "greedy", 0.004),
      Measured("id_held_b", "id_held_bgreedy0", "greedy", 0.010),
      Measured("id_held_a", "id_held_agreedy1", "greedy", 0.001),
      Measured("id_held_b", "id_held_bgreedy1", "greedy", 0.0025),
      Measured("id_held_a", "id_held_abeam1", "beam", 0.002),
      Measured("id_held_b", "id_held_bbeam1", "beam", 0.1, RUNTIME_ERROR),
  };
  return report;
}

TEST(RoundsRenderTest, ShowsRoundsAndTheValueFunctionsOnHeldOutPipelines) {
  const std::string text = RenderValueRounds(Report());
  // The header: state, rounds fitted, the target rule spelled out.
  EXPECT_NE(text.find("value iteration of vi-1 (done): V0 and 1 round fitted"), std::string::npos)
      << text;
  EXPECT_NE(text.find("V_{i-1}'s own prediction takes no part"), std::string::npos) << text;
  // Round 1: 1 pipeline, 3 prefixes of which 2 have targets, 12 s to plan, 1m05s to
  // fit, and the fitted model's held-out metrics.
  const std::vector<std::string> expected = {"1",   "fitted", "bilstm-v1", "1",    "3", "2",
                                             "12s", "1m05s",  "12.5%",     "0.61", "-"};
  EXPECT_EQ(WordsFrom(text, "1  fitted  bilstm-v1"), expected) << text;
  // One random schedule is the geometric mean of the warm-up's OK runtimes.
  EXPECT_NE(text.find("random (one schedule)"), std::string::npos) << text;
  EXPECT_NE(text.find("4 ms"), std::string::npos) << text;
  // V1 greedy: 1 ms and 2.5 ms, 4x and 4x faster than one random schedule.
  const size_t v1_greedy = text.find("V1 greedy");
  ASSERT_NE(v1_greedy, std::string::npos) << text;
  const std::string line = text.substr(v1_greedy, text.find('\n', v1_greedy) - v1_greedy);
  EXPECT_NE(line.find("1 ms"), std::string::npos) << line;
  EXPECT_NE(line.find("2.5 ms"), std::string::npos) << line;
  EXPECT_NE(line.find("4.00x"), std::string::npos) << line;
  EXPECT_NE(line.find("0.50 s"), std::string::npos) << line << ": greedy's mean search time";
  // V1 beam failed on held_b: its geomean is over 1 of 2 pipelines.
  const size_t v1_beam = text.find("V1 beam");
  ASSERT_NE(v1_beam, std::string::npos) << text;
  EXPECT_NE(text.substr(v1_beam, text.find('\n', v1_beam) - v1_beam).find("(1 of 2)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("li2018"), std::string::npos) << text;
  EXPECT_EQ(text.find("train  "), std::string::npos) << "only held-out pipelines are compared";
}

// Held-out pipelines of two kinds of source (the generator's and a zoo block): the
// comparison with one random schedule over each kind too.
TEST(RoundsRenderTest, ComparesPerKindOfSourceWhenTheHeldOutAreOfMoreThanOne) {
  ValueIterationReport report = Report();
  EXPECT_EQ(RenderValueRounds(report).find("GENERATOR"), std::string::npos) << "no sources";
  report.sources = {{"id_train", "random:1"}, {"id_held_a", "random:2"}, {"id_held_b", "zoo:x"}};
  const std::string text = RenderValueRounds(report);
  EXPECT_NE(text.find("GENERATOR (1)"), std::string::npos) << text;
  EXPECT_NE(text.find("ZOO (1)"), std::string::npos) << text;
  // V1 greedy: 4x on held_a (4 ms / 1 ms), 4x on held_b (10 ms / 2.5 ms).
  const std::vector<std::string> expected = {"V1", "greedy", "1",     "ms",    "2.5",  "ms", "1.58",
                                             "ms", "4.00x",  "4.00x", "4.00x", "0.50", "s"};
  EXPECT_EQ(WordsFrom(text, "V1 greedy"), expected) << text;
  // V1 beam failed on held_b (the zoo block): no ratio there.
  const std::vector<std::string> beam_expected = {"V1",    "beam",  "2",  "ms",   "-",
                                                  "2",     "ms",    "(1", "of",   "2)",
                                                  "2.00x", "2.00x", "-",  "1.50", "s"};
  EXPECT_EQ(WordsFrom(text, "V1 beam"), beam_expected) << text;
}

TEST(RoundsRenderTest, SaysWhenNothingIsTrainedYet) {
  ValueIterationReport report = Report();
  report.rounds.clear();
  EXPECT_NE(RenderValueRounds(report).find("V0 not trained yet"), std::string::npos);
  report = Report();
  for (ValueRound& round : report.rounds) round.clear_evaluations();
  EXPECT_NE(RenderValueRounds(report).find("no value function evaluated"), std::string::npos);
}

}  // namespace
}  // namespace schedfarm
