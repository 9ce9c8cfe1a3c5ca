// The measurement protocol in process: statistics, the compiled pipeline of the
// runner realized repeatedly, the reference cache (memory and files shared between
// instances), and measurements of real candidates: samples, repeats, extension,
// cache flush, and every in-process failure class with its message.
#include "worker/measure.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/halide/lowering.h"
#include "pipeline/spec.h"
#include "protocol/measurement_settings.h"
#include "scheduler/halide/apply.h"
#include "tests/worker/worker_test_pipelines.h"

namespace schedfarm {
namespace {

using worker_testing::HugeIntermediate;
using worker_testing::MustBuild;
using worker_testing::ParseSchedule;
using worker_testing::TempDir;
using worker_testing::TinyMatMul;

MeasurementSettings QuickSettings() {
  MeasurementSettings s;
  s.set_samples(4);
  s.set_max_samples(6);
  s.set_min_sample_seconds(0.002);
  s.set_target_cv(0.5);
  return s;
}

TEST(ComputeStats, MinMedianMeanSampleStddevAndCv) {
  const SampleStats s = ComputeStats({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.min_seconds(), 1);
  EXPECT_DOUBLE_EQ(s.median_seconds(), 2.5);
  EXPECT_DOUBLE_EQ(s.mean_seconds(), 2.5);
  EXPECT_DOUBLE_EQ(s.stddev_seconds(), std::sqrt(5.0 / 3.0));  // n - 1
  EXPECT_DOUBLE_EQ(s.cv(), std::sqrt(5.0 / 3.0) / 2.5);
  const SampleStats odd = ComputeStats({5, 1, 3});
  EXPECT_DOUBLE_EQ(odd.median_seconds(), 3);
  const SampleStats one = ComputeStats({0.5});
  EXPECT_DOUBLE_EQ(one.median_seconds(), 0.5);
  EXPECT_DOUBLE_EQ(one.stddev_seconds(), 0);
  EXPECT_DOUBLE_EQ(one.cv(), 0);
  EXPECT_DOUBLE_EQ(ComputeStats({}).mean_seconds(), 0);
}

TEST(CompiledPipeline, CompilesOnceRealizesOftenAndCalibrates) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  ApplyReferenceSchedule(graph, *lowered);
  StatusOr<CompiledPipeline> compiled = CompiledPipeline::Compile(graph, *lowered, 1);
  ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
  EXPECT_GT(compiled->compile_seconds(), 0);

  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> reference = RunReference(graph, once);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  for (int i = 0; i < 3; ++i) {
    StatusOr<double> seconds = compiled->Realize();
    ASSERT_TRUE(seconds.ok()) << seconds.status().ToString();
    EXPECT_GT(*seconds, 0);
    ASSERT_EQ(compiled->Outputs().size(), 1u);
    EXPECT_EQ(TensorChecksum(compiled->Outputs()[0]), TensorChecksum(reference->outputs[0]));
  }
  // A realization of this pipeline takes microseconds: 5 ms needs many of them, and
  // a batch of that many lasts about that long (a fraction of it on a busy machine).
  StatusOr<int> repeats = compiled->CalibrateRepeats(0.005, 1e-6);
  ASSERT_TRUE(repeats.ok()) << repeats.status().ToString();
  EXPECT_GT(*repeats, 10);
  StatusOr<double> batch = compiled->TimeRealizations(*repeats);
  ASSERT_TRUE(batch.ok());
  EXPECT_GT(*batch, 0.005 / 4);
  StatusOr<int> one = compiled->CalibrateRepeats(0.005, 0.01);  // one run is long enough
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, 1);

