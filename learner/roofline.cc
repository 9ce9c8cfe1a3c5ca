#include "learner/roofline.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <thread>

#include "common/cpus.h"
#include "timing/bandwidth.h"
#include "timing/peak.h"

namespace schedfarm {
namespace {

constexpr char kPeaksFormat[] = "schedfarm.host_peaks.v1";
constexpr char kModelFormat[] = "schedfarm.roofline.v2";
// Saved before the roofline was an ensemble: one multiplier per class.
constexpr char kOneMemberFormat[] = "schedfarm.roofline.v1";
constexpr int kDefaultMembers = 5;  // when TrainOptions.ensemble is 0
constexpr int kMaxMembers = 1000;

// --- microbenchmarks ------------------------------------------------------------------

// Multiply-adds on one pinned thread per cpu: timing/peak.h's kernel (the worker's fp32
// peak), in AVX2 with FMA or SSE, the vector width the roofline's terms assume.
StatusOr<double> MeasureFlops(const std::vector<int>& cpus, PeakIsa isa) {
  SCHEDFARM_ASSIGN_OR_RETURN(const PeakResult peak, MeasurePeak(isa, cpus));
  return peak.gflops * 1e9;
}

std::string CpuModelName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(colon + 1);
        name.erase(0, name.find_first_not_of(" \t"));
        if (!name.empty()) return name;
      }
    }
  }
  return "unknown";
}

// The cpus this process may run on (the microbenchmarks' threads, one pinned to each);
// their number is the host's core count.
std::vector<int> HostCpus() { return AllowedCpus(); }
int HostCores() {
  const size_t cpus = HostCpus().size();
  return cpus > 0 ? static_cast<int>(cpus) : std::max(1u, std::thread::hardware_concurrency());
}

std::string FormatPeaks(const HostPeaks& p) {
  char numbers[128];
  std::snprintf(numbers, sizeof(numbers), "flops_per_second %.17g\nbytes_per_second %.17g\n",
                p.flops_per_second, p.bytes_per_second);
  return std::string(kPeaksFormat) + "\ncpu " + p.cpu + "\ncores " + std::to_string(p.cores) +
         "\nisa " + p.isa + "\n" + numbers;
}

// Parses FormatPeaks' text from the current position of `in`.
StatusOr<HostPeaks> ParsePeaks(std::istream& in) {
  HostPeaks p;
  std::string line;
  if (!std::getline(in, line) || line != kPeaksFormat) {
    return Status::Error("expected '" + std::string(kPeaksFormat) + "'");
  }
  const char* keys[] = {"cpu", "cores", "isa", "flops_per_second", "bytes_per_second"};
  for (const char* key : keys) {
    if (!std::getline(in, line)) return Status::Error(std::string("missing '") + key + "'");
    const std::string prefix = std::string(key) + " ";
    if (line.rfind(prefix, 0) != 0) {
      return Status::Error(std::string("expected '") + key + " ...', got '" + line + "'");
    }
    const std::string value = line.substr(prefix.size());
    char* end = nullptr;
    if (prefix == "cpu ") {
      p.cpu = value;
    } else if (prefix == "isa ") {
      p.isa = value;
    } else if (prefix == "cores ") {
      p.cores = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (*end != '\0' || p.cores <= 0) return Status::Error("bad cores '" + value + "'");
    } else {
      const double v = std::strtod(value.c_str(), &end);
      if (*end != '\0' || !std::isfinite(v) || v <= 0) {
        return Status::Error(std::string("bad ") + key + " '" + value + "'");
      }
      (prefix == "flops_per_second " ? p.flops_per_second : p.bytes_per_second) = v;
    }
  }
  return p;
}

