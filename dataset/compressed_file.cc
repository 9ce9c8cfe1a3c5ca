#include "dataset/compressed_file.h"

#include <zstd.h>

#include "common/files.h"

namespace schedfarm {
namespace {

constexpr size_t kPrefixBytes = 8;  // the magic and the format version
constexpr int kZstdLevel = 19;

}  // namespace

Status WriteCompressedFile(const std::string& path, const CompressedFileKind& kind,
                           const std::string& message) {
  std::string bytes(kind.magic, 4);
  for (int shift = 0; shift < 32; shift += 8) {
    bytes.push_back(static_cast<char>((kind.version >> shift) & 0xff));
  }
  std::string frame(ZSTD_compressBound(message.size()), '\0');
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, kZstdLevel);
  ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1);
  const size_t size =
      ZSTD_compress2(context, frame.data(), frame.size(), message.data(), message.size());
  ZSTD_freeCCtx(context);
  if (ZSTD_isError(size)) {
    return Status::Error(std::string(kind.noun) + " '" + path +
                         "': compression failed: " + ZSTD_getErrorName(size));
  }
  frame.resize(size);
  return WriteFileAtomically(path, bytes + frame).WithContext(kind.noun);
}

StatusOr<std::string> ReadCompressedFile(const std::string& path, const CompressedFileKind& kind,
                                         std::string* file_bytes) {
  const std::string what = std::string(kind.noun) + " '" + path + "'";
  StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status().WithContext(kind.noun);
  if (bytes->size() < kPrefixBytes || bytes->compare(0, 4, kind.magic, 4)) {
    return Status::Error(what + ": not a schedfarm " + kind.noun + " (it does not start with '" +
                         std::string(kind.magic, 4) + "')");
  }
  uint32_t version = 0;
  for (int i = 0; i < 4; ++i) {
    version |= static_cast<uint32_t>(static_cast<uint8_t>((*bytes)[4 + i])) << (8 * i);
  }
  if (version != kind.version) {
    return Status::Error(what + ": format version " + std::to_string(version) +
                         ", this build reads version " + std::to_string(kind.version));
  }
  const char* frame = bytes->data() + kPrefixBytes;
  const size_t frame_size = bytes->size() - kPrefixBytes;
  const unsigned long long content = ZSTD_getFrameContentSize(frame, frame_size);
  if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN ||
      ZSTD_findFrameCompressedSize(frame, frame_size) != frame_size) {
    return Status::Error(what + ": truncated or corrupt (its compressed frame is " +
                         std::to_string(frame_size) + " bytes and not whole)");
  }
  std::string message(content, '\0');
  const size_t size = ZSTD_decompress(message.data(), message.size(), frame, frame_size);
  if (ZSTD_isError(size) || size != content) {
    return Status::Error(
        what + ": corrupt: " + (ZSTD_isError(size) ? ZSTD_getErrorName(size) : "short frame"));
  }
  if (file_bytes != nullptr) *file_bytes = std::move(*bytes);
  return message;
}

}  // namespace schedfarm