  HalideErrorKind kind = HalideErrorKind::kCompile;
  EXPECT_FALSE(compiled->TimeRealizations(0, &kind).ok());
  EXPECT_EQ(kind, HalideErrorKind::kInvalidArgument);
  HostTensor wrong{FLOAT32, {3, 3}, std::vector<double>(9)};
  StatusOr<CompiledPipeline> bad = CompiledPipeline::Compile(graph, *lowered, 1, {wrong}, &kind);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(kind, HalideErrorKind::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("input 'x'"), std::string::npos) << bad.status().message();
}

TEST(ReferenceCache, ComputesOnceAndSharesFilesBetweenInstances) {
  const std::string parent = TempDir("reference_cache");
  const std::string dir = parent + "/nested";  // created by the first write
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache first(dir);
  StatusOr<std::shared_ptr<const ReferenceOutputs>> a = first.Get(graph);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  StatusOr<std::shared_ptr<const ReferenceOutputs>> again = first.Get(graph);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(a->get(), again->get());  // from memory
  EXPECT_EQ(first.computed(), 1);

  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> reference = RunReference(graph, once);
  ASSERT_TRUE(reference.ok());
  ASSERT_EQ((*a)->outputs.size(), 1u);
  EXPECT_EQ((*a)->outputs[0].data, reference->outputs[0].data);

  // Another instance (another process in the worker) reads the file.
  ReferenceCache second(dir);
  StatusOr<std::shared_ptr<const ReferenceOutputs>> b = second.Get(graph);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(second.loaded(), 1);
  EXPECT_EQ(second.computed(), 0);
  EXPECT_EQ((*b)->outputs[0].data, (*a)->outputs[0].data);
  EXPECT_EQ((*b)->outputs[0].shape, (*a)->outputs[0].shape);

  // Only the final file is left, named by the pipeline id.
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path().filename().string());
  }
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0], (*a)->pipeline_id + ".ref");

  // A truncated file is not trusted: the outputs are computed and the file rewritten.
  const std::string path = dir + "/" + files[0];
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 9);
  ReferenceCache third(dir);
  StatusOr<std::shared_ptr<const ReferenceOutputs>> c = third.Get(graph);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(third.computed(), 1);
  EXPECT_EQ(third.loaded(), 0);
  EXPECT_EQ((*c)->outputs[0].data, (*a)->outputs[0].data);
  EXPECT_EQ(std::filesystem::file_size(path), size);
  // So is a file whose values were changed (the checksum catches it).
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put('\x7f');
  }
  ReferenceCache fourth(dir);
  ASSERT_TRUE(fourth.Get(graph).ok());
  EXPECT_EQ(fourth.computed(), 1);
  std::filesystem::remove_all(parent);
}

TEST(ReferenceCache, KeepsTheMostRecentPipelinesInMemory) {
  const PipelineGraph tiny = MustBuild(TinyMatMul());
  const PipelineGraph other = MustBuild(HugeIntermediate(8, 8));
  ReferenceCache cache("", /*max_in_memory=*/1);
  ASSERT_TRUE(cache.Get(tiny).ok());
  ASSERT_TRUE(cache.Get(tiny).ok());
  EXPECT_EQ(cache.computed(), 1);
  ASSERT_TRUE(cache.Get(other).ok());
  ASSERT_TRUE(cache.Get(tiny).ok());  // evicted by `other`
  EXPECT_EQ(cache.computed(), 3);
}

// A pipeline whose later outputs are materialized only to be timed (an assembled
// network's task boundaries) is checked on its first ones, against the reference
// outputs of the pipeline cut to them, which it shares with that pipeline.
TEST(ReferenceCache, AnAssembledNetworkSharesItsNetworksReference) {
  const PipelineGraph network = MustBuild(TinyMatMul());
  PipelineSpec spec = network.spec();
  spec.set_name("tiny_matmul.assembled");
  spec.add_outputs(spec.stages(0).name());  // the matmul, materialized
  spec.set_checked_outputs(1);
  const PipelineGraph assembled = MustBuild(spec);
  EXPECT_NE(PipelineId(assembled), PipelineId(network));

  ReferenceCache cache;
  StatusOr<std::shared_ptr<const ReferenceOutputs>> first = cache.Get(network);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  StatusOr<std::shared_ptr<const ReferenceOutputs>> shared = cache.Get(assembled);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_EQ(cache.computed(), 1);
  EXPECT_EQ((*shared)->pipeline_id, PipelineId(network));
  ASSERT_EQ((*shared)->outputs.size(), 1u);

  const Measurement m = MeasureInProcess(assembled, ScheduleSpec(), QuickSettings(), cache);
  EXPECT_EQ(m.status(), OK) << m.error();
  EXPECT_EQ(cache.computed(), 1);
}

