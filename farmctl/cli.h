// farmctl's command line as a function, so tests run it in-process: parse the arguments,
// run one command against the coordinator's control API, print to `out` / `err`, and
// return the exit code scripts rely on (ExitCode; `farmctl --help` and docs/FARMCTL.md).
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace schedfarm {

enum ExitCode {
  kExitOk = 0,
  kExitFailed = 1,                // the coordinator refused the operation, or a local step failed
  kExitUsage = 2,                 // bad arguments: the error names the flag or argument
  kExitInvalidInput = 3,          // an invalid or unreadable input file (campaign, pipeline, key)
  kExitUnreachable = 4,           // no reply from the coordinator after the retries
  kExitCampaignUnsuccessful = 5,  // `watch` ended with the campaign cancelled or failed
};

struct CliStreams {
  std::ostream& out;
  std::ostream& err;
  // Whether `out` is a terminal: `watch` then redraws in place with ANSI sequences.
  bool out_is_tty = false;
};

// Runs `farmctl args...` (`args` without the program name).
int RunFarmctl(const std::vector<std::string>& args, const CliStreams& streams);

}  // namespace schedfarm
