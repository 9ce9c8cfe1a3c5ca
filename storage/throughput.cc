#include "storage/throughput.h"

#include <cmath>

#include "google/protobuf/map.h"

namespace schedfarm {
namespace {

bool Positive(double v) { return std::isfinite(v) && v > 0; }

std::optional<double> IfPositive(double v) {
  return Positive(v) ? std::optional<double>(v) : std::nullopt;
}

std::optional<double> AtThreads(const google::protobuf::Map<int32_t, double>& by_threads,
                                int threads) {
  const auto it = by_threads.find(threads);
  return it == by_threads.end() ? std::nullopt : IfPositive(it->second);
}

// The rate of `amount` over `seconds` (in 1e9 per second) into `rate`, and its share of
// `roof` into `share` when the roof is known.
void RateOf(double amount, double seconds, std::optional<double> roof, std::optional<double>* rate,
            std::optional<double>* roof_out, std::optional<double>* share) {
  if (!Positive(amount) || !Positive(seconds)) return;
  *rate = amount / seconds / 1e9;
  if (roof && Positive(*roof)) {
    *roof_out = roof;
    *share = **rate / *roof;
  }
}

}  // namespace

int MeasuredThreads(const MeasurementSettings& settings) {
  return settings.threads() > 0 ? settings.threads() : 1;
}

std::optional<double> PeakGflops(const HostFingerprint& host, int threads) {
  return AtThreads(host.peak_gflops(), threads);
}

std::optional<double> BandwidthGbps(const HostFingerprint& host, int threads) {
  return AtThreads(host.bandwidth_gbps(), threads);
}

Throughput ThroughputOf(const PipelineWork& work, double seconds, std::optional<double> peak_gflops,
                        std::optional<double> bandwidth_gbps) {
  Throughput t;
  RateOf(work.flops, seconds, peak_gflops, &t.gflops, &t.peak_gflops, &t.peak_share);
  RateOf(work.bytes, seconds, bandwidth_gbps, &t.gbps, &t.bandwidth_gbps, &t.bandwidth_share);
  return t;
}

Throughput MeasurementThroughput(const Measurement& measurement, const PipelineWork& work) {
  if (measurement.status() != OK) return {};
  const int threads = MeasuredThreads(measurement.settings());
  return ThroughputOf(work, measurement.stats().median_seconds(),
                      PeakGflops(measurement.host(), threads),
                      BandwidthGbps(measurement.host(), threads));
}

Throughput FarmBestThroughput(const PipelineProgress& pipeline) {
  return ThroughputOf({pipeline.flops(), pipeline.bytes()}, pipeline.farm_best_seconds(),
                      pipeline.farm_best_peak_gflops(), pipeline.farm_best_bandwidth_gbps());
}

}  // namespace schedfarm
