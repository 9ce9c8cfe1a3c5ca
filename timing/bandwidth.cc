#include "timing/bandwidth.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <memory>
#include <thread>

#include "common/cpus.h"
#include "common/elapsed.h"

namespace schedfarm {
namespace {

constexpr size_t kElements = size_t{64} << 20 >> 2;  // 64 MiB of floats per array
constexpr size_t kHugePage = size_t{2} << 20;

// An array of the triad, in transparent huge pages where the kernel gives them: the
// first touch of 192 MiB in 4 KiB pages took most of a second on a virtual machine whose
// page faults are expensive, at every worker start.
struct FreeArray {
  void operator()(float* p) const { std::free(p); }
};
std::unique_ptr<float[], FreeArray> TriadArray() {
  const size_t bytes = kElements * sizeof(float);
  float* p = static_cast<float*>(std::aligned_alloc(kHugePage, bytes));
  if (p != nullptr) madvise(p, bytes, MADV_HUGEPAGE);  // advice only: 4 KiB pages if refused
  return std::unique_ptr<float[], FreeArray>(p);
}

std::atomic<float> g_sink{0};  // keeps the triad's result alive

}  // namespace

StatusOr<double> MeasureBandwidth(const std::vector<int>& cpus, int repeats) {
  const std::string where = "memory bandwidth (cpus " + CpuList(cpus) + ")";
  if (cpus.empty()) return Status::Error("memory bandwidth: no cpu to run on");
  const auto a = TriadArray(), b = TriadArray(), c = TriadArray();
  if (a == nullptr || b == nullptr || c == nullptr) {
    return Status::Error(where + ": cannot allocate the triad's 192 MiB");
  }
  const size_t threads = cpus.size();
  const size_t chunk = (kElements + threads - 1) / threads;
  std::atomic<size_t> unpinned{0};
  // Each run starts the threads together, every thread on its own cpu and its own part
  // of the arrays (touched first by that thread, as a NUMA host places pages).
  auto run = [&](bool first_touch) {
    std::atomic<size_t> ready{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (size_t t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        if (!SetAllowedCpus({cpus[t]})) unpinned.fetch_add(1);
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) {
        }
        const size_t begin = std::min(kElements, chunk * t);
        const size_t end = std::min(kElements, begin + chunk);
        float* __restrict pa = a.get();
        const float* __restrict pb = b.get();
        const float* __restrict pc = c.get();
        if (first_touch) {
          for (size_t i = begin; i < end; ++i) {
            a[i] = 0;
            b[i] = 1.0f + static_cast<float>(i & 7);
            c[i] = 2.0f;
          }
          return;
        }
        const float s = 0.5f;
        for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + s * pc[i];
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    const auto start = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (std::thread& thread : pool) thread.join();
    return SecondsSince(start);
  };
  run(/*first_touch=*/true);
  if (unpinned.load() > 0) return Status::Error(where + ": cannot pin a thread to its cpu");
  double best = std::numeric_limits<double>::infinity();
  for (int rep = 0; rep <= std::max(1, repeats); ++rep) {
    const double seconds = run(/*first_touch=*/false);
    if (rep > 0) best = std::min(best, seconds);  // the first run warms up
  }
  g_sink.store(g_sink.load(std::memory_order_relaxed) + a[kElements / 2],
               std::memory_order_relaxed);
  if (!(best > 0)) return Status::Error(where + ": the triad took no measurable time");
  return 3.0 * sizeof(float) * static_cast<double>(kElements) / best / 1e9;
}

}  // namespace schedfarm
