#include "common/cpus.h"

#include <sched.h>

namespace schedfarm {

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

bool SetAllowedCpus(const std::vector<int>& cpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

std::string CpuList(const std::vector<int>& cpus) {
  std::string list;
  for (int cpu : cpus) list += (list.empty() ? "" : ",") + std::to_string(cpu);
  return list;
}

}  // namespace schedfarm
