// A stand-in for the coordinator's control API in farmctl's tests: a ROUTER on loopback
// (tests/support/stand_in_coordinator.h) served on its own thread, answering each
// ClientRequest with what a test's handler returns (or nothing, to let the try time out).
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/stand_in_coordinator.h"

namespace schedfarm {
namespace testing_support {

class ControlPeer {
 public:
  struct Seen {
    std::string peer;  // routing id of the sending socket
    ClientRequest request;
  };
  // The answer to the n-th request (0-based): a ClientReply, or any other Envelope (an
  // ErrorReply...), or nothing.
  using Handler = std::function<std::optional<Envelope>(const ClientRequest&, int n)>;

  explicit ControlPeer(Handler handler) : handler_(std::move(handler)) {
    endpoint_ = router_.endpoint();
    thread_ = std::thread([this] { Serve(); });
  }
  ~ControlPeer() {
    stop_ = true;
    thread_.join();
  }

  const std::string& endpoint() const { return endpoint_; }
  std::vector<Seen> seen() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }

  // A reply envelope to `request` with its request_id.
  static Envelope Reply(const ClientRequest& request, ClientReply reply) {
    reply.set_request_id(request.request_id());
    Envelope envelope;
    *envelope.mutable_client_reply() = std::move(reply);
    return envelope;
  }

 private:
  void Serve() {
    while (!stop_) {
      std::optional<StandInCoordinator::Received> received = router_.Receive(20);
      if (!received || !received->envelope.has_client_request()) continue;
      int n = 0;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        n = static_cast<int>(seen_.size());
        seen_.push_back({received->peer, received->envelope.client_request()});
      }
      std::optional<Envelope> answer = handler_(received->envelope.client_request(), n);
      if (answer) router_.Send(received->peer, *answer);
    }
  }

  StandInCoordinator router_;
  std::string endpoint_;
  Handler handler_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mutex_;
  std::vector<Seen> seen_;
  std::thread thread_;
};

}  // namespace testing_support
}  // namespace schedfarm
