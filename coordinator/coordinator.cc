// The coordinator process: start-up and the loop over its one ROUTER socket. What is
// where in coordinator/:
//   coordinator.cc      this file: the socket, each turn's reads, ticks, dispatch, sends
//   worker_protocol.h   the rules for workers: registration, leases, results, liveness
//   control_api.h       the requests of farmctl and farm-learner
//   farm_state.h        campaigns, workers and leases in memory; recovery.h rebuilds them
//   campaign_run.h      one campaign: its queue, retries, proposals and progress
//   pending_writes.h    each turn's store writes and the replies that wait for them
//   group_commit.h      the writer thread that makes them durable
//   host_audit.h        re-measurements on other hosts and their verdicts
//   metrics.h           the Prometheus metrics
//   main.cc             the flags
#include "coordinator/coordinator.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "common/clock.h"
#include "common/log.h"
#include "coordinator/control_api.h"
#include "coordinator/farm_state.h"
#include "coordinator/group_commit.h"
#include "coordinator/metrics.h"
#include "coordinator/pending_writes.h"
#include "coordinator/recovery.h"
#include "coordinator/worker_protocol.h"
#include "protocol/keepalive.h"
#include "protocol/security.h"
#include "protocol/state_names.h"
#include "storage/store.h"

namespace schedfarm {

namespace {

// Messages taken from the socket per loop turn before the turn's writes are handed over,
// and the time a turn may spend on them (checked after each: one request can take
// milliseconds, a large reply to make), so that a flood of messages does not hold back
// the turn's sends and dispatch.
constexpr int kMaxMessagesPerTurn = 4096;
constexpr std::chrono::milliseconds kMaxReceivingPerTurn{10};
constexpr int kMaxPollMs = 100;

// A frame as a ZMQ message that owns it: no copy, its bytes freed once written out.
zmq::message_t FrameMessage(std::string frame) {
  auto* owned = new std::string(std::move(frame));
  return zmq::message_t(
      owned->data(), owned->size(),
      [](void*, void* hint) { delete static_cast<std::string*>(hint); }, owned);
}

// An endpoint a local client can connect to, for the secure-mode self-test.
std::string ConnectableEndpoint(const std::string& bound) {
  for (const char* any : {"tcp://0.0.0.0:", "tcp://*:"}) {
    if (bound.rfind(any, 0) == 0) return "tcp://127.0.0.1:" + bound.substr(std::string(any).size());
  }
  return bound;
}

}  // namespace

// The process around the rules: start-up (store, recovery, socket, CURVE), the loop
// that reads the ROUTER socket and hands each message to the worker protocol or the
// control API, the hand-over of each turn's writes to the writer thread and the replies
// it releases, and the sends, with a queue per peer whose pipe is full.
class Coordinator::Impl final : public Outbox {
 public:
  explicit Impl(const CoordinatorOptions& options) : options_(options) {}
  ~Impl() override;

  Status Open();
  Status Run(const std::atomic<bool>& stop);

  bool Send(const std::string& peer, std::string frame) override;
  void Forget(const std::string& peer) override;

  CoordinatorOptions options_;
  std::string endpoint_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<GroupCommitter> committer_;
  std::unique_ptr<CoordinatorMetrics> metrics_;  // with --metrics-endpoint only
  std::unique_ptr<WorkerProtocol> protocol_;

 private:
  void HandleFrame(const std::string& peer, std::string_view frame);
  void HandleClient(const std::string& peer, const ClientRequest& request);
  void HandOver();
  void ReleaseWritten(Status* error);
  void FlushQueued();
  struct PeerQueue {
    std::deque<std::string> frames;
    size_t bytes = 0;
  };
  using PeerQueues = std::unordered_map<std::string, PeerQueue>;
  // Drops the peer of `queue`, saying `why`: its queued frames are lost, and `refused`
  // more that were not queued; a worker is dead.
  void DropPeer(PeerQueues::iterator queue, const std::string& why, int64_t refused);
  // The gauges of the metrics, from the campaigns, leases and workers.
  void RefreshMetrics();

