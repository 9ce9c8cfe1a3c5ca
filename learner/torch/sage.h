// Internal to learner/torch/: GraphSAGE of the TPU paper (kind "sage", docs/MODELS.md):
// the network over the stage graph and the ensemble model behind PerformanceModel.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

#include "learner/torch/ensemble.h"
#include "learner/torch/gcn.h"
#include "learner/torch/stage_ensemble.h"
#include "learner/torch/stage_tensors.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {

// The saved hyperparameters (WriteOptions, ReadOptions).
template <typename Visit>
void ForEachOption(SageOptions& o, Visit visit) {
  visit("hidden", o.hidden);
  visit("layers", o.layers);
  visit("loss", o.loss);
  visit("batch_size", o.batch_size);
  visit("epochs", o.epochs);
  visit("learning_rate", o.learning_rate);
  visit("ensemble", o.ensemble);
}

namespace torch_models {

inline constexpr int kMaxSageLayers = 8;
// The network's output is the log of the runtime; exp of more than this is no runtime.
inline constexpr double kMaxSageLogRuntime = 40;

// A batch of stage graphs seen two ways: the messages of each stage's producers and of
// its consumers, each the mean over those neighbours (the same stages in both).
struct SageBatch {
  GraphBatch producers, consumers;
};

// The two views of a set of graphs, and batches of them.
struct SageSet {
  GraphSet producers, consumers;
};
SageSet MakeSageSet(const std::vector<const PipelineFeatures*>& features,
                    const StackedStages& stacked, const StageStats& stats);
SageBatch MakeSageBatch(const SageSet& set, const std::vector<int64_t>& graphs);

// Embedding (one layer over the normalized invariant and dependent features), `layers`
// GraphSAGE layers h' = l2normalize(relu(W [h, mean_producers relu(P h),
// mean_consumers relu(C h)])), two per-stage layers, then the mean, the max and the sum
// over each graph's stages through one linear layer: the log of the runtime in units
// of the model's time scale. Only the embedding and the readout have biases (the
// paper's choice).
class SageNetImpl : public torch::nn::Module {
 public:
  SageNetImpl(int64_t inputs, int64_t hidden, int layers);
  torch::Tensor forward(const SageBatch& batch);

  torch::nn::Linear embed{nullptr};
  std::vector<torch::nn::Linear> from_producers, from_consumers, combine;
  torch::nn::Linear node_first{nullptr}, node_second{nullptr};
  torch::nn::Linear readout{nullptr};
};
TORCH_MODULE(SageNet);

class SageModel : public StageEnsembleModel<SageOptions, SageNet> {
 public:
  using StageEnsembleModel::StageEnsembleModel;
  std::string kind() const override { return "sage"; }

 protected:
  Status CheckOptions(const SageOptions& options) const override;
  SageNet NewNet(const SageOptions& options) const override;
  Status TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) override;
  torch::Tensor PredictMembers(const std::vector<const PipelineFeatures*>& features) const override;
  // From one pass over `base`, each variant's changed rows and what they reach through
  // the layers (sage_variants.cc).
  torch::Tensor PredictVariantMembers(
      const PipelineFeatures& base,
      const std::vector<const PipelineFeatures*>& variants) const override;
};

}  // namespace torch_models
}  // namespace schedfarm
