// FarmClient: a connection to the coordinator's control API, for farmctl and
// farm-learner. One DEALER socket (optionally CURVE) sends a ClientRequest and waits for
// the ClientReply with the same request_id, retrying in the lazy-pirate way so a command
// survives a coordinator restart.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "common/status.h"
#include "protocol/security.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// The coordinator's default endpoint, used when neither --coordinator nor
// $SCHEDFARM_COORDINATOR says otherwise.
inline constexpr char kDefaultCoordinatorEndpoint[] = "tcp://127.0.0.1:5555";

struct FarmClientOptions {
  std::string endpoint = kDefaultCoordinatorEndpoint;
  // How long one try waits for the reply before the socket is closed, reopened and the
  // same request sent again; and how long Call keeps trying in all.
  int try_timeout_ms = 5000;
  int total_timeout_ms = 30000;
  // CURVE: this client's key pair and the coordinator's public key, both or neither.
  std::optional<CurveKeyPair> own_keys;
  std::string server_public_key;
};

// How a call failed to get a reply. Refusals by the coordinator are not failures:
// they come back as a ClientReply with a code other than CLIENT_OK.
enum class CallFailure {
  kUnreachable,  // no reply within total_timeout_ms
  kKeyRejected,  // the coordinator's ZAP handler rejected this client's CURVE key
};

class FarmClient {
 public:
  // Checks the endpoint (a malformed one is an error naming it) and the keys.
  static StatusOr<std::unique_ptr<FarmClient>> Create(const FarmClientOptions& options);
  ~FarmClient();
  FarmClient(const FarmClient&) = delete;
  FarmClient& operator=(const FarmClient&) = delete;

  // Sends `request` (a fresh request_id is set when it has none) and returns the reply
  // carrying the same request_id. Every try sends the same request_id, so a request the
  // coordinator already handled is answered with its first outcome. An ErrorReply from
  // the coordinator (a frame it refused: too large, unknown version) becomes a reply
  // with code CLIENT_INVALID_ARGUMENT. On failure `failure` (when not null) says why;
  // the error names the endpoint and how long and how often it tried.
  StatusOr<ClientReply> Call(ClientRequest request, CallFailure* failure = nullptr);

  const FarmClientOptions& options() const { return options_; }

 private:
  struct State;
  explicit FarmClient(FarmClientOptions options);

  FarmClientOptions options_;
  std::unique_ptr<State> state_;
};

// A random 128-bit request id as 32 lowercase hex digits.
std::string NewRequestId();

}  // namespace schedfarm
