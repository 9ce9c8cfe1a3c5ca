// The run phase of the measurement protocol (docs/MEASUREMENT.md) for anything that runs
// a pipeline: a Halide candidate compiled by the worker's sandbox (worker/measure.h) and
// libtorch's eager run of the libtorch baseline (worker/torch/). One warm-up run whose
// outputs must match the reference, a repeat count that makes a sample last
// min_sample_seconds, then the samples and their statistics. Free of Halide and Torch;
// also the reference files the sandbox caches and hands to the libtorch baseline.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/repeats.h"
#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// Minimum, median, mean, sample standard deviation (n - 1; 0 for one sample) and
// coefficient of variation (stddev / mean) of `samples`; all zero when empty.
SampleStats ComputeStats(const std::vector<double>& samples);

// A measurement that failed with `status` and `error` (settings as given, finished now).
Measurement FailedMeasurement(MeasurementStatus status, const std::string& error,
                              const MeasurementSettings& settings);

// Size of the host's last-level cache in bytes (what a cache flush writes twice over).
int64_t LastLevelCacheBytes();
// Evicts the caches by writing over a buffer twice the size of the last-level cache.
void FlushCaches();

// Called with the outputs of the warm-up run before they are compared with the
// reference (the sandbox's WRONG_OUTPUT fault perturbs them).
using OutputHook = std::function<void(std::vector<HostTensor>& outputs)>;

// What the run phase drives.
struct RunTarget {
  std::function<StatusOr<double>()> run_once;        // one run's wall time
  TimeRuns time_runs;                                // n back-to-back runs
  std::function<std::vector<HostTensor>()> outputs;  // of the last run, spec.outputs order
  // The class of the last failed call: RUNTIME_ERROR or OUT_OF_MEMORY.
  std::function<MeasurementStatus()> failure;
};

// The run phase: one warm-up run whose outputs must match `reference` (else
// WRONG_ANSWER with the comparison's message, naming `where` and the output, and no
// time); the repeat count of a sample chosen once so that a sample lasts
// min_sample_seconds; `samples` samples, each after a cache flush when flush_cache is
// set, then one more at a time while their CV exceeds target_cv, up to max_samples and
// while one more sample keeps the phase within half its run timeout. samples_seconds
// holds each sample's time per run. Failures take `target.failure()`; std::bad_alloc is
// OUT_OF_MEMORY. REQUIRES: settings with defaults filled in.
Measurement RunPhase(const RunTarget& target, const std::vector<HostTensor>& reference,
                     const std::vector<std::string>& output_names,
                     const MeasurementSettings& settings, const std::string& where,
                     const OutputHook& hook = nullptr);

// Reference outputs as a file: the 8-byte magic, a uint32 count of tensors, then per
// tensor an int32 dtype, a uint32 rank, rank int64 extents and the values as doubles;
// last, the 64-bit FNV-1a hash of everything before it (host byte order).
std::string EncodeReference(const std::vector<HostTensor>& outputs);
// Reads the values of a file written by EncodeReference for `graph`'s outputs; an
// error says why the file cannot be used.
StatusOr<std::vector<HostTensor>> DecodeReference(const std::string& bytes,
                                                  const PipelineGraph& graph);

}  // namespace schedfarm