  const Clock& clock_ = SystemClock();
  FarmState farm_;
  PendingWrites writes_;
  std::unique_ptr<ControlApi> control_;
  zmq::context_t context_;
  std::unique_ptr<ZapAllowList> zap_;
  std::unique_ptr<zmq::socket_t> router_;
  PeerQueues queued_frames_;
  size_t queued_bytes_ = 0;  // of every peer's queue
  // When the loop last caught up with every peer: a turn emptied the socket, or read a
  // peer twice (the ROUTER fair-queues its peers: every other peer with a message
  // waiting was read in between). Liveness is judged as of then (WorkerProtocol::Tick).
  int64_t caught_up_ms_ = 0;
  int64_t next_metrics_ms_ = 0;
};

Coordinator::Impl::~Impl() {
  committer_.reset();  // writes what was handed over
  router_.reset();
  if (zap_) zap_->Stop();
}

// ---------------------------------------------------------------------------
// Start-up

Status Coordinator::Impl::Open() {
  if (options_.store_path.empty()) return Status::Error("no store directory given");
  if (options_.curve_key.empty() != options_.allow_list.empty()) {
    return Status::Error("secure mode needs both a key pair and an allow-list");
  }
  if (!options_.metrics_endpoint.empty()) {  // before anything is written
    SCHEDFARM_ASSIGN_OR_RETURN(metrics_, CoordinatorMetrics::Start(options_.metrics_endpoint));
  }
  SCHEDFARM_ASSIGN_OR_RETURN(store_, Store::Open(options_.store_path));
  SCHEDFARM_RETURN_IF_ERROR(RestoreFarm(*store_, &farm_));
  if (metrics_) {
    SCHEDFARM_RETURN_IF_ERROR(store_->ScanModels([this](const Model&) {
      ++farm_.models_stored;
      return true;
    }));
  }
  CoordinatorMetrics* metrics = metrics_.get();
  committer_ = std::make_unique<GroupCommitter>(
      *store_, metrics == nullptr ? std::function<void(double)>()
                                  : [metrics](double seconds) { metrics->StoreWrite(seconds); });

  router_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::router);
  router_->set(zmq::sockopt::linger, 0);
  SetTcpKeepalive(*router_);
  router_->set(zmq::sockopt::router_mandatory, 1);
  router_->set(zmq::sockopt::sndhwm, kSendHighWaterMark);
  // What one peer can make the coordinator hold before it reads: two messages waiting in
  // its pipe and one arriving, each at most max_message_bytes. Past that ZMQ stops
  // reading the peer's connection until the loop takes a message: TCP holds the peer
  // back, nothing is dropped, and the other peers' pipes go on. Two, not one: with one,
  // a CURVE connection's handshake fills the pipe and no request gets through.
  router_->set(zmq::sockopt::rcvhwm, 2);
  router_->set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(options_.max_message_bytes) + 1024);
  std::string server_public_key;
  if (!options_.curve_key.empty()) {
    SCHEDFARM_ASSIGN_OR_RETURN(CurveKeyPair keys, ReadKeyPair(options_.curve_key));
    SCHEDFARM_ASSIGN_OR_RETURN(std::vector<std::string> allowed,
                               ReadAllowList(options_.allow_list));
    zap_ = std::make_unique<ZapAllowList>(context_, std::move(allowed));
    SCHEDFARM_RETURN_IF_ERROR(zap_->Start());
    SCHEDFARM_RETURN_IF_ERROR(MakeCurveServer(*router_, keys));
    server_public_key = keys.public_key;
  }
  try {
    router_->bind(options_.endpoint);
  } catch (const zmq::error_t& e) {
    return Status::Error("cannot bind " + options_.endpoint + ": " + e.what());
  }
  endpoint_ = router_->get(zmq::sockopt::last_endpoint);
  if (!server_public_key.empty()) {
    Status enforced = CheckZapEnforced(server_public_key, ConnectableEndpoint(endpoint_));
    if (!enforced.ok()) {
      return enforced.WithContext("secure mode: refusing to start, unknown keys are not rejected");
    }
  }
  protocol_ = std::make_unique<WorkerProtocol>(
      farm_, writes_, *this, clock_,
      WorkerProtocolOptions{options_.heartbeat_interval_ms, options_.liveness, options_.retry,
                            options_.audit},
      metrics_.get());
  control_ = std::make_unique<ControlApi>(farm_, writes_, *store_, clock_);
  LogEvent("info", "coordinator_started",
           {{"endpoint", endpoint_},
            {"metrics_port", std::to_string(metrics_ ? metrics_->port() : 0)},
            {"store", options_.store_path},
            {"secure", server_public_key.empty() ? "no" : "yes"},
            {"campaigns", std::to_string(farm_.campaigns.size())}});
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// The loop

