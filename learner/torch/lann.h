// Internal to learner/torch/: LANN, the lightweight augmented network of Srivastava et al. 2020
// (kind "lann", docs/MODELS.md): the network and the ensemble model behind
// PerformanceModel.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "learner/torch/ensemble.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {

// The saved hyperparameters (WriteOptions, ReadOptions).
template <typename Visit>
void ForEachOption(LannOptions& o, Visit visit) {
  visit("hidden", o.hidden);
  visit("epochs", o.epochs);
  visit("learning_rate", o.learning_rate);
  visit("ensemble", o.ensemble);
}

namespace torch_models {

// Log runtimes are kept within +-kMaxLannLogSeconds so that exp stays finite.
inline constexpr double kMaxLannLogSeconds = 60;

class LannNetImpl : public torch::nn::Module {
 public:
  LannNetImpl(int64_t inputs, int64_t hidden_units)
      : hidden(register_module("hidden", torch::nn::Linear(inputs, hidden_units))),
        output(register_module("output", torch::nn::Linear(hidden_units, 1))) {}
  torch::Tensor forward(const torch::Tensor& x) {
    return output->forward(torch::relu(hidden->forward(x))).squeeze(1);
  }

  torch::nn::Linear hidden, output;
};
TORCH_MODULE(LannNet);

class LannModel : public TorchEnsembleModel {
 public:
  LannModel(const LannOptions& options, const FeatureSchema& schema)
      : TorchEnsembleModel(schema), options_(options) {}
  std::string kind() const override { return "lann"; }

  // The trained state, for the TorchScript export.
  const std::vector<LannNet>& members() const { return members_; }
  const ColumnStats& input_stats() const { return input_stats_; }
  double log_mean() const { return log_mean_; }
  double log_stddev() const { return log_stddev_; }

 protected:
  int default_ensemble() const override { return options_.ensemble; }
  int default_epochs() const override { return options_.epochs; }
  Status TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) override;
  torch::Tensor PredictMembers(const std::vector<const PipelineFeatures*>& features) const override;
  void SaveBody(torch::serialize::OutputArchive& archive) const override;
  Status LoadBody(torch::serialize::InputArchive& archive) override;

 private:
  int64_t inputs() const { return invariant_columns() + dependent_columns() + 1; }
  // [schedules, inputs()]: column sums over the stages and the operation count, logged.
  torch::Tensor Aggregate(const std::vector<const PipelineFeatures*>& features) const;
  static Status CheckOptions(const LannOptions& options);

  LannOptions options_;
  std::vector<LannNet> members_;
  ColumnStats input_stats_;
  double log_mean_ = 0, log_stddev_ = 1;  // of the training runtimes' logarithm
};

}  // namespace torch_models
}  // namespace schedfarm
