// Workers that come and go, against the real farm-coordinator: simulated workers
// (simulated_worker.h) on a thread of their own, a fixed number connected at any time.
// Each registers, heartbeats and answers its leases at once. With churn on, after a
// random number of leases a worker vanishes holding its last lease unanswered: half
// the time it closes its socket (its connection goes), half the time it goes silent
// with its socket open (it reads, answers and heartbeats no more, and closes after
// twice the coordinator's liveness window); a new worker under a new id connects in its
// place at once. The counts say what the workers saw.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "protocol/wire.h"
#include "tests/support/simulated_worker.h"

namespace schedfarm {
namespace testing_support {

struct ChurnSettings {
  std::string endpoint;
  int workers = 16;  // connected at any time
  int credits = 2;
  // The coordinator's --heartbeat-ms and --liveness.
  int heartbeat_ms = kHeartbeatIntervalMs;
  int liveness = kLiveness;
  // A worker vanishes after 1 to this many leases; 0: never (no churn).
  int max_leases_per_life = 40;
};

struct ChurnCounts {
  std::atomic<int64_t> leases{0};     // leases received
  std::atomic<int64_t> results{0};    // results sent
  std::atomic<int64_t> acks{0};       // durable acknowledgements received
  std::atomic<int64_t> workers{0};    // workers started
  std::atomic<int64_t> closed{0};     // vanished by closing their socket
  std::atomic<int64_t> silenced{0};   // vanished by going silent
  std::atomic<int64_t> abandoned{0};  // leases held unanswered by vanished workers
  // Disconnects received (the coordinator no longer knew the worker), sends the
  // socket refused, and ErrorReplies or frames that did not decode.
  std::atomic<int64_t> disconnects{0};
  std::atomic<int64_t> refused_sends{0};
  std::atomic<int64_t> bad_frames{0};
};

class ChurnFarm {
 public:
  explicit ChurnFarm(ChurnSettings settings) : settings_(std::move(settings)) {
    context_.set(zmq::ctxopt::max_sockets, 8192);
    thread_ = std::thread([this] { Run(); });
  }
  ~ChurnFarm() {
    stop_ = true;
    thread_.join();
  }
  ChurnFarm(const ChurnFarm&) = delete;
  ChurnFarm& operator=(const ChurnFarm&) = delete;

  const ChurnCounts& counts() const { return counts_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Member {
    std::unique_ptr<SimulatedWorker> worker;
    int leases_left = 0;  // before it vanishes; 0 with churn off
    Clock::time_point next_heartbeat;
    Clock::time_point close_at;  // a silent one's
    bool vanished = false;
  };

  void Run() {
    while (static_cast<int>(live_.size()) < settings_.workers) StartWorker();
    std::vector<zmq::pollitem_t> items;
    while (!stop_) {
      items.clear();
      for (Member& m : live_) items.push_back({m.worker->socket().handle(), 0, ZMQ_POLLIN, 0});
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(5));
      for (size_t i = 0; i < items.size(); ++i) {
        if (items[i].revents & ZMQ_POLLIN) Drain(live_[i]);
      }
      const Clock::time_point now = Clock::now();
      for (Member& m : live_) {
        if (m.vanished || now < m.next_heartbeat) continue;
        m.next_heartbeat += std::chrono::milliseconds(settings_.heartbeat_ms);
        Sent(m.worker->SendHeartbeat());
      }
      // The vanished leave the live ones (the silent to close later), new ones come.
      for (Member& m : live_) {
        if (m.vanished && !m.worker->closed()) silent_.push_back(std::move(m));
      }
      live_.erase(
          std::remove_if(live_.begin(), live_.end(), [](const Member& m) { return m.vanished; }),
          live_.end());
      while (static_cast<int>(live_.size()) < settings_.workers) StartWorker();
      silent_.erase(std::remove_if(silent_.begin(), silent_.end(),
                                   [&](const Member& m) { return now >= m.close_at; }),
                    silent_.end());
    }
  }

  void StartWorker() {
    Member m;
    const std::string id = "churn-" + std::to_string(counts_.workers++);
    m.worker = std::make_unique<SimulatedWorker>(context_, settings_.endpoint, id,
                                                 settings_.credits, std::to_string(rng_()));
    if (settings_.max_leases_per_life > 0) {
      m.leases_left = 1 + static_cast<int>(rng_() % settings_.max_leases_per_life);
    }
    // Heartbeats spread over the interval, as independent workers send them.
    m.next_heartbeat = Clock::now() + std::chrono::milliseconds(rng_() % settings_.heartbeat_ms);
    Sent(m.worker->SendRegister());
    live_.push_back(std::move(m));
  }

  // Counts a send the socket refused.
  bool Sent(bool sent) {
    if (!sent) ++counts_.refused_sends;
    return sent;
  }

  // Reads every message waiting for `m`, answering as they come, until it vanishes.
  void Drain(Member& m) {
    while (!m.vanished) {
      std::optional<DecodedFrame> frame = m.worker->Receive();
      if (!frame) return;
      if (!frame->ok()) {
        ++counts_.bad_frames;
        continue;
      }
      Envelope& envelope = frame->envelope;
      switch (envelope.body_case()) {
        case Envelope::kLease:
          ++counts_.leases;
          if (m.leases_left > 0 && --m.leases_left == 0) {
            Vanish(m);
            return;
          }
          if (Sent(m.worker->SendResult(envelope.mutable_lease(), NextRuntime()))) {
            ++counts_.results;
          }
          break;
        case Envelope::kAck:
          if (envelope.ack().durable()) ++counts_.acks;
          break;
        case Envelope::kDisconnect:
          ++counts_.disconnects;
          Sent(m.worker->SendRegister());
          break;
        case Envelope::kError:
          ++counts_.bad_frames;
          break;
        default:
          break;  // welcome, heartbeats
      }
    }
  }

  // `m` vanishes with the lease it just received (its earlier ones are answered).
  void Vanish(Member& m) {
    m.vanished = true;
    ++counts_.abandoned;
    if (rng_() % 2 == 0) {
      m.worker->Close();
      ++counts_.closed;
      return;
    }
    ++counts_.silenced;
    m.close_at =
        Clock::now() + 2 * std::chrono::milliseconds(settings_.heartbeat_ms) * settings_.liveness;
  }

  double NextRuntime() { return 1e-3 * (1 + static_cast<double>(rng_() % 997) / 997); }

  ChurnSettings settings_;
  zmq::context_t context_;
  std::vector<Member> live_;
  std::vector<Member> silent_;
  std::mt19937_64 rng_{1};
  ChurnCounts counts_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace testing_support
}  // namespace schedfarm
