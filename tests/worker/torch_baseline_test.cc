// The libtorch baseline (worker/torch/torch_baseline.h) in process: timed by the run
// phase against the Halide reference, eager in both layouts where the pipeline has 4-D
// tensors and as imported only where it has none, and frozen, the fastest reported; a
// wrong reference is a WRONG_ANSWER naming the output and the way, an unusable
// reference file an error naming it; and farm-torch-baseline refuses files it cannot
// read with exit status 2.
#include "worker/torch/torch_baseline.h"

#include <gtest/gtest.h>

#include <string>

#include "pipeline/zoo.h"
#include "tests/worker/contender_test_support.h"
#include "tests/worker/worker_test_pipelines.h"
#include "timing/run_phase.h"

namespace schedfarm {
namespace {

SandboxJob JobOf(const PipelineSpec& pipeline) {
  return worker_testing::ContenderJob(pipeline, "libtorch");
}

using worker_testing::HalideReference;

TEST(TorchBaseline, MatchesTheReferenceAndIsTimed) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  const Measurement m =
      MeasureWithTorch(JobOf(graph.spec()), EncodeReference(HalideReference(graph)));
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_GT(m.stats().median_seconds(), 0);
  EXPECT_GE(m.repeats_per_sample(), 1);
  EXPECT_FALSE(m.output_checksum().empty());
}

TEST(TorchBaseline, APipelineWithoutFourDimTensorsRunsAsImportedAndFrozen) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  const Measurement m =
      MeasureWithTorch(JobOf(graph.spec()), EncodeReference(HalideReference(graph)));
  ASSERT_EQ(m.status(), OK) << m.error();
  ASSERT_EQ(m.torch_layouts_size(), 2);
  EXPECT_EQ(m.torch_layouts(0).layout(), "nchw");
  EXPECT_EQ(m.torch_layouts(1).layout(), "frozen");
  for (const TorchLayoutRun& run : m.torch_layouts()) {
    EXPECT_EQ(run.status(), OK) << run.error();
    EXPECT_EQ(run.four_d_stages(), 0);
  }
}

// A ResNet-18 basic block runs in three ways; the measurement is the fastest's, the
// channels-last run kept every stage channels-last and the imported one none; the
// frozen run, whose operators are not the stages, counts none.
TEST(TorchBaseline, AConvBlockRunsInThreeWaysAndTheFastestIsReported) {
  StatusOr<PipelineSpec> spec = MakeZooBlock("resnet18_basic");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const PipelineGraph graph = worker_testing::MustBuild(*spec);
  const SandboxJob job = JobOf(graph.spec());
  const Measurement m = MeasureWithTorch(job, EncodeReference(HalideReference(graph)));
  ASSERT_EQ(m.status(), OK) << m.error();
  ASSERT_EQ(m.torch_layouts_size(), 3);
  const TorchLayoutRun& nchw = m.torch_layouts(0);
  const TorchLayoutRun& cl = m.torch_layouts(1);
  const TorchLayoutRun& frozen = m.torch_layouts(2);
  EXPECT_EQ(nchw.layout(), "nchw");
  EXPECT_EQ(cl.layout(), "channels_last");
  EXPECT_EQ(frozen.layout(), "frozen");
  const TorchLayoutRun* fastest = &nchw;
  for (const TorchLayoutRun& run : m.torch_layouts()) {
    SCOPED_TRACE(run.layout());
    EXPECT_EQ(run.status(), OK) << run.error();
    EXPECT_GT(run.stats().median_seconds(), 0);
    EXPECT_GE(run.samples(), 3);
    if (run.stats().median_seconds() < fastest->stats().median_seconds()) fastest = &run;
  }
  EXPECT_EQ(nchw.four_d_stages(), graph.num_stages());
  EXPECT_EQ(cl.four_d_stages(), graph.num_stages());
  EXPECT_EQ(nchw.channels_last_stages(), 0);
  EXPECT_EQ(cl.channels_last_stages(), graph.num_stages());
  EXPECT_EQ(frozen.four_d_stages(), 0);
  EXPECT_EQ(m.torch_layout(), fastest->layout());
  EXPECT_EQ(m.stats().median_seconds(), fastest->stats().median_seconds());
  EXPECT_EQ(m.samples_seconds_size(), fastest->samples());
  EXPECT_EQ(m.settings().run_timeout_ms(), job.settings().run_timeout_ms())
      << "the job's settings, not a way's share of the timeout";
}

TEST(TorchBaseline, AWrongReferenceIsAWrongAnswerNamingTheOutput) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  std::vector<HostTensor> reference = HalideReference(graph);
  ASSERT_FALSE(reference.empty());
  reference[0].data[0] += 1;
  const Measurement m = MeasureWithTorch(JobOf(graph.spec()), EncodeReference(reference));
  EXPECT_EQ(m.status(), WRONG_ANSWER);
  EXPECT_NE(m.error().find("output '" + graph.spec().outputs(0) + "'"), std::string::npos)
      << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
}

TEST(TorchBaseline, WhenNoWayMatchesTheImportedLayoutsFailureIsReported) {
  StatusOr<PipelineSpec> spec = MakeZooBlock("resnet18_basic");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const PipelineGraph graph = worker_testing::MustBuild(*spec);
  std::vector<HostTensor> reference = HalideReference(graph);
  ASSERT_FALSE(reference.empty());
  reference[0].data[0] += 1;
  const Measurement m = MeasureWithTorch(JobOf(graph.spec()), EncodeReference(reference));
  EXPECT_EQ(m.status(), WRONG_ANSWER);
  EXPECT_NE(m.error().find("(nchw), output '"), std::string::npos) << m.error();
  EXPECT_EQ(m.torch_layout(), "nchw");
  ASSERT_EQ(m.torch_layouts_size(), 3);
  for (int i : {1, 2}) {
    const TorchLayoutRun& run = m.torch_layouts(i);
    EXPECT_EQ(run.status(), WRONG_ANSWER);
    EXPECT_NE(run.error().find("(" + run.layout() + "), output '"), std::string::npos)
        << run.error();
  }
}

TEST(TorchBaseline, AnUnusableReferenceIsNamed) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  const Measurement m = MeasureWithTorch(JobOf(graph.spec()), "not a reference");
  EXPECT_EQ(m.status(), RUNTIME_ERROR);
  EXPECT_NE(m.error().find("reference file: not a reference file"), std::string::npos)
      << m.error();
}

TEST(TorchBaseline, TheExecutableRefusesFilesItCannotRead) {
  worker_testing::ExpectRefusesFilesItCannotRead(FARM_TORCH_BASELINE_BIN);
}

}  // namespace
}  // namespace schedfarm
