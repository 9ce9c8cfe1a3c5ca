// SandboxPool: compiles, checks and times candidates in pre-started child processes,
// so that nothing a candidate does (crash, abort, hang, unbounded allocation, output
// flood, fork, exec, sockets, huge files) can harm the worker. Each child is
// `farm-worker --sandbox-child` in its own process group, with a memory limit, confined
// (worker/confinement.h) to a scratch folder of its own that the pool makes and
// removes (and, at start, those a killed worker left); the pool enforces the compile
// and run timeouts
// (counted from when each phase starts), the output limit, grants the one benchmark
// slot of the host to one child at a time, classifies every failure and restarts
// children that die. Jobs run on the pool's own thread; results are collected with
// TakeFinished() when notify_fd() is readable.
//
// A job's phases: the child computes (or loads) the pipeline's reference outputs
// (reference_timeout_ms, or the job's compile and run timeouts together when longer),
// reports CompileStarted and compiles (compile_timeout_ms from
// then), reports Compiled and waits; the pool grants the benchmark slot to compiled
// children in the order they compiled and sends start_run (run_timeout_ms from then);
// the child reports the Measurement. At most compile_slots children are in the first
// two phases at once. While compiling a child runs on the cpus other than the
// benchmark cpus (the last settings.threads cpus of its allowed set; all cpus when
// none are left), while running on the benchmark cpus.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"
#include "worker/job_runner.h"

namespace schedfarm {

struct SandboxOptions {
  std::string child_executable;            // the farm-worker binary (run with --sandbox-child)
  int children = 2;                        // pre-started child processes
  int compile_slots = 1;                   // children compiling at once
  int64_t memory_limit_bytes = 8LL << 30;  // address space of each child (RLIMIT_AS)
  int64_t output_limit_bytes = 1 << 20;    // stdout + stderr of a child per job
  int64_t reference_timeout_ms = 300000;   // computing a pipeline's reference outputs, at least
  int64_t start_timeout_ms = 60000;        // from fork to the child's Ready
  int64_t max_job_bytes = 256 << 20;       // larger jobs fail (COMPILE_ERROR) unsent
  std::string cache_dir;                   // reference outputs by pipeline id ("" = in memory only)
  int64_t file_size_limit_bytes = 0;       // largest file a child writes (0: memory_limit_bytes)
  int adams2019_beam = 32;                 // Adams2019's beam width in baseline jobs
};

// What the pool returns for a job: the measurement's status, compile time, samples,
// statistics, output checksum and error (the caller adds candidate, host and lease).
// A baseline's measurement also holds schedule_source and, when the schedule space
// could import it, candidate.schedule.
struct SandboxOutcome {
  std::string job_id;
  Measurement measurement;
  // A remark on a job that succeeded: for a baseline, why its schedule was not
  // imported or what the import left out. (The child sends it as the error of an OK
  // measurement; the pool moves it here, so that `error` is only ever a failure's.)
  std::string note;
  pid_t child_pid = 0;        // the child that had the job
  double queued_seconds = 0;  // from Submit until a child took the job
  double total_seconds = 0;   // from Submit until the outcome
};

class SandboxPool : public JobRunner {
 public:
  // Starts the children and waits until each has reported ready. Fails when a child
  // cannot start (its exit status and output say why) or the options are invalid.
  static StatusOr<std::unique_ptr<SandboxPool>> Start(const SandboxOptions& options);
  // Kills every child (and anything it started) and reaps it. Jobs in hand are
  // dropped.
  ~SandboxPool() override;

  // Queues a job; zero settings take their defaults (WithDefaults), which the outcome's
  // measurement records. Jobs start in submission order as children and compile slots
  // free up.
  void Submit(SandboxJob job) override;
  // Readable while finished outcomes wait to be taken.
  int notify_fd() const override;
  std::vector<SandboxOutcome> TakeFinished() override;
  // Submits one job and waits for its outcome (tools and tests). A job without a
  // job_id gets one.
  SandboxOutcome RunOne(SandboxJob job);

  // Jobs submitted and not yet taken.
  int jobs_in_hand() const;
  // Process ids of the live children (for tests that check for orphans).
  std::vector<pid_t> child_pids() const;
  // Children restarted after they died or were killed.
  int64_t restarts() const;
  // What the newest ready child reported it may not do (worker/confinement.h); empty
  // before the first is ready.
  std::string confinement() const;
  // Launches that died or timed out before the child reported ready. Each is retried
  // after a back-off that doubles from 100 ms up to 10 s.
  int64_t start_failures() const;

  SandboxPool(const SandboxPool&) = delete;
  SandboxPool& operator=(const SandboxPool&) = delete;

 private:
  struct Impl;
  explicit SandboxPool(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The main of `farm-worker --sandbox-child [--memory-limit-bytes=N] [--cache-dir=DIR]
// [--adams2019-beam=N]`:
// reads SandboxRequests from fd 3 and writes SandboxEvents to fd 4 until fd 3 closes.
// Returns the process exit code.
int RunSandboxChild(int argc, char** argv);

}  // namespace schedfarm
