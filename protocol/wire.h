// The wire protocol (docs/ARCHITECTURE.md), in one place for every process: each
// ZeroMQ message is one serialized Envelope (after the routing frame on the ROUTER
// side) carrying the protocol version; a receiver checks a frame's size before it
// parses it, then its version and body. The liveness and reconnect constants live here
// too, so coordinator and workers agree on them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "schedfarm.pb.h"

namespace schedfarm {

inline constexpr SchemaVersion kProtocolVersion = SCHEMA_VERSION_1;
// Application heartbeats both ways; a peer silent for kLiveness intervals is dead.
inline constexpr int kHeartbeatIntervalMs = 1000;
inline constexpr int kLiveness = 3;
// Reconnect back-off after the coordinator went silent: doubles from 1 s to 4 s. Low,
// so that a worker is back at work seconds after an outage ends (a reconnect costs the
// coordinator one Register: 1,000 workers retrying every 4 s are 250 a second).
inline constexpr int kReconnectInitialMs = 1000;
inline constexpr int kReconnectMaxMs = 4000;
// Frames larger than this are refused unparsed. Leases carry whole pipelines, whose
// raw weights (ONNX imports) can take tens of megabytes.
inline constexpr size_t kDefaultMaxMessageBytes = size_t{64} << 20;

// Why a frame was refused.
enum class Refusal {
  kNone,
  kOversized,       // larger than the limit: not parsed
  kUnparseable,     // not an Envelope (truncated, garbage)
  kUnknownVersion,  // an Envelope of another protocol version
  kNoBody,          // an Envelope without a body this version knows
};

struct DecodedFrame {
  Envelope envelope;
  Refusal refusal = Refusal::kNone;
  std::string error;  // what is wrong, for the log and the ErrorReply

  bool ok() const { return refusal == Refusal::kNone; }
};

// Serializes `envelope` with the version set to kProtocolVersion.
std::string EncodeEnvelope(Envelope envelope);
DecodedFrame DecodeEnvelope(std::string_view frame, size_t max_bytes = kDefaultMaxMessageBytes);

// Whether a refused frame is answered with an ErrorReply. Unparseable frames are only
// logged and dropped (nothing says who or what they were), and an ErrorReply is never
// answered, so two peers cannot bounce errors forever.
bool AnswerRefusal(const DecodedFrame& decoded);

// The name of the envelope's body ("lease", "heartbeat"...), "none" if unset.
const char* BodyName(const Envelope& envelope);

// Envelopes of each message, version set.
Envelope MakeHeartbeat();
Envelope MakeErrorReply(const std::string& error, const std::string& lease_id = "");
Envelope MakeDisconnect(const std::string& reason);

}  // namespace schedfarm
