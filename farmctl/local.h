// `farmctl local`: a whole farm on this machine for one campaign. It starts a
// farm-coordinator with its store in a local directory, farm-worker processes and a
// farm-learner (all children of farmctl, stopped when it ends), submits the campaign,
// shows the live
// view until the campaign ends, then prints the status table (best runtimes and
// speedups over the baselines) and the best schedules as Halide source.
#pragma once

#include <string>

#include "farmctl/cli.h"

namespace schedfarm {

struct LocalFarmOptions {
  std::string campaign_file;
  // The coordinator's store and the processes' logs (DIR/store, DIR/logs, DIR/cache).
  std::string dir = "schedfarm-local";
  // One worker per host is the default: a worker compiles on all cores but the last
  // and times candidates on the last one, so two workers on one host would time on
  // the same core.
  int workers = 1;
};

// Runs the campaign to its end and returns farmctl's exit code (ExitCode). The binaries
// farm-coordinator, farm-worker and farm-learner are looked up in $SCHEDFARM_BIN_DIR,
// beside farmctl, in the build tree's coordinator/, worker/ and learner/daemon/ folders
// beside farmctl's, then on PATH.
int RunLocalFarm(const LocalFarmOptions& options, const CliStreams& streams);

}  // namespace schedfarm
