// The sizes of this host's data caches (L1 data, L2, L3) and where each figure came
// from. The kernel's sysfs folder is read first; many virtual machines and containers
// have none, so a level it does not know is read from the CPU itself (cpuid: the
// deterministic cache leaf, 4 on Intel and 0x8000001D on AMD, then AMD's older leaves
// 0x80000005 and 0x80000006, whose L3 is the whole processor's rather than one core
// complex's). A level no source knows is 0 with an empty source, never a guess.
#pragma once

#include <cstdint>
#include <string>

namespace schedfarm {

// The cache folder of cpu0 in sysfs.
inline constexpr char kCpu0CacheDir[] = "/sys/devices/system/cpu/cpu0/cache";

struct CacheSize {
  int64_t bytes = 0;   // 0: unknown
  std::string source;  // "sysfs", "cpuid leaf 0x4", ...; empty when unknown
};

struct HostCaches {
  CacheSize l1d, l2, l3;
  // The largest level known (L3, else L2, else L1d); unknown when none is.
  const CacheSize& LastLevel() const;
};

// This host's caches. `sysfs_dir` is the folder of index0, index1, ... (tests point it
// at a folder of their own).
HostCaches DetectHostCaches(const std::string& sysfs_dir = kCpu0CacheDir);

}  // namespace schedfarm
