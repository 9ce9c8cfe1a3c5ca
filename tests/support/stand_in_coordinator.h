// A minimal coordinator peer for the tests and the benchmark of farm-worker: a
// ROUTER socket on loopback that speaks the real wire code of protocol/wire.h. It
// answers Register with Welcome and Heartbeat with Heartbeat by itself; everything
// else is handed to the caller. Also WorkerProcess, a real farm-worker process
// whose log is kept in a file.
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

// A farm-worker process started with `args`; its stderr (the structured log) goes to a
// file. The destructor kills it if it still runs.
class WorkerProcess {
 public:
  WorkerProcess(const std::string& binary, const std::vector<std::string>& args) {
    std::string log_template =
        (std::filesystem::temp_directory_path() / "farm-worker-log-XXXXXX").string();
    const int log_fd = mkstemp(log_template.data());
    log_path_ = log_template;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(log_fd, STDERR_FILENO);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(log_fd);
  }
  ~WorkerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove(log_path_.c_str());
  }

  pid_t pid() const { return pid_; }
  void Signal(int signal) { kill(pid_, signal); }

  // The exit status (as waitpid reports it) once the process ended within `timeout_ms`.
  std::optional<int> Wait(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The pids of the sandbox children, from the log's sandbox_started event.
  std::vector<pid_t> SandboxPids() const {
    std::vector<pid_t> pids;
    const std::string log = Log();
    const size_t event = log.find("event=sandbox_started");
    if (event == std::string::npos) return pids;
    const size_t at = log.find("pids=", event);
    if (at == std::string::npos) return pids;
    std::stringstream list(log.substr(at + 5, log.find('\n', at) - at - 5));
    for (std::string pid; std::getline(list, pid, ',');) pids.push_back(std::stoi(pid));
    return pids;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string log_path_;
};

// Whether process `pid` exists (and is not a zombie).
inline bool ProcessAlive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

}  // namespace testing_support
}  // namespace schedfarm
