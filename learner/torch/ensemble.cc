#include "learner/torch/ensemble.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <set>
#include <stdexcept>
#include <utility>

namespace schedfarm {
namespace torch_models {
namespace {

// The identification of saved bytes; bumped when their layout changes.
constexpr char kFormat[] = "schedfarm.torch_model.v2";

std::string SampleName(const std::vector<Sample>& samples, size_t i) {
  return "training sample " + std::to_string(i) + " (pipeline '" + samples[i].pipeline_id +
         "', schedule '" + samples[i].schedule_hash + "')";
}

bool AllFinite(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

// Sets Torch's intra-op threads for the lifetime of the object, then restores them.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : previous_(TorchThreads()) { SetTorchThreads(threads); }
  ~ThreadScope() { SetTorchThreads(previous_); }

 private:
  int previous_;
};

// Runs `fn` (returning Status), turning a Torch or standard exception into an error.
template <typename Fn>
Status Guarded(const std::string& what, Fn&& fn) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    return Status::Error(what + ": Torch error: " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    return Status::Error(what + ": " + e.what());
  }
}

}  // namespace

torch::Tensor SignedLog1p(const torch::Tensor& x) { return torch::sign(x) * torch::log1p(x.abs()); }

ColumnStats ColumnStats::Fit(const torch::Tensor& rows, int64_t columns) {
  ColumnStats stats;
  if (rows.size(0) == 0) {
    stats.mean = torch::zeros({columns});
    stats.stddev = torch::ones({columns});
    return stats;
  }
  stats.mean = rows.mean(0);
  torch::Tensor stddev = rows.std(0, /*unbiased=*/false);
  stats.stddev = torch::where(stddev < 1e-6, torch::ones_like(stddev), stddev);
  return stats;
}

torch::Tensor ColumnStats::Apply(const torch::Tensor& rows) const { return (rows - mean) / stddev; }

torch::Tensor Dense(const torch::nn::Linear& layer, const torch::Tensor& x) {
  const int64_t n = x.size(0), in = x.size(1), out = layer->weight.size(0);
  return torch::conv2d(x.reshape({n, in, 1, 1}), layer->weight.view({out, in, 1, 1}), layer->bias)
      .view({n, out});
}

torch::Tensor DenseChange(const torch::nn::Linear& layer, const torch::Tensor& dx) {
  const int64_t n = dx.size(0), in = dx.size(1), out = layer->weight.size(0);
  return torch::conv2d(dx.reshape({n, in, 1, 1}), layer->weight.view({out, in, 1, 1}))
      .view({n, out});
}

StatusOr<int64_t> ReadInt(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  if (!archive.try_read(key, value) || !value.isInt()) {
    return Status::Error("saved model: integer field '" + key + "' is missing");
  }
  return value.toInt();
}

StatusOr<double> ReadDouble(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  if (!archive.try_read(key, value) || !value.isDouble()) {
    return Status::Error("saved model: number field '" + key + "' is missing");
  }
  return value.toDouble();
}

StatusOr<std::string> ReadString(torch::serialize::InputArchive& archive, const std::string& key) {
  c10::IValue value;
  if (!archive.try_read(key, value) || !value.isString()) {
    return Status::Error("saved model: text field '" + key + "' is missing");
  }
  return value.toStringRef();
}

StatusOr<std::vector<std::string>> ReadStrings(torch::serialize::InputArchive& archive,
                                               const std::string& key) {
  c10::IValue value;
  if (!archive.try_read(key, value) || !value.isList()) {
    return Status::Error("saved model: list field '" + key + "' is missing");
  }
  std::vector<std::string> result;
  for (const c10::IValue& item : value.toListRef()) {
    if (!item.isString()) {
      return Status::Error("saved model: list field '" + key + "' holds a non-text item");
    }
    result.push_back(item.toStringRef());
  }
  return result;
}

StatusOr<torch::Tensor> ReadTensor(torch::serialize::InputArchive& archive, const std::string& key,
                                   const std::vector<int64_t>& shape) {
  torch::Tensor tensor;
  if (!archive.try_read(key, tensor)) {
    return Status::Error("saved model: tensor '" + key + "' is missing");
  }
  if (tensor.scalar_type() != torch::kFloat || tensor.sizes() != c10::IntArrayRef(shape)) {
    std::string expected;
    for (int64_t d : shape) expected += (expected.empty() ? "" : "x") + std::to_string(d);
    return Status::Error("saved model: tensor '" + key + "' is not float32 of shape [" + expected +
                         "]");
  }
  return tensor;
}

void WriteStrings(torch::serialize::OutputArchive& archive, const std::string& key,
                  const std::vector<std::string>& values) {
  c10::List<std::string> list;
  for (const std::string& v : values) list.push_back(v);
  archive.write(key, c10::IValue(list));
}

MemberBudget::MemberBudget(const MemberPlan& plan, int member)
    : between_epochs_(plan.between_epochs) {
  if (plan.time_limit_seconds <= 0) return;
  limited_ = true;
  const double share = plan.time_limit_seconds * (member + 1) / plan.members;
  deadline_ = plan.start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(share));
}