Status CheckPeaks(const HostPeaks& p) {
  if (!std::isfinite(p.flops_per_second) || p.flops_per_second <= 0 ||
      !std::isfinite(p.bytes_per_second) || p.bytes_per_second <= 0) {
    return Status::Error("roofline: peak FLOP/s and bandwidth must be positive (got " +
                         std::to_string(p.flops_per_second) + " and " +
                         std::to_string(p.bytes_per_second) + ")");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<HostPeaks> MeasureHostPeaks() {
  HostPeaks p;
  p.cpu = CpuModelName();
  p.cores = HostCores();
  const bool avx2 = CpuSupports(PeakIsa::kAvx2);
  p.isa = avx2 ? "avx2+fma" : "sse2";
  const StatusOr<double> flops = MeasureFlops(HostCpus(), avx2 ? PeakIsa::kAvx2 : PeakIsa::kSse);
  if (!flops.ok()) return flops.status().WithContext("measuring host peaks");
  p.flops_per_second = *flops;
  SCHEDFARM_ASSIGN_OR_RETURN(const double gbps, MeasureBandwidth(HostCpus()));
  p.bytes_per_second = gbps * 1e9;
  SCHEDFARM_RETURN_IF_ERROR(CheckPeaks(p).WithContext("measuring host peaks"));
  return p;
}

StatusOr<HostPeaks> CachedHostPeaks(const std::string& path) {
  {
    std::ifstream in(path);
    if (in) {
      auto cached = ParsePeaks(in);
      if (cached.ok() && cached->cpu == CpuModelName() && cached->cores == HostCores()) {
        return cached;
      }
    }
  }
  SCHEDFARM_ASSIGN_OR_RETURN(HostPeaks peaks, MeasureHostPeaks());
  std::error_code ec;
  const std::filesystem::path file(path);
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  if (ec) {
    return Status::Error("host peaks cache '" + path +
                         "': cannot create its directory: " + ec.message());
  }
  const std::string temp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(temp, std::ios::trunc);
    out << FormatPeaks(peaks);
    if (!out) return Status::Error("host peaks cache '" + temp + "': write failed");
  }
  std::filesystem::rename(temp, path, ec);
  if (ec) return Status::Error("host peaks cache '" + path + "': " + ec.message());
  return peaks;
}

std::string DefaultHostPeaksPath() {
  const char* dir = std::getenv("SCHEDFARM_CACHE_DIR");
  if (dir != nullptr && *dir != '\0') return std::string(dir) + "/host_peaks.txt";
  dir = std::getenv("XDG_CACHE_HOME");
  if (dir != nullptr && *dir != '\0') return std::string(dir) + "/schedfarm/host_peaks.txt";
  dir = std::getenv("HOME");
  if (dir != nullptr && *dir != '\0') return std::string(dir) + "/.cache/schedfarm/host_peaks.txt";
  return "";
}

const char* OpClassName(OpClass c) {
  switch (c) {
    case OpClass::kConv:
      return "conv";
    case OpClass::kMatmul:
      return "matmul";
    case OpClass::kPool:
      return "pool";
    case OpClass::kReduce:
      return "reduce";
    case OpClass::kElementwise:
      return "elementwise";
    case OpClass::kMovement:
      return "movement";
  }
  return "?";
}

// Where the roofline's inputs are in the feature schema.
struct RooflineModel::Columns {
  int version = 0;
  size_t invariant = 0;  // columns per stage
  size_t dependent = 0;
  std::array<int, OpKind_ARRAYSIZE> op{};  // invariant "op_<kind>" per OpKind (-1: none)
  int bytes_per_element = -1;
  int flops = -1;  // invariant, schedule-free
  int bytes_read = -1;
  int bytes_written = -1;
  int loc_inline = -1;  // dependent, this schedule
  int float_ops = -1;
  int scalar_float_ops = -1;
  int core_utilization = -1;
  int unique_bytes_read_total = -1;
  int bytes_written_total = -1;
};

namespace {

int FindColumn(const std::vector<std::string>& names, const std::string& name) {
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

OpClass ClassOf(OpKind op) {
  switch (op) {
    case CONV:
      return OpClass::kConv;
    case MATMUL:
      return OpClass::kMatmul;
    case POOL:
      return OpClass::kPool;
    case REDUCE:
      return OpClass::kReduce;
    case UNARY:
    case BINARY:
      return OpClass::kElementwise;
    default:
      return OpClass::kMovement;
  }
}

// Bytes of one vector register of the FLOP/s loop.
int VectorBytes(const HostPeaks& peaks) { return peaks.isa == "sse2" ? 16 : 32; }

}  // namespace

RooflineModel::RooflineModel() : RooflineModel(HostPeaks()) { have_peaks_ = false; }

RooflineModel::RooflineModel(const HostPeaks& peaks) : peaks_(peaks), have_peaks_(true) {
  const FeatureSchema& schema = CurrentFeatureSchema();
  auto columns = std::make_shared<Columns>();
  columns->version = schema.version;
  columns->invariant = schema.invariant_names.size();
  columns->dependent = schema.dependent_names.size();
  std::string missing;
  auto find = [&](const std::vector<std::string>& names, const std::string& name, int* index) {
    *index = FindColumn(names, name);
    if (*index < 0) missing += (missing.empty() ? "'" : ", '") + name + "'";
  };
  columns->op.fill(-1);
  for (int k = OpKind_MIN; k <= OpKind_MAX; ++k) {
    if (k == OP_KIND_UNSPECIFIED || !OpKind_IsValid(k)) continue;
    std::string name = OpKind_Name(static_cast<OpKind>(k));
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    find(schema.invariant_names, "op_" + name, &columns->op[k]);
  }
  find(schema.invariant_names, "bytes_per_element", &columns->bytes_per_element);
  find(schema.invariant_names, "flops", &columns->flops);
  find(schema.invariant_names, "bytes_read", &columns->bytes_read);
  find(schema.invariant_names, "bytes_written", &columns->bytes_written);
  find(schema.dependent_names, "loc_inline", &columns->loc_inline);
  find(schema.dependent_names, "float_ops", &columns->float_ops);
  find(schema.dependent_names, "scalar_float_ops", &columns->scalar_float_ops);
  find(schema.dependent_names, "core_utilization", &columns->core_utilization);
  find(schema.dependent_names, "unique_bytes_read_total", &columns->unique_bytes_read_total);
  find(schema.dependent_names, "bytes_written_total", &columns->bytes_written_total);
  if (!missing.empty()) {
    columns_status_ = Status::Error("roofline: feature schema v" + std::to_string(schema.version) +
                                    " lacks the column(s) " + missing);
  }
  columns_ = std::move(columns);
}

StatusOr<std::vector<RooflineStage>> RooflineModel::Stages(const PipelineFeatures& f) const {
  SCHEDFARM_RETURN_IF_ERROR(columns_status_);
  if (!have_peaks_) return Status::Error("roofline: no host peaks before training or loading");
  const Columns& col = *columns_;
  if (f.num_stages <= 0) return Status::Error("no stages");
  const size_t n = static_cast<size_t>(f.num_stages);
  if (f.invariant.size() != n * col.invariant || f.dependent.size() != n * col.dependent ||
      f.scheduled.size() != n) {
    return Status::Error(
        "features of " + std::to_string(n) + " stages have " + std::to_string(f.invariant.size()) +
        " invariant, " + std::to_string(f.dependent.size()) + " dependent and " +
        std::to_string(f.scheduled.size()) + " scheduled values; feature schema v" +
        std::to_string(col.version) + " has " + std::to_string(col.invariant) + " invariant and " +
        std::to_string(col.dependent) +
        " dependent columns per stage (features of another schema?)");
  }
  const double peak = peaks_.flops_per_second;
  const double bandwidth = peaks_.bytes_per_second;
  const double vector_bytes = VectorBytes(peaks_);
  const double f32_lanes = vector_bytes / 4;
  std::vector<RooflineStage> stages;
  for (size_t s = 0; s < n; ++s) {
    const float* inv = &f.invariant[s * col.invariant];
    const float* dep = &f.dependent[s * col.dependent];
    int op = -1;
    for (int k = 0; k < OpKind_ARRAYSIZE; ++k) {
      if (col.op[k] >= 0 && inv[col.op[k]] > 0.5f) op = k;
    }
    if (op < 0) {
      return Status::Error("stage " + std::to_string(s) + " has no op_<kind> column set");
    }
    const double values[] = {inv[col.flops],
                             inv[col.bytes_read],
                             inv[col.bytes_written],
                             dep[col.float_ops],
                             dep[col.scalar_float_ops],
                             dep[col.unique_bytes_read_total],
                             dep[col.bytes_written_total]};
    for (double v : values) {
      if (!std::isfinite(v) || v < 0) {
        return Status::Error("stage " + std::to_string(s) +
                             ": a flops or bytes column is negative or not finite");
      }
    }
    RooflineStage stage;
    stage.op_class = ClassOf(static_cast<OpKind>(op));
    if (f.scheduled[s] == 0) {
      // Undecided: the schedule-free counts at the peaks.
      stage.compute_seconds = inv[col.flops] / peak;
      stage.memory_seconds = (inv[col.bytes_read] + inv[col.bytes_written]) / bandwidth;
    } else {
      if (dep[col.loc_inline] > 0.5f) continue;  // computed inside its consumers
      const double element_bytes = std::max(1.0f, inv[col.bytes_per_element]);
      const double lanes = std::max(1.0, vector_bytes / element_bytes);
      const double scalar = dep[col.scalar_float_ops];
      const double vector = std::max(0.0, dep[col.float_ops] - scalar);
      const double utilization = std::clamp(static_cast<double>(dep[col.core_utilization]),
                                            1.0 / std::max(1, peaks_.cores), 1.0);
      // Each float operation weighted by its cost in peak flops: vectorized,
      // f32_lanes / lanes (1 for f32, 2 for f64); scalar, f32_lanes (one instruction
      // for one element).
      stage.compute_seconds =
          (vector * f32_lanes / lanes + scalar * f32_lanes) / (peak * utilization);
      stage.memory_seconds =
          (static_cast<double>(dep[col.unique_bytes_read_total]) + dep[col.bytes_written_total]) /
          bandwidth;
    }
    stages.push_back(stage);
  }
  return stages;
}

namespace {

// Per sample, per class: sum over its stages of max(compute, memory) at the peaks.
using ClassTimes = std::array<double, kNumOpClasses>;

ClassTimes PeakTimes(const std::vector<RooflineStage>& stages) {
  ClassTimes t{};
  for (const RooflineStage& s : stages) {
    t[static_cast<int>(s.op_class)] += std::max(s.compute_seconds, s.memory_seconds);
  }
  return t;
}

// Solves m x = b (n x n, row-major) by Gaussian elimination with partial pivoting; the
// solution replaces b. False when m is singular.
bool SolveInPlace(int n, std::vector<double>* m, std::vector<double>* b) {
  std::vector<double>& a = *m;
  std::vector<double>& x = *b;
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int row = col + 1; row < n; ++row) {
      if (std::abs(a[row * n + col]) > std::abs(a[pivot * n + col])) pivot = row;
    }
    if (!(std::abs(a[pivot * n + col]) > 0)) return false;
    if (pivot != col) {
      for (int j = 0; j < n; ++j) std::swap(a[col * n + j], a[pivot * n + j]);
      std::swap(x[col], x[pivot]);
    }
    for (int row = col + 1; row < n; ++row) {
      const double f = a[row * n + col] / a[col * n + col];
      for (int j = col; j < n; ++j) a[row * n + j] -= f * a[col * n + j];
      x[row] -= f * x[col];
    }
  }
  for (int row = n - 1; row >= 0; --row) {
    double v = x[row];
    for (int j = row + 1; j < n; ++j) v -= a[row * n + j] * x[j];
    x[row] = v / a[row * n + row];
  }
  return true;
}

// The multipliers w_c = exp(theta_c) that fit sum_c w_c R_ic to the runtimes T_i of
// the samples `rows` (indices into times and log_truth, repeats allowed) by least
// squares on the logarithms; classes absent from those samples keep the single-class
// fit.
ClassTimes FitMultipliers(const std::vector<ClassTimes>& times,
                          const std::vector<double>& log_truth, const std::vector<size_t>& rows) {
  const size_t n = rows.size();
  double log_ratio_sum = 0;
  std::array<bool, kNumOpClasses> present{};
  for (size_t i : rows) {
    double total = 0;
    for (int c = 0; c < kNumOpClasses; ++c) {
      total += times[i][c];
      present[c] = present[c] || times[i][c] > 0;
    }
    log_ratio_sum += log_truth[i] - std::log(total);
  }

  // One multiplier for every class: the geometric mean of T_i / sum_c R_ic, the
  // log-space least-squares fit with a single parameter.
  const double global = log_ratio_sum / n;
  std::array<double, kNumOpClasses> theta;
  theta.fill(global);
  std::vector<int> active;
  for (int c = 0; c < kNumOpClasses; ++c) {
    if (present[c]) active.push_back(c);
  }
  const int k = static_cast<int>(active.size());

  // The sum of squared log errors, its gradient J^T r and Gauss-Newton matrix J^T J with
  // J_ic = w_c R_ic / p_i (the share of class c in prediction p_i).
  auto loss = [&](const std::array<double, kNumOpClasses>& th) {
    double sum = 0;
    for (size_t i : rows) {
      double p = 0;
      for (int c : active) p += std::exp(th[c]) * times[i][c];
      const double r = std::log(p) - log_truth[i];
      sum += r * r;
    }
    return sum;
  };
  // Levenberg-Marquardt: a handful of unknowns, a smooth objective.
  double current = loss(theta);
  double lambda = 1e-3;
  for (int iteration = 0; iteration < 1000 && current > 0; ++iteration) {
    std::vector<double> jtj(k * k, 0.0);
    std::vector<double> jtr(k, 0.0);
    for (size_t i : rows) {
      double p = 0;
      for (int c : active) p += std::exp(theta[c]) * times[i][c];
      const double r = std::log(p) - log_truth[i];
      for (int a = 0; a < k; ++a) {
        const double ja = std::exp(theta[active[a]]) * times[i][active[a]] / p;
        jtr[a] += ja * r;
        for (int b = 0; b < k; ++b) {
          jtj[a * k + b] += ja * std::exp(theta[active[b]]) * times[i][active[b]] / p;
        }
      }
    }
    std::vector<double> m = jtj;
    std::vector<double> step(k);
    for (int a = 0; a < k; ++a) {
      m[a * k + a] += lambda * std::max(jtj[a * k + a], 1e-12);
      step[a] = -jtr[a];
    }
    if (!SolveInPlace(k, &m, &step)) {
      lambda *= 10;
      continue;
    }
    std::array<double, kNumOpClasses> next = theta;
    double largest = 0;
    for (int a = 0; a < k; ++a) {
      next[active[a]] += step[a];
      largest = std::max(largest, std::abs(step[a]));
    }
    const double candidate = loss(next);
    if (candidate < current) {
      theta = next;
      current = candidate;
      lambda = std::max(lambda / 10, 1e-12);
      if (largest < 1e-12) break;
    } else {
      lambda *= 10;
      if (lambda > 1e12) break;
    }
  }
  ClassTimes multiplier;
  for (int c = 0; c < kNumOpClasses; ++c) multiplier[c] = std::exp(theta[c]);
  return multiplier;
}

}  // namespace

