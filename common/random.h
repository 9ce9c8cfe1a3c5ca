// Deterministic random numbers from integer arithmetic alone (never std::
// distributions or libm), so that a seed gives the same numbers with every compiler and
// standard library: SplitMix64 (Steele, Lea and Flood), its finalizer and its stream.
#pragma once

#include <cstdint>

namespace schedfarm {

inline constexpr uint64_t kSplitMixGamma = 0x9e3779b97f4a7c15ull;

// SplitMix64's output for state x: x advanced by the gamma, then finalized. A
// well-mixed function of x for seeds and counter-based values.
inline uint64_t SplitMix64(uint64_t x) {
  x += kSplitMixGamma;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A SplitMix64 stream from `seed`.
class SplitMixStream {
 public:
  explicit SplitMixStream(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    const uint64_t x = state_;
    state_ += kSplitMixGamma;
    return SplitMix64(x);
  }
  // Uniform in [0, 1), with 53 random bits.
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace schedfarm
