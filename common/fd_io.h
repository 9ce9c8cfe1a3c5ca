// Whole reads and writes on a file descriptor (a pipe between processes): retried on
// EINTR and on short transfers until every byte has moved.
#pragma once

#include <cstddef>
#include <string>

namespace schedfarm {

// Reads exactly `size` bytes; false at end of file or on an error.
bool ReadFully(int fd, char* data, size_t size);

// Writes every byte of `bytes`; false on an error.
bool WriteFully(int fd, const std::string& bytes);

}  // namespace schedfarm
