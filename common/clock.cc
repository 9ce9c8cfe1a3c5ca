#include "common/clock.h"

#include "common/log.h"

namespace schedfarm {

namespace {

class WallClock final : public Clock {
 public:
  int64_t NowMs() const override { return UnixMillis(); }
};

}  // namespace

const Clock& SystemClock() {
  static const WallClock clock;
  return clock;
}

}  // namespace schedfarm
