// The training pieces the stage networks share (learner/torch/stage_tensors.h):
// minibatches made of runs of one pipeline, and the two losses.
#include "learner/torch/stage_tensors.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace schedfarm {
namespace torch_models {
namespace {

// `per_pipeline` samples of each of `pipelines` pipelines, runtimes 1, 2, 3... ms.
std::vector<Sample> Samples(int pipelines, int per_pipeline) {
  std::vector<Sample> samples;
  for (int p = 0; p < pipelines; ++p) {
    for (int k = 0; k < per_pipeline; ++k) {
      Sample s;
      s.pipeline_id = "p" + std::to_string(p);
      s.schedule_hash = "s" + std::to_string(k);
      s.seconds = 1e-3 * (k + 1) * (p + 1);
      s.stddev_seconds = 0.01 * s.seconds;
      samples.push_back(s);
    }
  }
  return samples;
}

TEST(StageTensorsTest, PipelineBatchesHoldEverySampleOnceInRunsOfOnePipeline) {
  const std::vector<Sample> samples = Samples(7, 19);
  const Targets targets = MakeTargets(samples);
  std::vector<int64_t> all(samples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  std::mt19937_64 rng(5);
  const std::vector<std::vector<int64_t>> batches = PipelineBatches(targets, all, 32, 8, rng);
  std::multiset<int64_t> seen;
  for (size_t b = 0; b < batches.size(); ++b) {
    ASSERT_FALSE(batches[b].empty());
    EXPECT_LE(batches[b].size(), 32u);
    if (b + 1 < batches.size()) {
      EXPECT_EQ(batches[b].size(), 32u) << "only the last is short";
    }
    // A batch holds pairs to rank: some pipeline at least twice.
    std::map<std::string, int> per_pipeline;
    for (int64_t i : batches[b]) ++per_pipeline[samples[i].pipeline_id];
    int most = 0;
    for (const auto& [unused, n] : per_pipeline) most = std::max(most, n);
    EXPECT_GE(most, 2) << "batch " << b;
    seen.insert(batches[b].begin(), batches[b].end());
  }
  ASSERT_EQ(seen.size(), samples.size());
  for (int64_t i = 0; i < static_cast<int64_t>(samples.size()); ++i) EXPECT_EQ(seen.count(i), 1u);
  // A run length of 1 is a plain shuffle: pipelines interleave.
  std::mt19937_64 again(5);
  const std::vector<int64_t> first = PipelineBatches(targets, all, 32, 1, again)[0];
  std::set<std::string> pipelines;
  for (int64_t i : first) pipelines.insert(samples[i].pipeline_id);
  EXPECT_GT(pipelines.size(), 4u);
}

// The validation split keeps whole pipelines, about a tenth of them, out of the
// gradient steps, the same ones for the same seed; small sets, and training without
// early stopping, keep none back. Batches
// then hold only the samples they are given.
TEST(StageTensorsTest, ValidationSplitKeepsWholePipelinesBackAndBatchesOnlyTheRest) {
  const std::vector<Sample> samples = Samples(40, 5);
  const Targets targets = MakeTargets(samples);
  const ValidationSplit split = SplitForValidation(targets, true, 3);
  std::set<std::string> fit, validation;
  for (int64_t i : split.fit) fit.insert(samples[i].pipeline_id);
  for (int64_t i : split.validation) validation.insert(samples[i].pipeline_id);
  EXPECT_EQ(validation.size(), 4u);
  EXPECT_EQ(fit.size(), 36u);
  for (const std::string& p : validation) EXPECT_FALSE(fit.count(p)) << p;
  EXPECT_EQ(split.fit.size() + split.validation.size(), samples.size());
  EXPECT_EQ(SplitForValidation(targets, true, 3).validation, split.validation);
  EXPECT_NE(SplitForValidation(targets, true, 4).validation, split.validation);
  std::mt19937_64 rng(1);
  std::set<int64_t> batched;
  for (const auto& batch : PipelineBatches(targets, split.fit, 16, 8, rng)) {
    batched.insert(batch.begin(), batch.end());
  }
  EXPECT_EQ(batched, std::set<int64_t>(split.fit.begin(), split.fit.end()));

  const ValidationSplit small = SplitForValidation(MakeTargets(Samples(19, 5)), true, 3);
  EXPECT_TRUE(small.validation.empty());
  EXPECT_EQ(small.fit.size(), 95u);
  const ValidationSplit off = SplitForValidation(targets, false, 3);
  EXPECT_TRUE(off.validation.empty());
  EXPECT_EQ(off.fit.size(), samples.size());
}

// Early stopping keeps the weights of the best epoch and stops kPatience epochs after
// it; a non-finite loss never counts as better.
TEST(StageTensorsTest, EarlyStoppingRestoresTheBestWeightsAndStopsAfterThePatience) {
  torch::nn::Linear net(2, 1);
  EarlyStopping stopping;
  auto set_weight = [&](float value) {
    torch::NoGradGuard no_grad;
    net->weight.fill_(value);
  };
  set_weight(1);
  EXPECT_FALSE(stopping.AfterEpoch(5.0, *net));
  set_weight(2);
  EXPECT_FALSE(stopping.AfterEpoch(3.0, *net));  // the best
  int epochs = 2;
  bool stopped = false;
  for (int k = 0; k < kPatience && !stopped; ++k) {
    set_weight(10.0f + k);
    stopped = stopping.AfterEpoch(k == 0 ? std::nan("") : 4.0 + k, *net);
    ++epochs;
  }
  EXPECT_TRUE(stopped);
  EXPECT_EQ(epochs, 2 + kPatience);
  stopping.RestoreBest(*net);
  EXPECT_FLOAT_EQ(net->weight[0][0].item<float>(), 2.0f);
  EXPECT_FLOAT_EQ(net->weight[0][1].item<float>(), 2.0f);
}

// Free log-predictions fitted with each loss: both order each pipeline's schedules as
// measured; the regression loss fits the times, and the rank loss stays near them.
TEST(StageTensorsTest, RankLossOrdersEachPipelineAndStaysNearTheRuntimes) {
  const std::vector<Sample> samples = Samples(3, 6);
  const Targets targets = MakeTargets(samples);
  std::vector<int64_t> all(samples.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  const torch::Tensor index = LongTensor(all);
  for (Loss loss : {Loss::kRank, Loss::kRegression}) {
    torch::manual_seed(1);
    torch::Tensor predicted = torch::randn({static_cast<int64_t>(samples.size())}).requires_grad_();
    torch::optim::Adam optimizer({predicted}, torch::optim::AdamOptions(0.05));
    for (int step = 0; step < 600; ++step) {
      ASSERT_TRUE(TrainStep(optimizer, predicted * 1, targets, index, loss, 0, step).ok());
    }
    const auto p = predicted.accessor<float, 1>();
    const auto measured = targets.log_runtime.accessor<float, 1>();
    for (size_t i = 0; i < samples.size(); ++i) {
      for (size_t j = 0; j < samples.size(); ++j) {
        if (samples[i].pipeline_id != samples[j].pipeline_id) continue;
        if (samples[i].seconds > samples[j].seconds) {
          EXPECT_GT(p[i], p[j]) << "loss " << static_cast<int>(loss) << ", samples " << i << " and "
                                << j;
        }
      }
      // The rank loss pushes a pipeline's schedules apart; its regression share keeps
      // them within e (2.7x) of the measured times.
      EXPECT_NEAR(p[i], measured[i], loss == Loss::kRank ? 1.0 : 0.1)
          << "loss " << static_cast<int>(loss) << ", sample " << i;
    }
  }
}

TEST(StageTensorsTest, ADivergedLossIsAnError) {
  const std::vector<Sample> samples = Samples(1, 4);
  const Targets targets = MakeTargets(samples);
  torch::Tensor predicted = torch::zeros({4}).requires_grad_();
  torch::optim::Adam optimizer({predicted}, torch::optim::AdamOptions(0.05));
  const torch::Tensor nan = predicted + std::nanf("");
  const Status status =
      TrainStep(optimizer, nan, targets, LongTensor({0, 1, 2, 3}), Loss::kRank, 2, 7);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("member 2 diverged"), std::string::npos) << status.message();
  EXPECT_NE(status.message().find("epoch 7"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace torch_models
}  // namespace schedfarm
