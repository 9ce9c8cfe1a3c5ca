#include "worker/fingerprint.h"

#include <google/protobuf/stubs/common.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "common/caches.h"
#include "common/cpus.h"
#include "common/files.h"
#include "common/sha256.h"
#include "pipeline/halide/runner.h"
#include "timing/bandwidth.h"
#include "timing/peak.h"
#include "worker/cpu_plan.h"

namespace schedfarm {
namespace {

std::string Hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

// The value of the first "key : value" line of /proc/cpuinfo with this key.
std::string CpuInfoValue(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    while (!name.empty() && (name.back() == ' ' || name.back() == '\t')) name.pop_back();
    if (name != key) continue;
    size_t start = colon + 1;
    while (start < line.size() && line[start] == ' ') ++start;
    return line.substr(start);
  }
  return "";
}

// The vector and arithmetic extensions a schedule's speed depends on.
bool IsTimingRelevantFlag(const std::string& flag) {
  static const std::set<std::string> kFlags = {"sse4_1", "sse4_2", "avx",  "avx2",
                                               "fma",    "f16c",   "bmi2", "popcnt"};
  return kFlags.count(flag) > 0 || flag.rfind("avx512", 0) == 0 || flag.rfind("amx", 0) == 0;
}

void FillCaches(HostFingerprint& host) {
  const HostCaches caches = DetectHostCaches();
  host.set_l1d_bytes(caches.l1d.bytes);
  host.set_l2_bytes(caches.l2.bytes);
  host.set_l3_bytes(caches.l3.bytes);
  auto& sources = *host.mutable_cache_sources();
  for (const auto& [name, level] : {std::pair<const char*, const CacheSize&>{"l1d", caches.l1d},
                                    {"l2", caches.l2},
                                    {"l3", caches.l3}}) {
    if (!level.source.empty()) sources[name] = level.source;
  }
}

int UsableCores() {
  const std::vector<int> cpus = AllowedCpus();
  if (!cpus.empty()) return static_cast<int>(cpus.size());
  return static_cast<int>(std::thread::hardware_concurrency());
}

}  // namespace

std::string DefaultWorkerId() {
  const std::string machine_id = ReadFirstLine("/etc/machine-id");
  return Hostname() + "-" + Sha256Hex(machine_id.empty() ? Hostname() : machine_id).substr(0, 8);
}

std::vector<int> PeakThreadCounts(int cores) {
  std::set<int> counts = {1, std::max(cores, 1)};
  for (int threads = 1; threads <= cores; threads = cores <= 16 ? threads + 1 : 2 * threads) {
    counts.insert(threads);
  }
  return std::vector<int>(counts.begin(), counts.end());
}

namespace {

// `measure` at each of PeakThreadCounts(host.cores()) on the cpus a timed run of that many
// threads takes; `what` names the figure in an error.
StatusOr<std::map<int, double>> ByThreadCount(
    const HostFingerprint& host, const std::string& what,
    const std::function<StatusOr<double>(const std::vector<int>& cpus)>& measure) {
  const std::vector<int> cpus = AllowedCpus();
  if (static_cast<int>(cpus.size()) < host.cores()) {
    return Status::Error(what + ": " + std::to_string(cpus.size()) +
                         " cpus to pin threads to, for " + std::to_string(host.cores()) + " cores");
  }
  std::map<int, double> figures;
  for (const int threads : PeakThreadCounts(host.cores())) {
    SCHEDFARM_ASSIGN_OR_RETURN(figures[threads], measure(PlanCpus(cpus, threads).benchmark));
  }
  return figures;
}

}  // namespace

Status MeasureHostPeak(HostFingerprint* host) {
  host->clear_peak_gflops();
  host->clear_peak_isa();
  const std::optional<PeakIsa> isa = PeakIsaOfHalideTarget(host->halide_target());
  if (!isa) {
    return Status::Error("fp32 peak: Halide target '" + host->halide_target() +
                         "' is not x86-64, which the peak kernels are written for");
  }
  SCHEDFARM_ASSIGN_OR_RETURN(
      const auto peaks,
      ByThreadCount(*host, "fp32 peak", [&](const std::vector<int>& cpus) -> StatusOr<double> {
        SCHEDFARM_ASSIGN_OR_RETURN(const PeakResult peak, MeasurePeak(*isa, cpus));
        return peak.gflops;
      }));
  host->mutable_peak_gflops()->insert(peaks.begin(), peaks.end());
  host->set_peak_isa(PeakIsaName(*isa));
  return Status::Ok();
}

Status MeasureHostBandwidth(HostFingerprint* host) {
  host->clear_bandwidth_gbps();
  SCHEDFARM_ASSIGN_OR_RETURN(const auto bandwidths, ByThreadCount(*host, "memory bandwidth",
                                                                  [](const std::vector<int>& cpus) {
                                                                    return MeasureBandwidth(cpus);
                                                                  }));
  host->mutable_bandwidth_gbps()->insert(bandwidths.begin(), bandwidths.end());
  return Status::Ok();
}

HostFingerprint DetectHostFingerprint(const std::string& worker_id) {
  HostFingerprint host;
  host.set_worker_id(worker_id.empty() ? DefaultWorkerId() : worker_id);
  host.set_hostname(Hostname());
  host.set_cpu_model(CpuInfoValue("model name"));
  host.set_cores(UsableCores());
  std::istringstream flags(CpuInfoValue("flags"));
  for (std::string flag; flags >> flag;) {
    if (IsTimingRelevantFlag(flag)) host.add_isa_flags(flag);
  }
  FillCaches(host);
  host.set_halide_target(HalideHostTarget());
  auto& versions = *host.mutable_library_versions();
  versions["schedfarm"] = SCHEDFARM_VERSION;
  versions["halide"] = SCHEDFARM_HALIDE_VERSION;
  versions["protobuf"] = google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION);
  int major = 0, minor = 0, patch = 0;
  zmq_version(&major, &minor, &patch);
  versions["zeromq"] =
      std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  return host;
}

}  // namespace schedfarm
