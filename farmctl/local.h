// `farmctl local`: a whole farm on this machine for one or more campaigns. It checks
// every campaign file, starts a farm-coordinator with its store in a local directory,
// farm-worker processes and a farm-learner (all children of farmctl, stopped when it
// ends), submits the campaigns in order, shows the live view of each until it ends,
// then prints each one's status table (best runtimes and speedups over the baselines)
// and best schedules as Halide source, and with two campaigns or more the `compare`
// table of them all.
#pragma once

#include <string>
#include <vector>

#include "farmctl/cli.h"

namespace schedfarm {

struct LocalFarmOptions {
  // Submitted in this order; a campaign whose strategy takes its model from another
  // of them (model_from) waits for it on the farm.
  std::vector<std::string> campaign_files;
  // The coordinator's store and the processes' logs (DIR/store, DIR/logs, DIR/cache).
  std::string dir = "schedfarm-local";
  // One worker per host is the default: a worker compiles on all cores but the last
  // and times candidates on the last one, so two workers on one host would time on
  // the same core. None start when every campaign replays a dataset; each dataset
  // that a replay campaign names gets one replay worker (farm-worker --replay).
  int workers = 1;
};

// Runs the campaigns to their end and returns farmctl's exit code (ExitCode): the first
// that is not 0 of the watches, then of the best schedules and the comparison; a bad
// campaign file (exit 3) stops before anything starts. The binaries
// farm-coordinator, farm-worker and farm-learner are looked up in $SCHEDFARM_BIN_DIR,
// beside farmctl, in the build tree's coordinator/, worker/ and learner_daemon/ folders
// beside farmctl's, then on PATH.
int RunLocalFarm(const LocalFarmOptions& options, const CliStreams& streams);

}  // namespace schedfarm
