// HostFingerprint of the machine a worker runs on: what a timing depends on (CPU
// model, cores, vector ISA, caches, Halide's target, library versions) and the
// worker's stable id, sent when the worker registers so that measurements from
// different hosts are never mixed up; and the host's fp32 peak that results are
// compared with.
#pragma once

#include <string>

#include "common/status.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The fingerprint of this host. `worker_id` empty: DefaultWorkerId().
HostFingerprint DetectHostFingerprint(const std::string& worker_id = "");

// "<hostname>-<8 hex digits of /etc/machine-id's hash>": the same across restarts
// of the worker, different on another host (a second worker on the same host needs
// its own --id).
std::string DefaultWorkerId();

// Measures the host's fp32 peak (timing/peak.h) in the widest ISA of
// host->halide_target(), at 1 thread and at host->cores() threads (one pinned to each of
// the first cpus this process may run on), into host->peak_gflops and peak_isa; about a
// quarter of a second a thread count. An error (no x86 target, an ISA this CPU cannot
// run, fewer allowed cpus than cores, a thread that cannot be pinned) leaves both
// empty: the host then reports no peak rather than a wrong one.
Status MeasureHostPeak(HostFingerprint* host);

}  // namespace schedfarm
