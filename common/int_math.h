// Integer division rounded down or up, as loop nests and tensor shapes need it.
#pragma once

#include <cstdint>

namespace schedfarm {

// a / b rounded toward minus infinity, b > 0.
inline constexpr int64_t FloorDiv(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

// a / b rounded toward plus infinity, b > 0.
inline constexpr int64_t CeilDiv(int64_t a, int64_t b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

}  // namespace schedfarm