TEST(MeasureInProcess, MeasuresAScheduledCandidate) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache cache;
  const Measurement m = MeasureInProcess(graph, ParseSchedule(worker_testing::kTinyMatMulSchedule),
                                         QuickSettings(), cache);
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_TRUE(m.error().empty());
  EXPECT_GT(m.compile_seconds(), 0);
  EXPECT_EQ(m.settings().samples(), 4);
  EXPECT_EQ(m.settings().threads(), 1);  // the default, filled in
  EXPECT_GE(m.samples_seconds_size(), 4);
  EXPECT_LE(m.samples_seconds_size(), 6);
  // A realization takes microseconds: each sample repeats it to last 2 ms (a
  // fraction of it on a busy machine).
  EXPECT_GT(m.repeats_per_sample(), 1);
  std::vector<double> samples(m.samples_seconds().begin(), m.samples_seconds().end());
  for (double s : samples) {
    EXPECT_GT(s, 0);
    EXPECT_GT(s * m.repeats_per_sample(), 0.002 / 4);
  }
  const SampleStats stats = ComputeStats(samples);
  EXPECT_DOUBLE_EQ(m.stats().median_seconds(), stats.median_seconds());
  EXPECT_DOUBLE_EQ(m.stats().cv(), stats.cv());
  StatusOr<std::shared_ptr<const ReferenceOutputs>> reference = cache.Get(graph);
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(m.output_checksum(), TensorChecksum((*reference)->outputs[0]));
  EXPECT_GT(m.finished_unix_ms(), 0);
}

TEST(MeasureInProcess, ExtendsSamplingWhileTheSpreadIsOverTheTarget) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache cache;
  MeasurementSettings settings = QuickSettings();
  settings.set_samples(3);
  settings.set_max_samples(7);
  settings.set_min_sample_seconds(0.0005);
  settings.set_target_cv(1e-12);  // no real spread is this small: sample up to the cap
  Measurement m = MeasureInProcess(graph, ScheduleSpec(), settings, cache);
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 7);
  settings.set_target_cv(1.0);  // a steady run stops at K samples
  settings.set_flush_cache(true);
  m = MeasureInProcess(graph, ScheduleSpec(), settings, cache);
  ASSERT_EQ(m.status(), OK) << m.error();
  ASSERT_GE(m.samples_seconds_size(), 3);
  // A preempted sample can push the CV over even this target; then every sample
  // beyond K was taken because the ones before it were over the target.
  for (int n = 3; n < m.samples_seconds_size(); ++n) {
    const std::vector<double> first(m.samples_seconds().begin(),
                                    m.samples_seconds().begin() + n);
    EXPECT_GT(ComputeStats(first).cv(), 1.0) << "sample " << n + 1 << " was not needed";
  }
  EXPECT_TRUE(m.settings().flush_cache());
  EXPECT_GE(LastLevelCacheBytes(), 256 << 10);
}

TEST(MeasureInProcess, StopsExtendingAtHalfTheRunTimeout) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache cache;
  MeasurementSettings settings = QuickSettings();
  settings.set_samples(3);
  settings.set_max_samples(1000);
  settings.set_min_sample_seconds(0.01);
  settings.set_target_cv(1e-12);     // always over the target: extend as far as allowed
  settings.set_run_timeout_ms(400);  // extension budget: 200 ms of the run phase
  const Measurement m = MeasureInProcess(graph, ScheduleSpec(), settings, cache);
  ASSERT_EQ(m.status(), OK) << m.error();
  // Each sample lasts at least 10 ms, so at most 20 fit in the budget.
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_LE(m.samples_seconds_size(), 21);
}

TEST(MeasureInProcess, ThreadsSizeHalidesPool) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache cache;
  MeasurementSettings settings = QuickSettings();
  settings.set_threads(2);
  const Measurement m = MeasureInProcess(graph, ParseSchedule(R"pb(
                                           stages {
                                             stage: "relu"
                                             compute: ROOT
                                             pure { parallel { stage: "relu" dim: "d0" } }
                                           }
                                         )pb"),
                                         settings, cache);
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_EQ(m.settings().threads(), 2);
}

