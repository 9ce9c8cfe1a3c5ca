#include "learner/gbt/gbt_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

constexpr char kFormat[] = "schedfarm.gbt.v2";
// The format before ensembles: one booster, no "members" line.
constexpr char kFormatOneMember[] = "schedfarm.gbt.v1";

// The error of the last XGBoost call on this thread, with what was being done.
Status XgbError(const std::string& what) {
  const char* message = XGBGetLastError();
  return Status::Error("gbt: " + what + ": " + (message != nullptr ? message : "unknown error"));
}

#define SCHEDFARM_XGB(call, what)           \
  do {                                      \
    if ((call) != 0) return XgbError(what); \
  } while (0)

// Training rows below which boosting runs on one thread: a round over a few thousand
// rows takes a millisecond, and OpenMP's threads, which meet at a barrier at every tree
// node, cost far more than that on a busy host (a learner at nice 10 beside two busy
// processes took 85 s to train on 16 rows with two).
constexpr size_t kParallelTrainingRows = 2000;

// XGBoost's nthread for training on `rows` rows with TrainOptions.threads (0: all).
int TrainingThreads(int threads, size_t rows) {
  return rows < kParallelTrainingRows ? 1 : std::max(0, threads);
}

void QuietXgboost() {
  static std::once_flag once;
  std::call_once(once, [] { XGBSetGlobalConfig("{\"verbosity\": 0}"); });
}

