// Where a sandbox job runs: its benchmark on the last `threads` cpus the worker may use,
// its reference outputs and compile on the others, or on all of them when none are
// left. The sandbox pool reads the same plan to keep a compile off the cpus of a
// timed run (docs/MEASUREMENT.md, "Where it runs").
#pragma once

#include <vector>

namespace schedfarm {

struct CpuPlan {
  std::vector<int> benchmark;
  std::vector<int> compile;
};

CpuPlan PlanCpus(const std::vector<int>& allowed, int threads);

// Whether the two cpu lists share a cpu.
bool CpusOverlap(const std::vector<int>& a, const std::vector<int>& b);

}  // namespace schedfarm
