#include "evaluation/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "evaluation/split.h"
#include "learner/model_evaluation.h"

namespace schedfarm {
namespace {

// Two pipelines; every metric below is worked out by hand in the comments.
//   p: truth 1, 2, 3, 4; pred 1.1, 1.8, 3.3, 3.0
//   q: truth 10, 20;     pred 25, 20
struct Example {
  std::vector<std::string> ids = {"p", "p", "p", "p", "q", "q"};
  std::vector<double> truth = {1, 2, 3, 4, 10, 20};
  std::vector<double> pred = {1.1, 1.8, 3.3, 3.0, 25, 20};
};

TEST(Metrics, HandComputedExample) {
  Example e;
  auto m = ComputeMetrics(e.ids, e.truth, e.pred);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->samples, 6);
  EXPECT_EQ(m->pipelines, 2);
  EXPECT_EQ(m->ranked_pipelines, 2);
  EXPECT_EQ(m->nonpositive_predictions, 0);
  // APE %: 10, 10, 10, 25, 150, 0 -> mean 205/6, max 150.
  EXPECT_NEAR(m->mape, 205.0 / 6, 1e-9);
  EXPECT_NEAR(m->max_error, 150.0, 1e-9);
  // Truth mean 40/6; SS_tot = sum t^2 - 6 mean^2 = 530 - 1600/6; SS_res = 0.01 + 0.04 +
  // 0.09 + 1 + 225 + 0 = 226.14.
  const double ss_tot = 530.0 - 1600.0 / 6;
  EXPECT_NEAR(m->r2, 1 - 226.14 / ss_tot, 1e-9);
  // Log R^2 by the definition.
  double mean_log = 0;
  for (double t : e.truth) mean_log += std::log(t) / 6;
  double tot = 0;
  double res = 0;
  for (size_t i = 0; i < 6; ++i) {
    tot += std::pow(std::log(e.truth[i]) - mean_log, 2);
    res += std::pow(std::log(e.truth[i]) - std::log(e.pred[i]), 2);
  }
  EXPECT_NEAR(m->r2_log, 1 - res / tot, 1e-9);
  // p: 6 pairs, all distinct truths; only (3, 4) is discordant -> 5/6, tau = (5-1)/6.
  // q: 1 pair, discordant -> accuracy 0, tau -1.
  EXPECT_NEAR(m->pairwise_accuracy, (5.0 / 6 + 0) / 2, 1e-12);
  EXPECT_NEAR(m->kendall_tau, (4.0 / 6 - 1) / 2, 1e-12);
  // top-1: p picks truth 1 (ratio 1); q picks truth 20 over best 10 (ratio 2) -> 1.5.
  EXPECT_NEAR(m->top1_regret, 1.5, 1e-12);
  // top-5 takes every schedule of both pipelines -> 1.
  EXPECT_NEAR(m->top5_regret, 1.0, 1e-12);
}

TEST(Metrics, PerfectPredictions) {
  std::vector<std::string> ids;
  std::vector<double> truth;
  for (int i = 0; i < 8; ++i) {
    ids.push_back(i < 4 ? "a" : "b");
    truth.push_back(0.001 * (i + 1));
  }
  auto m = ComputeMetrics(ids, truth, truth);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->mape, 0);
  EXPECT_EQ(m->max_error, 0);
  EXPECT_NEAR(m->r2, 1, 1e-12);
  EXPECT_NEAR(m->r2_log, 1, 1e-12);
  EXPECT_EQ(m->pairwise_accuracy, 1);
  EXPECT_NEAR(m->kendall_tau, 1, 1e-12);
  EXPECT_EQ(m->top1_regret, 1);
  EXPECT_EQ(m->top5_regret, 1);
}

TEST(Metrics, TiesInPredictionsCountAsWrongAndAreExpectedInTopK) {
  // One pipeline, truth 1, 2, 3, 4 and a constant prediction: no pair is ordered.
  std::vector<std::string> ids(4, "p");
  std::vector<double> truth = {4, 2, 1, 3};
  std::vector<double> pred(4, 5.0);
  auto m = ComputeMetrics(ids, truth, pred);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->pairwise_accuracy, 0);
  EXPECT_EQ(m->kendall_tau, 0);
  // top-1 of four tied: a uniform pick, expected truth 2.5 over the best 1.
  EXPECT_NEAR(m->top1_regret, 2.5, 1e-12);
  EXPECT_NEAR(m->top5_regret, 1.0, 1e-12);

  // Pred ties inside a ranking: truth 1, 2, 3; pred 1, 1, 2. Pairs: (1,2) tied -> wrong,
  // (1,3) right, (2,3) right: 2/3. tau-b = (2 - 0) / sqrt(3 * 2).
  std::vector<std::string> ids3(3, "p");
  auto m3 = ComputeMetrics(ids3, {1, 2, 3}, {1, 1, 2});
  ASSERT_TRUE(m3.ok());
  EXPECT_NEAR(m3->pairwise_accuracy, 2.0 / 3, 1e-12);
  EXPECT_NEAR(m3->kendall_tau, 2 / std::sqrt(6.0), 1e-12);
  // top-1: the two tied at the smallest prediction, truths 1 and 2: expected 1.5.
  EXPECT_NEAR(m3->top1_regret, 1.5, 1e-12);
}

