// The one interface of every performance model (the GCN, its 0-layer variant, LANN,
// the BiLSTM value function, the roofline and the TVM-style GBT): train on labelled
// schedules, predict the runtime of a pipeline's schedule with an uncertainty, save to
// bytes and load back.
// Free of Halide and Torch; the models live in learner/torch/, learner/gbt/ and here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/features.h"
#include "search/cost_model.h"  // RuntimePrediction

namespace schedfarm {

// A measured schedule: its features and the median of its samples.
struct Sample {
  std::string pipeline_id;
  std::string schedule_hash;
  PipelineFeatures features;
  double seconds = 0;         // median runtime
  double stddev_seconds = 0;  // spread of its samples
  std::string worker_id;      // the host that measured it; empty when unknown
};

struct TrainOptions {
  uint64_t seed = 1;
  int epochs = 0;    // 0: the model's default
  int ensemble = 0;  // ensemble models (neural, gbt): members, seeds seed, seed+1...; 0: default
  int threads = 0;   // intra-op threads; 0: the library's default
  double time_limit_seconds = 0;  // 0: none
  // Continue from the model's trained state (weights, normalization statistics, time
  // scale) instead of from scratch, for models that can (bilstm; search/registry.h's
  // ModelKindInfo::warm_starts); an untrained model, or one that cannot, trains from
  // scratch.
  bool warm_start = false;
  // Early stopping on a validation split of the training pipelines, for the kinds that
  // have it (the GCN kinds and sage; docs/MODELS.md, "Early stopping"): faster, at a
  // cost in top-1 regret measured in docs/EVALUATION.md.
  bool early_stopping = false;
  // Multiplies the learning rate of every Torch kind. For the tests of what the learner
  // does with a model whose training diverges (farm-learner --test-learning-rate-scale).
  double learning_rate_scale = 1;
  // Called between epochs (boosting rounds for the GBT), never before the first. It may
  // wait: the learner's background trainings give the cpus to proposals there
  // (learner_daemon/compute_gate.h). False stops the training, which fails.
  std::function<bool()> between_epochs;
};

class PerformanceModel {
 public:
  virtual ~PerformanceModel() = default;
  // "gcn", "gcn-rank", "gcn0" (no message passing), "sage", "lann", "bilstm",
  // "roofline", "gbt".
  virtual std::string kind() const = 0;
  // Trains on `train` (every sample's features from CurrentFeatureSchema()), from
  // scratch unless options.warm_start.
  virtual Status Train(const std::vector<Sample>& train, const TrainOptions& options) = 0;
  // One prediction per features, in order. An error before training or for features of
  // another schema.
  virtual StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const PipelineFeatures*>& features) const = 0;
  // The same predictions for `variants` of `base`: features of base's pipeline that
  // differ from it in a few stages' rows, as the options of one stage in a search step
  // do. The graph models compute, from one pass over `base`, only what each variant's
  // changed rows reach (docs/MODELS.md, "Scoring variants"); the others predict each
  // variant in full. An error for a variant of another pipeline (stage count, edges).
  virtual StatusOr<std::vector<RuntimePrediction>> PredictVariants(
      const PipelineFeatures& base, const std::vector<const PipelineFeatures*>& variants) const {
    return Predict(variants);
  }
  // The trained model (weights, normalization statistics, feature schema version) as
  // bytes for Model.weights, and back.
  virtual StatusOr<std::string> Save() const = 0;
  virtual Status Load(const std::string& bytes) = 0;
};

}  // namespace schedfarm
