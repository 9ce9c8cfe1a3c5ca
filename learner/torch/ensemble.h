// Internal to learner/torch/: what every Torch model shares. The frame of an ensemble
// model (input checks, threads, time budget, the saved-bytes header with the feature
// schema, turning Torch exceptions into Status values) and the column normalization
// (signed log1p, then z-scores with training statistics).
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "common/status.h"
#include "learner/features.h"
#include "learner/model.h"
#include "learner/torch/torch_models.h"

namespace schedfarm {
namespace torch_models {

// sign(x) * log1p(|x|): log1p that keeps the sign of the (rare) negative feature.
torch::Tensor SignedLog1p(const torch::Tensor& x);

// Per-column mean and standard deviation of log-transformed values; a column that
// is constant on the training set (standard deviation below 1e-6) gets 1, so it
// normalizes to 0.
struct ColumnStats {
  torch::Tensor mean;    // float32 [columns]
  torch::Tensor stddev;  // float32 [columns]

  // `rows` [n, columns]; with no rows, mean 0 and standard deviation 1.
  static ColumnStats Fit(const torch::Tensor& rows, int64_t columns);
  torch::Tensor Apply(const torch::Tensor& rows) const;
};

// layer(x) for x [n, in] computed as a 1x1 convolution: the same numbers as
// layer->forward(x), but Debian's libtorch runs convolutions through oneDNN and
// matrix products through the system's libblas, by default the reference BLAS, which
// is about 6x slower on the GCN's 280-wide layers.
torch::Tensor Dense(const torch::nn::Linear& layer, const torch::Tensor& x);
// The same without the bias: what a change of x changes in layer(x).
torch::Tensor DenseChange(const torch::nn::Linear& layer, const torch::Tensor& dx);

// Reading the saved bytes back, each failure naming the field.
StatusOr<int64_t> ReadInt(torch::serialize::InputArchive& archive, const std::string& key);
StatusOr<double> ReadDouble(torch::serialize::InputArchive& archive, const std::string& key);
StatusOr<std::string> ReadString(torch::serialize::InputArchive& archive, const std::string& key);
StatusOr<std::vector<std::string>> ReadStrings(torch::serialize::InputArchive& archive,
                                               const std::string& key);
// A float32 tensor of the given shape.
StatusOr<torch::Tensor> ReadTensor(torch::serialize::InputArchive& archive, const std::string& key,
                                   const std::vector<int64_t>& shape);
void WriteStrings(torch::serialize::OutputArchive& archive, const std::string& key,
                  const std::vector<std::string>& values);

// The networks of an ensemble: their count under "members", each one's parameters and
// buffers as a nested archive "member0", "member1"...
template <typename Net>
void WriteMembers(torch::serialize::OutputArchive& archive, const std::vector<Net>& members) {
  archive.write("members", c10::IValue(static_cast<int64_t>(members.size())));
  for (size_t m = 0; m < members.size(); ++m) {
    torch::serialize::OutputArchive member;
    members[m]->save(member);
    archive.write("member" + std::to_string(m), member);
  }
}

// Reads them back: each member is built by `make()`, loaded and put in eval mode.
template <typename Net, typename MakeNet>
StatusOr<std::vector<Net>> ReadMembers(torch::serialize::InputArchive& archive, MakeNet make) {
  SCHEDFARM_ASSIGN_OR_RETURN(int64_t count, ReadInt(archive, "members"));
  if (count < 1) return Status::Error("saved model has no members");
  std::vector<Net> members;
  for (int64_t m = 0; m < count; ++m) {
    torch::serialize::InputArchive member;
    if (!archive.try_read("member" + std::to_string(m), member)) {
      return Status::Error("saved model: member " + std::to_string(m) + " is missing");
    }
    Net net = make();
    net->load(member);
    net->eval();
    members.push_back(net);
  }
  return members;
}

// A model's hyperparameters in its saved bytes. Each options struct lists its fields
// once, in its model's header, as ForEachOption(options, visit), which calls
// visit(key, field) for each; these write and read them under those keys. Integers
// and enums are saved as int64, reals as double; a Loss absent from the bytes (models
// saved before it was written, all trained on the regression loss) reads as
// Loss::kRegression.
template <typename Options>
void WriteOptions(torch::serialize::OutputArchive& archive, Options options) {
  ForEachOption(options, [&](const char* key, auto& field) {
    using Field = std::decay_t<decltype(field)>;
    if constexpr (std::is_floating_point_v<Field>) {
      archive.write(key, c10::IValue(static_cast<double>(field)));
    } else {
      archive.write(key, c10::IValue(static_cast<int64_t>(field)));
    }
  });
}

template <typename Options>
StatusOr<Options> ReadOptions(torch::serialize::InputArchive& archive) {
  Options options;
  Status status;
  ForEachOption(options, [&](const char* key, auto& field) {
    using Field = std::decay_t<decltype(field)>;
    if (!status.ok()) return;
    if constexpr (std::is_floating_point_v<Field>) {
      StatusOr<double> value = ReadDouble(archive, key);
      if (!value.ok()) {
        status = value.status();
        return;
      }
      field = *value;
    } else if constexpr (std::is_same_v<Field, Loss>) {
      c10::IValue value;
      if (!archive.try_read(key, value)) {
        field = Loss::kRegression;
        return;
      }
      if (!value.isInt() || (value.toInt() != static_cast<int64_t>(Loss::kRegression) &&
                             value.toInt() != static_cast<int64_t>(Loss::kRank))) {
        status = Status::Error("saved model: field '" + std::string(key) +
                               "' is not a known loss (0 regression, 1 rank)");
        return;
      }
      field = static_cast<Loss>(value.toInt());
    } else {
      StatusOr<int64_t> value = ReadInt(archive, key);
      if (!value.ok()) {
        status = value.status();
        return;
      }
      field = static_cast<Field>(*value);
    }
  });
  if (!status.ok()) return status;
  return options;
}

// Copies every parameter and buffer of `from` into `to`, a network of the same shape
// (a warm start's member k begins as a copy of the trained member k).
void CopyState(const torch::nn::Module& from, torch::nn::Module& to);

// A warm start of the kinds whose optimizer state is not saved (the GCN's Adagrad,
// sage's Adam) steps at this share of the learning rate: at the full rate their first
// steps, with the optimizer's statistics restarted, undo the trained fit
// (docs/MODELS.md, "Warm start").
inline constexpr double kWarmLearningRateScale = 0.1;

// How the members of an ensemble are trained.
struct MemberPlan {
  int members = 0;
  int epochs = 0;
  uint64_t seed = 0;                            // member k uses seed + k
  bool warm_start = false;                      // TrainOptions.warm_start on a trained model
  bool early_stopping = false;                  // TrainOptions.early_stopping
  double learning_rate_scale = 1;               // TrainOptions.learning_rate_scale
  double time_limit_seconds = 0;                // 0: none
  std::chrono::steady_clock::time_point start;  // of the whole training
  std::function<bool()> between_epochs;         // TrainOptions.between_epochs
};

// When one member's training has to stop: the time limit is shared evenly between the
// members trained one after another, member k (0-based) of n stopping at
// start + limit * (k + 1) / n. Expired is asked between epochs: it calls the plan's
// between_epochs first, and throws when that says stop (Train makes it an error).
class MemberBudget {
 public:
  MemberBudget(const MemberPlan& plan, int member);
  bool Expired() const;

