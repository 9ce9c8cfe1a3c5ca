// Halide 14's own autoschedulers (Adams2019, Li2018, Mullapudi2016) as the baselines
// the farm's search is measured against: each schedules the lowered pipeline, which
// is then compiled, timed with the farm's harness and checked against the reference
// schedule's output. Halide-free header; the Halide side is in import.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"
#include "scheduler/autoscheduler_names.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {

// Halide's MachineParams for this host.
struct HostMachineParams {
  int parallelism = 0;  // cores the schedule may use
  uint64_t last_level_cache_bytes = 0;
  float balance = 40;        // Halide's default load/arithmetic cost ratio
  std::string cache_source;  // where the cache size came from
};
// `threads` cores (0: std::thread::hardware_concurrency()). The last-level cache is
// the host's largest known cache level (common/caches.h: sysfs, else cpuid); when no
// source knows one, Halide's generic value (16 MiB) is used and cache_source says so.
HostMachineParams DetectMachineParams(int threads = 0);
// Halide's string form "parallelism,cache,balance".
std::string MachineParamsString(const HostMachineParams& params);

// The schedule space's target parameters for the JIT target the farm compiles for
// (vector bytes of its widest vector ISA, e.g. 64 with AVX-512), with `threads` cores
// (0: std::thread::hardware_concurrency()).
TargetParams HalideTargetParams(int threads = 0);

// Adams2019 runs with HL_BEAM_SIZE = beam_size, HL_RANDOM_DROPOUT = 100 (no dropout),
// HL_SEED = 0, HL_NUM_PASSES unset (1 pass with beam 1, else 5), and its built-in
// weights (HL_WEIGHTS_DIR, HL_RANDOMIZE_WEIGHTS, HL_AUTOSCHEDULE_MEMORY_LIMIT,
// HL_NO_SUBTILING, HL_CYOS and its file outputs unset); the environment is restored
// afterwards. With these settings every autoscheduler is deterministic: the same
// pipeline, target and machine parameters give the same schedule (up to the names
// Halide makes unique per process: "$n" suffixes of helper Funcs, Li2018's "v<n>"
// Vars). Autoscheduler runs are serialized process-wide (they use Halide's global
// state and the environment).
struct AutoscheduleOptions {
  // Cores: the autoscheduler's parallelism and the Halide thread pool of the timed
  // runs (run.threads is overridden with it). 0: std::thread::hardware_concurrency().
  int threads = 0;
  // Adams2019's beam width (HL_BEAM_SIZE); 32 is Halide's default and the real
  // baseline, 1 is its greedy search. The other autoschedulers have no settings.
  int beam_size = 32;
  // Timing of the scheduled pipeline (RunScheduled). timing_samples 0 runs once; the
  // input and parameter buffers always cover what the schedule reads
  // (run.input_buffers is overridden with kCoverScheduleReads).
  RunOptions run;
  // RunAutoscheduler also imports the schedule (BaselineResult::imported).
  bool import_schedule = false;
};

// A construct of an imported schedule that the schedule space cannot express.
struct LeftOut {
  std::string stage;      // the stage, or the Halide Func name for a helper Func
  std::string directive;  // e.g. "fuse(d1, d0)", "compute_at(conv_3.d1)", "store_in(Stack)"
  std::string why;
  // False for directives that leave the loop nest as it is: store_in, reorder_storage,
  // storage folding, alignment and bounds, prefetch, allow_race_conditions, and tail
  // strategies the definition's one tail cannot reproduce.
  bool changes_loop_nest = true;
};

// A Halide schedule read back as a ScheduleSpec of the schedule space.
struct ImportedSchedule {
  ScheduleSpec spec;  // complete (every stage decided), passes ScheduleSpace::Check
  std::vector<LeftOut> left_out;
  // True when nothing that changes the loop nest was left out: applying `spec` gives
  // Halide's loops (names aside), with their extents, for-types, nesting and compute
  // and store levels. Independent Funcs may be realized in another order. A 3-level
  // split Halide made by splitting the inner part is made by the space by splitting the
  // outer part: the same loops, though with a non-dividing ShiftInwards split the last
  // partial tile may start elsewhere.
  bool exact_loop_nest() const;
};

struct BaselineResult {
  std::string autoscheduler;        // as in AutoschedulerNames()
  std::string machine_params;       // MachineParamsString of what it was given
  std::string target;               // the Halide target it scheduled and compiled for
  std::string schedule_source;      // Halide's AutoSchedulerResults::schedule_source
  double autoschedule_seconds = 0;  // wall time of Pipeline::auto_schedule
  RunResult run;                    // compile time, samples, outputs
  // Why the schedule could not be compiled or run (Halide's message; e.g. a split wider
  // than its dim reading outside an input): then `run` is empty and correct is false.
  std::string run_error;
  // Outputs against the reference outputs, with DefaultTolerance of each output's dtype.
  bool correct = false;
  std::string mismatch;  // why not correct: output name and CompareTensors' message
  // With import_schedule: the schedule read back (ImportHalideSchedule), or why not.
  std::optional<ImportedSchedule> imported;
  std::string import_error;
};

// Lowers `graph`, schedules it with `autoscheduler`, compiles, runs and times it, and
// compares its outputs with `reference_outputs` (spec.outputs order, from RunReference
// on the same deterministic inputs; run here when empty). A schedule that gives a wrong
// answer, or that Halide cannot compile or run, is a result (correct = false, mismatch
// or run_error), not an error; errors are bad names or options, a failed lowering or
// reference run, or an autoscheduler that fails.
StatusOr<BaselineResult> RunAutoscheduler(const PipelineGraph& graph,
                                          const std::string& autoscheduler,
                                          const AutoscheduleOptions& options = {},
                                          const std::vector<HostTensor>& reference_outputs = {});

// Schedules `graph` with `autoscheduler` (as RunAutoscheduler, without running it) and
// imports the schedule. `schedule_source` receives Halide's source when not null.
StatusOr<ImportedSchedule> ImportAutoschedule(const PipelineGraph& graph,
                                              const std::string& autoscheduler,
                                              const AutoscheduleOptions& options = {},
                                              std::string* schedule_source = nullptr);

// One line per left-out construct: "stage: directive: why".
std::string DescribeLeftOut(const std::vector<LeftOut>& left_out);

}  // namespace schedfarm
