// farm-learner's core: a client of the coordinator's control API that follows every
// campaign's measurements, keeps them as a featurized training set, retrains the
// performance models on the campaign's cadence, evaluates them on held-out pipelines,
// stores each model version with its metrics in the coordinator's store, and proposes
// the next candidates of campaigns whose strategy searches under a model, each
// pipeline through its PipelineSearch (search/pipeline_search.h). Value-iteration
// campaigns it runs from end to end (value_iteration.cc). Each campaign steps on a
// thread of its own, and the steps take turns on the learner's cpus (compute_gate.h),
// each on TrainOptions.threads threads, so the whole learner computes on no more. A
// retraining trains the model the campaign's strategy searches under and proposes at
// once; the other kinds train behind every proposal (background_trainer.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "evaluation/metrics.h"
#include "learner/model.h"
#include "protocol/control_client.h"

namespace schedfarm {

class BackgroundTrainer;

struct LearnerOptions {
  FarmClientOptions client;
  int poll_interval_ms = 1000;
  // The kinds trained at every retraining, side by side on the same split; the
  // campaign's strategy model is trained whatever this says.
  std::vector<std::string> kinds = {"gcn", "gcn0", "lann", "gbt", "roofline"};
  double held_out_fraction = 0.2;  // of a campaign's pipelines, for the metrics
  // Train on this many of the training samples, drawn with `seed` (0: all of them);
  // the held-out pipelines stay the same, so sizes compare (a learning curve).
  int64_t train_samples = 0;
  // Feature columns (CurrentFeatureSchema names) that start with one of these are
  // zeroed in every training and held-out sample: an ablation of those features
  // (docs/FEATURES.md). Only for TrainCampaign: proposals featurize schedules whole.
  std::vector<std::string> drop_feature_prefixes;
  uint64_t seed = 1;
  TrainOptions train;
  // Retraining cadence of campaigns whose strategy sets none (random campaigns).
  int default_retrain_every = 64;
  // Fewer OK measurements than this: no training.
  int min_training_samples = 16;
  // Where `model_from: pretrained` looks (pretrained/pretrained.h); empty: the default,
  // DefaultPretrainedDir().
  std::string pretrained_dir;
};

class LearnerDaemon {
 public:
  static StatusOr<std::unique_ptr<LearnerDaemon>> Create(const LearnerOptions& options);
  ~LearnerDaemon();

  // Serves until `stop` is set. An error only when the coordinator refuses the learner
  // for good (unreachable coordinators are retried) or a campaign's connection or thread
  // cannot be made; either way every campaign's thread is stopped and joined first.
  Status Run(const std::atomic<bool>& stop);

  // Trains every kind once on all the OK measurements of `campaign_id`, whatever its
  // state (a finished dataset campaign, say), stores the models like a retraining does
  // and returns their held-out metrics, one row per kind.
  StatusOr<std::vector<NamedMetrics>> TrainCampaign(const std::string& campaign_id);

 private:
  struct State;
  friend class BackgroundTrainer;  // trains on a State of its own
  explicit LearnerDaemon(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace schedfarm
