// A shell command run by a test: its exit code, and its standard output and error as
// captured in a file of the test's scratch directory.
#pragma once

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/scratch_dir.h"

namespace schedfarm::testing_support {

struct ShellRun {
  int exit_code = -1;  // -1: killed by a signal
  std::string output;  // stdout and stderr
};

inline ShellRun RunShell(const std::string& command, const ScratchDir& dir) {
  const std::string out = dir.Sub("shell-output.txt");
  const int status = std::system((command + " > " + out + " 2>&1").c_str());
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

}  // namespace schedfarm::testing_support
