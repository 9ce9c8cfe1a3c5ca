// Internal to learner/torch/: the value function of the value-learning paper
// (docs/MODELS.md): each stage's normalized features embedded to `embedding` wide, a
// bidirectional LSTM over the stages (embedding / 2 units each way) whose output is
// multiplied coefficient-wise with the stage's embedding, a Linear to `latent` wide
// with ReLU, the sum over the stages, and a Linear whose PositiveRuntime is the
// runtime in units of the model's time scale. It reads partial schedules as they are
// (undecided stages have zero dependent features and a 0 flag): trained on prefix
// targets, it predicts the best runtime reachable from a partial schedule.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "learner/torch/ensemble.h"
#include "learner/torch/stage_ensemble.h"
#include "learner/torch/stage_tensors.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {

// The saved hyperparameters (WriteOptions, ReadOptions).
template <typename Visit>
void ForEachOption(BilstmOptions& o, Visit visit) {
  visit("embedding", o.embedding);
  visit("latent", o.latent);
  visit("batch_size", o.batch_size);
  visit("epochs", o.epochs);
  visit("learning_rate", o.learning_rate);
  visit("ensemble", o.ensemble);
}

namespace torch_models {

// The network's input rows of stacked stages [stages, inputs]: each stage's normalized
// invariant and dependent features and its scheduled flag.
torch::Tensor StageInputs(const StackedStages& stacked, const StageStats& stats);

class BilstmNetImpl : public torch::nn::Module {
 public:
  BilstmNetImpl(int64_t inputs, int64_t embedding, int64_t latent);
  // stages [schedules, stages, inputs], the stages of each schedule in pipeline order;
  // returns the network's output per schedule [schedules].
  torch::Tensor forward(const torch::Tensor& stages);

  torch::nn::Linear embed{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::Linear to_latent{nullptr}, readout{nullptr};
};
TORCH_MODULE(BilstmNet);

class BilstmModel : public StageEnsembleModel<BilstmOptions, BilstmNet> {
 public:
  using StageEnsembleModel::StageEnsembleModel;
  std::string kind() const override { return "bilstm"; }
  // A stage's input width: its normalized invariant and dependent features and the
  // scheduled flag.
  int64_t inputs() const { return invariant_columns() + dependent_columns() + 1; }

 protected:
  Status CheckOptions(const BilstmOptions& options) const override;
  BilstmNet NewNet(const BilstmOptions& options) const override;
  Status TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) override;
  torch::Tensor PredictMembers(const std::vector<const PipelineFeatures*>& features) const override;
  // The variants' forward recurrence from the first stage any of them changes and the
  // backward one from the last, each starting from the base's states there
  // (bilstm_variants.cc).
  torch::Tensor PredictVariantMembers(
      const PipelineFeatures& base,
      const std::vector<const PipelineFeatures*>& variants) const override;
};

}  // namespace torch_models
}  // namespace schedfarm
