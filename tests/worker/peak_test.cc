// The host's fp32 peak (timing/peak.h) measured on this machine: within what a core can
// do per cycle in the ISA at a server core's frequencies, in every ISA the CPU runs, on
// one core and on every allowed core, with the wider ISAs ahead of SSE; the ISA a Halide
// target string uses; the errors, naming the ISA and the cpus; and the worker's
// fingerprint with its peaks at the thread counts a campaign may run
// (worker/fingerprint.h), or none at all when they cannot be measured, so that its
// results carry no share.
#include "timing/peak.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "common/cpus.h"
#include "storage/throughput.h"
#include "timing/bandwidth.h"
#include "worker/fingerprint.h"

namespace schedfarm {
namespace {

// What one core can do per cycle in an ISA's kernel: its lanes x 2 flops (a fused
// multiply-add, or SSE's multiply and add on ports of their own) x the ports that run it,
// 1 or 2 on every x86-64 core (Zen 4 runs AVX-512 on half-width units: 1), at 1.0 to 6.0
// GHz. A thread's rate is counted over its own CPU time, but it may share its core with
// an SMT sibling (a VM's two vCPUs can be one core's), which at most halves it. So a
// peak 2x too high or too low for the ISA fails, where any figure from 1 to 10,000
// GFLOP/s once passed.
constexpr double kMinGhz = 1.0, kMaxGhz = 6.0;

int Lanes(PeakIsa isa) {
  switch (isa) {
    case PeakIsa::kAvx512:
      return 16;
    case PeakIsa::kAvx2:
      return 8;
    case PeakIsa::kSse:
      return 4;
  }
  return 0;
}
double MinPerCore(PeakIsa isa) { return Lanes(isa) * 2 * 1 * kMinGhz / 2; }
double MaxPerCore(PeakIsa isa) { return Lanes(isa) * 2 * 2 * kMaxGhz; }

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(Fp32Peak, IsPlausibleOnOneCoreAndOnEveryCoreInEachIsaThisCpuRuns) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  std::map<PeakIsa, double> one_core;
  for (const PeakIsa isa : {PeakIsa::kAvx512, PeakIsa::kAvx2, PeakIsa::kSse}) {
    if (!CpuSupports(isa)) continue;
    for (const std::vector<int>& on : {std::vector<int>{cpus[0]}, cpus}) {
      StatusOr<PeakResult> peak = MeasurePeak(isa, on);
      ASSERT_TRUE(peak.ok()) << peak.status().message();
      EXPECT_EQ(peak->isa, isa);
      EXPECT_EQ(peak->threads, static_cast<int>(on.size()));
      const double per_core = peak->gflops / on.size();
      EXPECT_GE(per_core, MinPerCore(isa)) << PeakIsaName(isa) << " on " << CpuList(on);
      EXPECT_LE(per_core, MaxPerCore(isa)) << PeakIsaName(isa) << " on " << CpuList(on);
      ASSERT_EQ(peak->thread_seconds.size(), on.size());
      double rates = 0;
      for (const double s : peak->thread_seconds) rates += peak->flops_per_thread / s / 1e9;
      EXPECT_NEAR(rates, peak->gflops, 1e-9 * peak->gflops);
      if (on.size() == 1) one_core[isa] = peak->gflops;
      std::printf("fp32 peak %s on %zu threads: %.1f GFLOP/s\n", PeakIsaName(isa), on.size(),
                  peak->gflops);
    }
  }
  ASSERT_TRUE(one_core.count(PeakIsa::kSse)) << "every x86-64 CPU runs SSE";
  // SSE has 4 lanes and no fused multiply-add: a wider ISA does more on one core.
  for (const PeakIsa wide : {PeakIsa::kAvx512, PeakIsa::kAvx2}) {
    if (one_core.count(wide)) {
      EXPECT_GT(one_core[wide], one_core[PeakIsa::kSse]) << PeakIsaName(wide);
    }
  }
}

TEST(Fp32Peak, IsaOfHalideTargets) {
  EXPECT_EQ(PeakIsaOfHalideTarget(
                "x86-64-linux-avx-avx2-avx512-avx512_cannonlake-avx512_skylake-f16c-fma-sse41"),
            PeakIsa::kAvx512);
  EXPECT_EQ(PeakIsaOfHalideTarget("x86-64-linux-avx-avx2-f16c-fma-sse41"), PeakIsa::kAvx2);
  EXPECT_EQ(PeakIsaOfHalideTarget("x86-64-linux-avx-avx2-f16c-sse41"), PeakIsa::kSse)
      << "AVX2 without FMA: the SSE kernel";
  EXPECT_EQ(PeakIsaOfHalideTarget("x86-64-linux-sse41"), PeakIsa::kSse);
  EXPECT_EQ(PeakIsaOfHalideTarget("x86-64-linux"), PeakIsa::kSse);
  EXPECT_FALSE(PeakIsaOfHalideTarget("arm-64-linux-arm_dot_prod"));
  EXPECT_FALSE(PeakIsaOfHalideTarget("x86-32-linux-sse41"));
  EXPECT_FALSE(PeakIsaOfHalideTarget(""));
}

TEST(Fp32Peak, ErrorsNameTheIsaAndTheCpus) {
  StatusOr<PeakResult> none = MeasurePeak(PeakIsa::kSse, {});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "fp32 peak (sse): no cpu to run on");
  StatusOr<PeakResult> no_repeats = MeasurePeak(PeakIsa::kSse, {AllowedCpus()[0]}, {0, 0.01});
  ASSERT_FALSE(no_repeats.ok());
  EXPECT_TRUE(Contains(no_repeats.status().message(), "repeats must be at least 1"));
  // A cpu this process may not run on (the last the kernel's mask can name).
  const std::vector<int> allowed = AllowedCpus();
  const int outside = CPU_SETSIZE - 1;
  if (std::count(allowed.begin(), allowed.end(), outside)) GTEST_SKIP() << "cpu " << outside;
  StatusOr<PeakResult> unpinned = MeasurePeak(PeakIsa::kSse, {outside});
  ASSERT_FALSE(unpinned.ok());
  EXPECT_EQ(unpinned.status().message(), "fp32 peak (sse, cpus " + std::to_string(outside) +
                                             "): cannot pin a thread to cpu " +
                                             std::to_string(outside));
}

