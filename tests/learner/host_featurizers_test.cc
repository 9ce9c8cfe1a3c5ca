// Features taken on the host that measured: a measurement is featurized with its own
// host's vector width, caches, peak and bandwidth at the threads it ran with, so the same
// schedule measured at 1, 2 and 8 threads, or on an AVX2 and an AVX-512 host, gets the
// features of each; and hosts of one kind whose peaks differ by noise share a space.
#include "learner/host_featurizers.h"

#include <algorithm>
#include <string>

#include "gtest/gtest.h"
#include "pipeline/builder.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

PipelineGraph MustBuild(PipelineBuilder& builder) {
  StatusOr<PipelineSpec> spec = builder.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec.value());
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return std::move(graph).value();
}

// x [4, 64] -> exp (output).
PipelineGraph Exp(std::string* stage) {
  PipelineBuilder b("exp");
  *stage = b.Exp(b.Input("x", {4, 64}));
  b.Output(*stage);
  return MustBuild(b);
}

// An 8-core host: AVX-512 or AVX2, peaks and bandwidths measured at 1, 2 and 8 threads.
HostFingerprint Host(bool avx512) {
  HostFingerprint host;
  host.set_cpu_model("Test CPU");
  host.set_cores(8);
  host.set_halide_target(avx512 ? "x86-64-linux-avx-avx2-avx512-f16c-fma-sse41"
                                : "x86-64-linux-avx-avx2-f16c-fma-sse41");
  host.set_l1d_bytes(48 << 10);
  host.set_l2_bytes(2 << 20);
  host.set_l3_bytes(32 << 20);
  for (int threads : {1, 2, 8}) {
    (*host.mutable_peak_gflops())[threads] = 128.0 * threads;
    (*host.mutable_bandwidth_gbps())[threads] = 16.0 * std::min(threads, 4);
  }
  return host;
}

// exp's outer loop (d0, extent 4) parallel: 4 tasks.
Measurement Measured(const ScheduleSpace& space, const std::string& stage,
                     const HostFingerprint& host, int threads) {
  Measurement m;
  ScheduleSpec* spec = m.mutable_candidate()->mutable_schedule();
  *spec = space.Empty();
  StageSchedule* s = spec->add_stages();
  s->set_stage(stage);
  s->set_compute(ROOT);
  *s->mutable_pure()->add_parallel() = MakeLoopRef(stage, "d0", 0, false);
  spec->set_partial(false);
  m.mutable_candidate()->set_pipeline_id(space.pipeline_id());
  m.mutable_candidate()->set_schedule_hash("h");
  *m.mutable_host() = host;
  m.mutable_settings()->set_threads(threads);
  m.mutable_stats()->set_median_seconds(1e-3);
  return m;
}

double Column(const Sample& sample, bool invariant, const std::string& name) {
  const FeatureSchema& schema = CurrentFeatureSchema();
  const std::vector<std::string>& names =
      invariant ? schema.invariant_names : schema.dependent_names;
  const auto it = std::find(names.begin(), names.end(), name);
  EXPECT_NE(it, names.end()) << name;
  const size_t column = it - names.begin();
  return (invariant ? sample.features.invariant : sample.features.dependent)[column];
}

TEST(HostFeaturizers, AMeasurementIsFeaturizedAtTheThreadsItRanWith) {
  std::string stage;
  const PipelineGraph graph = Exp(&stage);
  const ScheduleSpace space(graph);
  HostFeaturizers featurizers;
  for (int threads : {1, 2, 8}) {
    StatusOr<Sample> sample =
        featurizers.SampleOf(graph, Measured(space, stage, Host(true), threads));
    ASSERT_TRUE(sample.ok()) << sample.status().ToString();
    EXPECT_EQ(Column(*sample, true, "host_threads"), threads);
    EXPECT_EQ(Column(*sample, true, "host_peak_gflops"), 128.0 * threads);
    EXPECT_EQ(Column(*sample, true, "host_bandwidth_gbps"), 16.0 * std::min(threads, 4));
    EXPECT_EQ(Column(*sample, true, "host_l2_bytes"), 2 << 20);
    // 4 parallel tasks: every thread busy at 1 and 2 threads, half of them at 8.
    EXPECT_EQ(Column(*sample, false, "parallel_tasks"), 4);
    EXPECT_EQ(Column(*sample, false, "core_utilization"), threads == 8 ? 0.5 : 1)
        << threads << " threads";
    EXPECT_EQ(Column(*sample, false, "thread_wakeups"), std::min(threads, 4));
    // The roofline time of exp's flops at the host's peak at these threads.
    EXPECT_NEAR(Column(*sample, true, "host_compute_seconds") * 128.0e9 * threads,
                graph.cost(0).flops, 1e-6 * graph.cost(0).flops);
  }
}

TEST(HostFeaturizers, TheVectorWidthAndRegistersAreTheMeasuringHosts) {
  std::string stage;
  const PipelineGraph graph = Exp(&stage);
  const ScheduleSpace space(graph);
  HostFeaturizers featurizers;
  StatusOr<Sample> avx2 = featurizers.SampleOf(graph, Measured(space, stage, Host(false), 2));
  StatusOr<Sample> avx512 = featurizers.SampleOf(graph, Measured(space, stage, Host(true), 2));
  ASSERT_TRUE(avx2.ok() && avx512.ok());
  EXPECT_EQ(Column(*avx2, true, "host_vector_bytes"), 32);
  EXPECT_EQ(Column(*avx2, true, "host_vector_registers"), 16);
  EXPECT_EQ(Column(*avx512, true, "host_vector_bytes"), 64);
  EXPECT_EQ(Column(*avx512, true, "host_vector_registers"), 32);
}

TEST(HostFeaturizers, HostsOfOneKindShareADescriptionDespiteTheirPeaksNoise) {
  HostFingerprint a = Host(true), b = Host(true);
  (*b.mutable_peak_gflops())[2] = 256.0 * 1.04;  // 4% above a's: noise
  (*b.mutable_bandwidth_gbps())[2] = 32.0 * 0.97;
  const TargetParams ta = TargetOf(a, 2), tb = TargetOf(b, 2);
  EXPECT_EQ(ta.peak_gflops, tb.peak_gflops);
  EXPECT_EQ(ta.bandwidth_gbps, tb.bandwidth_gbps);
  (*b.mutable_peak_gflops())[2] = 256.0 * 1.5;  // another kind of host
  EXPECT_NE(TargetOf(b, 2).peak_gflops, ta.peak_gflops);
  // A thread count the host did not measure takes the largest one below it.
  EXPECT_EQ(TargetOf(a, 4).peak_gflops, 256.0);
  EXPECT_EQ(TargetOf(a, 4).cores, 4);
  EXPECT_EQ(TargetOf(a, 0).cores, 8) << "0 threads: the host's cores";
  EXPECT_EQ(VectorBytesOfHalideTarget("x86-64-linux-sse41"), 16);
}

}  // namespace
}  // namespace schedfarm
