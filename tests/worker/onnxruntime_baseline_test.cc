// The ONNX Runtime baseline (worker/onnxruntime/onnxruntime_baseline.h) as the worker's
// sandbox runs it: the real farm-onnxruntime-baseline program on job and reference
// files, driving ONNX Runtime (node and the onnxruntime-node package) through
// runner.js. A pipeline is timed by the run phase against the Halide reference and its
// result names the runtime's version; a wrong reference is a WRONG_ANSWER naming the
// output; a model ONNX Runtime refuses is a failure with ONNX Runtime's message; a
// worker without node or the package says which is missing; a runner that dies is a
// failure that says so. Tests that need ONNX Runtime skip, saying why, where it is not
// installed (ops/setup.sh installs it).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <map>
#include <string>

#include "common/files.h"
#include "pipeline/builder.h"
#include "pipeline/zoo.h"
#include "tests/support/scratch_dir.h"
#include "tests/worker/contender_test_support.h"
#include "tests/worker/worker_test_pipelines.h"
#include "timing/run_phase.h"

namespace schedfarm {
namespace {

SandboxJob JobOf(const PipelineSpec& pipeline) {
  return worker_testing::ContenderJob(pipeline, "onnxruntime");
}

using worker_testing::HalideReference;

// Runs farm-onnxruntime-baseline on `job` and `reference` with `env` set for it (an
// empty value unsets); its measurement, or a failure with status UNSPECIFIED.
Measurement RunProgram(const SandboxJob& job, const std::string& reference,
                       const std::map<std::string, std::string>& env = {}) {
  ScratchDir dir;
  Measurement m;
  if (!WriteFileAtomically(dir.Sub("job.pb"), job.SerializeAsString()).ok() ||
      !WriteFileAtomically(dir.Sub("reference"), reference).ok()) {
    m.set_error("cannot write the job files");
    return m;
  }
  std::string command;
  for (const auto& [name, value] : env) command += name + "='" + value + "' ";
  command += std::string(FARM_ONNXRUNTIME_BASELINE_BIN) + " " + dir.Sub("job.pb") + " " +
             dir.Sub("reference") + " " + dir.Sub("result.pb");
  const int status = std::system(command.c_str());
  StatusOr<std::string> result = ReadFileBytes(dir.Sub("result.pb"));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !result.ok() ||
      !m.ParseFromString(*result)) {
    m.set_error("farm-onnxruntime-baseline failed with wait status " + std::to_string(status));
  }
  return m;
}

// Skips the test when this machine has no ONNX Runtime, with the program's reason.
#define SKIP_UNLESS_ONNXRUNTIME(m)                                                    \
  if ((m).error().find("unavailable on this worker") != std::string::npos) {          \
    GTEST_SKIP() << "ONNX Runtime is not installed here (ops/setup.sh installs it): " \
                 << (m).error();                                                      \
  }

TEST(OnnxRuntimeBaseline, MatchesTheReferenceAndIsTimedAndNamesItsVersion) {
  StatusOr<PipelineSpec> spec = MakeZooBlock("resnet18_basic");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const PipelineGraph graph = worker_testing::MustBuild(*spec);
  const Measurement m = RunProgram(JobOf(graph.spec()), EncodeReference(HalideReference(graph)));
  SKIP_UNLESS_ONNXRUNTIME(m);
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_GT(m.stats().median_seconds(), 0);
  EXPECT_GE(m.repeats_per_sample(), 1);
  EXPECT_FALSE(m.output_checksum().empty());
  EXPECT_EQ(m.runtime_version().rfind("onnxruntime 1.", 0), 0u) << m.runtime_version();
}

TEST(OnnxRuntimeBaseline, AWrongReferenceIsAWrongAnswerNamingTheOutput) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  std::vector<HostTensor> reference = HalideReference(graph);
  ASSERT_FALSE(reference.empty());
  reference[0].data[0] += 1;
  const Measurement m = RunProgram(JobOf(graph.spec()), EncodeReference(reference));
  SKIP_UNLESS_ONNXRUNTIME(m);
  EXPECT_EQ(m.status(), WRONG_ANSWER) << m.error();
  EXPECT_NE(m.error().find("output '" + graph.spec().outputs(0) + "'"), std::string::npos)
      << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
}

