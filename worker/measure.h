// The measurement protocol of docs/MEASUREMENT.md, in the calling process: reference
// outputs per pipeline, the candidate compiled once, then the run phase
// (timing/run_phase.h: one warm-up realization checked against the reference, timed
// samples and their statistics); a baseline (Halide's
// autoscheduler in place of a schedule) likewise. The sandbox child runs it for the
// worker; benchmarks and the A/A tool call it directly.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"
#include "timing/run_phase.h"

namespace schedfarm {

// The outputs of a pipeline under its reference schedule on the deterministic inputs:
// what every candidate's outputs must match.
struct ReferenceOutputs {
  std::string pipeline_id;
  std::vector<HostTensor> outputs;  // spec.outputs order
};

// Reference outputs by pipeline id, computed once (the reference schedule, one
// realization on DeterministicInputs) and kept in memory (the most recent
// `max_in_memory` pipelines) and, when a directory is given (created if missing), in
// files `<dir>/<pipeline id>.ref` that several processes share: each file is written to a
// temporary name and renamed into place, and a file that is truncated, corrupt or does
// not fit the pipeline is recomputed. Thread-safe.
class ReferenceCache {
 public:
  explicit ReferenceCache(std::string dir = "", int max_in_memory = 8);

  // The reference outputs of `graph`: of its checked pipeline (CheckedPipeline,
  // pipeline/spec.h), so an assembled network shares its network's. When they cannot
  // be computed, `failure` (if
  // given) receives the status the measurement fails with (COMPILE_ERROR,
  // RUNTIME_ERROR or OUT_OF_MEMORY).
  StatusOr<std::shared_ptr<const ReferenceOutputs>> Get(const PipelineGraph& graph,
                                                        MeasurementStatus* failure = nullptr);

  // Reference runs done and files read so far.
  int64_t computed() const;
  int64_t loaded() const;

 private:
  std::string PathOf(const std::string& pipeline_id) const;

  const std::string dir_;
  const int max_in_memory_;
  mutable Mutex mutex_;
  // Most recent first.
  std::list<std::shared_ptr<const ReferenceOutputs>> recent_ SCHEDFARM_GUARDED_BY(mutex_);
  int64_t computed_ SCHEDFARM_GUARDED_BY(mutex_) = 0;
  int64_t loaded_ SCHEDFARM_GUARDED_BY(mutex_) = 0;
};

// A baseline measured in place of a ScheduleSpec: Halide's autoscheduler
// `autoscheduler` (one of AutoschedulerNames()) schedules the lowered pipeline as part of
// the compile.
struct BaselineRequest {
  std::string autoscheduler;
  int adams2019_beam = 32;  // Adams2019's beam width (AutoscheduleOptions::beam_size)
};

// The schedule a baseline's autoscheduler chose.
struct BaselineSchedule {
  std::string schedule_source;      // as Halide C++ (AutoSchedulerResults::schedule_source)
  double autoschedule_seconds = 0;  // the autoscheduler's wall time (inside compile_seconds)
  bool imported = false;            // imported_spec holds it as the schedule space says it
  ScheduleSpec imported_spec;
  // Why it was not imported, or how many constructs the import left out and the first
  // few of them ("stage: directive: why", separated by "; "); empty when nothing was.
  std::string import_note;
};

// Records a baseline's schedule in `m`: schedule_source, and candidate.schedule when
// it was imported.
void RecordBaseline(const BaselineSchedule& baseline, Measurement* m);

// A candidate schedule of a pipeline, lowered, scheduled and JIT-compiled once, ready
// for its run phase.
class CompiledCandidate {
 public:
  // Lowers `graph`, applies `schedule` and JIT-compiles, with Halide's thread pool at
  // settings.threads (defaults filled in). compile_seconds() covers all three. On
  // failure `failure` (if given) receives COMPILE_ERROR or OUT_OF_MEMORY.
  static StatusOr<CompiledCandidate> Compile(const PipelineGraph& graph,
                                             const ScheduleSpec& schedule,
                                             const MeasurementSettings& settings,
                                             MeasurementStatus* failure = nullptr);

  // A baseline: lowers `graph`, runs the autoscheduler on it (settings.threads cores,
  // this host's machine parameters; see autoschedulers.h), JIT-compiles it on input
  // and parameter buffers that cover what its schedule reads (kCoverScheduleReads,
  // pipeline/halide/runner.h: Halide 14's shifted tails read outside them), then
  // imports its schedule into the schedule space (ImportHalideSchedule; a failed import
  // is noted, not an error). compile_seconds() covers lowering, autoscheduling and
  // compiling. `chosen`, when given, receives the schedule as soon as the autoscheduler
  // has run, so a compile that fails afterwards can still report it. A failing
  // autoscheduler is COMPILE_ERROR (OUT_OF_MEMORY when it runs out of memory).
  static StatusOr<CompiledCandidate> CompileBaseline(const PipelineGraph& graph,
                                                     const BaselineRequest& request,
                                                     const MeasurementSettings& settings,
                                                     MeasurementStatus* failure = nullptr,
                                                     BaselineSchedule* chosen = nullptr);

  double compile_seconds() const { return compile_seconds_; }
  // The autoscheduler's schedule of a candidate made by CompileBaseline, else null.
  const BaselineSchedule* baseline() const { return baseline_ ? &*baseline_ : nullptr; }

  // The run phase: one warm-up realization whose outputs (its checked ones:
  // PipelineSpec.checked_outputs) must match `reference` (else WRONG_ANSWER with the comparison's
  // message, and no time); the repeat count of a sample chosen once so that a sample lasts
  // min_sample_seconds; `samples` samples, each after a cache flush when flush_cache is set, then
  // one more at a time while their CV exceeds target_cv, up to max_samples. samples_seconds holds
  // each sample's time per realization. Runtime failures give RUNTIME_ERROR or
  // OUT_OF_MEMORY. A baseline's measurement also records its schedule (RecordBaseline),
  // whatever the status.
  Measurement Run(const ReferenceOutputs& reference, const OutputHook& hook = nullptr);

 private:
  CompiledCandidate(CompiledPipeline compiled, const PipelineGraph& graph,
                    const MeasurementSettings& settings, double compile_seconds);

  // Lowers `graph`, schedules the lowering with `schedule`, JIT-compiles it with
  // settings.threads on `input_buffers` (compile_seconds covers these), then calls
  // `after_compile` (when set) on the lowering. bad_alloc anywhere is OUT_OF_MEMORY.
  static StatusOr<CompiledCandidate> CompileWith(
      const PipelineGraph& graph, const MeasurementSettings& settings, MeasurementStatus* failure,
      InputBuffers input_buffers, const std::function<Status(LoweredPipeline&)>& schedule,
      const std::function<void(const LoweredPipeline&)>& after_compile);

  CompiledPipeline compiled_;
  std::string where_;                      // "pipeline 'name'"
  std::vector<std::string> output_names_;  // spec.outputs order, the checked ones
  MeasurementSettings settings_;
  double compile_seconds_ = 0;
  int checked_outputs_ = 0;  // PipelineSpec.checked_outputs
  std::optional<BaselineSchedule> baseline_;
};

// The whole protocol in the calling process, without sandbox or timeouts: reference
// outputs from `cache`, compile, run phase.
Measurement MeasureInProcess(const PipelineGraph& graph, const ScheduleSpec& schedule,
                             const MeasurementSettings& settings, ReferenceCache& cache);

}  // namespace schedfarm
