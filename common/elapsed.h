// Time elapsed on the monotonic clock, for durations that are measured and logged.
#pragma once

#include <chrono>

namespace schedfarm {

// Seconds since `start` on the steady clock.
inline double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace schedfarm