TEST(Metrics, TopKWithTiesAtTheBoundary) {
  // Six schedules, k = 5: predictions 1, 2, 2, 2, 2, 2 with truths 9, 3, 4, 5, 6, 1.
  // The sure pick has truth 9; 4 of the 5 tied are drawn. The smallest truth (1) is left
  // out with probability 1/5, and then the best drawn is 3: E = 4/5 * 1 + 1/5 * 3 = 1.4.
  std::vector<std::string> ids(6, "p");
  auto m = ComputeMetrics(ids, {9, 3, 4, 5, 6, 1}, {1, 2, 2, 2, 2, 2});
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->top5_regret, 1.4, 1e-12);
  EXPECT_NEAR(m->top1_regret, 9.0, 1e-12);
}

TEST(Metrics, TiesInTruthAreSkipped) {
  // Truth 1, 1, 2: the tied pair has no right order; the other two are concordant.
  std::vector<std::string> ids(3, "p");
  auto m = ComputeMetrics(ids, {1, 1, 2}, {1, 1.5, 3});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->pairwise_accuracy, 1);
  // tau-b: C = 2, D = 0, n0 = 3, truth ties 1, pred ties 0: 2 / sqrt(2 * 3).
  EXPECT_NEAR(m->kendall_tau, 2 / std::sqrt(6.0), 1e-12);

  // A pipeline whose truths are all equal is not ranked at all.
  auto flat = ComputeMetrics(ids, {2, 2, 2}, {1, 2, 3});
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->ranked_pipelines, 0);
  EXPECT_TRUE(std::isnan(flat->pairwise_accuracy));
  EXPECT_TRUE(std::isnan(flat->kendall_tau));
  EXPECT_TRUE(std::isnan(flat->r2));  // constant truth: R^2 undefined
  EXPECT_EQ(flat->top1_regret, 1);    // every pick is a best schedule
}

TEST(Metrics, SingleSchedulePipeline) {
  // "solo" has one schedule: it counts for MAPE and R^2, not for ranking or top-k.
  auto m = ComputeMetrics({"solo", "p", "p"}, {5, 1, 2}, {10, 2, 1});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->pipelines, 2);
  EXPECT_EQ(m->ranked_pipelines, 1);
  EXPECT_NEAR(m->mape, (100 + 100 + 50) / 3.0, 1e-9);
  EXPECT_EQ(m->pairwise_accuracy, 0);
  EXPECT_EQ(m->kendall_tau, -1);
  EXPECT_EQ(m->top1_regret, 2);  // p only

  auto only = ComputeMetrics({"solo"}, {5}, {5});
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(only->mape, 0);
  EXPECT_TRUE(std::isnan(only->r2));
  EXPECT_TRUE(std::isnan(only->pairwise_accuracy));
  EXPECT_TRUE(std::isnan(only->top1_regret));
}

TEST(Metrics, NonPositivePredictionsAreCountedAndClampedForLogR2) {
  auto m = ComputeMetrics({"p", "p", "p"}, {1e-3, 2e-3, 3e-3}, {-1e-3, 2e-3, 3e-3});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->nonpositive_predictions, 1);
  EXPECT_NEAR(m->max_error, 200, 1e-9);
  EXPECT_TRUE(std::isfinite(m->r2_log));
  EXPECT_LT(m->r2_log, 0);  // log(1e-9) is far off
}

TEST(Metrics, BadInput) {
  auto lengths = ComputeMetrics({"p", "p"}, {1, 2}, {1});
  ASSERT_FALSE(lengths.ok());
  EXPECT_NE(lengths.status().message().find("parallel"), std::string::npos);
  EXPECT_FALSE(ComputeMetrics({}, {}, {}).ok());
  auto zero = ComputeMetrics({"p", "q"}, {1, 0}, {1, 1});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("sample 1 (pipeline 'q')"), std::string::npos)
      << zero.status().message();
  EXPECT_FALSE(ComputeMetrics({"p"}, {NAN}, {1}).ok());
  auto nan = ComputeMetrics({"p"}, {1}, {NAN});
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.status().message().find("not finite"), std::string::npos);
  EXPECT_FALSE(ComputeMetrics({""}, {1}, {1}).ok());
}

