// The neural performance models on LibTorch, each an ensemble of independently seeded
// members whose disagreement is the uncertainty: the GCN of the GNN paper (with 0
// layers, "gcn0", no message passing), LANN (a tiny MLP on aggregated features plus
// the analytic operation count) and the BiLSTM value function of the value-learning
// paper; and their TorchScript export. Torch-free.
#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "learner/features.h"
#include "learner/model.h"

namespace schedfarm {

// Which neighbours a stage averages with itself in a graph convolution
// (A' = rownorm(A + I)); the feature edges run from producer to consumer.
enum class GcnEdges {
  kBoth = 0,       // its producers and its consumers (the default)
  kProducers = 1,  // its producers only
  kConsumers = 2,  // its consumers only
};

// What training fits (learner/torch/stage_tensors.h, TrainStep, has the formulas).
enum class Loss {
  kRegression = 0,  // the runtime: |log(predicted / measured)|, weighted (the GNN paper)
  kRank = 1,        // the order of a pipeline's schedules: a pairwise logistic loss (the
                    // TPU paper), with a small share of the regression loss
};

struct GcnOptions {
  int layers = 2;  // graph-convolution layers, 0 to 8; 0 is kind "gcn0"
  GcnEdges edges = GcnEdges::kBoth;
  Loss loss = Loss::kRegression;  // kRank with layers > 0 is kind "gcn-rank"

  int batch_size = 32;  // schedules (graphs) per minibatch
  int epochs = 80;      // when TrainOptions.epochs is 0
  int ensemble = 5;     // members when TrainOptions.ensemble is 0
};

struct LannOptions {
  int hidden = 8;               // units of the one hidden layer
  int epochs = 1500;            // full-batch Adam steps when TrainOptions.epochs is 0
  double learning_rate = 0.01;  // Adam
  int ensemble = 5;             // members when TrainOptions.ensemble is 0
};

// GraphSAGE of the TPU paper (docs/MODELS.md): a per-stage embedding, `layers`
// GraphSAGE layers (the stage's embedding beside the mean of its producers' and of its
// consumers', each through its own layer, then L2-normalized), two per-stage layers,
// and the mean, max and sum over the stages to the log of the runtime. Kind "sage".
struct SageOptions {
  int hidden = 128;  // width of every stage embedding
  int layers = 3;    // GraphSAGE layers, 0 to 8
  Loss loss = Loss::kRank;
  int batch_size = 32;           // schedules per minibatch, in runs of up to 8 of one pipeline
  int epochs = 60;               // when TrainOptions.epochs is 0
  double learning_rate = 0.001;  // Adam
  int ensemble = 5;              // members when TrainOptions.ensemble is 0
};

// The value function of the value-learning paper (docs/MODELS.md): an embedding, a
// bidirectional LSTM over the stages and a sum of per-stage latents. Scores partial
// schedules as the best runtime reachable from them once trained on such targets.
struct BilstmOptions {
  int embedding = 64;            // per-stage embedding width, even: the LSTM has half each way
  int latent = 32;               // per-stage latent summed over the stages
  int batch_size = 32;           // schedules per minibatch (of one stage count)
  int epochs = 60;               // when TrainOptions.epochs is 0
  double learning_rate = 0.002;  // Adam
  int ensemble = 1;              // members when TrainOptions.ensemble is 0
};

// The models read features of `schema` (by default the one this build computes); a
// model trained on one schema refuses features and saved bytes of another.
std::unique_ptr<PerformanceModel> MakeGcnModel(
    const GcnOptions& options = {}, const FeatureSchema& schema = CurrentFeatureSchema());
std::unique_ptr<PerformanceModel> MakeLannModel(
    const LannOptions& options = {}, const FeatureSchema& schema = CurrentFeatureSchema());
std::unique_ptr<PerformanceModel> MakeSageModel(
    const SageOptions& options = {}, const FeatureSchema& schema = CurrentFeatureSchema());
std::unique_ptr<PerformanceModel> MakeBilstmModel(
    const BilstmOptions& options = {}, const FeatureSchema& schema = CurrentFeatureSchema());

// Intra-op threads Torch uses for Predict in the calling thread (the OpenMP backend keeps
// the count per thread: a new thread starts from the library's default); Train sets and
// restores its own from TrainOptions.threads. The BLAS library's pool is the process's,
// sized once by its owner (common/blas_threads.h), never by these.
int TorchThreads();
void SetTorchThreads(int threads);

// Writes a trained Torch model ("gcn", "gcn-rank", "gcn0", "sage", "lann", "bilstm") as
// a TorchScript module (torch.jit.load in Python, torch::jit::load in C++) with its
// kind and feature schema as attributes (kind, feature_schema_version, invariant_names,
// dependent_names). Its forward takes the batched raw features of a set of schedules,
// stages of all graphs stacked in graph order (the BiLSTM and LANN read no edges):
//   invariant    float32 [N, invariant columns]
//   dependent    float32 [N, dependent columns]
//   scheduled    float32 [N], 1 for a stage the schedule decides, 0 otherwise
//   edge_index   int64 [2, E], producer and consumer stage (rows of the batch)
//   graph_index  int64 [N], the graph (0..G-1) of each stage
//   flops        float64 [G], optional: each pipeline's analytic operation count
//                (PipelineFeatures::flops; LANN requires it, the others ignore it)
// and returns (mean seconds [G], ensemble standard deviation [G]), the same numbers
// as Predict. docs/MODELS.md describes the module.
Status ExportTorchScript(const PerformanceModel& model, const std::string& path);

}  // namespace schedfarm
