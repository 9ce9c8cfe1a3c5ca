// Internal to learner/torch/: the GCN of the GNN paper (docs/MODELS.md): the network,
// the batching of stage graphs, and the ensemble model behind PerformanceModel, which
// the TorchScript export reads.
#pragma once

#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include "learner/torch/ensemble.h"
#include "learner/torch/stage_ensemble.h"
#include "learner/torch/stage_tensors.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {

// The saved hyperparameters (WriteOptions, ReadOptions).
template <typename Visit>
void ForEachOption(GcnOptions& o, Visit visit) {
  visit("layers", o.layers);
  visit("edges", o.edges);
  visit("batch_size", o.batch_size);
  visit("epochs", o.epochs);
  visit("ensemble", o.ensemble);
  visit("loss", o.loss);
}

namespace torch_models {

inline constexpr int64_t kInvariantEmbedding = 220;
inline constexpr int64_t kDependentEmbedding = 60;
inline constexpr int64_t kNodeWidth = kInvariantEmbedding + kDependentEmbedding;  // 280
inline constexpr int kMaxGcnLayers = 8;
inline constexpr double kBatchNormEps = 1e-5;

// The stages of a set of schedules, normalized, and the messages of the graph
// convolutions: for each stage the stages it averages (itself and its neighbours by
// GcnEdges), each with weight 1 / (neighbours + 1), i.e. the rows of rownorm(A + I).
struct GraphSet {
  torch::Tensor invariant;             // float32 [stages, invariant columns], normalized
  torch::Tensor dependent;             // float32 [stages, dependent columns + 1]: normalized (0 for
                                       // stages not scheduled), then the scheduled flag
  std::vector<int64_t> first_stage;    // per graph, and the total at the end
  std::vector<int64_t> first_message;  // per graph, and the total at the end
  std::vector<int64_t> message_source;  // stage within its graph
  std::vector<int64_t> message_target;  // stage within its graph
  std::vector<float> message_weight;

  int64_t num_graphs() const { return static_cast<int64_t>(first_stage.size()) - 1; }
  int64_t stages(int64_t graph) const { return first_stage[graph + 1] - first_stage[graph]; }
};

// Some graphs of a GraphSet stacked into one block-diagonal batch.
struct GraphBatch {
  torch::Tensor invariant, dependent;
  torch::Tensor source, target;  // int64 [messages], rows of the batch
  torch::Tensor weight;          // float32 [messages]
  torch::Tensor graph_index;     // int64 [stages]
  int64_t num_graphs = 0;
};
// The stages of `features` normalized by `stats`, with the messages of `edges`: each
// stage's own (weight 1 / (neighbours + 1)) when `self_loops`, and without them the mean
// of its neighbours alone (a stage with none gets no message).
GraphSet MakeGraphSet(const StackedStages& stacked,
                      const std::vector<const PipelineFeatures*>& features, GcnEdges edges,
                      bool self_loops, const StageStats& stats);
// The same stages with the messages of other `edges` (tensors shared, not copied).
GraphSet WithMessages(GraphSet set, const std::vector<const PipelineFeatures*>& features,
                      GcnEdges edges, bool self_loops);
GraphBatch MakeBatch(const GraphSet& set, const std::vector<int64_t>& graphs);
// `batch` (of `graphs`) with the messages of `set`, a set of the same stages.
GraphBatch WithMessagesOf(GraphBatch batch, const GraphSet& set,
                          const std::vector<int64_t>& graphs);
// Predictions of `members` networks for `graphs` schedules, kPredictBatch graphs at a
// time: make_batch(graph indices) builds a slice's batch once, seconds_of(batch,
// member) gives that member's seconds of it. Returns [members, graphs]. Small batches
// keep the activations in cache and below the allocator's mmap threshold: 64 scores
// 2.3x more schedules per second than 1024 (bench/search_bench), which spent half its
// time in page faults.
inline constexpr int64_t kPredictBatch = 64;
template <typename MakeBatchFn, typename SecondsFn>
torch::Tensor PredictInBatches(int64_t members, int64_t graphs, MakeBatchFn make_batch,
                               SecondsFn seconds_of) {
  torch::Tensor seconds = torch::empty({members, graphs});
  for (int64_t begin = 0; begin < graphs; begin += kPredictBatch) {
    std::vector<int64_t> slice(std::min(kPredictBatch, graphs - begin));
    std::iota(slice.begin(), slice.end(), begin);
    const auto batch = make_batch(slice);
    for (int64_t m = 0; m < members; ++m) {
      seconds[m].narrow(0, begin, slice.size()).copy_(seconds_of(batch, m));
    }
  }
  return seconds;
}

// A batch's sum of the rows of x over each graph's stages: [graphs, columns].
torch::Tensor SumOverGraphs(const GraphBatch& batch, const torch::Tensor& x);
// The messages of a batch applied to x: each row the weighted sum of its sources' rows.
torch::Tensor Propagate(const GraphBatch& batch, const torch::Tensor& x);

// Embedding (Linear to 220 and to 60, concatenated, ReLU), `layers` graph convolutions
// (Linear, rownorm(A + I), BatchNorm over the stages of the batch, ReLU), the sum over
// each graph's stages of the embedding and of every layer's output, concatenated, and
// one Linear whose PositiveRuntime is the runtime in units of the model's time scale.

class GcnNetImpl : public torch::nn::Module {
 public:
  GcnNetImpl(int64_t invariant_columns, int64_t dependent_inputs, int layers);
  torch::Tensor forward(const GraphBatch& batch);

  torch::nn::Linear embed_invariant{nullptr}, embed_dependent{nullptr};
  std::vector<torch::nn::Linear> convolutions;
  std::vector<torch::nn::BatchNorm1d> norms;
  torch::nn::Linear readout{nullptr};
};
TORCH_MODULE(GcnNet);

class GcnModel : public StageEnsembleModel<GcnOptions, GcnNet> {
 public:
  using StageEnsembleModel::StageEnsembleModel;
  std::string kind() const override {
    return options_.layers == 0 ? "gcn0" : options_.loss == Loss::kRank ? "gcn-rank" : "gcn";
  }

 protected:
  Status CheckOptions(const GcnOptions& options) const override;
  GcnNet NewNet(const GcnOptions& options) const override;
  Status TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) override;
  torch::Tensor PredictMembers(const std::vector<const PipelineFeatures*>& features) const override;
  // From one pass over `base`, each variant's changed rows and what they reach through
  // the layers (gcn_variants.cc).
  torch::Tensor PredictVariantMembers(
      const PipelineFeatures& base,
      const std::vector<const PipelineFeatures*>& variants) const override;
};

}  // namespace torch_models
}  // namespace schedfarm
