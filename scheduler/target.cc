#include "scheduler/target.h"

#include <cmath>
#include <sstream>

namespace schedfarm {
namespace {

// `value` rounded to the nearest quarter octave (a power of 2^(1/4)), so that hosts of
// one kind, whose measured peaks and bandwidths differ by the noise of a quarter
// second's measurement, describe themselves alike. 0 stays 0.
double QuarterOctave(double value) {
  if (!(value > 0)) return 0;
  return std::exp2(std::round(std::log2(value) * 4) / 4);
}

// The value at the largest thread count up to `threads` (0 when none is).
double AtThreads(const google::protobuf::Map<int32_t, double>& by_threads, int threads) {
  int best = 0;
  double value = 0;
  for (const auto& [count, measured] : by_threads) {
    if (count <= threads && count > best) {
      best = count;
      value = measured;
    }
  }
  return value;
}

}  // namespace

int VectorBytesOfHalideTarget(const std::string& halide_target) {
  bool avx = false;
  std::istringstream features(halide_target);
  for (std::string feature; std::getline(features, feature, '-');) {
    if (feature == "avx512") return 64;
    if (feature == "avx") avx = true;
  }
  return avx ? 32 : 16;
}

TargetParams TargetOf(const HostFingerprint& host, int threads) {
  TargetParams target;
  target.vector_bytes = VectorBytesOfHalideTarget(host.halide_target());
  target.cores = threads > 0 ? threads : (host.cores() > 0 ? host.cores() : target.cores);
  target.peak_gflops = QuarterOctave(AtThreads(host.peak_gflops(), target.cores));
  target.bandwidth_gbps = QuarterOctave(AtThreads(host.bandwidth_gbps(), target.cores));
  target.l1d_bytes = host.l1d_bytes();
  target.l2_bytes = host.l2_bytes();
  target.l3_bytes = host.l3_bytes();
  return target;
}

std::string VectorIsaName(int vector_bytes) {
  if (vector_bytes >= 64) return "avx512";
  if (vector_bytes >= 32) return "avx2";
  return "sse";
}

}  // namespace schedfarm
