// How much memory this process may use: the host's RAM, or less where the process's
// cgroup limits it (a container's memory limit, cgroup v2 `memory.max` or v1
// `memory.limit_in_bytes`, the tightest along the cgroup's path). What a worker's
// default sandbox memory limit divides.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace schedfarm {

// The host's physical memory in bytes.
int64_t PhysicalMemoryBytes();

// The tightest memory limit of the cgroup that `proc_self_cgroup` (the text of
// /proc/self/cgroup) names, read from the cgroup file systems under `cgroup_root`
// (normally /sys/fs/cgroup: v2 unified there, v1 under memory/); nullopt when no
// limit is set or none can be read.
std::optional<int64_t> CgroupMemoryLimitBytes(const std::string& proc_self_cgroup,
                                              const std::string& cgroup_root);

// The smaller of PhysicalMemoryBytes and this process's cgroup limit.
int64_t UsableMemoryBytes();

// Fixes glibc's malloc thresholds at the top of their range (blocks up to 32 MiB from
// the heap, 64 MiB of free heap kept): left dynamic, a process that frees its large
// blocks gives their pages back and pays a page fault for each page of the next ones,
// which on some virtual machines costs more than the work done in them.
void KeepFreedMemory();

}  // namespace schedfarm
