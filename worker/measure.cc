#include "worker/measure.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>

#include "common/log.h"
#include "pipeline/halide/lowering.h"
#include "pipeline/spec.h"
#include "protocol/measurement_settings.h"
#include "scheduler/autoschedule/import.h"
#include "scheduler/halide/apply.h"

namespace schedfarm {
namespace {

using Clock = std::chrono::steady_clock;

MeasurementStatus StatusOfCompileError(HalideErrorKind kind) {
  return kind == HalideErrorKind::kOutOfMemory ? OUT_OF_MEMORY : COMPILE_ERROR;
}

MeasurementStatus StatusOfRunError(HalideErrorKind kind) {
  return kind == HalideErrorKind::kOutOfMemory ? OUT_OF_MEMORY : RUNTIME_ERROR;
}

// --- reference files -------------------------------------------------------------
// Layout (host byte order, x86-64 little-endian): the 8-byte magic, a uint32 count of
// tensors, then per tensor an int32 dtype, a uint32 rank, rank int64 extents and the
// values as doubles; last, the 64-bit FNV-1a hash of everything before it.

constexpr char kMagic[8] = {'S', 'F', 'R', 'E', 'F', '0', '0', '1'};

uint64_t Fnv1a(const char* data, size_t size) {
  uint64_t h = 14695981039346656037ULL;
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= 1099511628211ULL;
  }
  return h;
}

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::string EncodeReference(const std::vector<HostTensor>& outputs) {
  std::string out(kMagic, sizeof(kMagic));
  Put<uint32_t>(out, static_cast<uint32_t>(outputs.size()));
  for (const HostTensor& t : outputs) {
    Put<int32_t>(out, t.dtype);
    Put<uint32_t>(out, static_cast<uint32_t>(t.shape.size()));
    for (int64_t extent : t.shape) Put<int64_t>(out, extent);
    out.append(reinterpret_cast<const char*>(t.data.data()), t.data.size() * sizeof(double));
  }
  Put<uint64_t>(out, Fnv1a(out.data(), out.size()));
  return out;
}

// Reads the values of a file written by EncodeReference for `graph`'s outputs; an
// error says why the file cannot be used.
StatusOr<std::vector<HostTensor>> DecodeReference(const std::string& bytes,
                                                  const PipelineGraph& graph) {
  if (bytes.size() < sizeof(kMagic) + sizeof(uint32_t) + sizeof(uint64_t) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return Status::Error("not a reference file");
  }
  const size_t body = bytes.size() - sizeof(uint64_t);
  uint64_t hash;
  std::memcpy(&hash, bytes.data() + body, sizeof(hash));
  if (hash != Fnv1a(bytes.data(), body)) return Status::Error("checksum mismatch");
  size_t pos = sizeof(kMagic);
  auto get = [&](auto& value) {
    if (body - pos < sizeof(value)) return false;
    std::memcpy(&value, bytes.data() + pos, sizeof(value));
    pos += sizeof(value);
    return true;
  };
  uint32_t count = 0;
  get(count);
  if (count != graph.output_stages().size()) return Status::Error("wrong number of outputs");
  std::vector<HostTensor> outputs;
  for (int s : graph.output_stages()) {
    const Value& v = graph.value(graph.stage_value(s));
    int32_t dtype = 0;
    uint32_t rank = 0;
    if (!get(dtype) || !get(rank) || dtype != v.dtype || rank != v.shape.size()) {
      return Status::Error("output '" + graph.stage(s).name() + "' has another dtype or rank");
    }
    HostTensor t{v.dtype, Shape(rank), {}};
    for (int64_t& extent : t.shape) get(extent);
    if (t.shape != v.shape) {
      return Status::Error("output '" + graph.stage(s).name() + "' has another shape");
    }
    const size_t n = static_cast<size_t>(NumElements(v.shape));
    if ((body - pos) / sizeof(double) < n) return Status::Error("truncated");
    t.data.resize(n);
    std::memcpy(t.data.data(), bytes.data() + pos, n * sizeof(double));
    pos += n * sizeof(double);
    outputs.push_back(std::move(t));
  }
  if (pos != body) return Status::Error("trailing bytes");
  return outputs;
}

// Writes `bytes` to `path` through a temporary file renamed into place.
Status WriteAtomically(const std::string& path, const std::string& bytes) {
  static std::atomic<int> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::Error("cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::Error("cannot rename " + tmp + " to " + path + ": " + why);
  }
  return Status::Ok();
}

// The reference outputs of `graph`, as RunReference computes them with
// timing_samples 0, with the class of a failure.
StatusOr<std::vector<HostTensor>> ComputeReference(const PipelineGraph& graph,
                                                   MeasurementStatus* failure) {
  *failure = COMPILE_ERROR;
  SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
  try {
    ApplyReferenceSchedule(graph, lowered);
  } catch (const std::exception& e) {
    return Status::Error("pipeline '" + graph.spec().name() + "': reference schedule: " + e.what());
  }
  HalideErrorKind kind = HalideErrorKind::kCompile;
  StatusOr<CompiledPipeline> compiled = CompiledPipeline::Compile(graph, lowered, 0, {}, &kind);
  if (!compiled.ok()) {
    *failure = StatusOfCompileError(kind);
    return compiled.status();
  }
  StatusOr<double> ran = compiled->Realize(&kind);
  if (!ran.ok()) {
    *failure = StatusOfRunError(kind);
    return ran.status();
  }
  return compiled->Outputs();
}

// --- cache flush -----------------------------------------------------------------

int64_t ParseCacheSize(const std::string& text) {  // "32K", "1024K", "32M"
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (value <= 0) return 0;
  if (*end == 'K') return value << 10;
  if (*end == 'M') return value << 20;
  if (*end == 'G') return value << 30;
  return value;
}

int64_t ReadLastLevelCacheBytes() {
  int best_level = 0;
  int64_t best_size = 0;
  for (int index = 0;; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream level_file(dir + "/level"), size_file(dir + "/size");
    int level = 0;
    std::string size;
    if (!(level_file >> level) || !(size_file >> size)) break;
    if (level >= best_level && ParseCacheSize(size) > 0) {
      best_level = level;
      best_size = ParseCacheSize(size);
    }
  }
  if (best_size > 0) return best_size;
  for (int name : {_SC_LEVEL3_CACHE_SIZE, _SC_LEVEL2_CACHE_SIZE}) {
    const long size = sysconf(name);
    if (size > 0) return size;
  }
  return 32LL << 20;  // neither sysfs nor sysconf knows: assume a large cache
}

// Evicts the caches by writing over a buffer twice the size of the last-level cache.
void FlushCaches() {
  static std::vector<char>* buffer = new std::vector<char>(2 * LastLevelCacheBytes());
  static char fill = 0;
  std::memset(buffer->data(), ++fill, buffer->size());
}

}  // namespace