TEST(Metrics, MapAndTable) {
  Example e;
  auto m = ComputeMetrics(e.ids, e.truth, e.pred);
  ASSERT_TRUE(m.ok());
  const auto map = MetricsAsMap(*m);
  EXPECT_EQ(map.at("samples"), 6);
  EXPECT_NEAR(map.at("mape"), m->mape, 0);
  EXPECT_NEAR(map.at("top1_regret"), 1.5, 0);
  EXPECT_EQ(map.count("kendall_tau"), 1u);

  auto only = ComputeMetrics({"solo"}, {5}, {5});
  ASSERT_TRUE(only.ok());
  const auto sparse = MetricsAsMap(*only);
  EXPECT_EQ(sparse.count("r2"), 0u);  // undefined metrics are left out
  EXPECT_EQ(sparse.count("mape"), 1u);

  // And back: every key round-trips, absent ones stay undefined.
  const EvalMetrics back = MetricsFromMap(map);
  EXPECT_EQ(back.samples, m->samples);
  EXPECT_EQ(back.ranked_pipelines, m->ranked_pipelines);
  EXPECT_EQ(back.mape, m->mape);
  EXPECT_EQ(back.kendall_tau, m->kendall_tau);
  EXPECT_EQ(back.top5_regret, m->top5_regret);
  EXPECT_TRUE(std::isnan(MetricsFromMap(sparse).r2));

  const std::string table = FormatMetricsTable({{"a-long-model-name", *m}, {"solo", *only}});
  // Header plus one line per model, columns aligned.
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t nl; (nl = table.find('\n', start)) != std::string::npos; start = nl + 1) {
    lines.push_back(table.substr(start, nl - start));
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].size(), lines[1].size());
  EXPECT_EQ(lines[1].size(), lines[2].size());
  EXPECT_EQ(lines[0].rfind("model", 0), 0u);
  EXPECT_NE(lines[1].find("34.17"), std::string::npos) << table;  // MAPE 205/6
  EXPECT_NE(lines[1].find("1.500"), std::string::npos) << table;  // top-1
  EXPECT_NE(lines[2].find(" -"), std::string::npos) << table;     // undefined R^2
}

// A model that predicts from the flops of the features, to exercise EvaluateModel.
class FlopsModel : public PerformanceModel {
 public:
  std::string kind() const override { return "flops"; }
  Status Train(const std::vector<Sample>&, const TrainOptions&) override { return Status::Ok(); }
  StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const PipelineFeatures*>& features) const override {
    std::vector<RuntimePrediction> out;
    for (const PipelineFeatures* f : features) {
      if (f->flops < 0) return Status::Error("negative flops");
      out.push_back({f->flops * 1e-9, 0});
    }
    return out;
  }
  StatusOr<std::string> Save() const override { return std::string(); }
  Status Load(const std::string&) override { return Status::Ok(); }
};

TEST(Metrics, EvaluateModel) {
  std::vector<Sample> samples(3);
  const double flops[] = {1e6, 2e6, 4e6};
  const double seconds[] = {1e-3, 4e-3, 4e-3};
  for (int i = 0; i < 3; ++i) {
    samples[i].pipeline_id = "p";
    samples[i].features.flops = flops[i];
    samples[i].seconds = seconds[i];
  }
  FlopsModel model;
  auto m = EvaluateModel(model, samples);
  ASSERT_TRUE(m.ok()) << m.status().message();
  // Predictions 1e-3, 2e-3, 4e-3: APE 0, 50, 0.
  EXPECT_NEAR(m->mape, 50.0 / 3, 1e-9);
  EXPECT_EQ(m->pairwise_accuracy, 1);  // the tied truths are skipped

  samples[1].features.flops = -1;
  auto bad = EvaluateModel(model, samples);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("model 'flops'"), std::string::npos);
}

// --- the split by pipeline -----------------------------------------------------------

std::vector<std::string> ManyIds(int n) {
  std::vector<std::string> ids;
  for (int i = 0; i < n; ++i) ids.push_back("pipe" + std::to_string(i));
  return ids;
}