// The memory bandwidth (timing/bandwidth.h) beside the peak: a triad over 192 MiB, beyond
// every cache, streams at least 1 GB/s on any server (one DDR4 channel gives 20) and at
// most 100 GB/s per thread (a core's loads and stores to memory, with every prefetcher,
// stay well below that); the errors name the cpus.
TEST(MemoryBandwidth, IsPlausibleOnOneCpuAndOnEvery) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  for (const std::vector<int>& on : {std::vector<int>{cpus[0]}, cpus}) {
    StatusOr<double> gbps = MeasureBandwidth(on, /*repeats=*/2);
    ASSERT_TRUE(gbps.ok()) << gbps.status().ToString();
    EXPECT_GE(*gbps, 1.0) << CpuList(on);
    EXPECT_LE(*gbps, 100.0 * on.size()) << CpuList(on);
  }
  StatusOr<double> none = MeasureBandwidth({});
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), "memory bandwidth: no cpu to run on");
  const int outside = CPU_SETSIZE - 1;
  if (std::count(cpus.begin(), cpus.end(), outside)) GTEST_SKIP() << "cpu " << outside;
  StatusOr<double> unpinned = MeasureBandwidth({outside}, 1);
  ASSERT_FALSE(unpinned.ok());
  EXPECT_EQ(unpinned.status().message(), "memory bandwidth (cpus " + std::to_string(outside) +
                                             "): cannot pin a thread to its cpu");
}

