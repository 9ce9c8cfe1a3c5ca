// HostFingerprint of the machine a worker runs on: what a timing depends on (CPU
// model, cores, vector ISA, caches, Halide's target, library versions) and the
// worker's stable id, sent when the worker registers so that measurements from
// different hosts are never mixed up; and the host's fp32 peak that results are
// compared with.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The fingerprint of this host. `worker_id` empty: DefaultWorkerId().
HostFingerprint DetectHostFingerprint(const std::string& worker_id = "");

// "<hostname>-<8 hex digits of /etc/machine-id's hash>": the same across restarts
// of the worker, different on another host (a second worker on the same host needs
// its own --id).
std::string DefaultWorkerId();

// The thread counts a worker of `cores` cores measures its peak at, so that a campaign's
// thread count has its share of the peak: every count from 1 to `cores` up to 16 cores;
// beyond, 1, the powers of two and `cores`.
std::vector<int> PeakThreadCounts(int cores);

// Measures the host's fp32 peak (timing/peak.h) in the widest ISA of
// host->halide_target() at each of PeakThreadCounts(host->cores()), each on the cpus a
// timed run of that many threads takes (worker/cpu_plan.h: the last ones this process
// may run on), one thread pinned to each, into host->peak_gflops and peak_isa; about a
// quarter of a second a thread count. An error (no x86 target, an ISA this CPU cannot
// run, fewer allowed cpus than cores, a thread that cannot be pinned) leaves both
// empty: the host then reports no peak rather than a wrong one.
Status MeasureHostPeak(HostFingerprint* host);

// Measures the host's memory bandwidth (timing/bandwidth.h) at the same thread counts, on
// the same cpus, into host->bandwidth_gbps; a few tenths of a second a thread count. An
// error (fewer allowed cpus than cores, arrays that cannot be allocated, a thread that
// cannot be pinned) leaves it empty: the host then reports no bandwidth.
Status MeasureHostBandwidth(HostFingerprint* host);

}  // namespace schedfarm
