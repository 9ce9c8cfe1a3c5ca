#include "common/caches.h"

#include <cstdlib>

#include "common/files.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define SCHEDFARM_HAS_CPUID 1
#endif

namespace schedfarm {
namespace {

// "48K", "1024K", "32M" as bytes; 0 when unreadable.
int64_t ParseSysfsSize(const std::string& text) {
  int64_t value = 0;
  size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9')
    value = value * 10 + (text[i++] - '0');
  if (i < text.size() && (text[i] == 'K' || text[i] == 'k')) value <<= 10;
  if (i < text.size() && (text[i] == 'M' || text[i] == 'm')) value <<= 20;
  if (i < text.size() && (text[i] == 'G' || text[i] == 'g')) value <<= 30;
  return value;
}

// Sets `level` from `bytes` read at `source` unless an earlier source knew it.
void Offer(CacheSize& level, int64_t bytes, const std::string& source) {
  if (level.bytes > 0 || bytes <= 0) return;
  level.bytes = bytes;
  level.source = source;
}

// Level 1 data caches go to l1d, level 2 and 3 data or unified caches to l2 and l3.
void OfferLevel(HostCaches& caches, int level, bool data_or_unified, bool data_only, int64_t bytes,
                const std::string& source) {
  if (level == 1 && data_only) Offer(caches.l1d, bytes, source);
  if (level == 2 && data_or_unified) Offer(caches.l2, bytes, source);
  if (level == 3 && data_or_unified) Offer(caches.l3, bytes, source);
}

void ReadSysfs(HostCaches& caches, const std::string& dir) {
  for (int index = 0; index < 16; ++index) {
    const std::string folder = dir + "/index" + std::to_string(index);
    const std::string level = ReadFirstLine(folder + "/level");
    if (level.empty()) break;
    const std::string type = ReadFirstLine(folder + "/type");
    OfferLevel(caches, std::atoi(level.c_str()), type == "Data" || type == "Unified",
               type == "Data", ParseSysfsSize(ReadFirstLine(folder + "/size")), "sysfs");
  }
}

#ifdef SCHEDFARM_HAS_CPUID
// One deterministic cache leaf (4, or 0x8000001D): a sub-leaf per cache until a null
// type; size = ways x partitions x line size x sets.
void ReadDeterministicLeaf(HostCaches& caches, unsigned leaf, const std::string& source) {
  for (unsigned sub = 0; sub < 16; ++sub) {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    __cpuid_count(leaf, sub, eax, ebx, ecx, edx);
    const unsigned type = eax & 0x1f;  // 0 null, 1 data, 2 instruction, 3 unified
    if (type == 0) break;
    const int level = static_cast<int>((eax >> 5) & 0x7);
    const int64_t ways = ((ebx >> 22) & 0x3ff) + 1;
    const int64_t partitions = ((ebx >> 12) & 0x3ff) + 1;
    const int64_t line = (ebx & 0xfff) + 1;
    const int64_t sets = static_cast<int64_t>(ecx) + 1;
    OfferLevel(caches, level, type == 1 || type == 3, type == 1, ways * partitions * line * sets,
               source);
  }
}

void ReadCpuid(HostCaches& caches) {
  const unsigned max_basic = __get_cpuid_max(0, nullptr);
  const unsigned max_extended = __get_cpuid_max(0x80000000, nullptr);
  if (max_basic >= 4) ReadDeterministicLeaf(caches, 4, "cpuid leaf 0x4");
  if (max_extended >= 0x8000001D)
    ReadDeterministicLeaf(caches, 0x8000001D, "cpuid leaf 0x8000001d");
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (max_extended >= 0x80000005 && __get_cpuid(0x80000005, &eax, &ebx, &ecx, &edx)) {
    Offer(caches.l1d, static_cast<int64_t>(ecx >> 24) << 10, "cpuid leaf 0x80000005");
  }
  if (max_extended >= 0x80000006 && __get_cpuid(0x80000006, &eax, &ebx, &ecx, &edx)) {
    Offer(caches.l2, static_cast<int64_t>(ecx >> 16) << 10, "cpuid leaf 0x80000006");
    Offer(caches.l3, static_cast<int64_t>(edx >> 18) << 19, "cpuid leaf 0x80000006");
  }
}
#endif

}  // namespace

const CacheSize& HostCaches::LastLevel() const {
  if (l3.bytes > 0) return l3;
  if (l2.bytes > 0) return l2;
  return l1d;
}

HostCaches DetectHostCaches(const std::string& sysfs_dir) {
  HostCaches caches;
  ReadSysfs(caches, sysfs_dir);
#ifdef SCHEDFARM_HAS_CPUID
  ReadCpuid(caches);
#endif
  return caches;
}

}  // namespace schedfarm