bool MemberBudget::Expired() const {
  if (between_epochs_ && !between_epochs_()) throw std::runtime_error("stopped between epochs");
  return limited_ && std::chrono::steady_clock::now() >= deadline_;
}

void CopyState(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  const auto parameters = from.named_parameters(/*recurse=*/true);
  for (auto& parameter : to.named_parameters(/*recurse=*/true)) {
    parameter.value().copy_(parameters[parameter.key()]);
  }
  const auto buffers = from.named_buffers(/*recurse=*/true);
  for (auto& buffer : to.named_buffers(/*recurse=*/true)) {
    buffer.value().copy_(buffers[buffer.key()]);
  }
}

std::vector<RuntimePrediction> EnsembleStatistics(const torch::Tensor& member_seconds) {
  const torch::Tensor seconds = member_seconds.to(torch::kDouble).contiguous();
  const auto by_member = seconds.accessor<double, 2>();
  std::vector<RuntimePrediction> result;
  result.reserve(seconds.size(1));
  for (int64_t i = 0; i < seconds.size(1); ++i) {
    std::vector<double> members(seconds.size(0));
    for (int64_t m = 0; m < seconds.size(0); ++m) members[m] = by_member[m][i];
    result.push_back(EnsemblePrediction(std::move(members)));
  }
  return result;
}

Status TorchEnsembleModel::CheckFeatures(const PipelineFeatures& f) const {
  const int64_t n = f.num_stages;
  if (n <= 0) return Status::Error("features have no stages");
  const int64_t inv = invariant_columns(), dep = dependent_columns();
  if (static_cast<int64_t>(f.invariant.size()) != n * inv ||
      static_cast<int64_t>(f.dependent.size()) != n * dep) {
    return Status::Error(
        "features of " + std::to_string(n) + " stages have " + std::to_string(f.invariant.size()) +
        " invariant and " + std::to_string(f.dependent.size()) +
        " dependent values; the model's feature schema " + "(version " +
        std::to_string(schema_.version) + ") has " + std::to_string(inv) + " invariant and " +
        std::to_string(dep) + " dependent columns per stage (features of another schema version?)");
  }
  if (static_cast<int64_t>(f.scheduled.size()) != n) {
    return Status::Error("features of " + std::to_string(n) + " stages have " +
                         std::to_string(f.scheduled.size()) + " scheduled flags");
  }
  for (const auto& [producer, consumer] : f.edges) {
    if (producer < 0 || producer >= n || consumer < 0 || consumer >= n) {
      return Status::Error("edge " + std::to_string(producer) + " -> " + std::to_string(consumer) +
                           " names a stage outside 0.." + std::to_string(n - 1));
    }
  }
  if (!AllFinite(f.invariant) || !AllFinite(f.dependent) || !std::isfinite(f.flops) ||
      !std::isfinite(f.bytes)) {
    return Status::Error("features hold a value that is not finite");
  }
  return Status::Ok();
}

