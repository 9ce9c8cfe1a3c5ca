// The cpus a process may run on (its affinity mask), as a list, and as text.
#pragma once

#include <string>
#include <vector>

namespace schedfarm {

// The cpus the calling thread may run on, ascending; empty when they cannot be read.
std::vector<int> AllowedCpus();

// Restricts the calling thread (and the threads it starts later) to `cpus`; false when
// the kernel refuses.
bool SetAllowedCpus(const std::vector<int>& cpus);

// "0,1,3".
std::string CpuList(const std::vector<int>& cpus);

}  // namespace schedfarm
