// The host's memory bandwidth: GB/s of a STREAM-like triad (a = b + s * c over three
// arrays of 64 MiB, far beyond the caches), one thread pinned to each of the given cpus,
// each streaming its own part, counted as STREAM counts it (12 bytes per element). What a
// memory-bound pipeline's GB/s is compared with (its share of the bandwidth roofline,
// docs/MEASUREMENT.md), beside the fp32 peak of timing/peak.h. No Halide, no Torch.
#pragma once

#include <vector>

#include "common/status.h"

namespace schedfarm {

// The best of `repeats` triads after one untimed run, in GB/s (1e9 bytes per second).
// Errors: no cpus, the arrays cannot be allocated, a cpu the thread cannot be pinned to.
StatusOr<double> MeasureBandwidth(const std::vector<int>& cpus, int repeats = 4);

}  // namespace schedfarm