Status TorchEnsembleModel::Train(const std::vector<Sample>& train, const TrainOptions& options) {
  const std::string what = kind() + " Train";
  if (train.empty()) return Status::Error(what + ": the training set is empty");
  if (options.ensemble < 0 || options.epochs < 0 || options.threads < 0 ||
      !(options.time_limit_seconds >= 0)) {
    return Status::Error(what +
                         ": ensemble, epochs, threads and time_limit_seconds must "
                         "not be negative");
  }
  std::set<std::string> pipelines;
  for (size_t i = 0; i < train.size(); ++i) {
    SCHEDFARM_RETURN_IF_ERROR(
        CheckFeatures(train[i].features).WithContext(what + ": " + SampleName(train, i)));
    if (!(train[i].seconds > 0) || !std::isfinite(train[i].seconds) ||
        !(train[i].stddev_seconds >= 0) || !std::isfinite(train[i].stddev_seconds)) {
      return Status::Error(what + ": " + SampleName(train, i) +
                           ": runtime must be positive and its spread non-negative, got " +
                           std::to_string(train[i].seconds) + " s +- " +
                           std::to_string(train[i].stddev_seconds) + " s");
    }
    pipelines.insert(train[i].pipeline_id);
  }
  MemberPlan plan;
  plan.members = options.ensemble > 0 ? options.ensemble : default_ensemble();
  plan.epochs = options.epochs > 0 ? options.epochs : default_epochs();
  plan.seed = options.seed;
  plan.time_limit_seconds = options.time_limit_seconds;
  plan.warm_start = options.warm_start && trained_;
  plan.early_stopping = options.early_stopping;
  plan.learning_rate_scale = options.learning_rate_scale;
  plan.start = std::chrono::steady_clock::now();
  plan.between_epochs = options.between_epochs;
  ThreadScope threads(options.threads);
  SCHEDFARM_RETURN_IF_ERROR(Guarded(what, [&] { return TrainMembers(train, plan); }));
  trained_ = true;
  train_samples_ = train.size();
  train_pipelines_ = pipelines.size();
  return Status::Ok();
}

Status TorchEnsembleModel::CheckPredictable(
    const std::string& what, const std::vector<const PipelineFeatures*>& features) const {
  if (!trained_) return Status::Error(what + ": the model is not trained (Train or Load first)");
  for (size_t i = 0; i < features.size(); ++i) {
    if (features[i] == nullptr) {
      return Status::Error(what + ": features " + std::to_string(i) + " are null");
    }
    SCHEDFARM_RETURN_IF_ERROR(
        CheckFeatures(*features[i]).WithContext(what + ": features " + std::to_string(i)));
  }
  return Status::Ok();
}

StatusOr<std::vector<RuntimePrediction>> TorchEnsembleModel::Predict(
    const std::vector<const PipelineFeatures*>& features) const {
  const std::string what = kind() + " Predict";
  SCHEDFARM_RETURN_IF_ERROR(CheckPredictable(what, features));
  if (features.empty()) return std::vector<RuntimePrediction>();
  std::vector<RuntimePrediction> result;
  SCHEDFARM_RETURN_IF_ERROR(Guarded(what, [&] {
    torch::NoGradGuard no_grad;
    result = EnsembleStatistics(PredictMembers(features));
    return Status::Ok();
  }));
  return result;
}

