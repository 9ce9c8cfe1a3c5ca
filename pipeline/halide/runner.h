// Compiles and runs a pipeline with Halide's JIT, under the reference schedule or a
// schedule callback, and times it. CompiledPipeline is the building block: compiled
// once, bound to its inputs and output buffers, realized any number of times.
// Halide-free header: callers need not include Halide.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

struct LoweredPipeline;  // pipeline/halide/lowering.h

// The class of a failed compile or realization, for callers that classify failures
// (the worker's measurements).
enum class HalideErrorKind {
  kInvalidArgument,  // inputs or options that do not fit the pipeline
  kCompile,          // Halide refused or failed to compile the pipeline
  kRuntime,          // a realization failed (bounds, buffer sizes, assertions...)
  kOutOfMemory,      // Halide's "Out of memory" runtime error, or std::bad_alloc
};

// The input and parameter buffers a pipeline runs on. kExact: each is its tensor, so
// a schedule that reads outside a tensor fails Halide's bounds check (what the
// schedule-space checks want to see; the farm's own schedules and the reference run
// so). kCoverScheduleReads (the autoscheduler baselines): each covers what the
// compiled schedule reads, the tensor's values at their own coordinates and zeros
// around them. Halide 14's autoschedulers shift the tail of a split whose factor
// exceeds the producer's extent below 0 (ShiftInwards), and those points read small
// parameters and the input outside their tensors; the values computed there are never
// used, so the run computes the same outputs. Halide bakes a parameter's shape into
// the compiled code, so kCoverScheduleReads compiles twice: once with the parameters
// read from unbound buffer Parameters to ask Halide what is read (a bounds query),
// then for good. A schedule that reads only inside its tensors gets them unchanged.
enum class InputBuffers { kExact, kCoverScheduleReads };

// A pipeline JIT-compiled for the host, bound to its input values and to output
// buffers it owns. Realize() runs it again over the same buffers, so a benchmark
// compiles once and realizes as often as it likes. Halide's thread pool is sized to
// `threads` before every realization (process-wide: see RunOptions::threads). The
// input parameters are those of the LoweredPipeline it was compiled from: two
// CompiledPipelines of one LoweredPipeline share their inputs.
class CompiledPipeline {
 public:
  // Compiles `lowered` (scheduled as the caller wants) for the JIT target, binds
  // `inputs` (spec order; deterministic inputs when empty) and allocates the
  // outputs. On failure `error_kind`, when given, receives the class of the error.
  // With kCoverScheduleReads, the Funcs of `lowered` read the padded parameters
  // afterwards.
  static StatusOr<CompiledPipeline> Compile(const PipelineGraph& graph,
                                            const LoweredPipeline& lowered, int threads = 0,
                                            std::vector<HostTensor> inputs = {},
                                            HalideErrorKind* error_kind = nullptr,
                                            InputBuffers input_buffers = InputBuffers::kExact);

  // Seconds spent in Halide's JIT compile (both compiles with kCoverScheduleReads).
  double compile_seconds() const;

  // One realization into the output buffers; returns its wall time in seconds.
  StatusOr<double> Realize(HalideErrorKind* error_kind = nullptr);
  // `repeats` back-to-back realizations; returns their total wall time in seconds.
  StatusOr<double> TimeRealizations(int repeats, HalideErrorKind* error_kind = nullptr);
  // The number of back-to-back realizations that last at least `min_sample_seconds`:
  // 1 when one realization (which took `one_realization_seconds`) already does,
  // otherwise found by timing growing batches.
  StatusOr<int> CalibrateRepeats(double min_sample_seconds, double one_realization_seconds,
                                 HalideErrorKind* error_kind = nullptr);

  // The values of the output buffers (spec.outputs order), as the last realization
  // left them.
  std::vector<HostTensor> Outputs() const;

  // Binds input `input` (spec order) to output buffer `output` of `producer`, so that
  // realizing `producer` and then this pipeline passes the tensor without a copy (a
  // network run task after task). The shapes, types and storage orders must be equal.
  Status ReadInputFrom(int input, const CompiledPipeline& producer, int output);

  CompiledPipeline(CompiledPipeline&&) noexcept;
  CompiledPipeline& operator=(CompiledPipeline&&) noexcept;
  ~CompiledPipeline();

 private:
  struct Impl;
  explicit CompiledPipeline(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct RunOptions {
  int timing_samples = 5;         // timed samples after one warm-up run (0: run once, untimed)
  double min_sample_seconds = 0;  // each sample repeats the realization (a count chosen
                                  // once, after the warm-up) to last at least this long
  int threads = 0;                // Halide thread pool size; 0 = Halide's default.
                                  // Process-wide: it applies to every JIT pipeline.
  InputBuffers input_buffers = InputBuffers::kExact;
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

// The same harness for a pipeline the caller lowered and scheduled (by an
// autoscheduler, or from a ScheduleSpec): JIT-compiles `lowered.pipeline` with the
// schedule it carries, runs it on `inputs` and times it exactly as RunReference does.
StatusOr<RunResult> RunScheduled(const PipelineGraph& graph, LoweredPipeline& lowered,
                                 const RunOptions& options = {},
                                 std::vector<HostTensor> inputs = {});

// Halide's host target string, e.g. "x86-64-linux-avx-avx2-f16c-fma-sse41".
std::string HalideHostTarget();

}  // namespace schedfarm