TEST(Split, ByPipelineDeterministicAndCovering) {
  // Three samples per pipeline, in an interleaved order.
  std::vector<std::string> per_sample;
  for (int rep = 0; rep < 3; ++rep) {
    for (const std::string& id : ManyIds(40)) per_sample.push_back(id);
  }
  auto split = SplitByPipeline(per_sample, 7, 0.25);
  ASSERT_TRUE(split.ok()) << split.status().message();
  EXPECT_EQ(split->held_out.size(), 10u);
  EXPECT_EQ(split->train.size(), 30u);
  std::set<std::string> all(split->train.begin(), split->train.end());
  for (const std::string& id : split->held_out) {
    EXPECT_TRUE(all.insert(id).second) << id << " on both sides";
  }
  EXPECT_EQ(all.size(), 40u);  // every pipeline on exactly one side

  // The input order does not matter; the same seed gives the same split.
  std::vector<std::string> reversed(per_sample.rbegin(), per_sample.rend());
  auto again = SplitByPipeline(reversed, 7, 0.25);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->held_out, split->held_out);
  EXPECT_EQ(again->train, split->train);

  // Another seed gives another held-out set.
  auto other = SplitByPipeline(per_sample, 8, 0.25);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->held_out, split->held_out);

  // Samples follow their pipeline.
  std::vector<Sample> samples;
  for (const std::string& id : per_sample) {
    Sample s;
    s.pipeline_id = id;
    s.seconds = 1;
    samples.push_back(s);
  }
  std::vector<Sample> train;
  std::vector<Sample> held_out;
  ASSERT_TRUE(SplitSamples(samples, *split, &train, &held_out).ok());
  EXPECT_EQ(held_out.size(), 30u);
  EXPECT_EQ(train.size(), 90u);
  for (const Sample& s : held_out) EXPECT_TRUE(split->IsHeldOut(s.pipeline_id));
  for (const Sample& s : train) EXPECT_TRUE(split->IsTrain(s.pipeline_id));
}

TEST(Split, SmallSetsKeepBothSidesNonEmpty) {
  auto two = SplitByPipeline({"a", "b"}, 1, 0.01);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->held_out.size(), 1u);
  EXPECT_EQ(two->train.size(), 1u);
  auto most = SplitByPipeline(ManyIds(5), 1, 0.99);
  ASSERT_TRUE(most.ok());
  EXPECT_EQ(most->held_out.size(), 4u);
  EXPECT_EQ(most->train.size(), 1u);
}

TEST(Split, FileRoundTripAndParseErrors) {
  auto split = SplitByPipeline(ManyIds(12), 123456789012345ull, 0.1);
  ASSERT_TRUE(split.ok());
  const std::string text = FormatSplit(*split);
  auto parsed = ParseSplit("# made by a test\n\n" + text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->seed, split->seed);
  EXPECT_EQ(parsed->held_out_fraction, split->held_out_fraction);
  EXPECT_EQ(parsed->train, split->train);
  EXPECT_EQ(parsed->held_out, split->held_out);

  const std::string path = testing::TempDir() + "/split_test.txt";
  ASSERT_TRUE(WriteSplitFile(path, *split).ok());
  auto read = ReadSplitFile(path);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->held_out, split->held_out);
  std::remove(path.c_str());
  auto missing = ReadSplitFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find(path), std::string::npos);

  const std::string head = "schedfarm.split.v1\nseed 1\nheld_out_fraction 0.5\n";
  struct Bad {
    std::string text;
    std::string expect;
  } bad[] = {
      {"", "empty"},
      {"schedfarm.split.v0\n", "line 1: expected the header"},
      {head + "train a\nheld_out a\n", "line 5: pipeline 'a' listed twice"},
      {head + "train a\nvalidate b\n", "line 5: unknown key 'validate'"},
      {head + "train a b\n", "line 4: expected '<key> <value>'"},
      {head + "train a\n", "at least one"},
      {"schedfarm.split.v1\nseed -3\n", "line 2: seed '-3'"},
      {"schedfarm.split.v1\nseed 1\nheld_out_fraction 1.5\n", "line 3"},
      {"schedfarm.split.v1\nheld_out_fraction 0.5\ntrain a\nheld_out b\n", "no 'seed'"},
  };
  for (const Bad& b : bad) {
    auto r = ParseSplit(b.text);
    ASSERT_FALSE(r.ok()) << b.text;
    EXPECT_NE(r.status().message().find(b.expect), std::string::npos)
        << "got: " << r.status().message() << "\nwanted: " << b.expect;
  }
}

TEST(Split, BadInput) {
  EXPECT_FALSE(SplitByPipeline({"a", "a", "a"}, 1, 0.5).ok());  // one distinct pipeline
  EXPECT_FALSE(SplitByPipeline({"a", "b"}, 1, 0).ok());
  EXPECT_FALSE(SplitByPipeline({"a", "b"}, 1, 1).ok());
  auto space = SplitByPipeline({"a", "b c"}, 1, 0.5);
  ASSERT_FALSE(space.ok());
  EXPECT_NE(space.status().message().find("'b c'"), std::string::npos);

  auto split = SplitByPipeline({"a", "b"}, 1, 0.5);
  ASSERT_TRUE(split.ok());
  std::vector<Sample> samples(1);
  samples[0].pipeline_id = "c";
  std::vector<Sample> train;
  std::vector<Sample> held_out;
  auto status = SplitSamples(samples, *split, &train, &held_out);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("pipeline 'c'"), std::string::npos);
}

}  // namespace
}  // namespace schedfarm
