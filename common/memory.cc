#include "common/memory.h"

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/files.h"

namespace schedfarm {
namespace {

// A limit file's value: bytes, or nullopt for "max", a value at or above the host's
// memory (v1's "unlimited" is a huge number), or an unreadable file.
std::optional<int64_t> LimitIn(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    size_t used = 0;
    const long long value = std::stoll(text, &used);
    if (used != text.size() || value <= 0 || value >= PhysicalMemoryBytes()) return std::nullopt;
    return value;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Keeps in *tightest the lesser of it and `limit` (nullopt: no limit).
void KeepTighter(std::optional<int64_t> limit, std::optional<int64_t>* tightest) {
  if (limit && (!*tightest || *limit < **tightest)) *tightest = limit;
}

// The tightest limit in `file` of the cgroup at `path` (below `root`) and its parents.
std::optional<int64_t> TightestAlong(const std::string& root, std::string path,
                                     const std::string& file) {
  std::optional<int64_t> tightest;
  while (true) {
    KeepTighter(LimitIn(root + path + (path == "/" ? "" : "/") + file), &tightest);
    if (path.empty() || path == "/") return tightest;
    const size_t slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
}

}  // namespace

int64_t PhysicalMemoryBytes() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

std::optional<int64_t> CgroupMemoryLimitBytes(const std::string& proc_self_cgroup,
                                              const std::string& cgroup_root) {
  std::optional<int64_t> tightest;
  const auto take = [&](std::optional<int64_t> limit) { KeepTighter(limit, &tightest); };
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy-id:controllers:path"; v2 is "0::path".
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.empty() || path[0] != '/') continue;
    if (controllers.empty()) {
      take(TightestAlong(cgroup_root, path, "memory.max"));
      take(TightestAlong(cgroup_root + "/unified", path, "memory.max"));
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "memory") {
        take(TightestAlong(cgroup_root + "/memory", path, "memory.limit_in_bytes"));
      }
    }
  }
  return tightest;
}

int64_t UsableMemoryBytes() {
  const int64_t physical = PhysicalMemoryBytes();
  StatusOr<std::string> cgroup = ReadFileBytes("/proc/self/cgroup");
  if (!cgroup.ok()) return physical;
  const std::optional<int64_t> limit = CgroupMemoryLimitBytes(*cgroup, "/sys/fs/cgroup");
  return limit ? std::min(physical, *limit) : physical;
}

void KeepFreedMemory() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
}

}  // namespace schedfarm
