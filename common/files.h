// Whole files as bytes: read one (or its first line), or write one so that readers never see it
// half written (a temporary file beside it, renamed over it once complete).
#pragma once

#include <string>

#include "common/status.h"

namespace schedfarm {

// The file's bytes. The error names the file and why it could not be read.
StatusOr<std::string> ReadFileBytes(const std::string& path);

// The file's first line without its newline; empty when the file cannot be read (for
// one-line files of /sys and /etc whose absence is an answer).
std::string ReadFirstLine(const std::string& path);

// Writes `bytes` to PATH.partial and renames it to `path`. The error names the file.
Status WriteFileAtomically(const std::string& path, const std::string& bytes);

}  // namespace schedfarm
