// Internal to worker/: the pipe framing between the sandbox pool (sandbox.h) and its
// children (sandbox_child.cc): a 4-byte little-endian length, then the serialized
// message, at most kMaxSandboxFrameBytes long.
#pragma once

#include <cstdint>
#include <string>

namespace google::protobuf {
class MessageLite;
}  // namespace google::protobuf

namespace schedfarm {

inline constexpr uint32_t kMaxSandboxFrameBytes = 256u << 20;
std::string EncodeSandboxFrame(const google::protobuf::MessageLite& message);
uint32_t DecodeSandboxFrameLength(const char header[4]);

}  // namespace schedfarm
