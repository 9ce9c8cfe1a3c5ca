// The wall clock as the rules that depend on time read it (liveness, retry back-off,
// wall-time budgets): passed in, so that tests run those rules on simulated time.
#pragma once

#include <cstdint>

namespace schedfarm {

class Clock {
 public:
  virtual ~Clock() = default;
  // Milliseconds since the Unix epoch.
  virtual int64_t NowMs() const = 0;
};

// The machine's clock (UnixMillis, common/log.h).
const Clock& SystemClock();

}  // namespace schedfarm
