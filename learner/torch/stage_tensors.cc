#include "learner/torch/stage_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>

namespace schedfarm {
namespace torch_models {
namespace {

// beta = 1 / max(coefficient of variation, kMinVariation), then scaled to mean 1.
constexpr double kMinVariation = 0.01;

}  // namespace

torch::Tensor LongTensor(const std::vector<int64_t>& values) {
  return torch::from_blob(const_cast<int64_t*>(values.data()),
                          {static_cast<int64_t>(values.size())}, torch::kLong)
      .clone();
}

torch::Tensor FloatTensor(const std::vector<float>& values) {
  return torch::from_blob(const_cast<float*>(values.data()), {static_cast<int64_t>(values.size())},
                          torch::kFloat)
      .clone();
}

StackedStages Stack(const std::vector<const PipelineFeatures*>& features, int64_t invariant_columns,
                    int64_t dependent_columns) {
  int64_t stages = 0;
  for (const PipelineFeatures* f : features) stages += f->num_stages;
  StackedStages out;
  out.invariant = torch::empty({stages, invariant_columns});
  out.dependent = torch::empty({stages, dependent_columns});
  out.scheduled = torch::empty({stages, 1});
  float* inv = out.invariant.data_ptr<float>();
  float* dep = out.dependent.data_ptr<float>();
  float* scheduled = out.scheduled.data_ptr<float>();
  for (const PipelineFeatures* f : features) {
    std::memcpy(inv, f->invariant.data(), f->invariant.size() * sizeof(float));
    std::memcpy(dep, f->dependent.data(), f->dependent.size() * sizeof(float));
    for (uint8_t s : f->scheduled) *scheduled++ = s ? 1.0f : 0.0f;
    inv += f->invariant.size();
    dep += f->dependent.size();
  }
  out.invariant = SignedLog1p(out.invariant);
  out.dependent = SignedLog1p(out.dependent);
  return out;
}

StageStats StageStats::Fit(const StackedStages& stacked) {
  StageStats stats;
  stats.invariant = ColumnStats::Fit(stacked.invariant, stacked.invariant.size(1));
  const torch::Tensor scheduled_rows = stacked.scheduled.squeeze(1).nonzero().squeeze(1);
  stats.dependent = ColumnStats::Fit(stacked.dependent.index_select(0, scheduled_rows),
                                     stacked.dependent.size(1));
  return stats;
}

torch::Tensor StageStats::Invariant(const StackedStages& stacked) const {
  return invariant.Apply(stacked.invariant);
}

torch::Tensor StageStats::Dependent(const StackedStages& stacked) const {
  return torch::cat({dependent.Apply(stacked.dependent) * stacked.scheduled, stacked.scheduled}, 1);
}

void StageStats::Write(torch::serialize::OutputArchive& archive) const {
  archive.write("invariant_mean", invariant.mean);
  archive.write("invariant_std", invariant.stddev);
  archive.write("dependent_mean", dependent.mean);
  archive.write("dependent_std", dependent.stddev);
}

StatusOr<StageStats> StageStats::Read(torch::serialize::InputArchive& archive,
                                      int64_t invariant_columns, int64_t dependent_columns) {
  StageStats stats;
  SCHEDFARM_ASSIGN_OR_RETURN(stats.invariant.mean,
                             ReadTensor(archive, "invariant_mean", {invariant_columns}));
  SCHEDFARM_ASSIGN_OR_RETURN(stats.invariant.stddev,
                             ReadTensor(archive, "invariant_std", {invariant_columns}));
  SCHEDFARM_ASSIGN_OR_RETURN(stats.dependent.mean,
                             ReadTensor(archive, "dependent_mean", {dependent_columns}));
  SCHEDFARM_ASSIGN_OR_RETURN(stats.dependent.stddev,
                             ReadTensor(archive, "dependent_std", {dependent_columns}));
  return stats;
}

Targets MakeTargets(const std::vector<Sample>& train, double time_scale) {
  Targets t;
  double log_sum = 0;
  std::map<std::string, double> best;  // per pipeline
  for (const Sample& s : train) {
    log_sum += std::log(s.seconds);
    auto it = best.find(s.pipeline_id);
    if (it == best.end()) {
      best[s.pipeline_id] = s.seconds;
    } else {
      it->second = std::min(it->second, s.seconds);
    }
  }
  t.time_scale = time_scale > 0 ? time_scale : std::exp(log_sum / train.size());
  std::vector<float> log_runtime, alpha, beta;
  std::vector<int64_t> pipeline;
  std::map<std::string, int64_t> pipeline_index;
  for (const Sample& s : train) {
    pipeline.push_back(pipeline_index.emplace(s.pipeline_id, pipeline_index.size()).first->second);
    log_runtime.push_back(static_cast<float>(std::log(s.seconds / t.time_scale)));
    alpha.push_back(static_cast<float>(best[s.pipeline_id] / s.seconds));
    beta.push_back(static_cast<float>(1.0 / std::max(s.stddev_seconds / s.seconds, kMinVariation)));
  }
  torch::Tensor beta_t = FloatTensor(beta);
  t.log_runtime = FloatTensor(log_runtime);
  t.pipeline = LongTensor(pipeline);
  t.weight = FloatTensor(alpha) * beta_t / beta_t.mean();
  return t;
}

ValidationSplit SplitForValidation(const Targets& targets, bool validate, uint64_t seed) {
  ValidationSplit split;
  const auto pipeline = targets.pipeline.accessor<int64_t, 1>();
  const int64_t pipelines = pipeline.size(0) == 0 ? 0 : targets.pipeline.max().item<int64_t>() + 1;
  std::vector<bool> validation(pipelines, false);
  if (validate && pipelines >= kMinPipelinesToValidate) {
    std::vector<int64_t> order(pipelines);
    for (int64_t p = 0; p < pipelines; ++p) order[p] = p;
    std::mt19937_64 rng(seed);
    std::shuffle(order.begin(), order.end(), rng);
    const int64_t held = std::max<int64_t>(1, std::llround(pipelines * kValidationShare));
    for (int64_t i = 0; i < held; ++i) validation[order[i]] = true;
  }
  for (int64_t i = 0; i < pipeline.size(0); ++i) {
    (validation[pipeline[i]] ? split.validation : split.fit).push_back(i);
  }
  return split;
}

namespace {

std::vector<torch::Tensor> Weights(const torch::nn::Module& net) {
  std::vector<torch::Tensor> weights;
  for (const torch::Tensor& t : net.parameters(/*recurse=*/true)) weights.push_back(t);
  for (const torch::Tensor& t : net.buffers(/*recurse=*/true)) weights.push_back(t);
  return weights;
}

}  // namespace

bool EarlyStopping::AfterEpoch(double validation_loss, const torch::nn::Module& net) {
  if (std::isfinite(validation_loss) && (best_.empty() || validation_loss < best_loss_)) {
    best_loss_ = validation_loss;
    stale_ = 0;
    best_.clear();
    for (const torch::Tensor& t : Weights(net)) best_.push_back(t.detach().clone());
    return false;
  }
  return ++stale_ >= kPatience;
}

void EarlyStopping::RestoreBest(torch::nn::Module& net) const {
  if (best_.empty()) return;
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> weights = Weights(net);
  for (size_t i = 0; i < weights.size(); ++i) weights[i].copy_(best_[i]);
}

std::vector<std::vector<int64_t>> PipelineBatches(const Targets& targets,
                                                  const std::vector<int64_t>& samples,
                                                  int batch_size, int per_pipeline,
                                                  std::mt19937_64& rng) {
  std::map<int64_t, std::vector<int64_t>> by_pipeline;
  const auto pipeline = targets.pipeline.accessor<int64_t, 1>();
  for (int64_t i : samples) by_pipeline[pipeline[i]].push_back(i);
  std::vector<std::vector<int64_t>> runs;
  for (auto& [unused, of_pipeline] : by_pipeline) {
    std::shuffle(of_pipeline.begin(), of_pipeline.end(), rng);
    for (size_t begin = 0; begin < of_pipeline.size(); begin += per_pipeline) {
      runs.emplace_back(of_pipeline.begin() + begin,
                        of_pipeline.begin() + std::min(of_pipeline.size(), begin + per_pipeline));
    }
  }
  std::shuffle(runs.begin(), runs.end(), rng);
  std::vector<std::vector<int64_t>> batches(1);
  for (const std::vector<int64_t>& run : runs) {
    for (int64_t sample : run) {
      if (static_cast<int>(batches.back().size()) == batch_size) batches.emplace_back();
      batches.back().push_back(sample);
    }
  }
  if (batches.back().empty()) batches.pop_back();
  return batches;
}

torch::Tensor LossOf(const torch::Tensor& log_predicted, const Targets& targets,
                     const torch::Tensor& index, Loss loss) {
  const torch::Tensor log_runtime = targets.log_runtime.index_select(0, index);
  // xi = |log(predicted / measured)|, weighted by C x D.
  torch::Tensor value =
      ((log_predicted - log_runtime).abs() * targets.weight.index_select(0, index)).mean();
  if (loss == Loss::kRank) {
    const torch::Tensor pipeline = targets.pipeline.index_select(0, index);
    // Pair (i, j): i measured slower than j by more than the gap, in one pipeline.
    const torch::Tensor pairs = (pipeline.unsqueeze(1) == pipeline.unsqueeze(0)) &
                                (log_runtime.unsqueeze(1) - log_runtime.unsqueeze(0) > kRankMinGap);
    const torch::Tensor margin =
        (log_predicted.unsqueeze(1) - log_predicted.unsqueeze(0)) / kRankTemperature;
    const torch::Tensor count = pairs.sum().clamp_min(1);
    const torch::Tensor rank =
        torch::nn::functional::softplus(-margin).masked_fill(~pairs, 0).sum() / count;
    value = rank + kRankRegressionShare * value;
  }
  return value;
}

Status TrainStep(torch::optim::Optimizer& optimizer, const torch::Tensor& log_predicted,
                 const Targets& targets, const torch::Tensor& index, Loss loss, int member,
                 int epoch) {
  const torch::Tensor value = LossOf(log_predicted, targets, index, loss);
  optimizer.zero_grad();
  value.backward();
  optimizer.step();
  const float number = value.item<float>();
  if (!std::isfinite(number)) {
    return Status::Error("member " + std::to_string(member) + " diverged (loss " +
                         std::to_string(number) + " in epoch " + std::to_string(epoch) + ")");
  }
  return Status::Ok();
}

torch::Tensor PositiveRuntime(const torch::Tensor& output) {
  return torch::nn::functional::softplus(output.clamp_min(kMinOutput));
}

}  // namespace torch_models
}  // namespace schedfarm
