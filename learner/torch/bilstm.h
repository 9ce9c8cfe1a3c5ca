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
#include "learner/torch/stage_tensors.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {
namespace torch_models {

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

class BilstmModel : public TorchEnsembleModel {
 public:
  BilstmModel(const BilstmOptions& options, const FeatureSchema& schema)
      : TorchEnsembleModel(schema), options_(options) {}

  std::string kind() const override { return "bilstm"; }
  const BilstmOptions& options() const { return options_; }
  // A stage's input width: its normalized invariant and dependent features and the
  // scheduled flag.
  int64_t inputs() const { return invariant_columns() + dependent_columns() + 1; }

  // The trained state, for the TorchScript export.
  const std::vector<BilstmNet>& members() const { return members_; }
  const StageStats& stats() const { return stats_; }
  double time_scale() const { return time_scale_; }

 protected:
  int default_ensemble() const override { return options_.ensemble; }
  int default_epochs() const override { return options_.epochs; }
  Status TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) override;
  torch::Tensor PredictMembers(const std::vector<const PipelineFeatures*>& features) const override;
  void SaveBody(torch::serialize::OutputArchive& archive) const override;
  Status LoadBody(torch::serialize::InputArchive& archive) override;

 private:
  BilstmNet NewNet() const;

  BilstmOptions options_;
  std::vector<BilstmNet> members_;
  StageStats stats_;
  double time_scale_ = 1;  // seconds per unit of PositiveRuntime
};

}  // namespace torch_models
}  // namespace schedfarm