// A DMatrix freed on scope exit.
class Matrix {
 public:
  Matrix() = default;
  ~Matrix() {
    if (handle_ != nullptr) XGDMatrixFree(handle_);
  }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  DMatrixHandle* out() { return &handle_; }
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

Status CheckFeatures(const PipelineFeatures& f, const FeatureSchema& schema) {
  const size_t ni = schema.invariant_names.size();
  const size_t nd = schema.dependent_names.size();
  if (f.num_stages <= 0) return Status::Error("no stages");
  const size_t n = static_cast<size_t>(f.num_stages);
  if (f.invariant.size() != n * ni || f.dependent.size() != n * nd || f.scheduled.size() != n) {
    return Status::Error(
        "features of " + std::to_string(n) + " stages have " + std::to_string(f.invariant.size()) +
        " invariant, " + std::to_string(f.dependent.size()) + " dependent and " +
        std::to_string(f.scheduled.size()) + " scheduled values; feature schema v" +
        std::to_string(schema.version) + " has " + std::to_string(ni) + " invariant and " +
        std::to_string(nd) + " dependent columns per stage (features of another schema?)");
  }
  for (const auto& [from, to] : f.edges) {
    if (from < 0 || to < 0 || from >= f.num_stages || to >= f.num_stages) {
      return Status::Error("edge " + std::to_string(from) + " -> " + std::to_string(to) +
                           " names a stage outside 0.." + std::to_string(f.num_stages - 1));
    }
  }
  if (!std::isfinite(f.flops) || !std::isfinite(f.bytes) || f.flops < 0 || f.bytes < 0) {
    return Status::Error("flops and bytes must be finite and non-negative");
  }
  for (size_t i = 0; i < f.invariant.size(); ++i) {
    if (!std::isfinite(f.invariant[i])) {
      return Status::Error("stage " + std::to_string(i / ni) + ", invariant column '" +
                           schema.invariant_names[i % ni] + "' is not finite");
    }
  }
  for (size_t i = 0; i < f.dependent.size(); ++i) {
    if (!std::isfinite(f.dependent[i])) {
      return Status::Error("stage " + std::to_string(i / nd) + ", dependent column '" +
                           schema.dependent_names[i % nd] + "' is not finite");
    }
  }
  return Status::Ok();
}

void AppendSumMax(const std::vector<float>& values, int stages, size_t columns,
                  std::vector<float>* row) {
  for (size_t c = 0; c < columns; ++c) {
    double sum = 0;
    float max = stages > 0 ? -std::numeric_limits<float>::infinity() : 0.0f;
    for (int s = 0; s < stages; ++s) {
      const float v = values[s * columns + c];
      sum += v;
      max = std::max(max, v);
    }
    row->push_back(static_cast<float>(sum));
    row->push_back(max);
  }
}

// One member's training set. Its bootstrap resample draws n of the n samples with
// replacement; each sample drawn is one row weighted by its draws, the same fit as
// repeated rows for less work (about 63% of the samples are drawn). A single member
// takes every sample once.
struct MemberRows {
  std::vector<float> data;  // rows x columns
  std::vector<float> labels;
  std::vector<float> weights;
  size_t rows = 0;
  double mean_label = 0;  // weighted
};

MemberRows DrawMember(const std::vector<float>& data, const std::vector<float>& labels,
                      size_t columns, int members, uint64_t seed, int member) {
  const size_t n = labels.size();
  std::vector<float> draws(n, members == 1 ? 1.0f : 0.0f);
  if (members > 1) {
    SpaceRng rng(MixSeed(seed, member));
    for (size_t i = 0; i < n; ++i) draws[rng.Below(n)] += 1;
  }
  MemberRows rows;
  for (size_t i = 0; i < n; ++i) {
    if (draws[i] == 0) continue;
    rows.data.insert(rows.data.end(), data.begin() + i * columns, data.begin() + (i + 1) * columns);
    rows.labels.push_back(labels[i]);
    rows.weights.push_back(draws[i]);
    rows.mean_label += draws[i] * labels[i] / n;
    ++rows.rows;
  }
  return rows;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

}  // namespace

struct GbtModel::Booster {
  BoosterHandle handle = nullptr;
  ~Booster() {
    if (handle != nullptr) XGBoosterFree(handle);
  }
};

std::vector<std::string> GbtColumnNames(const FeatureSchema& schema) {
  std::vector<std::string> names = {"num_stages", "num_edges", "scheduled_stages", "flops",
                                    "bytes"};
  for (const std::string& n : schema.invariant_names) {
    names.push_back("sum:" + n);
    names.push_back("max:" + n);
  }
  for (const std::string& n : schema.dependent_names) {
    names.push_back("sum:" + n);
    names.push_back("max:" + n);
  }
  return names;
}

Status AggregateFeatures(const PipelineFeatures& f, const FeatureSchema& schema,
                         std::vector<float>* row) {
  SCHEDFARM_RETURN_IF_ERROR(CheckFeatures(f, schema));
  int scheduled = 0;
  for (uint8_t s : f.scheduled) scheduled += s != 0;
  row->push_back(static_cast<float>(f.num_stages));
  row->push_back(static_cast<float>(f.edges.size()));
  row->push_back(static_cast<float>(scheduled));
  row->push_back(static_cast<float>(f.flops));
  row->push_back(static_cast<float>(f.bytes));
  AppendSumMax(f.invariant, f.num_stages, schema.invariant_names.size(), row);
  AppendSumMax(f.dependent, f.num_stages, schema.dependent_names.size(), row);
  return Status::Ok();
}

GbtModel::GbtModel(GbtParams params) : params_(params) {}
GbtModel::~GbtModel() = default;

Status GbtModel::Train(const std::vector<Sample>& train, const TrainOptions& options) {
  QuietXgboost();
  const FeatureSchema& schema = CurrentFeatureSchema();
  if (train.empty()) return Status::Error("gbt: empty training set");
  const int rounds = options.epochs > 0 ? options.epochs : params_.rounds;
  if (rounds <= 0) return Status::Error("gbt: rounds must be positive");
  const int members = options.ensemble > 0 ? options.ensemble : params_.ensemble;
  if (members <= 0) return Status::Error("gbt: the ensemble needs a member");
  const size_t columns = GbtColumnNames(schema).size();
  std::vector<float> data;
  data.reserve(train.size() * columns);
  std::vector<float> labels;
  labels.reserve(train.size());
  for (size_t i = 0; i < train.size(); ++i) {
    const Sample& s = train[i];
    const std::string where =
        "gbt: training sample " + std::to_string(i) + " (pipeline '" + s.pipeline_id + "')";
    if (!std::isfinite(s.seconds) || s.seconds <= 0) {
      return Status::Error(where + ": runtime " + std::to_string(s.seconds) +
                           " is not a positive number");
    }
    SCHEDFARM_RETURN_IF_ERROR(AggregateFeatures(s.features, schema, &data).WithContext(where));
    labels.push_back(static_cast<float>(std::log(s.seconds)));
  }

  // A warm start continues boosting each member of the trained model (member k from
  // member k mod its members): its trees stay, and the new rounds fit what they miss.
  std::vector<std::string> warm_members;
  int warm_rounds = 0;
  if (options.warm_start) {
    MutexLock lock(mu_);
    for (const std::unique_ptr<Booster>& booster : boosters_) {
      bst_ulong length = 0;
      const char* buffer = nullptr;
      SCHEDFARM_XGB(
          XGBoosterSaveModelToBuffer(booster->handle, "{\"format\": \"ubj\"}", &length, &buffer),
          "saving the model to continue from");
      warm_members.emplace_back(buffer, length);
    }
    warm_rounds = rounds_;
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<Booster>> boosters;
  int least_rounds = rounds;
  for (int member = 0; member < members; ++member) {
    const std::string what = "member " + std::to_string(member) + ": ";
    const MemberRows rows = DrawMember(data, labels, columns, members, options.seed, member);
    Matrix dtrain;
    SCHEDFARM_XGB(XGDMatrixCreateFromMat(rows.data.data(), rows.rows, columns,
                                         std::numeric_limits<float>::quiet_NaN(), dtrain.out()),
                  what + "creating the training matrix");
    SCHEDFARM_XGB(
        XGDMatrixSetFloatInfo(dtrain.get(), "label", rows.labels.data(), rows.labels.size()),
        what + "setting the labels");
    SCHEDFARM_XGB(
        XGDMatrixSetFloatInfo(dtrain.get(), "weight", rows.weights.data(), rows.weights.size()),
        what + "setting the weights");
    auto booster = std::make_unique<Booster>();
    const DMatrixHandle cache[] = {dtrain.get()};
    SCHEDFARM_XGB(XGBoosterCreate(cache, 1, &booster->handle), what + "creating the booster");
    if (!warm_members.empty()) {
      const std::string& from = warm_members[member % warm_members.size()];
      SCHEDFARM_XGB(XGBoosterLoadModelFromBuffer(booster->handle, from.data(), from.size()),
                    what + "loading the model to continue from");
    } else {
      SCHEDFARM_XGB(XGBoosterSetParam(booster->handle, "base_score",
                                      Number(rows.mean_label).c_str()),
                    what + "setting base_score");
    }
    const std::pair<std::string, std::string> settings[] = {
        {"objective", "reg:squarederror"},
        {"tree_method", "exact"},
        {"verbosity", "0"},
        {"max_depth", std::to_string(params_.max_depth)},
        {"eta", Number(params_.eta)},
        {"gamma", Number(params_.gamma)},
        {"min_child_weight", Number(params_.min_child_weight)},
        {"lambda", Number(params_.lambda)},
        {"alpha", Number(params_.alpha)},
        {"subsample", Number(params_.subsample)},
        {"seed", std::to_string(options.seed + member)},
        {"nthread", std::to_string(TrainingThreads(options.threads, rows.labels.size()))},
    };
    for (const auto& [key, value] : settings) {
      SCHEDFARM_XGB(XGBoosterSetParam(booster->handle, key.c_str(), value.c_str()),
                    what + "setting " + key + " = " + value);
    }
    // The time limit is shared evenly: member k of n stops past start + limit (k + 1) / n.
    const std::chrono::duration<double> share(options.time_limit_seconds * (member + 1) / members);
    int done = 0;
    for (; done < rounds; ++done) {
      if (options.time_limit_seconds > 0 && done > 0 &&
          std::chrono::steady_clock::now() - start >= share) {
        break;
      }
      if (done > 0 && options.between_epochs && !options.between_epochs()) {
        return Status::Error(what + "stopped between boosting rounds");
      }
      SCHEDFARM_XGB(XGBoosterUpdateOneIter(booster->handle, warm_rounds + done, dtrain.get()),
                    what + "boosting round " + std::to_string(done));
    }
    // Predictions run on one thread: a batch of thousands of rows takes milliseconds, and
    // OpenMP's spinning threads cost more than that on a busy host.
    SCHEDFARM_XGB(XGBoosterSetParam(booster->handle, "nthread", "1"), what + "setting nthread");
    least_rounds = std::min(least_rounds, done);
    boosters.push_back(std::move(booster));
  }
  MutexLock lock(mu_);
  boosters_ = std::move(boosters);
  rounds_ = warm_rounds + least_rounds;
  return Status::Ok();
}

StatusOr<std::vector<RuntimePrediction>> GbtModel::Predict(
    const std::vector<const PipelineFeatures*>& features) const {
  MutexLock lock(mu_);
  if (boosters_.empty()) return Status::Error("gbt: predict before training or loading");
  const FeatureSchema& schema = CurrentFeatureSchema();
  std::vector<RuntimePrediction> out;
  if (features.empty()) return out;
  const size_t columns = GbtColumnNames(schema).size();
  std::vector<float> data;
  data.reserve(features.size() * columns);
  for (size_t i = 0; i < features.size(); ++i) {
    if (features[i] == nullptr) {
      return Status::Error("gbt: features " + std::to_string(i) + " is null");
    }
    SCHEDFARM_RETURN_IF_ERROR(AggregateFeatures(*features[i], schema, &data)
                                  .WithContext("gbt: features " + std::to_string(i)));
  }
  Matrix matrix;
  SCHEDFARM_XGB(XGDMatrixCreateFromMat(data.data(), features.size(), columns,
                                       std::numeric_limits<float>::quiet_NaN(), matrix.out()),
                "creating the prediction matrix");
  const char config[] =
      "{\"type\": 0, \"training\": false, \"iteration_begin\": 0, \"iteration_end\": 0, "
      "\"strict_shape\": false}";
  // seconds[i][m]: member m's prediction of features i.
  std::vector<std::vector<double>> seconds(features.size(),
                                           std::vector<double>(boosters_.size()));
  for (size_t m = 0; m < boosters_.size(); ++m) {
    const bst_ulong* shape = nullptr;
    bst_ulong dims = 0;
    const float* result = nullptr;
    SCHEDFARM_XGB(XGBoosterPredictFromDMatrix(boosters_[m]->handle, matrix.get(), config, &shape,
                                              &dims, &result),
                  "predicting with member " + std::to_string(m));
    bst_ulong count = 1;
    for (bst_ulong d = 0; d < dims; ++d) count *= shape[d];
    if (count != features.size()) {
      return Status::Error("gbt: XGBoost returned " + std::to_string(count) +
                           " predictions for " + std::to_string(features.size()) + " rows");
    }
    for (size_t i = 0; i < features.size(); ++i) {
      seconds[i][m] = std::exp(static_cast<double>(result[i]));
    }
  }
  out.reserve(features.size());
  for (std::vector<double>& members : seconds) {
    out.push_back(EnsemblePrediction(std::move(members)));
  }
  return out;
}

StatusOr<std::string> GbtModel::Save() const {
  MutexLock lock(mu_);
  if (boosters_.empty()) return Status::Error("gbt: save before training or loading");
  const FeatureSchema& schema = CurrentFeatureSchema();
  std::ostringstream out;
  out << kFormat << "\n"
      << "schema " << schema.version << " " << schema.invariant_names.size() << " "
      << schema.dependent_names.size() << "\n"
      << "rounds " << rounds_ << "\n"
      << "members " << boosters_.size() << "\n";
  for (const std::unique_ptr<Booster>& booster : boosters_) {
    bst_ulong length = 0;
    const char* buffer = nullptr;
    SCHEDFARM_XGB(
        XGBoosterSaveModelToBuffer(booster->handle, "{\"format\": \"ubj\"}", &length, &buffer),
        "saving the model");
    out << "xgboost " << length << "\n";
    out.write(buffer, static_cast<std::streamsize>(length));
  }
  return out.str();
}

Status GbtModel::Load(const std::string& bytes) {
  QuietXgboost();
  std::istringstream in(bytes);
  std::string format;
  std::string key;
  int version = -1;
  size_t invariant = 0;
  size_t dependent = 0;
  int rounds = 0;
  int members = 1;
  std::getline(in, format);
  if (format != kFormat && format != kFormatOneMember) {
    return Status::Error("gbt: load: not a saved GBT model (expected header '" +
                         std::string(kFormat) + "')");
  }
  if (!(in >> key) || key != "schema" || !(in >> version >> invariant >> dependent) ||
      !(in >> key) || key != "rounds" || !(in >> rounds) ||
      (format == kFormat && (!(in >> key) || key != "members" || !(in >> members) ||
                             members < 1))) {
    return Status::Error("gbt: load: malformed header");
  }
  const FeatureSchema& schema = CurrentFeatureSchema();
  if (version != schema.version || invariant != schema.invariant_names.size() ||
      dependent != schema.dependent_names.size()) {
    return Status::Error("gbt: load: the model was trained on feature schema v" +
                         std::to_string(version) + " (" + std::to_string(invariant) + "+" +
                         std::to_string(dependent) + " columns); this build has v" +
                         std::to_string(schema.version) + " (" +
                         std::to_string(schema.invariant_names.size()) + "+" +
                         std::to_string(schema.dependent_names.size()) + ")");
  }
  std::vector<std::unique_ptr<Booster>> boosters;
  size_t end = 0;
  for (int m = 0; m < members; ++m) {
    const std::string what = "member " + std::to_string(m) + ": ";
    size_t length = 0;
    if (!(in >> key) || key != "xgboost" || !(in >> length) || in.get() != '\n') {
      return Status::Error("gbt: load: " + what + "malformed header");
    }
    const size_t offset = static_cast<size_t>(in.tellg());
    if (bytes.size() - offset < length) {
      return Status::Error("gbt: load: " + what + "the header announces " + std::to_string(length) +
                           " bytes of XGBoost model, " + std::to_string(bytes.size() - offset) +
                           " follow");
    }
    auto booster = std::make_unique<Booster>();
    SCHEDFARM_XGB(XGBoosterCreate(nullptr, 0, &booster->handle), what + "creating the booster");
    SCHEDFARM_XGB(XGBoosterLoadModelFromBuffer(booster->handle, bytes.data() + offset, length),
                  what + "loading the XGBoost model");
    SCHEDFARM_XGB(XGBoosterSetParam(booster->handle, "verbosity", "0"), "setting verbosity");
    SCHEDFARM_XGB(XGBoosterSetParam(booster->handle, "nthread", "1"), "setting nthread");
    boosters.push_back(std::move(booster));
    end = offset + length;
    in.seekg(static_cast<std::streamoff>(end));
  }
  if (end != bytes.size()) {
    return Status::Error("gbt: load: " + std::to_string(bytes.size() - end) +
                         " bytes follow the last member");
  }
  MutexLock lock(mu_);
  boosters_ = std::move(boosters);
  rounds_ = rounds;
  return Status::Ok();
}

}  // namespace schedfarm
