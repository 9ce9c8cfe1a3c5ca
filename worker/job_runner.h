// What runs a worker's jobs: the SandboxPool (compile and time in child processes), or
// the ReplayRunner (answer from a recorded dataset, worker/replay.h). The daemon
// submits jobs and collects outcomes when notify_fd() is readable.
#pragma once

#include <vector>

#include "schedfarm.pb.h"

namespace schedfarm {

struct SandboxOutcome;

class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // Queues a job; its outcome comes back with the job's job_id.
  virtual void Submit(SandboxJob job) = 0;
  // Readable while finished outcomes wait to be taken.
  virtual int notify_fd() const = 0;
  virtual std::vector<SandboxOutcome> TakeFinished() = 0;
};

}  // namespace schedfarm
