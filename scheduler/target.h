// The host a schedule space is sized for and its schedules are featurized on: the
// vector width (and with it the registers a register tile may take), the threads a
// schedule runs with, and what the features read of the host's speed (its fp32 peak and
// memory bandwidth at those threads, its caches). Taken from the fingerprint of the
// worker that measures (TargetOf), so that each kind of host gets its own space.
#pragma once

#include <cstdint>
#include <string>

#include "schedfarm.pb.h"

namespace schedfarm {

struct TargetParams {
  int vector_bytes = 32;  // 16 with SSE, 32 with AVX or AVX2, 64 with AVX-512
  int cores = 2;          // the threads a schedule runs with
  // 0 where unknown (a host that could not measure them, a target made by hand).
  double peak_gflops = 0;     // fp32 peak at `cores` threads
  double bandwidth_gbps = 0;  // memory bandwidth at `cores` threads
  int64_t l1d_bytes = 0;
  int64_t l2_bytes = 0;
  int64_t l3_bytes = 0;
  // 32 with 64-byte vectors (AVX-512), 16 otherwise (AVX2).
  int vector_registers() const { return vector_bytes >= 64 ? 32 : 16; }
};

// The vector bytes of Halide's target `halide_target` ("x86-64-linux-avx-avx2-..."), as
// Halide 14 sizes an x86 vector: 64 with the feature avx512, 32 with avx, else 16.
int VectorBytesOfHalideTarget(const std::string& halide_target);

// The target of a worker with this fingerprint running schedules on `threads` threads:
// the vector width of its Halide target, its caches, and its peak and bandwidth at the
// largest thread count it measured them at up to `threads` (0 when none), each rounded
// to a quarter octave so that hosts of one kind share one description. `threads` 0:
// the host's cores.
TargetParams TargetOf(const HostFingerprint& host, int threads);

// The name of a vector width as the farm names a kind of host by it: "avx512" (64
// bytes), "avx2" (32), "sse" (16), as HostFingerprint.peak_isa does.
std::string VectorIsaName(int vector_bytes);

}  // namespace schedfarm
