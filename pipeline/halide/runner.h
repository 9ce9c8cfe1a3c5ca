// Compiles and runs a pipeline with Halide's JIT, under the reference schedule or a
// schedule callback, and times it. Halide-free header: callers need not include
// Halide.h.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

struct RunOptions {
  int timing_samples = 5;          // timed runs after one warm-up run (0: run once, untimed)
  double min_sample_seconds = 0;   // repeat inside a sample until it lasts this long
  int threads = 0;                 // Halide thread pool size; 0 = Halide's default.
                                   // Process-wide: it applies to every JIT pipeline.
};

struct RunResult {
  std::vector<HostTensor> outputs;  // spec.outputs order
  double compile_seconds = 0;
  std::vector<double> sample_seconds;  // per realization
  double min_seconds = 0;
  double median_seconds = 0;
};

// Lowers `graph`, applies the reference schedule, JIT-compiles, runs it on `inputs`
// (spec order; deterministic inputs when empty) and times it.
StatusOr<RunResult> RunReference(const PipelineGraph& graph, const RunOptions& options = {},
                                 std::vector<HostTensor> inputs = {});

struct LoweredPipeline;  // pipeline/halide/lowering.h

// The same harness for a pipeline the caller lowered and scheduled (by an
// autoscheduler, or from a ScheduleSpec): JIT-compiles `lowered.pipeline` with the
// schedule it carries, runs it on `inputs` and times it exactly as RunReference does.
StatusOr<RunResult> RunScheduled(const PipelineGraph& graph, LoweredPipeline& lowered,
                                 const RunOptions& options = {},
                                 std::vector<HostTensor> inputs = {});

// Halide's host target string, e.g. "x86-64-linux-avx-avx2-f16c-fma-sse41".
std::string HalideHostTarget();

}  // namespace schedfarm