Status RooflineModel::Train(const std::vector<Sample>& train, const TrainOptions& options) {
  if (train.empty()) return Status::Error("roofline: empty training set");
  if (!have_peaks_) {
    const std::string path = DefaultHostPeaksPath();
    SCHEDFARM_ASSIGN_OR_RETURN(peaks_, path.empty() ? MeasureHostPeaks() : CachedHostPeaks(path));
    have_peaks_ = true;
  }
  SCHEDFARM_RETURN_IF_ERROR(CheckPeaks(peaks_));

  // Per sample i: R_ic, the summed max(C, M) of its stages of class c, and ln T_i. The
  // prediction is sum_c w_c R_ic with w_c = exp(theta_c).
  std::vector<ClassTimes> times;
  std::vector<double> log_truth;
  times.reserve(train.size());
  log_truth.reserve(train.size());
  for (size_t i = 0; i < train.size(); ++i) {
    const Sample& s = train[i];
    const std::string where =
        "roofline: training sample " + std::to_string(i) + " (pipeline '" + s.pipeline_id + "')";
    if (!std::isfinite(s.seconds) || s.seconds <= 0) {
      return Status::Error(where + ": runtime " + std::to_string(s.seconds) +
                           " is not a positive number");
    }
    auto stages = Stages(s.features);
    if (!stages.ok()) return stages.status().WithContext(where);
    const ClassTimes t = PeakTimes(*stages);
    double total = 0;
    for (int c = 0; c < kNumOpClasses; ++c) total += t[c];
    if (!(total > 0) || !std::isfinite(total)) {
      return Status::Error(where +
                           ": its stages have zero flops and bytes (or overflow): the "
                           "roofline cannot fit it");
    }
    times.push_back(t);
    log_truth.push_back(std::log(s.seconds));
  }
  // Member 0 fits every sample, the others a bootstrap resample each (drawn with the
  // seed), which gives the ensemble its spread.
  const int members = options.ensemble > 0 ? options.ensemble : kDefaultMembers;
  std::vector<size_t> rows(times.size());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  std::vector<std::array<double, kNumOpClasses>> fitted = {FitMultipliers(times, log_truth, rows)};
  std::mt19937_64 rng(options.seed);
  for (int k = 1; k < members; ++k) {
    for (size_t& row : rows) row = rng() % times.size();
    fitted.push_back(FitMultipliers(times, log_truth, rows));
  }
  members_ = std::move(fitted);
  trained_ = true;
  return Status::Ok();
}