Status Coordinator::Impl::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    const int64_t wait =
        std::clamp<int64_t>(protocol_->next_heartbeat_ms() - clock_.NowMs(), 0, kMaxPollMs);
    zmq::pollitem_t items[] = {{router_->handle(), 0, ZMQ_POLLIN, 0},
                               {nullptr, committer_->notify_fd(), ZMQ_POLLIN, 0}};
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(queued_frames_.empty() ? wait : 1));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) throw;
      continue;  // a signal (SIGTERM sets `stop`)
    }
    const auto turn_start = std::chrono::steady_clock::now();
    if (metrics_) metrics_->TurnStarted();
    int taken = 0;
    std::unordered_set<std::string> peers_read;
    bool peer_read_twice = false;
    for (; taken < kMaxMessagesPerTurn; ++taken) {
      if (taken > 0 && std::chrono::steady_clock::now() - turn_start > kMaxReceivingPerTurn) {
        taken = kMaxMessagesPerTurn;  // the rest waits, as past the count
        break;
      }
      zmq::message_t peer;
      zmq::message_t body;
      if (!router_->recv(peer, zmq::recv_flags::dontwait)) break;
      if (!peer.more()) continue;
      if (!router_->recv(body, zmq::recv_flags::dontwait)) break;
      bool extra = body.more();
      while (extra) {  // a well-formed peer sends one body frame
        zmq::message_t rest;
        if (!router_->recv(rest, zmq::recv_flags::dontwait)) break;
        extra = rest.more();
      }
      std::string from = peer.to_string();
      peer_read_twice |= !peers_read.insert(from).second;
      HandleFrame(from, body.to_string_view());
    }
    if (taken < kMaxMessagesPerTurn || peer_read_twice) caught_up_ms_ = clock_.NowMs();
    protocol_->Tick(caught_up_ms_);
    if (metrics_ && clock_.NowMs() >= next_metrics_ms_) {
      next_metrics_ms_ = clock_.NowMs() + 1000;
      RefreshMetrics();
    }
    // Freed credits are fed from the ready queue first, and the results go to the
    // writer, which syncs them while the loop proposes the candidates that replace them.
    protocol_->Dispatch();
    HandOver();
    protocol_->Propose();
    protocol_->Dispatch();
    HandOver();
    Status store_error;
    ReleaseWritten(&store_error);
    if (!store_error.ok()) return store_error;
    FlushQueued();
    if (metrics_) metrics_->TurnEnded();
  }
  HandOver();
  while (committer_->busy()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  LogEvent("info", "coordinator_stats",
           {{"results", std::to_string(protocol_->results_recorded())},
            {"leases", std::to_string(protocol_->leases_sent())},
            {"store_writes", std::to_string(committer_->writes())},
            {"store_records", std::to_string(committer_->records())}});
  return Status::Ok();
}

