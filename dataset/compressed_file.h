// The container of the farm's lasting files (datasets, pretrained models): four magic
// bytes, the format version as 4 little-endian bytes, then one zstd frame, with its
// content checksum, of a serialized message. Written atomically; reading names the
// file and the fault (missing, another kind of file, another version, truncated or
// corrupt).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace schedfarm {

struct CompressedFileKind {
  const char* magic;  // 4 bytes, e.g. "SFDS"
  uint32_t version;   // the format version this build writes and reads
  const char* noun;   // in errors: "dataset", "pretrained model"
};

// Compresses `message` and writes the file atomically.
Status WriteCompressedFile(const std::string& path, const CompressedFileKind& kind,
                           const std::string& message);

// The decompressed message of a file of `kind`; *file_bytes (when given) gets the
// file's bytes as read.
StatusOr<std::string> ReadCompressedFile(const std::string& path, const CompressedFileKind& kind,
                                         std::string* file_bytes = nullptr);

}  // namespace schedfarm