StatusOr<std::vector<RuntimePrediction>> RooflineModel::Predict(
    const std::vector<const PipelineFeatures*>& features) const {
  if (!trained_) return Status::Error("roofline: predict before training or loading");
  std::vector<RuntimePrediction> out;
  out.reserve(features.size());
  for (size_t i = 0; i < features.size(); ++i) {
    if (features[i] == nullptr) {
      return Status::Error("roofline: features " + std::to_string(i) + " is null");
    }
    auto stages = Stages(*features[i]);
    if (!stages.ok()) return stages.status().WithContext("roofline: features " + std::to_string(i));
    const ClassTimes t = PeakTimes(*stages);
    std::vector<double> member_seconds;
    for (const std::array<double, kNumOpClasses>& multiplier : members_) {
      double seconds = 0;
      for (int c = 0; c < kNumOpClasses; ++c) seconds += multiplier[c] * t[c];
      member_seconds.push_back(seconds);
    }
    out.push_back(EnsemblePrediction(std::move(member_seconds)));
  }
  return out;
}

double RooflineModel::efficiency(OpClass c) const {
  const double m = trained_ ? members_[0][static_cast<int>(c)] : 0;
  return m > 0 ? 1.0 / m : std::numeric_limits<double>::infinity();
}

StatusOr<std::string> RooflineModel::Save() const {
  if (!trained_) return Status::Error("roofline: save before training or loading");
  std::string out = std::string(kModelFormat) + "\n" + FormatPeaks(peaks_);
  out += "schema " + std::to_string(CurrentFeatureSchema().version) + "\n";
  out += "members " + std::to_string(members_.size()) + "\n";
  for (int c = 0; c < kNumOpClasses; ++c) {
    out += std::string("multiplier ") + OpClassName(static_cast<OpClass>(c));
    for (const std::array<double, kNumOpClasses>& multiplier : members_) {
      char value[32];
      std::snprintf(value, sizeof(value), " %.17g", multiplier[c]);
      out += value;
    }
    out += "\n";
  }
  return out;
}

