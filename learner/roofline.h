// The analytical roofline baseline (kind "roofline"), after the cost model of the
// relaxed-substitution report: the host's peak FLOP/s and memory bandwidth, measured
// once by small microbenchmarks and cached, and one efficiency per operator class
// fitted to the training samples. docs/EVALUATION.md gives the exact formula.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/features.h"
#include "learner/model.h"

namespace schedfarm {

// What the host can do at best, all cores together.
struct HostPeaks {
  std::string cpu;  // /proc/cpuinfo "model name"
  int cores = 0;    // threads the microbenchmarks ran on: the cpus the process may use
  std::string isa;  // "avx2+fma" or "sse2": the instructions of the FLOP/s loop
  double flops_per_second = 0;
  double bytes_per_second = 0;  // streaming read + write
};

// Runs the microbenchmarks (under a second on an idle host): f32 multiply-adds on one
// thread pinned to each cpu the process may run on (timing/peak.h's kernel, AVX2 with
// FMA where the CPU has it, else SSE), and a streaming triad a[i] = b[i] + s * c[i] over
// three 64 MiB arrays split among the cores (on hosts whose last-level cache holds that
// much, this is the cache's bandwidth: the fitted efficiencies absorb the difference).
StatusOr<HostPeaks> MeasureHostPeaks();

// The peaks cached in `path` (text) when that file was written on this CPU with the same
// core count; otherwise measures them and rewrites the file (creating its directory).
// A file that cannot be parsed is measured over, not an error.
StatusOr<HostPeaks> CachedHostPeaks(const std::string& path);
// $SCHEDFARM_CACHE_DIR, else $XDG_CACHE_HOME/schedfarm, else $HOME/.cache/schedfarm;
// file host_peaks.txt. Empty when none of the variables is set.
std::string DefaultHostPeaksPath();

// The operator classes that get an efficiency each.
enum class OpClass { kConv, kMatmul, kPool, kReduce, kElementwise, kMovement };
inline constexpr int kNumOpClasses = 6;
const char* OpClassName(OpClass c);  // "conv", "matmul", "pool", "reduce", ...

// One stage's roofline terms under a schedule: the time its arithmetic and its memory
// traffic would take at the host's peaks, given the parallelism and vectorization the
// schedule gives it (docs/EVALUATION.md has the formula).
struct RooflineStage {
  OpClass op_class = OpClass::kElementwise;
  double compute_seconds = 0;
  double memory_seconds = 0;
};

class RooflineModel : public PerformanceModel {
 public:
  // Without peaks, Train uses CachedHostPeaks(DefaultHostPeaksPath()) (or measures them
  // when no cache directory is known).
  RooflineModel();
  explicit RooflineModel(const HostPeaks& peaks);

  std::string kind() const override { return "roofline"; }
  // Fits one cost multiplier per operator class (the reciprocal of its efficiency) by
  // least squares on the log runtimes; classes absent from the training set get the
  // multiplier of a single-class fit. An ensemble of TrainOptions.ensemble members
  // (default 5): member 0 fits every sample, the others bootstrap resamples drawn with
  // the seed; predictions are their mean and spread. Errors: an empty set, a runtime
  // that is not positive, features the roofline cannot read, a sample with no flops and
  // no bytes.
  Status Train(const std::vector<Sample>& train, const TrainOptions& options) override;
  StatusOr<std::vector<RuntimePrediction>> Predict(
      const std::vector<const PipelineFeatures*>& features) const override;
  // Text: the format tag, the peaks, the schema version, the member count and each
  // class's multipliers (one per member). Load also reads the one-member format saved
  // before the roofline was an ensemble.
  StatusOr<std::string> Save() const override;
  Status Load(const std::string& bytes) override;

  // The stages of `features` that take time of their own (inlined stages are part of
  // their consumers), with their terms at peaks(). Errors: no peaks yet (before
  // training or loading), features of another schema, or a schema without a column the
  // roofline reads (named).
  StatusOr<std::vector<RooflineStage>> Stages(const PipelineFeatures& features) const;

  const HostPeaks& peaks() const { return peaks_; }
  // Fitted efficiency of a class (member 0, fitted to every training sample): attained
  // / peak (above 1 where the features overestimate the work or the peaks
  // underestimate the host).
  double efficiency(OpClass c) const;
  bool trained() const { return trained_; }

 private:
  struct Columns;  // where the roofline's inputs are in the feature schema
  std::shared_ptr<const Columns> columns_;
  Status columns_status_;
  HostPeaks peaks_;
  bool have_peaks_ = false;
  bool trained_ = false;
  // Per member, the multiplier of each class (1 / efficiency): member 0 fitted to every
  // training sample, the others to bootstrap resamples.
  std::vector<std::array<double, kNumOpClasses>> members_;
};

}  // namespace schedfarm
