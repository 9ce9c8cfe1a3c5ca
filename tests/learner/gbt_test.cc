#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "learner/gbt/gbt_model.h"
#include "learner/model_evaluation.h"
#include "tests/support/synthetic_samples.h"

namespace schedfarm {
namespace {

using testing_support::SyntheticSamples;

std::vector<const PipelineFeatures*> Pointers(const std::vector<Sample>& samples) {
  std::vector<const PipelineFeatures*> out;
  for (const Sample& s : samples) out.push_back(&s.features);
  return out;
}

TEST(Gbt, ColumnsAggregateSumAndMax) {
  const FeatureSchema& schema = CurrentFeatureSchema();
  const std::vector<std::string> names = GbtColumnNames(schema);
  ASSERT_EQ(names.size(), 5 + 2 * (schema.invariant_names.size() + schema.dependent_names.size()));
  std::vector<Sample> one = SyntheticSamples(1, 1, 3);
  const PipelineFeatures& f = one[0].features;
  std::vector<float> row;
  ASSERT_TRUE(AggregateFeatures(f, schema, &row).ok());
  ASSERT_EQ(row.size(), names.size());
  EXPECT_EQ(row[0], f.num_stages);
  EXPECT_EQ(row[1], f.edges.size());
  EXPECT_EQ(row[2], f.num_stages);  // every stage scheduled
  const size_t ni = schema.invariant_names.size();
  float sum = 0;
  float max = 0;
  for (int s = 0; s < f.num_stages; ++s) {
    sum += f.invariant[s * ni];
    max = std::max(max, f.invariant[s * ni]);
  }
  EXPECT_EQ(names[5], "sum:" + schema.invariant_names[0]);
  EXPECT_NEAR(row[5], sum, 1e-5);
  EXPECT_EQ(row[6], max);
}

// The samples split by pipeline (split seed 5), `held_out` of the pipelines held out.
Status SplitSyntheticSamples(const std::vector<Sample>& samples, double held_out,
                             std::vector<Sample>* train, std::vector<Sample>* test) {
  std::vector<std::string> ids;
  for (const Sample& s : samples) ids.push_back(s.pipeline_id);
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSplit split, SplitByPipeline(ids, 5, held_out));
  return SplitSamples(samples, split, train, test);
}

TEST(Gbt, TrainsAndBeatsTheTrainingMeanOnHeldOutPipelines) {
  std::vector<Sample> train;
  std::vector<Sample> test;
  ASSERT_TRUE(SplitSyntheticSamples(SyntheticSamples(60, 16, 11), 0.2, &train, &test).ok());

  GbtModel model;
  TrainOptions options;
  options.threads = 1;
  ASSERT_TRUE(model.Train(train, options).ok());
  EXPECT_EQ(model.rounds(), GbtParams().rounds);
  auto gbt = EvaluateModel(model, test);
  ASSERT_TRUE(gbt.ok()) << gbt.status().message();

  // The baseline: the geometric mean of the training runtimes for every schedule.
  double mean_log = 0;
  for (const Sample& s : train) mean_log += std::log(s.seconds) / train.size();
  std::vector<std::string> test_ids;
  std::vector<double> truth;
  for (const Sample& s : test) {
    test_ids.push_back(s.pipeline_id);
    truth.push_back(s.seconds);
  }
  auto mean = ComputeMetrics(test_ids, truth, std::vector<double>(test.size(), std::exp(mean_log)));
  ASSERT_TRUE(mean.ok());
  std::printf("%s", FormatMetricsTable({{"gbt", *gbt}, {"train-mean", *mean}}).c_str());
  EXPECT_LT(gbt->mape, 0.5 * mean->mape);
  EXPECT_GT(gbt->r2_log, 0.5);
  EXPECT_GT(gbt->pairwise_accuracy, 0.7);
  EXPECT_LT(gbt->top1_regret, mean->top1_regret);
}

// The bootstrap ensemble has a spread on pipelines it never saw, each member's prediction,
// and the mean and stddev of those.
TEST(Gbt, EnsembleHasASpreadOnHeldOutPipelines) {
  std::vector<Sample> train;
  std::vector<Sample> test;
  ASSERT_TRUE(SplitSyntheticSamples(SyntheticSamples(40, 12, 41), 0.25, &train, &test).ok());
  GbtModel model;
  TrainOptions options;
  options.epochs = 60;
  options.threads = 1;
  ASSERT_TRUE(model.Train(train, options).ok());
  ASSERT_EQ(model.members(), GbtParams().ensemble);
  ASSERT_GE(model.members(), 2);
  auto predictions = model.Predict(Pointers(test));
  ASSERT_TRUE(predictions.ok()) << predictions.status().message();
  double relative_spread = 0;
  for (const RuntimePrediction& p : *predictions) {
    ASSERT_EQ(p.member_seconds.size(), static_cast<size_t>(model.members()));
    double mean = 0;
    for (double s : p.member_seconds) mean += s / p.member_seconds.size();
    double variance = 0;
    for (double s : p.member_seconds) variance += (s - mean) * (s - mean) / p.member_seconds.size();
    EXPECT_NEAR(p.mean_seconds, mean, 1e-12 * mean);
    EXPECT_NEAR(p.stddev_seconds, std::sqrt(variance), 1e-9 * mean);
    EXPECT_GT(p.stddev_seconds, 0);
    relative_spread += p.stddev_seconds / p.mean_seconds / predictions->size();
  }
  std::printf("gbt: %d members, relative spread %.3f on held-out pipelines\n", model.members(),
              relative_spread);
  EXPECT_GT(relative_spread, 0.01);
  // One member is the model trained on every sample once: no spread, no members.
  options.ensemble = 1;
  ASSERT_TRUE(model.Train(train, options).ok());
  EXPECT_EQ(model.members(), 1);
  predictions = model.Predict(Pointers(test));
  ASSERT_TRUE(predictions.ok());
  for (const RuntimePrediction& p : *predictions) {
    EXPECT_EQ(p.stddev_seconds, 0);
    EXPECT_TRUE(p.member_seconds.empty());
  }
  // Another seed draws other resamples.
  options.ensemble = 3;
  GbtModel first, second;
  ASSERT_TRUE(first.Train(train, options).ok());
  options.seed = 2;
  ASSERT_TRUE(second.Train(train, options).ok());
  auto a = first.Predict(Pointers(test));
  auto b = second.Predict(Pointers(test));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)[0].member_seconds, (*b)[0].member_seconds);
}