Status RooflineModel::Load(const std::string& bytes) {
  std::istringstream in(bytes);
  std::string line;
  if (!std::getline(in, line) || (line != kModelFormat && line != kOneMemberFormat)) {
    return Status::Error("roofline: load: not a saved roofline model (expected header '" +
                         std::string(kModelFormat) + "')");
  }
  const bool one_member = line == kOneMemberFormat;
  auto peaks = ParsePeaks(in);
  if (!peaks.ok()) return peaks.status().WithContext("roofline: load: host peaks");
  int version = -1;
  std::string key;
  if (!(in >> key >> version) || key != "schema") {
    return Status::Error("roofline: load: missing the schema version");
  }
  if (version != CurrentFeatureSchema().version) {
    return Status::Error("roofline: load: the model was fitted on feature schema v" +
                         std::to_string(version) + "; this build has v" +
                         std::to_string(CurrentFeatureSchema().version));
  }
  int members = 1;
  if (!one_member &&
      (!(in >> key >> members) || key != "members" || members < 1 || members > kMaxMembers)) {
    return Status::Error("roofline: load: missing the member count (1 to " +
                         std::to_string(kMaxMembers) + ")");
  }
  std::vector<std::array<double, kNumOpClasses>> multipliers(members);
  for (int c = 0; c < kNumOpClasses; ++c) {
    std::string name;
    bool ok = static_cast<bool>(in >> key >> name) && key == "multiplier" &&
              name == OpClassName(static_cast<OpClass>(c));
    for (int k = 0; k < members && ok; ++k) {
      double value = -1;
      ok = static_cast<bool>(in >> value) && std::isfinite(value) && value >= 0;
      multipliers[k][c] = value;
    }
    if (!ok) {
      return Status::Error(std::string("roofline: load: bad or missing multiplier of '") +
                           OpClassName(static_cast<OpClass>(c)) + "' (" + std::to_string(members) +
                           " members)");
    }
  }
  peaks_ = *peaks;
  have_peaks_ = true;
  members_ = std::move(multipliers);
  trained_ = true;
  return Status::Ok();
}

}  // namespace schedfarm
