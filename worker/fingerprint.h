// HostFingerprint of the machine a worker runs on: what a timing depends on (CPU
// model, cores, vector ISA, caches, Halide's target, library versions) and the
// worker's stable id, sent when the worker registers so that measurements from
// different hosts are never mixed up.
#pragma once

#include <string>

#include "schedfarm.pb.h"

namespace schedfarm {

// The fingerprint of this host. `worker_id` empty: DefaultWorkerId().
HostFingerprint DetectHostFingerprint(const std::string& worker_id = "");

// "<hostname>-<8 hex digits of /etc/machine-id's hash>": the same across restarts
// of the worker, different on another host (a second worker on the same host needs
// its own --id).
std::string DefaultWorkerId();

}  // namespace schedfarm
