// The host's fp32 peak: GFLOP/s of a microbenchmark of independent multiply-add chains
// in vector registers, one thread pinned to each of the given cpus, in the vector ISA
// Halide's target for the host uses (AVX-512, AVX2 with FMA, or SSE). What a measured
// GFLOP/s of a pipeline is compared with (its share of the peak, docs/MEASUREMENT.md).
// Free of Halide and Torch: the ISA comes from the target's name, and the kernels are
// written with intrinsics under GCC target attributes, so the rest of the binary needs
// no -m flags.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace schedfarm {

// The vector ISA of a peak kernel, widest first.
enum class PeakIsa {
  kAvx512,  // 16 lanes, vfmadd231ps on zmm
  kAvx2,    // 8 lanes, vfmadd231ps on ymm (AVX2 with FMA)
  kSse,     // 4 lanes, mulps then addps on xmm (no fused multiply-add)
};

// "avx512", "avx2", "sse".
const char* PeakIsaName(PeakIsa isa);

// The widest ISA that a Halide target string ("x86-64-linux-avx-avx2-avx512-fma-...")
// uses: AVX-512 with its avx512 feature, else AVX2 with avx2 and fma, else SSE on any
// x86-64 target; nullopt for another architecture (the target names none of these).
std::optional<PeakIsa> PeakIsaOfHalideTarget(const std::string& target);

// Whether this CPU can run the ISA's kernel (cpuid, as the compiler's runtime reads it).
bool CpuSupports(PeakIsa isa);

struct PeakOptions {
  int repeats = 5;                   // timed runs, the best is kept
  double seconds_per_repeat = 0.02;  // each run's length, calibrated on one thread
};

// One peak figure.
struct PeakResult {
  PeakIsa isa;
  int threads = 0;
  double gflops = 0;                  // the best of the repeats: the sum of the threads' rates
  std::vector<double> thread_seconds;  // that repeat's CPU time of each thread
  double flops_per_thread = 0;         // of one thread in one run
};

// Runs the kernel of `isa` on one thread pinned to each cpu of `cpus` (all at once,
// started together) after one untimed run, `repeats` times, and keeps the best. A
// thread's rate is its flops over its own CPU time, so a thread that waits for a cpu
// another process holds is not counted as slow while it waits. Errors: no cpus, an ISA this CPU
// lacks, a cpu the thread cannot be pinned to, a non-positive time.
StatusOr<PeakResult> MeasurePeak(PeakIsa isa, const std::vector<int>& cpus,
                                 const PeakOptions& options = {});

}  // namespace schedfarm