// The thread counts a worker measures its peak at: every count up to 16 cores, then the
// powers of two and the cores.
TEST(HostPeak, ThreadCountsCoverEveryCountUpTo16CoresThenThePowersOfTwo) {
  EXPECT_EQ(PeakThreadCounts(1), (std::vector<int>{1}));
  EXPECT_EQ(PeakThreadCounts(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(PeakThreadCounts(6), (std::vector<int>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(PeakThreadCounts(16).size(), 16u);
  EXPECT_EQ(PeakThreadCounts(48), (std::vector<int>{1, 2, 4, 8, 16, 32, 48}));
  EXPECT_EQ(PeakThreadCounts(64), (std::vector<int>{1, 2, 4, 8, 16, 32, 64}));
}

// The worker's fingerprint: the peak at each of those counts, in the ISA of its Halide
// target, in well under a second or two here.
TEST(HostPeak, FingerprintHasThePeakAtEachThreadCount) {
  HostFingerprint host = DetectHostFingerprint("peak-test");
  const std::optional<PeakIsa> isa = PeakIsaOfHalideTarget(host.halide_target());
  ASSERT_TRUE(isa) << host.halide_target();
  EXPECT_TRUE(CpuSupports(*isa)) << "Halide's target for this host runs on it";
  const auto start = std::chrono::steady_clock::now();
  const Status measured = MeasureHostPeak(&host);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(measured.ok()) << measured.message();
  EXPECT_LT(seconds, 0.5 * PeakThreadCounts(host.cores()).size() + 2)
      << "the worker measures it at every start";
  EXPECT_EQ(host.peak_isa(), PeakIsaName(*isa));
  ASSERT_EQ(static_cast<size_t>(host.peak_gflops().size()), PeakThreadCounts(host.cores()).size());
  for (const int threads : PeakThreadCounts(host.cores())) {
    ASSERT_TRUE(host.peak_gflops().count(threads)) << threads;
    const double per_core = host.peak_gflops().at(threads) / threads;
    EXPECT_GE(per_core, MinPerCore(*isa)) << threads;
    EXPECT_LE(per_core, MaxPerCore(*isa)) << threads;
    std::printf("host peak on %d threads (%s, %s): %.1f GFLOP/s in %.2f s\n", threads,
                host.peak_isa().c_str(), host.cpu_model().c_str(), host.peak_gflops().at(threads),
                seconds);
  }
}

// And the memory bandwidth at the same counts: at least one thread's worth of a slow
// memory system (0.5 GB/s), in a second or so a count; more threads never measure much
// less than one (each streams its own part).
TEST(HostPeak, FingerprintHasTheBandwidthAtEachThreadCount) {
  HostFingerprint host = DetectHostFingerprint("bandwidth-test");
  const auto start = std::chrono::steady_clock::now();
  const Status measured = MeasureHostBandwidth(&host);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(measured.ok()) << measured.message();
  EXPECT_LT(seconds, 2.0 * PeakThreadCounts(host.cores()).size() + 2)
      << "the worker measures it at every start";
  ASSERT_EQ(static_cast<size_t>(host.bandwidth_gbps().size()),
            PeakThreadCounts(host.cores()).size());
  for (const int threads : PeakThreadCounts(host.cores())) {
    ASSERT_TRUE(host.bandwidth_gbps().count(threads)) << threads;
    EXPECT_GE(host.bandwidth_gbps().at(threads), 0.5) << threads;
    EXPECT_GE(host.bandwidth_gbps().at(threads), 0.5 * host.bandwidth_gbps().at(1)) << threads;
    std::printf("host memory bandwidth on %d threads (%s): %.1f GB/s in %.2f s\n", threads,
                host.cpu_model().c_str(), host.bandwidth_gbps().at(threads), seconds);
  }
  HostFingerprint crowded = host;
  crowded.set_cores(static_cast<int>(AllowedCpus().size()) + 1);
  const Status too_many = MeasureHostBandwidth(&crowded);
  ASSERT_FALSE(too_many.ok());
  EXPECT_TRUE(Contains(too_many.message(), "memory bandwidth: ")) << too_many.message();
  EXPECT_TRUE(crowded.bandwidth_gbps().empty()) << "a bandwidth it had is dropped";
}

// A host whose peak cannot be measured reports none (a peak it had is dropped), and a
// result of it has GFLOP/s but no share of a peak.
TEST(HostPeak, AHostWithoutAMeasurablePeakReportsNoneAndItsResultsNoShare) {
  HostFingerprint arm = DetectHostFingerprint("peak-test");
  arm.set_halide_target("arm-64-linux-arm_dot_prod");
  (*arm.mutable_peak_gflops())[1] = 80;
  arm.set_peak_isa("avx512");
  const Status status = MeasureHostPeak(&arm);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "fp32 peak: Halide target 'arm-64-linux-arm_dot_prod' is not x86-64, which the peak "
            "kernels are written for");
  EXPECT_TRUE(arm.peak_gflops().empty());
  EXPECT_EQ(arm.peak_isa(), "");

  HostFingerprint crowded = DetectHostFingerprint("peak-test");
  crowded.set_cores(static_cast<int>(AllowedCpus().size()) + 1);
  const Status too_many = MeasureHostPeak(&crowded);
  ASSERT_FALSE(too_many.ok());
  EXPECT_TRUE(Contains(too_many.message(), "cpus to pin threads to, for")) << too_many.message();
  EXPECT_TRUE(crowded.peak_gflops().empty());

  Measurement m;
  *m.mutable_host() = arm;
  m.set_status(OK);
  m.mutable_stats()->set_median_seconds(1e-3);
  const Throughput t = MeasurementThroughput(m, {1e8, 0});
  ASSERT_TRUE(t.gflops);
  EXPECT_DOUBLE_EQ(*t.gflops, 100);
  EXPECT_FALSE(t.peak_gflops);
  EXPECT_FALSE(t.peak_share);
}

}  // namespace
}  // namespace schedfarm
