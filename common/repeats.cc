#include "common/repeats.h"

#include <algorithm>
#include <cmath>

namespace schedfarm {

StatusOr<int> CalibrateRepeats(double min_sample_seconds, double one_run_seconds,
                               const TimeRuns& time_runs) {
  // Google Benchmark's rule: predict the count that reaches the minimum with a 20%
  // margin from the last batch, growing at least 2x and at most 10x per batch. A batch
  // slowed down by a preemption would make the count too small, so the count also
  // covers the minimum at the fastest rate seen in any batch.
  constexpr double kMaxRepeats = 1 << 30;
  int repeats = 1;
  double seconds = one_run_seconds;
  double fastest = std::max(one_run_seconds, 1e-9);  // per run
  while (seconds < min_sample_seconds && repeats < kMaxRepeats) {
    const double predicted = 1.2 * repeats * min_sample_seconds / std::max(seconds, 1e-9);
    const double grown = std::clamp(predicted, 2.0 * repeats, 10.0 * repeats);
    repeats = static_cast<int>(std::min(std::ceil(grown), kMaxRepeats));
    SCHEDFARM_ASSIGN_OR_RETURN(seconds, time_runs(repeats));
    fastest = std::min(fastest, std::max(seconds / repeats, 1e-9));
  }
  const double at_fastest = std::min(std::ceil(min_sample_seconds / fastest), kMaxRepeats);
  return std::max(repeats, static_cast<int>(at_fastest));
}

}  // namespace schedfarm