TEST(Gbt, SaveLoadGivesIdenticalPredictions) {
  std::vector<Sample> samples = SyntheticSamples(12, 8, 21);
  GbtModel model;
  TrainOptions options;
  options.epochs = 20;
  options.threads = 1;
  ASSERT_TRUE(model.Train(samples, options).ok());
  EXPECT_EQ(model.rounds(), 20);
  auto bytes = model.Save();
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  GbtModel loaded;
  ASSERT_TRUE(loaded.Load(*bytes).ok());
  EXPECT_EQ(loaded.rounds(), 20);
  EXPECT_EQ(loaded.members(), model.members());
  std::vector<Sample> other = SyntheticSamples(4, 5, 22);
  auto a = model.Predict(Pointers(other));
  auto b = loaded.Predict(Pointers(other));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), other.size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].mean_seconds, (*b)[i].mean_seconds);
    EXPECT_EQ((*a)[i].stddev_seconds, (*b)[i].stddev_seconds);
    EXPECT_EQ((*a)[i].member_seconds, (*b)[i].member_seconds);
    EXPECT_GT((*a)[i].stddev_seconds, 0);
    EXPECT_GT((*a)[i].mean_seconds, 0);
  }
  // Saving the loaded model gives the same bytes.
  auto again = loaded.Save();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *bytes);
  // Training is deterministic for a seed.
  GbtModel twin;
  ASSERT_TRUE(twin.Train(samples, options).ok());
  auto c = twin.Predict(Pointers(other));
  ASSERT_TRUE(c.ok());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ((*a)[i].mean_seconds, (*c)[i].mean_seconds);
}

// A model saved before ensembles (format v1: one booster, no "members" line) loads as
// a one-member ensemble.
TEST(Gbt, LoadsTheOneMemberFormat) {
  std::vector<Sample> samples = SyntheticSamples(12, 8, 23);
  GbtModel model;
  TrainOptions options;
  options.epochs = 10;
  options.ensemble = 1;
  options.threads = 1;
  ASSERT_TRUE(model.Train(samples, options).ok());
  auto bytes = model.Save();
  ASSERT_TRUE(bytes.ok());
  std::string v1 = *bytes;
  ASSERT_EQ(v1.rfind("schedfarm.gbt.v2\n", 0), 0u);
  v1.replace(0, 17, "schedfarm.gbt.v1\n");
  const size_t members = v1.find("members 1\n");
  ASSERT_NE(members, std::string::npos);
  v1.erase(members, 10);
  GbtModel loaded;
  ASSERT_TRUE(loaded.Load(v1).ok());
  EXPECT_EQ(loaded.members(), 1);
  auto a = model.Predict(Pointers(samples));
  auto b = loaded.Predict(Pointers(samples));
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ((*a)[i].mean_seconds, (*b)[i].mean_seconds);
  // v1 with a members line is not v1.
  std::string mixed = *bytes;
  mixed.replace(0, 17, "schedfarm.gbt.v1\n");
  EXPECT_FALSE(loaded.Load(mixed).ok());
}