// ONNX Runtime's CPU runtime has no float64 convolution: the session cannot be built,
// and the failure carries ONNX Runtime's own words.
TEST(OnnxRuntimeBaseline, AModelOnnxRuntimeRefusesFailsWithItsMessage) {
  PipelineBuilder b("conv_f64", FLOAT64);
  b.Output(b.Conv2d(b.Input("x", {1, 4, 8, 8}), 4, 3, /*stride=*/1, /*pad=*/1));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const PipelineGraph graph = worker_testing::MustBuild(*spec);
  const Measurement m = RunProgram(JobOf(graph.spec()), EncodeReference(HalideReference(graph)));
  SKIP_UNLESS_ONNXRUNTIME(m);
  EXPECT_EQ(m.status(), RUNTIME_ERROR);
  EXPECT_NE(m.error().find("ONNX Runtime: "), std::string::npos) << m.error();
  EXPECT_NE(m.error().find("Conv"), std::string::npos) << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
}

TEST(OnnxRuntimeBaseline, WithoutNodeTheBaselineIsUnavailableAndSaysWhy) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  const Measurement m = RunProgram(JobOf(graph.spec()), EncodeReference(HalideReference(graph)),
                                   {{"SCHEDFARM_NODE", "/nonexistent/node"}});
  EXPECT_EQ(m.status(), RUNTIME_ERROR) << m.error();
  EXPECT_NE(m.error().find("ONNX Runtime is unavailable on this worker: no node program "
                           "(/nonexistent/node)"),
            std::string::npos)
      << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
}

TEST(OnnxRuntimeBaseline, WithoutThePackageTheBaselineIsUnavailableAndSaysWhy) {
  ScratchDir empty;
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  const Measurement m = RunProgram(JobOf(graph.spec()), EncodeReference(HalideReference(graph)),
                                   {{"SCHEDFARM_ONNXRUNTIME_NODE", empty.path()}});
  if (m.error().find("no node program") != std::string::npos) {
    GTEST_SKIP() << "no node here: " << m.error();
  }
  EXPECT_EQ(m.status(), RUNTIME_ERROR) << m.error();
  EXPECT_NE(m.error().find("no onnxruntime-node package in '" + empty.path() + "'"),
            std::string::npos)
      << m.error();
}

// A runner that ends before it is ready (here a "node" that exits at once) is a failure
// that says how it ended, never a time.
TEST(OnnxRuntimeBaseline, ARunnerThatDiesIsAFailureThatSaysHow) {
  const PipelineGraph graph = worker_testing::MustBuild(worker_testing::TinyMatMul());
  const Measurement probe =
      RunProgram(JobOf(graph.spec()), EncodeReference(HalideReference(graph)));
  SKIP_UNLESS_ONNXRUNTIME(probe);
  const Measurement m = RunProgram(JobOf(graph.spec()), EncodeReference(HalideReference(graph)),
                                   {{"SCHEDFARM_NODE", "/bin/false"}});
  EXPECT_EQ(m.status(), RUNTIME_ERROR) << m.error();
  EXPECT_NE(m.error().find("ONNX Runtime's runner (node) ended with exit status 1"),
            std::string::npos)
      << m.error();
  EXPECT_EQ(m.samples_seconds_size(), 0);
}

TEST(OnnxRuntimeBaseline, TheExecutableRefusesFilesItCannotRead) {
  worker_testing::ExpectRefusesFilesItCannotRead(FARM_ONNXRUNTIME_BASELINE_BIN);
}

}  // namespace
}  // namespace schedfarm
