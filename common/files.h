// Whole files as bytes: read one, or write one so that readers never see it half
// written (a temporary file beside it, renamed over it once complete).
#pragma once

#include <string>

#include "common/status.h"

namespace schedfarm {

// The file's bytes. The error names the file and why it could not be read.
StatusOr<std::string> ReadFileBytes(const std::string& path);

// Writes `bytes` to PATH.partial and renames it to `path`. The error names the file.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace schedfarm