void Coordinator::Impl::HandleFrame(const std::string& peer, std::string_view frame) {
  const DecodedFrame decoded = DecodeEnvelope(frame, options_.max_message_bytes);
  if (!decoded.ok()) {
    LogEvent("warn", "refused_message",
             {{"peer_bytes", std::to_string(frame.size())}, {"error", decoded.error}});
    if (AnswerRefusal(decoded)) Send(peer, EncodeEnvelope(MakeErrorReply(decoded.error)));
    return;
  }
  if (decoded.envelope.body_case() == Envelope::kClientRequest) {
    HandleClient(peer, decoded.envelope.client_request());
  } else {
    protocol_->HandleMessage(peer, decoded.envelope);
  }
}

void Coordinator::Impl::HandleClient(const std::string& peer, const ClientRequest& request) {
  bool deferred = false;
  Envelope envelope;
  *envelope.mutable_client_reply() = control_->Handle(request, &deferred);
  if (deferred) {
    writes_.DeferToClient(peer, envelope);
  } else {
    Send(peer, EncodeEnvelope(envelope));
  }
}

void Coordinator::Impl::RefreshMetrics() {
  CoordinatorMetrics::Snapshot snapshot;
  const int64_t now = clock_.NowMs();
  for (auto& [id, run] : farm_.campaigns) {
    const Campaign& campaign = run->campaign();
    ++snapshot.campaigns_by_state[CampaignStateText(campaign.state())];
    if (!Active(campaign.state())) continue;
    snapshot.campaigns.push_back({id, campaign.counters().finished(), campaign.budget(),
                                  static_cast<int64_t>(run->waiting()),
                                  run->ResultsPerSecond(now)});
  }
  snapshot.leases_in_flight = static_cast<int64_t>(farm_.leases.size());
  for (const auto& [id, worker] : farm_.workers) {
    ++snapshot.workers_by_state[WorkerStateText(StateOf(worker))];
  }
  snapshot.models = farm_.models_stored;
  metrics_->Refresh(snapshot);
}

// ---------------------------------------------------------------------------
// Writes and sends

void Coordinator::Impl::HandOver() {
  Store::Batch batch;
  std::vector<DeferredReply> replies;
  if (writes_.Take(farm_, &batch, &replies)) committer_->Add(std::move(batch), std::move(replies));
}

void Coordinator::Impl::ReleaseWritten(Status* error) {
  for (DeferredReply& reply : committer_->TakeWritten(error)) {
    if (!reply.to_worker) {
      Send(reply.to, std::move(reply.frame));
      continue;
    }
    auto it = farm_.workers.find(reply.to);
    // A worker that is gone resends the result when it registers again.
    if (it != farm_.workers.end() && it->second.alive) {
      Send(it->second.peer, std::move(reply.frame));
    } else if (metrics_) {
      metrics_->FramesDropped("worker_dead", 1);
    }
    if (metrics_ && reply.received_ms > 0) {
      metrics_->ResultAcknowledged((clock_.NowMs() - reply.received_ms) / 1000.0);
    }
  }
}

bool Coordinator::Impl::Send(const std::string& peer, std::string frame) {
  auto queued = queued_frames_.find(peer);
  if (queued == queued_frames_.end()) {
    try {
      zmq::message_t id(peer.data(), peer.size());
      // With ROUTER_MANDATORY an unroutable peer throws EHOSTUNREACH, and a full pipe
      // refuses the routing frame (EAGAIN): the frame then waits in the peer's queue.
      if (router_->send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        router_->send(FrameMessage(std::move(frame)), zmq::send_flags::none);
        return true;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EHOSTUNREACH) LogEvent("warn", "send_failed", {{"error", e.what()}});
      if (metrics_) {
        metrics_->FramesDropped(e.num() == EHOSTUNREACH ? "unroutable" : "send_error", 1);
      }
      return false;
    }
    queued = queued_frames_.emplace(peer, PeerQueue()).first;
  }
  PeerQueue& queue = queued->second;
  if (queue.frames.size() >= options_.max_queued_frames_per_peer) {
    DropPeer(queued, "outbound queue full: " + std::to_string(queue.frames.size()) + " frames", 1);
    return false;
  }
  if (queue.bytes + frame.size() > options_.max_queued_bytes_per_peer) {
    DropPeer(queued,
             "outbound queue full: " + std::to_string(queue.bytes + frame.size()) + " bytes", 1);
    return false;
  }
  queue.bytes += frame.size();
  queued_bytes_ += frame.size();
  queue.frames.push_back(std::move(frame));
  while (queued_bytes_ > options_.max_queued_bytes) {
    auto largest = queued_frames_.begin();
    for (auto it = queued_frames_.begin(); it != queued_frames_.end(); ++it) {
      if (it->second.bytes > largest->second.bytes) largest = it;
    }
    const bool this_peer = largest->first == peer;
    DropPeer(largest,
             "outbound queues full: " + std::to_string(queued_bytes_) +
                 " bytes in all, the largest queue dropped",
             0);
    if (this_peer) return false;
  }
  return true;
}

