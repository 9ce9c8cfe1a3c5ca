#include "learner/torch/stage_tensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
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
  return torch::cat({dependent.Apply(stacked.dependent) * stacked.scheduled, stacked.scheduled},
                    1);
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
  for (const Sample& s : train) {
    log_runtime.push_back(static_cast<float>(std::log(s.seconds / t.time_scale)));
    alpha.push_back(static_cast<float>(best[s.pipeline_id] / s.seconds));
    beta.push_back(static_cast<float>(1.0 / std::max(s.stddev_seconds / s.seconds, kMinVariation)));
  }
  torch::Tensor beta_t = FloatTensor(beta);
  t.log_runtime = FloatTensor(log_runtime);
  t.weight = FloatTensor(alpha) * beta_t / beta_t.mean();
  return t;
}

Status TrainStep(torch::optim::Optimizer& optimizer, const torch::Tensor& output,
                 const Targets& targets, const torch::Tensor& index, int member, int epoch) {
  // xi = |log(predicted / measured)|, weighted by C x D.
  const torch::Tensor xi =
      (PositiveRuntime(output).log() - targets.log_runtime.index_select(0, index)).abs();
  const torch::Tensor loss = (xi * targets.weight.index_select(0, index)).mean();
  optimizer.zero_grad();
  loss.backward();
  optimizer.step();
  const float value = loss.item<float>();
  if (!std::isfinite(value)) {
    return Status::Error("member " + std::to_string(member) + " diverged (loss " +
                         std::to_string(value) + " in epoch " + std::to_string(epoch) + ")");
  }
  return Status::Ok();
}

torch::Tensor PositiveRuntime(const torch::Tensor& output) {
  return torch::nn::functional::softplus(output.clamp_min(kMinOutput));
}

}  // namespace torch_models
}  // namespace schedfarm