TEST(MeasureInProcess, ScheduleThatDoesNotFitIsACompileError) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache cache;
  const Measurement m = MeasureInProcess(
      graph, ParseSchedule(R"pb(stages { stage: "no_such_stage" compute: ROOT })pb"),
      QuickSettings(), cache);
  EXPECT_EQ(m.status(), COMPILE_ERROR);
  EXPECT_NE(m.error().find("no_such_stage"), std::string::npos) << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
}

TEST(MeasureInProcess, FailingRealizationIsARuntimeError) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache cache;
  const Measurement m = MeasureInProcess(
      graph, ParseSchedule(worker_testing::kTinyMatMulRoundUpSchedule), QuickSettings(), cache);
  EXPECT_EQ(m.status(), RUNTIME_ERROR) << m.error();
  EXPECT_NE(m.error().find("pipeline 'tiny_matmul'"), std::string::npos) << m.error();
  EXPECT_NE(m.error().find("Halide runtime error"), std::string::npos) << m.error();
  EXPECT_GT(m.compile_seconds(), 0);
  EXPECT_EQ(m.samples_seconds_size(), 0);
}

TEST(CompiledCandidate, MismatchIsAWrongAnswerWithoutATime) {
  const PipelineGraph graph = MustBuild(TinyMatMul());
  ReferenceCache cache;
  StatusOr<std::shared_ptr<const ReferenceOutputs>> reference = cache.Get(graph);
  ASSERT_TRUE(reference.ok());
  StatusOr<CompiledCandidate> candidate = CompiledCandidate::Compile(
      graph, ParseSchedule(worker_testing::kTinyMatMulSchedule), QuickSettings());
  ASSERT_TRUE(candidate.ok()) << candidate.status().ToString();
  const Measurement m = candidate->Run(
      **reference, [](std::vector<HostTensor>& outputs) { outputs[0].data[17] += 0.5; });
  EXPECT_EQ(m.status(), WRONG_ANSWER);
  EXPECT_NE(m.error().find("output 'relu'"), std::string::npos) << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
  EXPECT_EQ(m.stats().median_seconds(), 0);
  // The same candidate without the perturbation matches.
  EXPECT_EQ(candidate->Run(**reference).status(), OK);
}

// The limit of the address space of this process, lowered for the scope of one test.
class AddressSpaceLimit {
 public:
  explicit AddressSpaceLimit(rlim_t bytes) {
    getrlimit(RLIMIT_AS, &saved_);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ok_ = setrlimit(RLIMIT_AS, &lowered) == 0;
  }
  ~AddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }
  bool ok() const { return ok_; }

 private:
  rlimit saved_;
  bool ok_ = false;
};

// The address space this process uses now, from /proc/self/status (VmSize, kB).
int64_t AddressSpaceBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmSize:", 0) == 0) return std::stoll(line.substr(7)) << 10;
  }
  return 0;
}

TEST(MeasureInProcess, IntermediateBeyondTheMemoryLimitIsOutOfMemory) {
  // "add" at root needs 8192 x 16384 x 4 bytes = 512 MiB; the reference is computed
  // first, without a limit, then the address space may grow by 256 MiB only.
  const PipelineGraph graph = MustBuild(HugeIntermediate(8192, 16384));
  ReferenceCache cache;
  ASSERT_TRUE(cache.Get(graph).ok());
  StatusOr<CompiledCandidate> candidate = CompiledCandidate::Compile(
      graph, ParseSchedule(worker_testing::kHugeIntermediateSchedule), QuickSettings());
  ASSERT_TRUE(candidate.ok()) << candidate.status().ToString();
  Measurement m;
  {
    AddressSpaceLimit limit(AddressSpaceBytes() + (256 << 20));
    ASSERT_TRUE(limit.ok());
    m = candidate->Run(**cache.Get(graph));
  }
  EXPECT_EQ(m.status(), OUT_OF_MEMORY) << m.error();
  EXPECT_NE(m.error().find("huge_intermediate"), std::string::npos) << m.error();
}

}  // namespace
}  // namespace schedfarm