void Coordinator::Impl::DropPeer(PeerQueues::iterator queue, const std::string& why,
                                 int64_t refused) {
  const std::string peer = queue->first;
  const int64_t frames = static_cast<int64_t>(queue->second.frames.size());
  LogEvent("warn", "peer_dropped",
           {{"why", why},
            {"frames", std::to_string(frames)},
            {"bytes", std::to_string(queue->second.bytes)}});
  if (metrics_) metrics_->PeerDropped(frames + refused);
  queued_bytes_ -= queue->second.bytes;
  queued_frames_.erase(queue);
  protocol_->PeerDropped(peer, "does not read its messages");
}

void Coordinator::Impl::Forget(const std::string& peer) {
  auto queued = queued_frames_.find(peer);
  if (queued == queued_frames_.end()) return;
  if (metrics_) {
    metrics_->FramesDropped("worker_dead", static_cast<int64_t>(queued->second.frames.size()));
  }
  queued_bytes_ -= queued->second.bytes;
  queued_frames_.erase(queued);
}

void Coordinator::Impl::FlushQueued() {
  for (auto it = queued_frames_.begin(); it != queued_frames_.end();) {
    PeerQueue& queue = it->second;
    bool gone = false;
    while (!queue.frames.empty()) {
      try {
        zmq::message_t id(it->first.data(), it->first.size());
        if (!router_->send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) break;
        queue.bytes -= queue.frames.front().size();
        queued_bytes_ -= queue.frames.front().size();
        router_->send(FrameMessage(std::move(queue.frames.front())), zmq::send_flags::none);
        queue.frames.pop_front();
      } catch (const zmq::error_t&) {
        gone = true;
        if (metrics_) {
          metrics_->FramesDropped("unroutable", static_cast<int64_t>(queue.frames.size()));
        }
        break;
      }
    }
    if (gone || queue.frames.empty()) {
      queued_bytes_ -= queue.bytes;
      it = queued_frames_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---------------------------------------------------------------------------

Coordinator::Coordinator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Coordinator::~Coordinator() = default;

StatusOr<std::unique_ptr<Coordinator>> Coordinator::Start(const CoordinatorOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  SCHEDFARM_RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<Coordinator>(new Coordinator(std::move(impl)));
}

const std::string& Coordinator::endpoint() const { return impl_->endpoint_; }

int Coordinator::metrics_port() const {
  return impl_->metrics_ ? impl_->metrics_->port() : 0;
}

Status Coordinator::Run(const std::atomic<bool>& stop) { return impl_->Run(stop); }

CoordinatorStats Coordinator::stats() const {
  CoordinatorStats stats;
  if (impl_->protocol_) {
    stats.results_recorded = impl_->protocol_->results_recorded();
    stats.leases_sent = impl_->protocol_->leases_sent();
  }
  if (impl_->committer_) {
    stats.store_writes = impl_->committer_->writes();
    stats.store_records = impl_->committer_->records();
  }
  return stats;
}

}  // namespace schedfarm
