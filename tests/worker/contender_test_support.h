// What the runtime contenders' tests share (worker/torch/, worker/onnxruntime/): a
// sandbox job of a pipeline with quick measurement settings, the Halide reference
// outputs its run is checked against, and the check that a contender's program refuses
// files it cannot read.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "common/files.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"
#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace worker_testing {

// A job of `pipeline` for the baseline `origin`: 3 to 5 samples of at least 1 ms, 1
// thread, a minute's run timeout.
inline SandboxJob ContenderJob(const PipelineSpec& pipeline, const std::string& origin) {
  SandboxJob job;
  job.set_job_id(origin);
  job.set_autoscheduler(origin);
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

// The outputs of the pipeline's reference schedule, realized once by Halide.
inline std::vector<HostTensor> HalideReference(const PipelineGraph& graph) {
  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> run = RunReference(graph, once);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? run->outputs : std::vector<HostTensor>();
}

// `program` (a contender's executable, JOB REFERENCE RESULT) given a job file it cannot
// parse and a reference that does not exist exits with 2 and writes no result.
inline void ExpectRefusesFilesItCannotRead(const std::string& program) {
  ScratchDir dir;
  ASSERT_TRUE(WriteFileAtomically(dir.Sub("job"), "garbage").ok());
  const std::string command = program + " " + dir.Sub("job") + " " + dir.Sub("none") + " " +
                              dir.Sub("result") + " 2>/dev/null";
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_FALSE(ReadFileBytes(dir.Sub("result")).ok());
}

}  // namespace worker_testing
}  // namespace schedfarm
