// How many back-to-back runs make a timed sample: the repeat count of the measurement
// protocol (docs/MEASUREMENT.md), shared by the run phase (timing/run_phase.h) and the
// Halide runner (pipeline/halide/runner.h), which sits below timing/.
#pragma once

#include <functional>

#include "common/status.h"

namespace schedfarm {

// The wall time of `repeats` back-to-back runs, in seconds.
using TimeRuns = std::function<StatusOr<double>(int repeats)>;

// The number of back-to-back runs that last at least `min_sample_seconds`: 1 when one
// run (which took `one_run_seconds`) already does, otherwise found by timing growing
// batches (Google Benchmark's rule).
StatusOr<int> CalibrateRepeats(double min_sample_seconds, double one_run_seconds,
                               const TimeRuns& time_runs);

}  // namespace schedfarm
