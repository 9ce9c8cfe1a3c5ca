#include "timing/run_phase.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/caches.h"
#include "common/elapsed.h"
#include "common/log.h"

namespace schedfarm {
namespace {

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

int64_t ReadLastLevelCacheBytes() {
  const int64_t bytes = DetectHostCaches().LastLevel().bytes;
  return bytes > 0 ? bytes : 32LL << 20;  // no source knows: assume a large cache
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

void FlushCaches() {
  static std::vector<char>* buffer = new std::vector<char>(2 * LastLevelCacheBytes());
  static char fill = 0;
  std::memset(buffer->data(), ++fill, buffer->size());
}

Measurement RunPhase(const RunTarget& target, const std::vector<HostTensor>& reference,
                     const std::vector<std::string>& output_names,
                     const MeasurementSettings& settings, const std::string& where,
                     const OutputHook& hook) {
  Measurement m;
  *m.mutable_settings() = settings;
  auto fail = [&](MeasurementStatus status, const std::string& error) {
    m.set_status(status);
    m.set_error(error);
    m.set_finished_unix_ms(UnixMillis());
    return m;
  };
  try {
    const auto run_start = std::chrono::steady_clock::now();
    StatusOr<double> warm_up = target.run_once();
    if (!warm_up.ok()) return fail(target.failure(), warm_up.status().message());
    std::vector<HostTensor> outputs = target.outputs();
    if (hook) hook(outputs);
    if (outputs.size() != reference.size()) {
      return fail(WRONG_ANSWER, where + ": " + std::to_string(outputs.size()) +
                                    " outputs, the reference has " +
                                    std::to_string(reference.size()));
    }
    std::string checksum;
    for (size_t i = 0; i < outputs.size(); ++i) {
      const HostTensor& expected = reference[i];
      const Comparison c = CompareTensors(outputs[i], expected, DefaultTolerance(expected.dtype));
      if (!c.match) {
        const std::string name = i < output_names.size() ? output_names[i] : std::to_string(i);
        return fail(WRONG_ANSWER, where + ", output '" + name + "': " + c.message);
      }
      checksum += (i > 0 ? "," : "") + TensorChecksum(outputs[i]);
    }
    m.set_output_checksum(checksum);

    StatusOr<int> repeats =
        CalibrateRepeats(settings.min_sample_seconds(), *warm_up, target.time_runs);
    if (!repeats.ok()) return fail(target.failure(), repeats.status().message());
    m.set_repeats_per_sample(*repeats);
    std::vector<double> samples;
    // Extension beyond K samples stops where one more sample would take the run phase
    // past half its timeout: a slow but steady candidate is measured, not timed out.
    const double extension_budget = 0.5e-3 * settings.run_timeout_ms();
    while (static_cast<int>(samples.size()) < settings.max_samples()) {
      if (static_cast<int>(samples.size()) >= settings.samples()) {
        const double elapsed = SecondsSince(run_start);
        if (ComputeStats(samples).cv() <= settings.target_cv() ||
            elapsed + samples.back() * *repeats > extension_budget) {
          break;
        }
      }
      if (settings.flush_cache()) FlushCaches();
      StatusOr<double> seconds = target.time_runs(*repeats);
      if (!seconds.ok()) return fail(target.failure(), seconds.status().message());
      samples.push_back(*seconds / *repeats);
      m.add_samples_seconds(samples.back());
    }
    *m.mutable_stats() = ComputeStats(samples);
  } catch (const std::bad_alloc& e) {
    return fail(OUT_OF_MEMORY, where + ": out of memory while running (" + e.what() + ")");
  }
  m.set_status(OK);
  m.set_finished_unix_ms(UnixMillis());
  return m;
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

}  // namespace schedfarm
