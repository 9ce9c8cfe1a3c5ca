#include "timing/peak.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <sstream>
#include <thread>

#include "common/cpus.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace schedfarm {
namespace {

// Independent chains per thread: enough to cover the multiply-add latency (4 cycles)
// times the issue width (2 per cycle) of the widest cores, within the register file so
// that the loop body is multiply-adds only (no spills).
constexpr int kAvx512Chains = 16;  // + 2 operands: 18 of the 32 zmm registers
constexpr int kAvx2Chains = 12;    // + 2 operands: 14 of the 16 ymm registers
constexpr int kSseChains = 12;     // + 2 operands: 14 of the 16 xmm registers

// Flops of one loop iteration: every chain does one multiply and one add per lane.
double FlopsPerIteration(PeakIsa isa) {
  switch (isa) {
    case PeakIsa::kAvx512:
      return kAvx512Chains * 16 * 2.0;
    case PeakIsa::kAvx2:
      return kAvx2Chains * 8 * 2.0;
    case PeakIsa::kSse:
      return kSseChains * 4 * 2.0;
  }
  return 0;
}

// The operands come from memory the compiler cannot see through, so nothing is folded.
volatile float g_scale = 0.9999f;  // acc = acc * scale + step converges to 1: no
volatile float g_step = 1e-4f;     // overflow, no denormals
volatile float g_sink = 0;         // the chains' sum, so the loop is not dead code

#if defined(__x86_64__)
// The kernels. `objdump -d --no-show-raw-insn build/timing/libschedfarm_timing.a` shows
// each inner loop as its chains' instructions, a counter increment and a branch, with
// no load, store or spill:
//   Avx512Chains: 16 x `vfmadd132ps %zmmA,%zmmB,%zmmN` (zmm, fused multiply-add),
//   Avx2Chains:   12 x `vfmadd132ps %ymmA,%ymmB,%ymmN` (ymm, fused multiply-add),
//   SseChains:    12 x `mulps` + 12 x `addps` on xmm.
// (GCC 12, -O3; docs/MEASUREMENT.md has the loop as disassembled.)
__attribute__((target("avx512f"), noinline)) float Avx512Chains(int64_t iterations) {
  const __m512 scale = _mm512_set1_ps(g_scale), step = _mm512_set1_ps(g_step);
  __m512 acc[kAvx512Chains];
  for (int j = 0; j < kAvx512Chains; ++j) acc[j] = _mm512_set1_ps(0.01f * j);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < kAvx512Chains; ++j) acc[j] = _mm512_fmadd_ps(acc[j], scale, step);
  }
  for (int j = 1; j < kAvx512Chains; ++j) acc[0] = _mm512_add_ps(acc[0], acc[j]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, acc[0]);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

__attribute__((target("avx2,fma"), noinline)) float Avx2Chains(int64_t iterations) {
  const __m256 scale = _mm256_set1_ps(g_scale), step = _mm256_set1_ps(g_step);
  __m256 acc[kAvx2Chains];
  for (int j = 0; j < kAvx2Chains; ++j) acc[j] = _mm256_set1_ps(0.01f * j);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kAvx2Chains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], scale, step);
  }
  for (int j = 1; j < kAvx2Chains; ++j) acc[0] = _mm256_add_ps(acc[0], acc[j]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, acc[0]);
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

__attribute__((noinline)) float SseChains(int64_t iterations) {
  const __m128 scale = _mm_set1_ps(g_scale), step = _mm_set1_ps(g_step);
  __m128 acc[kSseChains];
  for (int j = 0; j < kSseChains; ++j) acc[j] = _mm_set1_ps(0.01f * j);
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < kSseChains; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], scale), step);
  }
  for (int j = 1; j < kSseChains; ++j) acc[0] = _mm_add_ps(acc[0], acc[j]);
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, acc[0]);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

float RunChains(PeakIsa isa, int64_t iterations) {
#if defined(__x86_64__)
  switch (isa) {
    case PeakIsa::kAvx512:
      return Avx512Chains(iterations);
    case PeakIsa::kAvx2:
      return Avx2Chains(iterations);
    case PeakIsa::kSse:
      return SseChains(iterations);
  }
#endif
  return 0;
}

