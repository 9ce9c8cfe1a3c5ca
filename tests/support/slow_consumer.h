// A worker that stops reading, against the real farm-coordinator: it registers with
// credits and never reads a message (its leases stay in its socket), heartbeats (it is
// alive), and asks for a campaign's status again and again, so that the coordinator's
// replies fill the pipe to it and then the coordinator's queue for it. Its socket
// takes next to nothing in: a receive high-water mark of 1 and a 4 kB kernel buffer.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <zmq.hpp>

#include "protocol/wire.h"
#include "tests/support/simulated_worker.h"

namespace schedfarm {
namespace testing_support {

class SlowConsumer {
 public:
  SlowConsumer(zmq::context_t& context, const std::string& endpoint, const std::string& worker_id,
               int credits, int heartbeat_ms)
      : socket_(context, zmq::socket_type::dealer), heartbeat_ms_(heartbeat_ms) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::rcvhwm, 1);
    socket_.set(zmq::sockopt::rcvbuf, 4096);
    socket_.set(zmq::sockopt::sndhwm, 100000);
    socket_.connect(endpoint);
    socket_.send(zmq::buffer(RegisterFrame(SimulatedHost(worker_id, "slow-" + worker_id), credits,
                                           std::to_string(UnixMillis()))));
    next_heartbeat_ = std::chrono::steady_clock::now();
  }

  // A heartbeat when one is due.
  void Heartbeat() {
    if (std::chrono::steady_clock::now() < next_heartbeat_) return;
    next_heartbeat_ += std::chrono::milliseconds(heartbeat_ms_);
    socket_.send(zmq::buffer(EncodeEnvelope(MakeHeartbeat())));
  }

  // `n` status requests of `campaign`, a heartbeat after every hundredth and when one is
  // due. The coordinator reads a peer's frames in order and, past its small receive
  // queue, the flood waits in this socket: a heartbeat sent only when due would wait
  // behind it, and the worker could die of silence before its replies fill its queue.
  void Ask(const std::string& campaign, int n) {
    Envelope envelope;
    StatusRequest* status = envelope.mutable_client_request()->mutable_status();
    status->set_campaign(campaign);
    const std::string heartbeat = EncodeEnvelope(MakeHeartbeat());
    for (int k = 0; k < n; ++k) {
      envelope.mutable_client_request()->set_request_id("slow-" + std::to_string(requests_++));
      socket_.send(zmq::buffer(EncodeEnvelope(envelope)));
      if (requests_ % 100 == 0) socket_.send(zmq::buffer(heartbeat));
    }
    Heartbeat();
  }

  int64_t requests() const { return requests_; }

 private:
  zmq::socket_t socket_;
  int heartbeat_ms_;
  std::chrono::steady_clock::time_point next_heartbeat_;
  int64_t requests_ = 0;
};

}  // namespace testing_support
}  // namespace schedfarm
