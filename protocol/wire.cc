#include "protocol/wire.h"

#include "common/log.h"

namespace schedfarm {

std::string EncodeEnvelope(Envelope envelope) {
  envelope.set_version(kProtocolVersion);
  return envelope.SerializeAsString();
}

DecodedFrame DecodeEnvelope(std::string_view frame, size_t max_bytes) {
  DecodedFrame decoded;
  if (frame.size() > max_bytes) {
    decoded.refusal = Refusal::kOversized;
    decoded.error = "message of " + std::to_string(frame.size()) + " bytes exceeds the limit of " +
                    std::to_string(max_bytes) + " bytes";
    return decoded;
  }
  if (!decoded.envelope.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    decoded.refusal = Refusal::kUnparseable;
    decoded.error = "unparseable message of " + std::to_string(frame.size()) +
                    " bytes (truncated or not an Envelope)";
    return decoded;
  }
  if (decoded.envelope.version() != kProtocolVersion) {
    decoded.refusal = Refusal::kUnknownVersion;
    decoded.error = "protocol version " + std::to_string(decoded.envelope.version()) +
                    " is not supported (this side speaks version " +
                    std::to_string(kProtocolVersion) + ")";
    return decoded;
  }
  if (decoded.envelope.body_case() == Envelope::BODY_NOT_SET) {
    decoded.refusal = Refusal::kNoBody;
    decoded.error = "message without a known body (truncated, or a type this version lacks)";
  }
  return decoded;
}

bool AnswerRefusal(const DecodedFrame& decoded) {
  if (decoded.refusal == Refusal::kNone || decoded.refusal == Refusal::kUnparseable) return false;
  return decoded.envelope.body_case() != Envelope::kError;
}

const char* BodyName(const Envelope& envelope) {
  switch (envelope.body_case()) {
    case Envelope::kRegister:
      return "register";
    case Envelope::kHeartbeat:
      return "heartbeat";
    case Envelope::kWorkRequest:
      return "work_request";
    case Envelope::kLease:
      return "lease";
    case Envelope::kResult:
      return "result";
    case Envelope::kAck:
      return "ack";
    case Envelope::kError:
      return "error";
    case Envelope::kWelcome:
      return "welcome";
    case Envelope::kDisconnect:
      return "disconnect";
    case Envelope::kClientRequest:
      return "client_request";
    case Envelope::kClientReply:
      return "client_reply";
    case Envelope::BODY_NOT_SET:
      return "none";
  }
  return "none";
}

Envelope MakeHeartbeat() {
  Envelope envelope;
  envelope.set_version(kProtocolVersion);
  envelope.mutable_heartbeat()->set_unix_ms(UnixMillis());
  return envelope;
}

Envelope MakeErrorReply(const std::string& error, const std::string& lease_id) {
  Envelope envelope;
  envelope.set_version(kProtocolVersion);
  envelope.mutable_error()->set_error(error);
  envelope.mutable_error()->set_lease_id(lease_id);
  return envelope;
}

Envelope MakeDisconnect(const std::string& reason) {
  Envelope envelope;
  envelope.set_version(kProtocolVersion);
  envelope.mutable_disconnect()->set_reason(reason);
  return envelope;
}

}  // namespace schedfarm