SampleStats ComputeStats(const std::vector<double>& samples) {
  SampleStats stats;
  if (samples.empty()) return stats;
  std::vector<double> sorted = samples;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  double sum = 0;
  for (double s : sorted) sum += s;
  const double mean = sum / n;
  double squares = 0;
  for (double s : sorted) squares += (s - mean) * (s - mean);
  const double stddev = n > 1 ? std::sqrt(squares / (n - 1)) : 0;
  stats.set_min_seconds(sorted.front());
  stats.set_median_seconds(n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]));
  stats.set_mean_seconds(mean);
  stats.set_stddev_seconds(stddev);
  stats.set_cv(mean > 0 ? stddev / mean : 0);
  return stats;
}

Measurement FailedMeasurement(MeasurementStatus status, const std::string& error,
                              const MeasurementSettings& settings) {
  Measurement m;
  m.set_status(status);
  m.set_error(error);
  *m.mutable_settings() = settings;
  m.set_finished_unix_ms(UnixMillis());
  return m;
}

int64_t LastLevelCacheBytes() {
  static const int64_t bytes = ReadLastLevelCacheBytes();
  return bytes;
}

// --- ReferenceCache ----------------------------------------------------------------

ReferenceCache::ReferenceCache(std::string dir, int max_in_memory)
    : dir_(std::move(dir)), max_in_memory_(std::max(1, max_in_memory)) {}