 private:
  bool limited_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::function<bool()> between_epochs_;
};

// The predictions of [members, n] seconds: for each column the members' mean, their
// population standard deviation and each member's seconds (EnsemblePrediction).
std::vector<RuntimePrediction> EnsembleStatistics(const torch::Tensor& member_seconds);

// A PerformanceModel made of an ensemble of Torch networks. The derived class trains
// the members and predicts with them; this class checks the inputs, sets the threads,
// catches Torch's exceptions and writes and checks the saved-bytes header.
class TorchEnsembleModel : public PerformanceModel {
 public:
  explicit TorchEnsembleModel(const FeatureSchema& schema) : schema_(schema) {}

  Status Train(const std::vector<Sample>& train, const TrainOptions& options) final;
  StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const PipelineFeatures*>& features) const final;
  StatusOr<std::vector<RuntimePrediction>> PredictVariants(
      const PipelineFeatures& base,
      const std::vector<const PipelineFeatures*>& variants) const final;
  StatusOr<std::string> Save() const final;
  Status Load(const std::string& bytes) final;

  const FeatureSchema& schema() const { return schema_; }
  // The batches of variants PredictVariants scored, and of them those scored each
  // variant in full (the default PredictVariantMembers): how a test tells that a graph
  // model scored a search step incrementally rather than falling back.
  int64_t variant_batches() const { return variant_batches_; }
  int64_t variant_batches_in_full() const { return variant_batches_in_full_; }
  int64_t invariant_columns() const { return schema_.invariant_names.size(); }
  int64_t dependent_columns() const { return schema_.dependent_names.size(); }
  bool trained() const { return trained_; }

 protected:
  virtual int default_ensemble() const = 0;
  virtual int default_epochs() const = 0;
  // Trains from scratch; the samples are checked against the schema already.
  virtual Status TrainMembers(const std::vector<Sample>& train, const MemberPlan& plan) = 0;
  // [members, features.size()] predicted seconds; the features are checked already.
  virtual torch::Tensor PredictMembers(
      const std::vector<const PipelineFeatures*>& features) const = 0;
  // [members, variants.size()] predicted seconds of variants of `base`, checked already
  // (base's pipeline). By default each variant in full.
  virtual torch::Tensor PredictVariantMembers(
      const PipelineFeatures& base, const std::vector<const PipelineFeatures*>& variants) const {
    ++variant_batches_in_full_;
    return PredictMembers(variants);
  }
  // The model's own fields (hyperparameters, statistics, weights). LoadBody replaces
  // the model's state only when every field reads back.
  virtual void SaveBody(torch::serialize::OutputArchive& archive) const = 0;
  virtual Status LoadBody(torch::serialize::InputArchive& archive) = 0;

 private:
  Status CheckFeatures(const PipelineFeatures& features) const;
  // Trained, and every features non-null and of the schema.
  Status CheckPredictable(const std::string& what,
                          const std::vector<const PipelineFeatures*>& features) const;

  FeatureSchema schema_;
  mutable std::atomic<int64_t> variant_batches_{0}, variant_batches_in_full_{0};
  bool trained_ = false;
  int64_t train_samples_ = 0;
  int64_t train_pipelines_ = 0;
};

}  // namespace torch_models
}  // namespace schedfarm
