#include "worker/cpu_plan.h"

#include <algorithm>

namespace schedfarm {

CpuPlan PlanCpus(const std::vector<int>& allowed, int threads) {
  CpuPlan plan;
  const size_t n = std::min(allowed.size(), static_cast<size_t>(std::max(threads, 1)));
  plan.compile.assign(allowed.begin(), allowed.end() - n);
  plan.benchmark.assign(allowed.end() - n, allowed.end());
  if (plan.compile.empty()) plan.compile = allowed;
  return plan;
}

bool CpusOverlap(const std::vector<int>& a, const std::vector<int>& b) {
  for (const int cpu : a) {
    if (std::find(b.begin(), b.end(), cpu) != b.end()) return true;
  }
  return false;
}

}  // namespace schedfarm