std::string ReferenceCache::PathOf(const std::string& pipeline_id) const {
  return dir_ + "/" + pipeline_id + ".ref";
}

StatusOr<std::shared_ptr<const ReferenceOutputs>> ReferenceCache::Get(const PipelineGraph& graph,
                                                                      MeasurementStatus* failure) {
  const std::string id = PipelineId(graph);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = recent_.begin(); it != recent_.end(); ++it) {
      if ((*it)->pipeline_id != id) continue;
      std::shared_ptr<const ReferenceOutputs> found = *it;
      recent_.splice(recent_.begin(), recent_, it);
      return found;
    }
  }
  auto reference = std::make_shared<ReferenceOutputs>();
  reference->pipeline_id = id;
  bool from_disk = false;
  if (!dir_.empty()) {
    std::ifstream in(PathOf(id), std::ios::binary);
    if (in) {
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      StatusOr<std::vector<HostTensor>> decoded = DecodeReference(bytes, graph);
      if (decoded.ok()) {
        reference->outputs = std::move(*decoded);
        from_disk = true;
      }
    }
  }
  if (!from_disk) {
    MeasurementStatus status = COMPILE_ERROR;
    auto compute = [&]() -> StatusOr<std::vector<HostTensor>> {
      try {
        return ComputeReference(graph, &status);
      } catch (const std::bad_alloc& e) {
        status = OUT_OF_MEMORY;
        return Status::Error("pipeline '" + graph.spec().name() + "': out of memory (" + e.what() +
                             ")");
      }
    };
    StatusOr<std::vector<HostTensor>> computed = compute();
    if (!computed.ok()) {
      if (failure != nullptr) *failure = status;
      return computed.status().WithContext("reference outputs");
    }
    reference->outputs = std::move(*computed);
    if (!dir_.empty()) {
      std::error_code ignored;  // a failure to create it shows when writing
      std::filesystem::create_directories(dir_, ignored);
      const Status written = WriteAtomically(PathOf(id), EncodeReference(reference->outputs));
      if (!written.ok()) std::cerr << "reference cache: " << written.message() << "\n";
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++(from_disk ? loaded_ : computed_);
  recent_.push_front(reference);
  if (static_cast<int>(recent_.size()) > max_in_memory_) recent_.pop_back();
  return std::shared_ptr<const ReferenceOutputs>(reference);
}

int64_t ReferenceCache::computed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return computed_;
}

int64_t ReferenceCache::loaded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_;
}

// --- CompiledCandidate -------------------------------------------------------------

CompiledCandidate::CompiledCandidate(CompiledPipeline compiled, const PipelineGraph& graph,
                                     const MeasurementSettings& settings, double compile_seconds)
    : compiled_(std::move(compiled)),
      where_("pipeline '" + graph.spec().name() + "'"),
      settings_(settings),
      compile_seconds_(compile_seconds) {
  for (int s : graph.output_stages()) output_names_.push_back(graph.stage(s).name());
}

