// What a result achieved against its host's two roofs: GFLOP/s (the pipeline's FLOPs over
// the runtime) and their share of the measuring host's fp32 peak, and GB/s (the bytes the
// pipeline cannot avoid moving over the runtime) and their share of the host's memory
// bandwidth, both at the thread count it ran with (HostFingerprint.peak_gflops and
// bandwidth_gbps, measured by the worker at start: timing/peak.h, timing/bandwidth.h).
// One definition for the export, farmctl's status, the task table and the report. A
// share is given only against a roof the host measured at that thread count, never an
// estimate.
#pragma once

#include <optional>

#include "schedfarm.pb.h"

namespace schedfarm {

// The threads a measurement ran with: settings.threads, 1 (the default) when unset.
int MeasuredThreads(const MeasurementSettings& settings);

// The host's peak (GFLOP/s) and memory bandwidth (GB/s) at `threads` threads; nullopt when
// it measured none there (or a value that is not a positive number).
std::optional<double> PeakGflops(const HostFingerprint& host, int threads);
std::optional<double> BandwidthGbps(const HostFingerprint& host, int threads);

struct Throughput {
  std::optional<double> gflops;           // flops / seconds / 1e9
  std::optional<double> peak_gflops;      // the peak it is compared with
  std::optional<double> peak_share;       // gflops / peak_gflops
  std::optional<double> gbps;             // bytes / seconds / 1e9
  std::optional<double> bandwidth_gbps;   // the bandwidth it is compared with
  std::optional<double> bandwidth_share;  // gbps / bandwidth_gbps
};

// A pipeline's work: its FLOPs and the bytes it cannot avoid moving.
struct PipelineWork {
  double flops = 0;
  double bytes = 0;
};

// From a pipeline's work, a runtime and the roofs: gflops (gbps) when flops (bytes) and
// seconds are positive and finite, the share when its roof is known too (a roof that is
// not a positive number is unknown).
Throughput ThroughputOf(const PipelineWork& work, double seconds, std::optional<double> peak_gflops,
                        std::optional<double> bandwidth_gbps);

// An OK measurement's, at its median runtime and its host's roofs at its thread count;
// nothing for a failed one.
Throughput MeasurementThroughput(const Measurement& measurement, const PipelineWork& work);

// The farm's best of a pipeline in a status: PipelineProgress.flops and bytes over
// farm_best_seconds, against farm_best_peak_gflops and farm_best_bandwidth_gbps.
Throughput FarmBestThroughput(const PipelineProgress& pipeline);

}  // namespace schedfarm
