// What a result achieved against its host: GFLOP/s (the pipeline's FLOPs over the
// runtime) and their share of the measuring host's fp32 peak at the thread count it ran
// with (HostFingerprint.peak_gflops, measured by the worker at start: timing/peak.h).
// One definition for the export, farmctl's status and the report. A share is given
// only against a peak the host measured at that thread count, never an estimate.
#pragma once

#include <optional>

#include "schedfarm.pb.h"

namespace schedfarm {

// The threads a measurement ran with: settings.threads, 1 (the default) when unset.
int MeasuredThreads(const MeasurementSettings& settings);

// The host's peak at `threads` threads; nullopt when it measured none there (or a value
// that is not a positive number).
std::optional<double> PeakGflops(const HostFingerprint& host, int threads);

struct Throughput {
  std::optional<double> gflops;       // flops / seconds / 1e9
  std::optional<double> peak_gflops;  // the peak it is compared with
  std::optional<double> peak_share;   // gflops / peak_gflops
};

// From a pipeline's FLOPs, a runtime and a peak: gflops when flops and seconds are
// positive and finite, peak_share when the peak is known too.
Throughput ThroughputOf(double flops, double seconds, std::optional<double> peak_gflops);

// An OK measurement's, at its median runtime and its host's peak at its thread count;
// nothing for a failed one.
Throughput MeasurementThroughput(const Measurement& measurement, double flops);

// The farm's best of a pipeline in a status: PipelineProgress.flops over
// farm_best_seconds, against farm_best_peak_gflops.
Throughput FarmBestThroughput(const PipelineProgress& pipeline);

}  // namespace schedfarm
