// The sandbox self-check behind `farm-worker --check-sandbox`: one job per injected
// fault (and a clean job before and after them) through a real SandboxPool, each
// expected to end with a known status, and no child process left behind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedfarm.pb.h"
#include "worker/sandbox.h"

namespace schedfarm {

struct SandboxCheckRow {
  std::string job;  // "clean", "segfault in compile", "hang in run"...
  MeasurementStatus expected = MEASUREMENT_STATUS_UNSPECIFIED;
  MeasurementStatus got = MEASUREMENT_STATUS_UNSPECIFIED;
  double seconds = 0;  // from submission to the outcome
  std::string error;   // the measurement's error
};

struct SandboxCheckReport {
  std::vector<SandboxCheckRow> rows;
  int64_t restarts = 0;        // children the pool restarted
  std::vector<pid_t> orphans;  // children (or their process groups) still alive after
                               // the pool was destroyed
  std::string confinement;     // what the children reported they may not do
  std::string table;           // one line per row (job, expected, got, seconds), the
                               // restarts and orphans, the verdict; or why the pool
                               // did not start
  bool ok = false;             // every row as expected, no orphans
};

// Whether process `pid` and every process of its group are gone within `timeout_ms`
// (a process killed with its parent is a zombie until init reaps it).
bool ProcessAndGroupGone(pid_t pid, int timeout_ms = 5000);

// Runs the check with a pool of `options` whose memory limit is capped at 2 GiB
// (FAULT_ALLOCATE touches all of it). The hanging jobs have compile and run timeouts
// of `timeout_ms`, the others the defaults.
SandboxCheckReport CheckSandbox(const SandboxOptions& options, int64_t timeout_ms = 2000);

}  // namespace schedfarm