StatusOr<std::vector<RuntimePrediction>> TorchEnsembleModel::PredictVariants(
    const PipelineFeatures& base, const std::vector<const PipelineFeatures*>& variants) const {
  const std::string what = kind() + " PredictVariants";
  SCHEDFARM_RETURN_IF_ERROR(CheckPredictable(what, {&base}).WithContext("base"));
  SCHEDFARM_RETURN_IF_ERROR(CheckPredictable(what, variants));
  for (size_t i = 0; i < variants.size(); ++i) {
    if (variants[i]->num_stages != base.num_stages || variants[i]->edges != base.edges) {
      return Status::Error(what + ": variant " + std::to_string(i) +
                           " is of another pipeline than the base (stages or edges differ)");
    }
  }
  if (variants.empty()) return std::vector<RuntimePrediction>();
  std::vector<RuntimePrediction> result;
  ++variant_batches_;
  SCHEDFARM_RETURN_IF_ERROR(Guarded(what, [&] {
    torch::NoGradGuard no_grad;
    result = EnsembleStatistics(PredictVariantMembers(base, variants));
    return Status::Ok();
  }));
  return result;
}

StatusOr<std::string> TorchEnsembleModel::Save() const {
  const std::string what = kind() + " Save";
  if (!trained_) return Status::Error(what + ": the model is not trained");
  std::string bytes;
  SCHEDFARM_RETURN_IF_ERROR(Guarded(what, [&] {
    torch::serialize::OutputArchive archive;
    archive.write("format", c10::IValue(std::string(kFormat)));
    archive.write("kind", c10::IValue(kind()));
    archive.write("schema_version", c10::IValue(static_cast<int64_t>(schema_.version)));
    WriteStrings(archive, "invariant_names", schema_.invariant_names);
    WriteStrings(archive, "dependent_names", schema_.dependent_names);
    archive.write("train_samples", c10::IValue(train_samples_));
    archive.write("train_pipelines", c10::IValue(train_pipelines_));
    SaveBody(archive);
    archive.save_to([&bytes](const void* data, size_t size) {
      bytes.append(static_cast<const char*>(data), size);
      return size;
    });
    return Status::Ok();
  }));
  return bytes;
}

Status TorchEnsembleModel::Load(const std::string& bytes) {
  const std::string what = kind() + " Load";
  return Guarded(what, [&]() -> Status {
    torch::serialize::InputArchive archive;
    try {
      archive.load_from(bytes.data(), bytes.size());
    } catch (const c10::Error& e) {
      return Status::Error(what + ": the bytes are not a saved Torch model (" +
                           std::string(e.what_without_backtrace()).substr(0, 200) + ")");
    }
    SCHEDFARM_ASSIGN_OR_RETURN(std::string format, ReadString(archive, "format"));
    if (format != kFormat) {
      return Status::Error(what + ": saved format '" + format + "', this build reads '" + kFormat +
                           "'");
    }
    SCHEDFARM_ASSIGN_OR_RETURN(std::string saved_kind, ReadString(archive, "kind"));
    if (saved_kind != kind()) {
      return Status::Error(what + ": the bytes hold a '" + saved_kind + "' model, not '" + kind() +
                           "'");
    }
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t version, ReadInt(archive, "schema_version"));
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<std::string> inv,
                               ReadStrings(archive, "invariant_names"));
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<std::string> dep,
                               ReadStrings(archive, "dependent_names"));
    if (version != schema_.version || inv != schema_.invariant_names ||
        dep != schema_.dependent_names) {
      return Status::Error(
          what + ": the model was trained on feature schema version " + std::to_string(version) +
          " (" + std::to_string(inv.size()) + " invariant, " + std::to_string(dep.size()) +
          " dependent columns); this model reads version " + std::to_string(schema_.version) +
          " (" + std::to_string(invariant_columns()) + ", " + std::to_string(dependent_columns()) +
          ")" + (version == schema_.version ? ", whose column names differ" : ""));
    }
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t samples, ReadInt(archive, "train_samples"));
    SCHEDFARM_ASSIGN_OR_RETURN(int64_t pipelines, ReadInt(archive, "train_pipelines"));
    SCHEDFARM_RETURN_IF_ERROR(LoadBody(archive).WithContext(what));
    trained_ = true;
    train_samples_ = samples;
    train_pipelines_ = pipelines;
    return Status::Ok();
  });
}

}  // namespace torch_models
}  // namespace schedfarm
