#include "protocol/control_client.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <zmq.hpp>

#include "common/elapsed.h"
#include "protocol/keepalive.h"
#include "protocol/wire.h"

namespace schedfarm {
namespace {

using Clock = std::chrono::steady_clock;

int MsUntil(Clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return ms < 0 ? 0 : static_cast<int>(ms);
}

std::string FormatSeconds(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", seconds);
  return buf;
}

// A unique inproc endpoint for one socket monitor.
std::string MonitorEndpoint() {
  static std::atomic<int> next{0};
  return "inproc://farmctl.monitor." + std::to_string(next++);
}

}  // namespace

std::string NewRequestId() {
  std::random_device device;
  std::uniform_int_distribution<uint32_t> word;
  std::string id;
  for (int i = 0; i < 4; ++i) {
    char buf[9];
    std::snprintf(buf, sizeof(buf), "%08x", word(device));
    id += buf;
  }
  return id;
}

struct FarmClient::State {
  zmq::context_t context;
  std::unique_ptr<zmq::socket_t> socket;   // null after a timed-out try
  std::unique_ptr<zmq::socket_t> monitor;  // handshake events of `socket` (CURVE only)

  void Close() {
    if (monitor) {
      zmq_socket_monitor(socket->handle(), nullptr, 0);
      monitor.reset();
    }
    socket.reset();
  }

  Status Open(const FarmClientOptions& options) {
    Close();
    auto dealer = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
    dealer->set(zmq::sockopt::linger, 0);
    SetTcpKeepalive(*dealer);
    if (options.own_keys) {
      SCHEDFARM_RETURN_IF_ERROR(
          MakeCurveClient(*dealer, *options.own_keys, options.server_public_key));
      const std::string endpoint = MonitorEndpoint();
      if (zmq_socket_monitor(dealer->handle(), endpoint.c_str(), ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) !=
          0) {
        return Status::Error(std::string("cannot monitor the client socket: ") +
                             zmq_strerror(zmq_errno()));
      }
      monitor = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
      monitor->set(zmq::sockopt::linger, 0);
      monitor->connect(endpoint);
    }
    try {
      dealer->connect(options.endpoint);
    } catch (const zmq::error_t& error) {
      socket = std::move(dealer);
      Close();
      return Status::Error("invalid coordinator endpoint '" + options.endpoint +
                           "': " + error.what() + " (expected e.g. tcp://HOST:PORT)");
    }
    socket = std::move(dealer);
    return Status::Ok();
  }

  // Whether the monitor reported a rejected key; the ZAP status code in `code`.
  bool KeyRejected(int* code) {
    while (monitor) {
      zmq::message_t event;
      if (!monitor->recv(event, zmq::recv_flags::dontwait)) return false;
      zmq::message_t address;
      while (monitor->get(zmq::sockopt::rcvmore)) (void)monitor->recv(address);
      if (event.size() < 6) continue;
      uint16_t id = 0;
      uint32_t value = 0;
      std::memcpy(&id, event.data(), sizeof(id));
      std::memcpy(&value, static_cast<const char*>(event.data()) + 2, sizeof(value));
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
        *code = static_cast<int>(value);
        return true;
      }
    }
    return false;
  }
};

FarmClient::FarmClient(FarmClientOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>()) {}

FarmClient::~FarmClient() {
  if (state_) state_->Close();
}

StatusOr<std::unique_ptr<FarmClient>> FarmClient::Create(const FarmClientOptions& options) {
  if (options.own_keys.has_value() != !options.server_public_key.empty()) {
    return Status::Error(
        "CURVE needs both this client's key pair and the coordinator's public key");
  }
  if (options.try_timeout_ms <= 0 || options.total_timeout_ms <= 0) {
    return Status::Error("the retry timeouts must be positive");
  }
  std::unique_ptr<FarmClient> client(new FarmClient(options));
  SCHEDFARM_RETURN_IF_ERROR(client->state_->Open(client->options_));
  return client;
}

StatusOr<ClientReply> FarmClient::Call(ClientRequest request, CallFailure* failure) {
  if (request.request_id().empty()) request.set_request_id(NewRequestId());
  Envelope envelope;
  *envelope.mutable_client_request() = request;
  const std::string frame = EncodeEnvelope(envelope);
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + std::chrono::milliseconds(options_.total_timeout_ms);
  State& s = *state_;
  int tries = 0;
  while (true) {
    if (!s.socket) SCHEDFARM_RETURN_IF_ERROR(s.Open(options_));
    ++tries;
    try {
      // A DEALER queues the message on its connecting pipe even while the peer is down.
      (void)s.socket->send(zmq::buffer(frame), zmq::send_flags::dontwait);
    } catch (const zmq::error_t&) {
      // Treated like a lost message: this try times out and the next one reconnects.
    }
    const Clock::time_point try_deadline =
        std::min(deadline, Clock::now() + std::chrono::milliseconds(options_.try_timeout_ms));
    while (Clock::now() < try_deadline) {
      std::vector<zmq::pollitem_t> items = {{s.socket->handle(), 0, ZMQ_POLLIN, 0}};
      if (s.monitor) items.push_back({s.monitor->handle(), 0, ZMQ_POLLIN, 0});
      try {
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(MsUntil(try_deadline)));
      } catch (const zmq::error_t& error) {
        if (error.num() == EINTR) continue;
        return Status::Error(std::string("polling the coordinator socket failed: ") + error.what());
      }
      int zap_code = 0;
      if (s.KeyRejected(&zap_code)) {
        if (failure) *failure = CallFailure::kKeyRejected;
        s.Close();
        return Status::Error("the coordinator at " + options_.endpoint +
                             " rejected this client's CURVE key (ZAP status " +
                             std::to_string(zap_code) +
                             "): its public key must be on the coordinator's allow-list");
      }
      if (!(items[0].revents & ZMQ_POLLIN)) continue;
      zmq::message_t message;
      if (!s.socket->recv(message, zmq::recv_flags::dontwait)) continue;
      const DecodedFrame decoded = DecodeEnvelope(message.to_string_view());
      if (!decoded.ok()) continue;
      const Envelope& reply = decoded.envelope;
      if (reply.has_client_reply() && reply.client_reply().request_id() == request.request_id()) {
        return reply.client_reply();
      }
      if (reply.has_error()) {
        ClientReply refused;
        refused.set_request_id(request.request_id());
        refused.set_code(CLIENT_INVALID_ARGUMENT);
        refused.set_error("the coordinator refused the message: " + reply.error().error());
        return refused;
      }
      // Anything else (a reply to an older request, another kind of message) is dropped.
    }
    if (Clock::now() >= deadline) break;
    s.Close();  // lazy pirate: a fresh connection for the next try
  }
  s.Close();
  if (failure) *failure = CallFailure::kUnreachable;
  const double waited = SecondsSince(start);
  return Status::Error("no reply from the coordinator at " + options_.endpoint + " within " +
                       FormatSeconds(waited) + " (" + std::to_string(tries) +
                       (tries == 1 ? " try" : " tries") + ")");
}

}  // namespace schedfarm