// A pretrained GBT fine-tuned on a few results of new pipelines (warm start: its trees
// kept, new rounds on the new results) predicts the rest of those pipelines better than
// a GBT trained on the few results alone, and keeps every round it had.
TEST(Gbt, WarmStartContinuesBoostingAPretrainedModel) {
  const std::vector<Sample> pretraining = SyntheticSamples(50, 16, 21);
  const std::vector<Sample> task = SyntheticSamples(6, 40, 22);
  std::vector<Sample> few;
  std::vector<Sample> rest;
  for (size_t i = 0; i < task.size(); ++i) (i % 40 < 4 ? few : rest).push_back(task[i]);
  TrainOptions options;
  options.threads = 1;
  GbtModel pretrained;
  ASSERT_TRUE(pretrained.Train(pretraining, options).ok());
  GbtModel fine_tuned;
  ASSERT_TRUE(fine_tuned.Load(*pretrained.Save()).ok());
  options.warm_start = true;
  ASSERT_TRUE(fine_tuned.Train(few, options).ok());
  EXPECT_EQ(fine_tuned.rounds(), 2 * GbtParams().rounds);
  GbtModel cold;
  ASSERT_TRUE(cold.Train(few, options).ok());  // untrained: from scratch
  EXPECT_EQ(cold.rounds(), GbtParams().rounds);
  auto fine_metrics = EvaluateModel(fine_tuned, rest);
  auto cold_metrics = EvaluateModel(cold, rest);
  ASSERT_TRUE(fine_metrics.ok() && cold_metrics.ok());
  std::printf("%s", FormatMetricsTable({{"fine-tuned", *fine_metrics}, {"few only", *cold_metrics}})
                        .c_str());
  EXPECT_LT(fine_metrics->mape, cold_metrics->mape);
}

TEST(Gbt, ClearErrors) {
  GbtModel model;
  std::vector<Sample> samples = SyntheticSamples(3, 4, 31);
  auto early = model.Predict(Pointers(samples));
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.status().message().find("before training"), std::string::npos);
  EXPECT_FALSE(model.Save().ok());

  auto empty = model.Train({}, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.message().find("empty training set"), std::string::npos);

  std::vector<Sample> bad = samples;
  bad[5].seconds = 0;
  auto zero = model.Train(bad, {});
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.message().find("training sample 5"), std::string::npos) << zero.message();

  bad = samples;
  bad[2].features.invariant.pop_back();
  auto shape = model.Train(bad, {});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.message().find("another schema"), std::string::npos) << shape.message();

  bad = samples;
  bad[1].features.dependent[0] = NAN;
  auto nan = model.Train(bad, {});
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.message().find("not finite"), std::string::npos) << nan.message();

  TrainOptions options;
  options.epochs = 5;
  options.threads = 1;
  ASSERT_TRUE(model.Train(samples, options).ok());
  PipelineFeatures wrong = samples[0].features;
  wrong.scheduled.push_back(1);
  auto predict = model.Predict({&samples[0].features, &wrong});
  ASSERT_FALSE(predict.ok());
  EXPECT_NE(predict.status().message().find("features 1"), std::string::npos);

  auto bytes = model.Save();
  ASSERT_TRUE(bytes.ok());
  GbtModel loaded;
  EXPECT_FALSE(loaded.Load("not a model").ok());
  auto truncated = loaded.Load(bytes->substr(0, bytes->size() - 10));
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.message().find("bytes of XGBoost model"), std::string::npos);
  auto trailing = loaded.Load(*bytes + "extra");
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.message().find("5 bytes follow the last member"), std::string::npos)
      << trailing.message();
  // A model of another schema version is refused.
  std::string other = *bytes;
  const size_t at = other.find("schema ") + 7;
  other.replace(at, other.find(' ', at) - at, "999");
  auto schema = loaded.Load(other);
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.message().find("feature schema v999"), std::string::npos) << schema.message();
  // A corrupt XGBoost buffer is XGBoost's error, as a Status.
  std::string corrupt = *bytes;
  for (size_t i = corrupt.size() - 40; i < corrupt.size(); ++i) corrupt[i] = 'x';
  EXPECT_FALSE(loaded.Load(corrupt).ok());
  EXPECT_FALSE(loaded.Predict(Pointers(samples)).ok());  // still untrained
}

}  // namespace
}  // namespace schedfarm
