#include "worker/sandbox_frame.h"

#include <google/protobuf/message_lite.h>

namespace schedfarm {

std::string EncodeSandboxFrame(const google::protobuf::MessageLite& message) {
  const std::string payload = message.SerializeAsString();
  const uint32_t n = static_cast<uint32_t>(payload.size());
  std::string frame = {static_cast<char>(n & 0xff), static_cast<char>((n >> 8) & 0xff),
                       static_cast<char>((n >> 16) & 0xff), static_cast<char>(n >> 24)};
  return frame + payload;
}

uint32_t DecodeSandboxFrameLength(const char header[4]) {
  const auto byte = [&](int i) { return static_cast<uint32_t>(static_cast<uint8_t>(header[i])); };
  return byte(0) | byte(1) << 8 | byte(2) << 16 | byte(3) << 24;
}

}  // namespace schedfarm
