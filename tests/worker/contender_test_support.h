// What the runtime contenders' tests share (worker/torch/, worker/onnxruntime/): a
// sandbox job of a pipeline with quick measurement settings, and the Halide reference
// outputs its run is checked against.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"

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

}  // namespace worker_testing
}  // namespace schedfarm
