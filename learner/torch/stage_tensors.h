// Internal to learner/torch/: the per-stage inputs and the training targets that the
// stage-level networks (the GCN and the BiLSTM) share: raw features stacked into
// tensors and normalized, the runtime targets with their loss weights, and the map
// from a network's output to a positive runtime.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <vector>

#include "learner/model.h"
#include "learner/torch/ensemble.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {
namespace torch_models {

torch::Tensor LongTensor(const std::vector<int64_t>& values);
torch::Tensor FloatTensor(const std::vector<float>& values);

// The raw features of every stage, stacked in order (schedules, then their stages) and
// log-transformed (SignedLog1p).
struct StackedStages {
  torch::Tensor invariant;  // [stages, invariant columns]
  torch::Tensor dependent;  // [stages, dependent columns]
  torch::Tensor scheduled;  // [stages, 1], 0 or 1
};
StackedStages Stack(const std::vector<const PipelineFeatures*>& features, int64_t invariant_columns,
                    int64_t dependent_columns);

// The normalization statistics of a training set: the invariant columns over every
// stage, the dependent ones over the stages a schedule decides.
struct StageStats {
  ColumnStats invariant, dependent;
  static StageStats Fit(const StackedStages& stacked);
  // Normalized invariant features [stages, invariant columns], and dependent features
  // [stages, dependent columns + 1]: normalized (0 for stages not decided), then the
  // scheduled flag.
  torch::Tensor Invariant(const StackedStages& stacked) const;
  torch::Tensor Dependent(const StackedStages& stacked) const;

  // In saved bytes: invariant_mean, invariant_std, dependent_mean, dependent_std.
  void Write(torch::serialize::OutputArchive& archive) const;
  static StatusOr<StageStats> Read(torch::serialize::InputArchive& archive,
                                   int64_t invariant_columns, int64_t dependent_columns);
};

// The training targets and weights, per sample: the log of the runtime in units of
// the time scale (the geometric mean runtime of the set), and the loss weight C x D
// of the value-learning paper (alpha x beta of the GNN paper): C = the pipeline's best
// runtime in the set / this one's, D = 1 / max(coefficient of variation, 0.01),
// scaled to mean 1. The loss of a prediction P of measurement M is |log(P/M)| C D.
// A warm start keeps the time scale its weights were trained in (time_scale > 0).
struct Targets {
  torch::Tensor log_runtime;  // float32 [samples]
  torch::Tensor weight;       // float32 [samples]
  torch::Tensor pipeline;     // int64 [samples], the pipeline's index in the set
  double time_scale = 1;
};
Targets MakeTargets(const std::vector<Sample>& train, double time_scale = 0);

// Early stopping on a validation split (TrainOptions.early_stopping; docs/MODELS.md,
// "Early stopping"): with `validate`, a training set of kMinPipelinesToValidate
// pipelines or more keeps kValidationShare of them (whole pipelines, drawn with the
// seed) out of the gradient steps; after each epoch the loss of those samples is
// measured, the best weights are kept, and training stops after kPatience epochs
// without a better one. Without it, or with fewer pipelines, every sample is fitted
// for every epoch.
inline constexpr int kMinPipelinesToValidate = 20;
inline constexpr double kValidationShare = 0.1;
inline constexpr int kPatience = 8;

struct ValidationSplit {
  std::vector<int64_t> fit;         // samples of the gradient steps
  std::vector<int64_t> validation;  // empty: no early stopping
};
ValidationSplit SplitForValidation(const Targets& targets, bool validate, uint64_t seed);

// The best weights of one network over the epochs, by validation loss.
class EarlyStopping {
 public:
  // Records the loss of `net` after an epoch, copying its weights when it is the best
  // so far; true when kPatience epochs in a row brought none better (a non-finite loss
  // is never better).
  bool AfterEpoch(double validation_loss, const torch::nn::Module& net);
  // Puts the best weights back (nothing if AfterEpoch never ran).
  void RestoreBest(torch::nn::Module& net) const;

 private:
  double best_loss_ = 0;
  int stale_ = 0;
  std::vector<torch::Tensor> best_;  // parameters, then buffers, in the module's order
};

// Minibatches of at most `batch_size` of the samples `samples` for one epoch, made of
// runs of up to `per_pipeline` samples of one pipeline, so that a batch holds pairs to
// rank: the samples of each pipeline are shuffled and cut into runs, and the runs
// shuffled.
std::vector<std::vector<int64_t>> PipelineBatches(const Targets& targets,
                                                  const std::vector<int64_t>& samples,
                                                  int batch_size, int per_pipeline,
                                                  std::mt19937_64& rng);

// Samples of one pipeline in a run of a rank-loss minibatch (PipelineBatches).
inline constexpr int kRankRunLength = 8;

// The loss of the samples `index` (int64), whose predicted runtimes, in units of the
// time scale, have the logarithm `log_predicted`. TrainStep takes one optimizer step
// on it for member `member`; an error when it is not finite. The loss (Loss):
//   regression  mean(|log_predicted - log_runtime| x weight)
//   rank        the pairwise logistic loss log(1 + exp(-(p_i - p_j) / kRankTemperature))
//               averaged over the pairs of one pipeline where i was measured slower than
//               j by more than kRankMinGap, plus kRankRegressionShare of the
//               regression loss, which keeps the predictions in seconds.
inline constexpr double kRankTemperature = 0.1;
inline constexpr double kRankMinGap = 0.01;
inline constexpr double kRankRegressionShare = 0.1;
torch::Tensor LossOf(const torch::Tensor& log_predicted, const Targets& targets,
                     const torch::Tensor& index, Loss loss);
Status TrainStep(torch::optim::Optimizer& optimizer, const torch::Tensor& log_predicted,
                 const Targets& targets, const torch::Tensor& index, Loss loss, int member,
                 int epoch);

// The runtime, in units of the time scale, that a network's output o stands for:
// softplus(o), positive, about o for large outputs and about exp(o) for very negative
// ones; o is taken at least kMinOutput, so the runtime never underflows to 0.
constexpr double kMinOutput = -40;
torch::Tensor PositiveRuntime(const torch::Tensor& output);

}  // namespace torch_models
}  // namespace schedfarm
