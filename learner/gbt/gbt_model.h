// The "TVM-style GBT" baseline (kind "gbt"): an XGBoost regressor of the log runtime
// on features aggregated over a pipeline's stages (sum and max of every feature column,
// plus the graph's size and the analytic flops and bytes). TVM's own loop-nest features
// are not available here, hence "TVM-style": the learner and its hyperparameters follow
// AutoTVM's XGBoost cost model, the features are ours. docs/EVALUATION.md has the details.
// An ensemble of boosters trained on bootstrap resamples of the samples gives the
// predictions a spread (docs/MODELS.md, "The GBT's ensemble").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "learner/features.h"
#include "learner/model.h"

namespace schedfarm {

// The names of the aggregated columns for `schema`, in the order of AggregateFeatures.
std::vector<std::string> GbtColumnNames(const FeatureSchema& schema);

// Appends one row of aggregated features (GbtColumnNames(schema).size() values) to
// `row`. Errors: features whose sizes do not match `schema`.
Status AggregateFeatures(const PipelineFeatures& features, const FeatureSchema& schema,
                         std::vector<float>* row);

// Hyperparameters; the defaults are AutoTVM's XGBoost cost model ("reg" loss).
struct GbtParams {
  int rounds = 300;  // boosting rounds (TrainOptions.epochs overrides)
  // Members when TrainOptions.ensemble is 0. One member trains on the samples as they
  // are; each of two or more on its own bootstrap resample.
  int ensemble = 3;
  int max_depth = 3;
  double eta = 0.3;
  double gamma = 1e-4;
  double min_child_weight = 1;
  double lambda = 1;
  double alpha = 0;
  double subsample = 1;
};

// Thread-safe: its functions may be called from several threads at once.
class GbtModel : public PerformanceModel {
 public:
  explicit GbtModel(GbtParams params = {});
  ~GbtModel() override;
  GbtModel(const GbtModel&) = delete;
  GbtModel& operator=(const GbtModel&) = delete;

  std::string kind() const override { return "gbt"; }
  // Trains options.ensemble members (or params.ensemble), member k on the
  // bootstrap resample drawn with seed MixSeed(options.seed, k) and XGBoost's seed
  // options.seed + k: rounds = options.epochs or params.rounds; options.threads go to
  // XGBoost; options.time_limit_seconds is shared evenly by the members (member k of n
  // stops boosting past start + limit (k + 1) / n, after at least one round). From
  // scratch, unless options.warm_start on a trained model: member k then continues
  // boosting member k mod n of it, its trees kept (a pretrained model fine-tuned).
  Status Train(const std::vector<Sample>& train, const TrainOptions& options) override;
  // The members' mean and population stddev, and each member's prediction (a single
  // member: stddev 0 and no member predictions).
  StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const PipelineFeatures*>& features) const override;
  // A short text header (format, schema version and column counts, rounds, members)
  // followed by each member's XGBoost model buffer (UBJSON) with its length. Load also
  // reads the one-member format before ensembles (schedfarm.gbt.v1).
  StatusOr<std::string> Save() const override;
  Status Load(const std::string& bytes) override;

  // Boosting rounds of the trained model, the least of its members (0 before training).
  int rounds() const {
    MutexLock lock(mu_);
    return rounds_;
  }
  // Members of the trained model (0 before training).
  int members() const {
    MutexLock lock(mu_);
    return static_cast<int>(boosters_.size());
  }

  struct Booster;  // one trained XGBoost booster, a member (gbt_model.cc)

 private:
  GbtParams params_;
  // XGBoost's predictions on one booster are serialised; training and loading replace
  // the boosters under the same mutex.
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Booster>> boosters_ SCHEDFARM_GUARDED_BY(mu_);
  int rounds_ SCHEDFARM_GUARDED_BY(mu_) = 0;
};

}  // namespace schedfarm
