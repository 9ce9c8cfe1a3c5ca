// The farm's other programs as farmctl finds and runs them: `farmctl local` starts the
// coordinator, workers and learner, and `farmctl model export` runs farm-model-export
// (farmctl links no Torch).
#pragma once

#include <string>
#include <vector>

namespace schedfarm {

// The path of program `name`, looked up in $SCHEDFARM_BIN_DIR, beside farmctl, in the
// build tree's `build_folder` beside farmctl's folder, then on PATH; "" if none is
// executable.
std::string FindBinary(const std::string& name, const std::string& build_folder);

// Runs `binary` with `args` to its end, its standard output and error together in
// *output; returns its exit code, or 128 + the signal that ended it, or -1 if it could
// not be started.
int RunToEnd(const std::string& binary, const std::vector<std::string>& args, std::string* output);

}  // namespace schedfarm