StatusOr<CompiledCandidate> CompiledCandidate::CompileWith(
    const PipelineGraph& graph, const MeasurementSettings& settings, MeasurementStatus* failure,
    const std::function<Status(LoweredPipeline&)>& schedule,
    const std::function<void(const LoweredPipeline&)>& after_compile) {
  const MeasurementSettings filled = WithDefaults(settings);
  MeasurementStatus status = COMPILE_ERROR;
  auto failed = [&](const Status& error) {
    if (failure != nullptr) *failure = status;
    return error;
  };
  try {
    const Clock::time_point start = Clock::now();
    StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
    if (!lowered.ok()) return failed(lowered.status());
    const Status scheduled = schedule(*lowered);
    if (!scheduled.ok()) return failed(scheduled);
    HalideErrorKind kind = HalideErrorKind::kCompile;
    StatusOr<CompiledPipeline> compiled =
        CompiledPipeline::Compile(graph, *lowered, filled.threads(), {}, &kind);
    if (!compiled.ok()) {
      status = StatusOfCompileError(kind);
      return failed(compiled.status());
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (after_compile) after_compile(*lowered);
    return CompiledCandidate(std::move(*compiled), graph, filled, seconds);
  } catch (const std::bad_alloc& e) {
    status = OUT_OF_MEMORY;
    return failed(Status::Error("pipeline '" + graph.spec().name() +
                                "': out of memory while compiling (" + e.what() + ")"));
  }
}

StatusOr<CompiledCandidate> CompiledCandidate::Compile(const PipelineGraph& graph,
                                                       const ScheduleSpec& schedule,
                                                       const MeasurementSettings& settings,
                                                       MeasurementStatus* failure) {
  return CompileWith(
      graph, settings, failure,
      [&](LoweredPipeline& lowered) { return ApplySchedule(graph, lowered, schedule); }, nullptr);
}

StatusOr<CompiledCandidate> CompiledCandidate::CompileBaseline(const PipelineGraph& graph,
                                                               const BaselineRequest& request,
                                                               const MeasurementSettings& settings,
                                                               MeasurementStatus* failure,
                                                               BaselineSchedule* chosen) {
  const MeasurementSettings filled = WithDefaults(settings);
  AutoscheduleOptions options;
  options.threads = filled.threads();
  options.beam_size = request.adams2019_beam;
  BaselineSchedule baseline;
  bool autoscheduled = false;
  StatusOr<CompiledCandidate> candidate = CompileWith(
      graph, filled, failure,
      [&](LoweredPipeline& lowered) -> Status {
        StatusOr<HalideAutoscheduleResult> result =
            ApplyAutoscheduler(lowered, request.autoscheduler, options);
        if (!result.ok()) {
          return result.status().WithContext("pipeline '" + graph.spec().name() + "'");
        }
        baseline.schedule_source = result->schedule_source;
        baseline.autoschedule_seconds = result->seconds;
        autoscheduled = true;
        return Status::Ok();
      },
      [&](const LoweredPipeline& lowered) {
        StatusOr<ImportedSchedule> imported =
            ImportHalideSchedule(graph, lowered, HalideTargetParams(filled.threads()));
        if (!imported.ok()) {
          baseline.import_note = "not imported: " + imported.status().message();
          return;
        }
        baseline.imported = true;
        baseline.imported_spec = std::move(imported->spec);
        const std::vector<LeftOut>& left_out = imported->left_out;
        if (left_out.empty()) return;
        int changes = 0;
        for (const LeftOut& l : left_out) changes += l.changes_loop_nest;
        baseline.import_note = "imported without " + std::to_string(left_out.size()) +
                               " constructs the schedule space cannot express (" +
                               std::to_string(changes) + " change the loop nest)";
        constexpr size_t kListed = 4;
        for (size_t i = 0; i < left_out.size() && i < kListed; ++i) {
          std::string line = DescribeLeftOut({left_out[i]});
          if (!line.empty() && line.back() == '\n') line.pop_back();
          baseline.import_note += "; " + line;
        }
        if (left_out.size() > kListed) {
          baseline.import_note += "; and " + std::to_string(left_out.size() - kListed) + " more";
        }
      });
  if (chosen != nullptr && autoscheduled) *chosen = baseline;
  if (!candidate.ok()) return candidate;
  candidate->baseline_ = std::move(baseline);
  return candidate;
}

void RecordBaseline(const BaselineSchedule& baseline, Measurement* m) {
  m->set_schedule_source(baseline.schedule_source);
  if (baseline.imported) {
    *m->mutable_candidate()->mutable_schedule() = baseline.imported_spec;
  } else {
    m->mutable_candidate()->clear_schedule();
  }
}

Measurement CompiledCandidate::Run(const ReferenceOutputs& reference, const OutputHook& hook) {
  Measurement m;
  *m.mutable_settings() = settings_;
  m.set_compile_seconds(compile_seconds_);
  if (baseline_) RecordBaseline(*baseline_, &m);
  auto fail = [&](MeasurementStatus status, const std::string& error) {
    m.set_status(status);
    m.set_error(error);
    m.set_finished_unix_ms(UnixMillis());
    return m;
  };
  try {
    const auto run_start = std::chrono::steady_clock::now();
    HalideErrorKind kind = HalideErrorKind::kRuntime;
    StatusOr<double> warm_up = compiled_.Realize(&kind);
    if (!warm_up.ok()) return fail(StatusOfRunError(kind), warm_up.status().message());
    std::vector<HostTensor> outputs = compiled_.Outputs();
    if (hook) hook(outputs);
    if (outputs.size() != reference.outputs.size()) {
      return fail(WRONG_ANSWER, where_ + ": " + std::to_string(outputs.size()) +
                                    " outputs, the reference has " +
                                    std::to_string(reference.outputs.size()));
    }
    std::string checksum;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const HostTensor& expected = reference.outputs[i];
      const Comparison c = CompareTensors(outputs[i], expected, DefaultTolerance(expected.dtype));
      if (!c.match) {
        return fail(WRONG_ANSWER, where_ + ", output '" + output_names_[i] + "': " + c.message);
      }
      checksum += (i > 0 ? "," : "") + TensorChecksum(outputs[i]);
    }
    m.set_output_checksum(checksum);

    StatusOr<int> repeats =
        compiled_.CalibrateRepeats(settings_.min_sample_seconds(), *warm_up, &kind);
    if (!repeats.ok()) return fail(StatusOfRunError(kind), repeats.status().message());
    m.set_repeats_per_sample(*repeats);
    std::vector<double> samples;
    // Extension beyond K samples stops where one more sample would take the run phase
    // past half its timeout: a slow but steady candidate is measured, not timed out.
    const double extension_budget = 0.5e-3 * settings_.run_timeout_ms();
    while (static_cast<int>(samples.size()) < settings_.max_samples()) {
      if (static_cast<int>(samples.size()) >= settings_.samples()) {
        const double elapsed =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
        if (ComputeStats(samples).cv() <= settings_.target_cv() ||
            elapsed + samples.back() * *repeats > extension_budget) {
          break;
        }
      }
      if (settings_.flush_cache()) FlushCaches();
      StatusOr<double> seconds = compiled_.TimeRealizations(*repeats, &kind);
      if (!seconds.ok()) return fail(StatusOfRunError(kind), seconds.status().message());
      samples.push_back(*seconds / *repeats);
      m.add_samples_seconds(samples.back());
    }
    *m.mutable_stats() = ComputeStats(samples);
  } catch (const std::bad_alloc& e) {
    return fail(OUT_OF_MEMORY, where_ + ": out of memory while running (" + e.what() + ")");
  }
  m.set_status(OK);
  m.set_finished_unix_ms(UnixMillis());
  return m;
}

Measurement MeasureInProcess(const PipelineGraph& graph, const ScheduleSpec& schedule,
                             const MeasurementSettings& settings, ReferenceCache& cache) {
  const MeasurementSettings filled = WithDefaults(settings);
  MeasurementStatus failure = COMPILE_ERROR;
  StatusOr<std::shared_ptr<const ReferenceOutputs>> reference = cache.Get(graph, &failure);
  if (!reference.ok()) return FailedMeasurement(failure, reference.status().message(), filled);
  StatusOr<CompiledCandidate> candidate =
      CompiledCandidate::Compile(graph, schedule, filled, &failure);
  if (!candidate.ok()) return FailedMeasurement(failure, candidate.status().message(), filled);
  return candidate->Run(**reference);
}

}  // namespace schedfarm
