// The libtorch baseline (worker/torch/torch_baseline.h) in process: timed by the run
// phase against the Halide reference, a wrong reference is a WRONG_ANSWER naming the
// output, an unusable reference file an error naming it; and farm-torch-baseline
// refuses files it cannot read with exit status 2.
#include "worker/torch/torch_baseline.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>

#include "common/files.h"
#include "pipeline/halide/runner.h"
#include "tests/support/scratch_dir.h"
#include "tests/worker/worker_test_pipelines.h"
#include "timing/run_phase.h"

namespace schedfarm {
namespace {

SandboxJob JobOf(const PipelineSpec& pipeline) {
  SandboxJob job;
  job.set_job_id("torch");
  *job.mutable_pipeline() = pipeline;
  MeasurementSettings& s = *job.mutable_settings();
  s.set_samples(3);
  s.set_max_samples(5);
  s.set_min_sample_seconds(0.001);
  s.set_target_cv(0.5);
  s.set_threads(1);
  s.set_run_timeout_ms(60000);
  return job;
}

std::vector<HostTensor> Reference(const PipelineGraph& graph) {
  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> run = RunReference(graph, once);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? run->outputs : std::vector<HostTensor>();
}

TEST(TorchBaseline, MatchesTheReferenceAndIsTimed) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  const Measurement m = MeasureWithTorch(JobOf(graph.spec()), EncodeReference(Reference(graph)));
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_GT(m.stats().median_seconds(), 0);
  EXPECT_GE(m.repeats_per_sample(), 1);
  EXPECT_FALSE(m.output_checksum().empty());
}

TEST(TorchBaseline, AWrongReferenceIsAWrongAnswerNamingTheOutput) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  std::vector<HostTensor> reference = Reference(graph);
  ASSERT_FALSE(reference.empty());
  reference[0].data[0] += 1;
  const Measurement m = MeasureWithTorch(JobOf(graph.spec()), EncodeReference(reference));
  EXPECT_EQ(m.status(), WRONG_ANSWER);
  EXPECT_NE(m.error().find("output '" + graph.spec().outputs(0) + "'"), std::string::npos)
      << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
}

TEST(TorchBaseline, AnUnusableReferenceIsNamed) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  const Measurement m = MeasureWithTorch(JobOf(graph.spec()), "not a reference");
  EXPECT_EQ(m.status(), RUNTIME_ERROR);
  EXPECT_NE(m.error().find("reference file: not a reference file"), std::string::npos)
      << m.error();
}

TEST(TorchBaseline, TheExecutableRefusesFilesItCannotRead) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFileAtomically(dir.Sub("job"), "garbage").ok());
  const std::string command = std::string(FARM_TORCH_BASELINE_BIN) + " " + dir.Sub("job") + " " +
                              dir.Sub("none") + " " + dir.Sub("result") + " 2>/dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_FALSE(ReadFileBytes(dir.Sub("result")).ok());
}

}  // namespace
}  // namespace schedfarm
