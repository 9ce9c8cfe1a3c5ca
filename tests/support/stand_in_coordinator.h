// A minimal coordinator peer for the tests and the benchmark of farm-worker: a
// ROUTER socket on loopback that speaks the real wire code of protocol/wire.h. It
// answers Register with Welcome and Heartbeat with Heartbeat by itself; everything
// else is handed to the caller.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "protocol/wire.h"
#include "tests/support/child_process.h"

namespace schedfarm {
namespace testing_support {

class StandInCoordinator {
 public:
  struct Received {
    std::string peer;  // the routing id of the sender
    Envelope envelope;
  };

  // Binds `endpoint` ("tcp://127.0.0.1:*" picks a free port).
  explicit StandInCoordinator(const std::string& endpoint = "tcp://127.0.0.1:*") { Bind(endpoint); }

  const std::string& endpoint() const { return endpoint_; }
  // Registers seen (each answered with a Welcome).
  int registrations() const { return registrations_; }
  // Heartbeats seen (each answered with a Heartbeat).
  int heartbeats() const { return heartbeats_; }

  // The next message other than Register and Heartbeat, or nothing after `timeout_ms`.
  std::optional<Received> Receive(int timeout_ms) {
    return ReceiveUntil([](const Received&) { return true; }, timeout_ms);
  }

  // The next message (other than Register and Heartbeat) that `accept` takes; messages it
  // does not take are dropped.
  std::optional<Received> ReceiveUntil(const std::function<bool(const Received&)>& accept,
                                       int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      zmq::pollitem_t item = {socket_->handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(20));
      if (!(item.revents & ZMQ_POLLIN)) continue;
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(*socket_, std::back_inserter(frames))) continue;
      if (frames.size() != 2) continue;
      Received received{frames[0].to_string(), {}};
      const DecodedFrame decoded = DecodeEnvelope(frames[1].to_string_view());
      if (!decoded.ok()) continue;
      received.envelope = decoded.envelope;
      if (received.envelope.has_register_()) {
        ++registrations_;
        last_worker_ = received.peer;
        Envelope welcome;
        welcome.mutable_welcome()->set_worker_id(received.envelope.register_().host().worker_id());
        welcome.mutable_welcome()->set_heartbeat_interval_ms(kHeartbeatIntervalMs);
        Send(received.peer, welcome);
        if (keep_registrations_) return received;
        continue;
      }
      if (received.envelope.has_heartbeat()) {
        ++heartbeats_;
        Send(received.peer, MakeHeartbeat());
        continue;
      }
      if (accept(received)) return received;
    }
    return std::nullopt;
  }

  // Whether Receive also returns Register messages (after answering them).
  void set_keep_registrations(bool keep) { keep_registrations_ = keep; }
  // The routing id of the last worker that registered.
  const std::string& last_worker() const { return last_worker_; }

  // False when the peer is gone (the ROUTER refuses unroutable messages).
  bool Send(const std::string& peer, const Envelope& envelope) {
    return SendRaw(peer, EncodeEnvelope(envelope));
  }
  bool SendRaw(const std::string& peer, const std::string& frame) {
    std::vector<zmq::const_buffer> frames = {zmq::buffer(peer), zmq::buffer(frame)};
    try {
      return zmq::send_multipart(*socket_, frames, zmq::send_flags::dontwait).has_value();
    } catch (const zmq::error_t&) {
      return false;
    }
  }

  // The coordinator goes away (its socket is closed) and, with Rebind, comes back at
  // the same endpoint.
  void Close() { socket_.reset(); }
  void Rebind() { Bind(endpoint_); }

 private:
  void Bind(const std::string& endpoint) {
    socket_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::router);
    socket_->set(zmq::sockopt::linger, 0);
    socket_->set(zmq::sockopt::router_mandatory, 1);
    socket_->bind(endpoint);
    endpoint_ = socket_->get(zmq::sockopt::last_endpoint);
  }

  zmq::context_t context_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string endpoint_;
  std::string last_worker_;
  int registrations_ = 0;
  int heartbeats_ = 0;
  bool keep_registrations_ = false;
};

// The farm-worker processes of the tests.
using WorkerProcess = ChildProcess;

}  // namespace testing_support
}  // namespace schedfarm