// Seconds of CPU time the calling thread has run.
double ThreadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// One run: a thread pinned to each cpu, released together once all are pinned, each
// doing `iterations`; each thread's CPU time for its iterations (the time it ran, not
// the time it waited for a busy cpu).
StatusOr<std::vector<double>> TimedRun(PeakIsa isa, const std::vector<int>& cpus,
                                       int64_t iterations) {
  const size_t n = cpus.size();
  std::atomic<size_t> ready{0};
  std::atomic<bool> go{false};
  std::vector<double> seconds(n, 0);
  std::vector<char> pinned(n, 0);
  std::vector<float> sums(n, 0);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (size_t t = 0; t < n; ++t) {
    threads.emplace_back([&, t] {
      pinned[t] = SetAllowedCpus({cpus[t]});
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      if (!pinned[t]) return;
      const double start = ThreadCpuSeconds();
      sums[t] = RunChains(isa, iterations);
      seconds[t] = ThreadCpuSeconds() - start;
    });
  }
  while (ready.load() < n) std::this_thread::yield();
  go.store(true, std::memory_order_release);
  for (std::thread& thread : threads) thread.join();
  float sum = 0;
  for (size_t t = 0; t < n; ++t) {
    if (!pinned[t]) {
      return Status::Error("cannot pin a thread to cpu " + std::to_string(cpus[t]));
    }
    if (!(seconds[t] > 0) || !std::isfinite(seconds[t])) {
      return Status::Error("a run of " + std::to_string(iterations) + " iterations on cpu " +
                           std::to_string(cpus[t]) + " took no measurable time");
    }
    sum += sums[t];
  }
  g_sink = sum;
  return seconds;
}

}  // namespace

const char* PeakIsaName(PeakIsa isa) {
  switch (isa) {
    case PeakIsa::kAvx512:
      return "avx512";
    case PeakIsa::kAvx2:
      return "avx2";
    case PeakIsa::kSse:
      return "sse";
  }
  return "?";
}

std::optional<PeakIsa> PeakIsaOfHalideTarget(const std::string& target) {
  std::vector<std::string> parts;
  std::istringstream in(target);
  for (std::string part; std::getline(in, part, '-');) parts.push_back(part);
  if (parts.size() < 2 || parts[0] != "x86" || parts[1] != "64") return std::nullopt;
  const auto has = [&](const std::string& feature) {
    return std::find(parts.begin(), parts.end(), feature) != parts.end();
  };
  if (has("avx512")) return PeakIsa::kAvx512;
  if (has("avx2") && has("fma")) return PeakIsa::kAvx2;
  return PeakIsa::kSse;
}

bool CpuSupports(PeakIsa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  switch (isa) {
    case PeakIsa::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case PeakIsa::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case PeakIsa::kSse:
      return __builtin_cpu_supports("sse2");
  }
#endif
  return false;
}

StatusOr<PeakResult> MeasurePeak(PeakIsa isa, const std::vector<int>& cpus,
                                 const PeakOptions& options) {
  const std::string where = std::string("fp32 peak (") + PeakIsaName(isa) +
                            (cpus.empty() ? "" : ", cpus " + CpuList(cpus)) + ")";
  if (cpus.empty()) return Status::Error(where + ": no cpu to run on");
  if (!CpuSupports(isa)) {
    return Status::Error(where + ": this CPU cannot run " + PeakIsaName(isa) + " code");
  }
  if (options.repeats < 1 || !(options.seconds_per_repeat > 0)) {
    return Status::Error(where + ": repeats must be at least 1 and seconds_per_repeat positive");
  }
  // Iterations for one run of seconds_per_repeat, from growing runs on the first cpu
  // until one lasts a tenth of it.
  int64_t iterations = 1 << 10;
  for (;;) {
    StatusOr<std::vector<double>> seconds = TimedRun(isa, {cpus[0]}, iterations);
    if (!seconds.ok()) return seconds.status().WithContext(where);
    const double run = seconds->front();
    if (run >= options.seconds_per_repeat / 10 || iterations > (int64_t{1} << 40)) {
      iterations = std::max<int64_t>(
          1, static_cast<int64_t>(iterations * options.seconds_per_repeat / run));
      break;
    }
    iterations *= 4;
  }
  PeakResult best;
  best.isa = isa;
  best.threads = static_cast<int>(cpus.size());
  best.flops_per_thread = FlopsPerIteration(isa) * static_cast<double>(iterations);
  // One untimed run first: the cores reach the clock they hold under this load.
  for (int run = 0; run <= options.repeats; ++run) {
    StatusOr<std::vector<double>> seconds = TimedRun(isa, cpus, iterations);
    if (!seconds.ok()) return seconds.status().WithContext(where);
    if (run == 0) continue;
    double gflops = 0;
    for (const double s : *seconds) gflops += best.flops_per_thread / s / 1e9;
    if (gflops > best.gflops) {
      best.gflops = gflops;
      best.thread_seconds = *seconds;
    }
  }
  return best;
}

}  // namespace schedfarm
