#include "storage/throughput.h"

#include <cmath>

namespace schedfarm {
namespace {

bool Positive(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

int MeasuredThreads(const MeasurementSettings& settings) {
  return settings.threads() > 0 ? settings.threads() : 1;
}

std::optional<double> PeakGflops(const HostFingerprint& host, int threads) {
  const auto it = host.peak_gflops().find(threads);
  if (it == host.peak_gflops().end() || !Positive(it->second)) return std::nullopt;
  return it->second;
}

Throughput ThroughputOf(double flops, double seconds, std::optional<double> peak_gflops) {
  Throughput t;
  if (!Positive(flops) || !Positive(seconds)) return t;
  t.gflops = flops / seconds / 1e9;
  if (peak_gflops && Positive(*peak_gflops)) {
    t.peak_gflops = peak_gflops;
    t.peak_share = *t.gflops / *peak_gflops;
  }
  return t;
}

Throughput MeasurementThroughput(const Measurement& measurement, double flops) {
  if (measurement.status() != OK) return {};
  return ThroughputOf(flops, measurement.stats().median_seconds(),
                      PeakGflops(measurement.host(), MeasuredThreads(measurement.settings())));
}

Throughput FarmBestThroughput(const PipelineProgress& pipeline) {
  return ThroughputOf(pipeline.flops(), pipeline.farm_best_seconds(),
                      Positive(pipeline.farm_best_peak_gflops())
                          ? std::optional<double>(pipeline.farm_best_peak_gflops())
                          : std::nullopt);
}

}  // namespace schedfarm
