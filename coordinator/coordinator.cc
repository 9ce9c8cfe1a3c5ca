#include "coordinator/coordinator.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "common/log.h"
#include "common/sha256.h"
#include "coordinator/group_commit.h"
#include "coordinator/metrics.h"
#include "protocol/security.h"
#include "protocol/state_names.h"
#include "storage/keys.h"
#include "storage/store.h"

namespace schedfarm {

namespace {

// Messages taken from the socket per loop turn before the turn's writes are handed over,
// and the time a turn may spend on them (checked every 64), so that a flood of messages
// does not hold back the turn's sends and dispatch.
constexpr int kMaxMessagesPerTurn = 4096;
constexpr std::chrono::milliseconds kMaxReceivingPerTurn{10};
constexpr int kMaxPollMs = 100;
// Candidates kept ready per credit of the connected workers (and at least this many).
constexpr size_t kReadyPerCredit = 2;
constexpr size_t kMinReady = 32;
constexpr int kMaxCredits = 1024;
constexpr int kDefaultExportRows = 500;
constexpr int kMaxExportRows = 5000;
constexpr int kMaxBestK = 100;
constexpr size_t kRememberedControlReplies = 1000;

bool Active(CampaignState state) { return state == CAMPAIGN_RUNNING || state == CAMPAIGN_PAUSED; }

std::string Slug(const std::string& name) {
  std::string slug;
  for (char c : name) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '.';
    slug += keep ? c : '-';
  }
  return slug.empty() ? "campaign" : slug.substr(0, 48);
}

// An endpoint a local client can connect to, for the secure-mode self-test.
std::string ConnectableEndpoint(const std::string& bound) {
  for (const char* any : {"tcp://0.0.0.0:", "tcp://*:"}) {
    if (bound.rfind(any, 0) == 0) return "tcp://127.0.0.1:" + bound.substr(std::string(any).size());
  }
  return bound;
}

// The encoded Envelope of a Lease. The candidate, pipeline and settings are lent to
// the envelope for its serialization instead of copied: this runs for every result.
std::string EncodeLease(const std::string& lease_id, const Candidate& candidate,
                        const PipelineSpec& pipeline, const MeasurementSettings& settings) {
  Envelope envelope;
  envelope.set_version(kProtocolVersion);
  Lease* lease = envelope.mutable_lease();
  lease->set_lease_id(lease_id);
  lease->unsafe_arena_set_allocated_candidate(const_cast<Candidate*>(&candidate));
  lease->unsafe_arena_set_allocated_pipeline(const_cast<PipelineSpec*>(&pipeline));
  lease->unsafe_arena_set_allocated_settings(const_cast<MeasurementSettings*>(&settings));
  std::string frame = envelope.SerializeAsString();
  lease->unsafe_arena_release_candidate();
  lease->unsafe_arena_release_pipeline();
  lease->unsafe_arena_release_settings();
  return frame;
}

}  // namespace

class Coordinator::Impl {
 public:
  explicit Impl(const CoordinatorOptions& options) : options_(options) {}
  ~Impl();

  Status Open();
  Status Run(const std::atomic<bool>& stop);

  CoordinatorOptions options_;
  std::string endpoint_;
  std::atomic<int64_t> results_recorded_{0};
  std::atomic<int64_t> leases_sent_{0};
  std::unique_ptr<Store> store_;
  std::unique_ptr<GroupCommitter> committer_;
  std::unique_ptr<CoordinatorMetrics> metrics_;  // with --metrics-endpoint only

 private:
  struct Worker {
    std::string id;
    std::string peer;  // routing id of its connection, empty when dead
    std::string instance;
    WorkerRecord record;
    int credits = 0;
    std::unordered_set<std::string> leases;
    int64_t last_heard_ms = 0;
    bool alive = false;
    bool left = false;  // disconnected on its own (a drained worker)
  };
  struct LeaseInfo {
    std::string campaign;
    std::string pipeline_id;
    std::string slot;  // store_keys::CandidateSlot: the schedule hash and the repeat
    std::string worker_id;
    int64_t sent_ms = 0;
  };

  Status Restore();
  void HandleFrame(const std::string& peer, std::string_view frame);
  void HandleRegister(const std::string& peer, const Register& reg);
  void HandleResult(Worker& worker, const Measurement& measurement);
  void HandleLeaseRefused(Worker& worker, const ErrorReply& error);
  void HandleClient(const std::string& peer, const ClientRequest& request);
  ClientReply HandleSubmit(const ClientRequest& request, bool* deferred);
  ClientReply HandleControl(const ClientRequest& request, bool* deferred);
  ClientReply HandleStatus(const StatusRequest& request);
  ClientReply HandleWorkers();
  ClientReply HandleBest(const BestRequest& request);
  ClientReply HandleExport(const ExportRequest& request);
  ClientReply HandlePropose(const ProposeCandidates& request);
  ClientReply HandlePipelines(const CampaignRef& request);
  ClientReply HandleStoreModel(const StoreModel& request, bool* deferred);
  ClientReply HandleModels(const ModelsRequest& request);
  ClientReply HandleStoreValueRound(const ValueRound& round, bool* deferred);
  ClientReply HandleValueRounds(const CampaignRef& request);
  ClientReply HandleCandidates(const CandidatesRequest& request);
  ClientReply HandleComplete(const CampaignRef& request, bool* deferred);
  ClientReply HandleBackup(const BackupRequest& request);

  Worker* WorkerOfPeer(const std::string& peer);
  static WorkerState StateOf(const Worker& worker);
  void WorkerDead(Worker& worker, const std::string& why);
  void ReleaseLease(const std::string& lease_id, MeasurementStatus status, const std::string& why);
  void Tick(int64_t now_ms);
  void Propose(int64_t now_ms);
  void Dispatch(int64_t now_ms);
  void FinishCampaign(CampaignRun& run, CampaignState state, const std::string& why);
  // A running campaign whose DoneReason is set becomes DONE.
  void FinishIfDone(CampaignRun& run);
  void AddEvent(const std::string& kind, const std::string& campaign, const std::string& worker,
                const std::string& lease, const std::string& text);
  void HandOver();
  void ReleaseWritten(Status* error);

  // False when the peer is unreachable or was dropped for not reading.
  bool Send(const std::string& peer, const Envelope& envelope);
  bool SendFrame(const std::string& peer, std::string frame);
  void FlushQueued();
  // `received_ms`: when the result an Ack acknowledges arrived, for the metrics.
  void DeferToWorker(const std::string& worker_id, const Envelope& envelope,
                     int64_t received_ms = 0);
  // The gauges of the metrics, from the campaigns, leases and workers.
  void RefreshMetrics(int64_t now_ms);
  void DeferToClient(const std::string& peer, const Envelope& envelope);

  zmq::context_t context_;
  std::unique_ptr<ZapAllowList> zap_;
  std::unique_ptr<zmq::socket_t> router_;

  std::map<std::string, std::unique_ptr<CampaignRun>> campaigns_;
  std::vector<std::string> campaign_order_;  // round-robin order of dispatch
  size_t next_campaign_ = 0;
  std::unordered_map<std::string, Worker> workers_;
  std::unordered_map<std::string, std::string> worker_of_peer_;
  std::unordered_map<std::string, LeaseInfo> leases_;
  std::unordered_set<std::string> hungry_;  // alive workers with fewer leases than credits
  std::unordered_map<std::string, std::deque<std::string>> queued_frames_;
  // Replies to recent pause, resume, cancel and backup requests by request id, so that a
  // client's retry gets the first outcome.
  std::unordered_map<std::string, ClientReply> control_replies_;
  std::deque<std::string> control_reply_order_;

  // This turn's writes and the replies that wait for them.
  Store::Batch batch_;
  std::vector<DeferredReply> deferred_;
  std::unordered_set<std::string> dirty_campaigns_;
  // Workers whose record changed. A worker's result counts are written in the batch of
  // the results they count, so after any crash they agree with the store.
  std::unordered_set<std::string> dirty_workers_;
  // When the loop last caught up with every peer: a turn emptied the socket, or read a
  // peer twice (the ROUTER fair-queues its peers: every other peer with a message
  // waiting was read in between). A worker not heard from for the liveness window
  // before then is silent, not behind a backlog; while the loop does not catch up,
  // nobody is declared dead.
  int64_t caught_up_ms_ = 0;

  std::string lease_prefix_;
  uint64_t next_lease_ = 1;
  int64_t last_tick_ms_ = 0;
  int64_t next_metrics_ms_ = 0;
  int64_t models_stored_ = 0;  // model versions in the store, for the metrics
  int64_t next_heartbeat_ms_ = 0;
  bool dispatch_needed_ = true;
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
  SCHEDFARM_RETURN_IF_ERROR(Restore());
  if (metrics_) {
    SCHEDFARM_RETURN_IF_ERROR(store_->ScanModels([this](const Model&) {
      ++models_stored_;
      return true;
    }));
  }
  CoordinatorMetrics* metrics = metrics_.get();
  committer_ = std::make_unique<GroupCommitter>(
      *store_, metrics == nullptr ? std::function<void(double)>()
                                  : [metrics](double seconds) { metrics->StoreWrite(seconds); });

  router_ = std::make_unique<zmq::socket_t>(context_, zmq::socket_type::router);
  router_->set(zmq::sockopt::linger, 0);
  router_->set(zmq::sockopt::router_mandatory, 1);
  router_->set(zmq::sockopt::sndhwm, 10000);
  router_->set(zmq::sockopt::rcvhwm, 100000);
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
  const int64_t now = UnixMillis();
  char prefix[32];
  snprintf(prefix, sizeof(prefix), "%llx-", static_cast<unsigned long long>(now));
  lease_prefix_ = prefix;
  last_tick_ms_ = now;
  LogEvent("info", "coordinator_started",
           {{"endpoint", endpoint_},
            {"metrics_port", std::to_string(metrics_ ? metrics_->port() : 0)},
            {"store", options_.store_path},
            {"secure", server_public_key.empty() ? "no" : "yes"},
            {"campaigns", std::to_string(campaigns_.size())}});
  return Status::Ok();
}

Status Coordinator::Impl::Restore() {
  std::vector<Campaign> stored;
  SCHEDFARM_RETURN_IF_ERROR(store_->ScanCampaigns([&](const Campaign& campaign) {
    stored.push_back(campaign);
    return true;
  }));
  for (Campaign& campaign : stored) {
    const std::string id = campaign.id();
    SCHEDFARM_ASSIGN_OR_RETURN(CampaignConfig config,
                               CampaignConfigFromJson(campaign.config_json()));
    std::vector<PipelineSpec> pipelines;
    for (const std::string& pipeline_id : campaign.pipeline_ids()) {
      SCHEDFARM_ASSIGN_OR_RETURN(std::optional<PipelineSpec> spec,
                                 store_->GetPipeline(pipeline_id));
      if (!spec)
        return Status::Error("campaign " + id + ": pipeline " + pipeline_id + " is missing");
      pipelines.push_back(std::move(*spec));
    }
    SCHEDFARM_ASSIGN_OR_RETURN(
        std::unique_ptr<CampaignRun> run,
        CampaignRun::Create(std::move(campaign), std::move(config), std::move(pipelines)));
    SCHEDFARM_RETURN_IF_ERROR(store_->ScanCandidates(id, [&](const CandidateRecord& record) {
      run->Restore(record);
      return true;
    }));
    SCHEDFARM_RETURN_IF_ERROR(store_->ScanMeasurements(id, 0, [&](const StoredMeasurement& m) {
      run->RestoreMeasurement(m.measurement);
      return true;
    }));
    LogEvent("info", "campaign_restored",
             {{"campaign", id},
              {"state", CampaignState_Name(run->campaign().state())},
              {"finished", std::to_string(run->campaign().counters().finished())},
              {"waiting", std::to_string(run->waiting())}});
    campaign_order_.push_back(id);
    campaigns_[id] = std::move(run);
  }
  return store_->ScanWorkers([&](const WorkerRecord& record) {
    Worker& worker = workers_[record.host().worker_id()];
    worker.id = record.host().worker_id();
    worker.record = record;
    return true;
  });
}

// ---------------------------------------------------------------------------
// The loop

Status Coordinator::Impl::Run(const std::atomic<bool>& stop) {
  while (!stop.load()) {
    const int64_t now = UnixMillis();
    const int64_t wait = std::clamp<int64_t>(next_heartbeat_ms_ - now, 0, kMaxPollMs);
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
      if (taken % 64 == 63 &&
          std::chrono::steady_clock::now() - turn_start > kMaxReceivingPerTurn) {
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
    if (taken < kMaxMessagesPerTurn || peer_read_twice) caught_up_ms_ = UnixMillis();
    Tick(UnixMillis());
    // Freed credits are fed from the ready queue first, and the results go to the
    // writer, which syncs them while the loop proposes the candidates that replace them.
    Dispatch(UnixMillis());
    HandOver();
    Propose(UnixMillis());
    Dispatch(UnixMillis());
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
           {{"results", std::to_string(results_recorded_.load())},
            {"leases", std::to_string(leases_sent_.load())},
            {"store_writes", std::to_string(committer_->writes())},
            {"store_records", std::to_string(committer_->records())}});
  return Status::Ok();
}

void Coordinator::Impl::HandleFrame(const std::string& peer, std::string_view frame) {
  const DecodedFrame decoded = DecodeEnvelope(frame, options_.max_message_bytes);
  if (!decoded.ok()) {
    LogEvent("warn", "refused_message",
             {{"peer_bytes", std::to_string(frame.size())}, {"error", decoded.error}});
    if (AnswerRefusal(decoded)) Send(peer, MakeErrorReply(decoded.error));
    return;
  }
  const Envelope& envelope = decoded.envelope;
  switch (envelope.body_case()) {
    case Envelope::kRegister:
      HandleRegister(peer, envelope.register_());
      return;
    case Envelope::kClientRequest:
      HandleClient(peer, envelope.client_request());
      return;
    default:
      break;
  }
  Worker* worker = WorkerOfPeer(peer);
  if (worker == nullptr) {
    // A worker this process does not know (it restarted, or declared it dead).
    if (envelope.body_case() != Envelope::kDisconnect && envelope.body_case() != Envelope::kError) {
      Send(peer, MakeDisconnect("unknown worker: register again"));
    }
    return;
  }
  worker->last_heard_ms = UnixMillis();
  switch (envelope.body_case()) {
    case Envelope::kHeartbeat:
      return;
    case Envelope::kWorkRequest:
      worker->credits = std::clamp(envelope.work_request().credits(), 0, kMaxCredits);
      if (static_cast<int>(worker->leases.size()) < worker->credits) {
        hungry_.insert(worker->id);
        dispatch_needed_ = true;
      }
      return;
    case Envelope::kResult:
      HandleResult(*worker, envelope.result().measurement());
      return;
    case Envelope::kError:
      HandleLeaseRefused(*worker, envelope.error());
      return;
    case Envelope::kDisconnect:
      worker->left = true;
      WorkerDead(*worker, "disconnected: " + envelope.disconnect().reason());
      return;
    default:
      Send(peer, MakeErrorReply(std::string("a coordinator does not take ") + BodyName(envelope)));
      return;
  }
}

WorkerState Coordinator::Impl::StateOf(const Worker& worker) {
  if (!worker.alive) return WORKER_DEAD;
  if (worker.credits == 0) return WORKER_DRAINING;
  return worker.leases.empty() ? WORKER_IDLE : WORKER_BUSY;
}

Coordinator::Impl::Worker* Coordinator::Impl::WorkerOfPeer(const std::string& peer) {
  auto it = worker_of_peer_.find(peer);
  if (it == worker_of_peer_.end()) return nullptr;
  return &workers_[it->second];
}

void Coordinator::Impl::HandleRegister(const std::string& peer, const Register& reg) {
  const std::string& id = reg.host().worker_id();
  if (id.empty()) {
    Send(peer, MakeErrorReply("register: host.worker_id is empty"));
    return;
  }
  const int64_t now = UnixMillis();
  Worker& worker = workers_[id];
  const bool restarted = !worker.instance.empty() && worker.instance != reg.instance();
  if (restarted && !worker.leases.empty()) {
    // Its leases died with the previous process.
    const std::vector<std::string> lost(worker.leases.begin(), worker.leases.end());
    for (const std::string& lease : lost) {
      ReleaseLease(lease, WORKER_LOST, "worker " + id + " restarted");
    }
  }
  if (!worker.peer.empty() && worker.peer != peer) worker_of_peer_.erase(worker.peer);
  worker.id = id;
  worker.peer = peer;
  worker.instance = reg.instance();
  worker.credits = std::clamp(reg.credits(), 0, kMaxCredits);
  worker.last_heard_ms = now;
  worker.alive = true;
  worker.left = false;
  *worker.record.mutable_host() = reg.host();
  worker.record.set_registered_unix_ms(now);
  worker.record.set_last_seen_unix_ms(now);
  worker_of_peer_[peer] = id;
  dirty_workers_.insert(id);
  if (static_cast<int>(worker.leases.size()) < worker.credits) hungry_.insert(id);
  dispatch_needed_ = true;
  AddEvent("worker_registered", "", id, "",
           reg.host().hostname() + " cores=" + std::to_string(reg.host().cores()) +
               " credits=" + std::to_string(worker.credits));
  LogEvent("info", "worker_registered",
           {{"worker", id},
            {"credits", std::to_string(worker.credits)},
            {"leases", std::to_string(worker.leases.size())}});
  Envelope welcome;
  welcome.mutable_welcome()->set_worker_id(id);
  welcome.mutable_welcome()->set_heartbeat_interval_ms(options_.heartbeat_interval_ms);
  Send(peer, welcome);
}

void Coordinator::Impl::HandleResult(Worker& worker, const Measurement& measurement) {
  const std::string& lease_id = measurement.lease_id();
  Envelope ack;
  ack.mutable_ack()->set_lease_id(lease_id);
  ack.mutable_ack()->set_durable(true);
  // The lease is done for this worker whatever becomes of the result.
  const int64_t received = UnixMillis();
  double lease_seconds = -1;
  if (worker.leases.erase(lease_id) > 0) {
    auto lease = leases_.find(lease_id);
    if (lease != leases_.end()) lease_seconds = (received - lease->second.sent_ms) / 1000.0;
    leases_.erase(lease_id);
    hungry_.insert(worker.id);
    dispatch_needed_ = true;
  }
  auto found = campaigns_.find(measurement.candidate().campaign());
  if (found == campaigns_.end()) {
    LogEvent("warn", "result_for_unknown_campaign",
             {{"worker", worker.id},
              {"lease", lease_id},
              {"campaign", measurement.candidate().campaign()}});
    DeferToWorker(worker.id, ack);  // nothing to record: the worker may forget it
    return;
  }
  CampaignRun& run = *found->second;
  const int64_t now = UnixMillis();
  CandidateRecord record;
  const CampaignRun::ResultOutcome outcome =
      run.RecordResult(measurement, options_.retry, now, &record);
  if (outcome == CampaignRun::ResultOutcome::kRecorded) {
    if (measurement.host().worker_id().empty()) {
      Measurement stored = measurement;
      *stored.mutable_host() = worker.record.host();
      batch_.AddMeasurement(stored);
    } else {
      batch_.AddMeasurement(measurement);
    }
    batch_.PutCandidate(record);
    dirty_campaigns_.insert(run.id());
    if (measurement.status() == OK) {
      worker.record.set_results_ok(worker.record.results_ok() + 1);
    } else {
      (*worker.record.mutable_failures_by_status())[MeasurementStatus_Name(measurement.status())]++;
    }
    worker.record.set_last_seen_unix_ms(now);
    dirty_workers_.insert(worker.id);
    ++results_recorded_;
    if (metrics_) metrics_->ResultRecorded(MeasurementStatus_Name(measurement.status()), lease_seconds);
    if (record.state() == CANDIDATE_QUARANTINED) {
      AddEvent("quarantined", run.id(), worker.id, lease_id,
               record.candidate().pipeline_id() + " " + record.candidate().schedule_hash() +
                   " after " + std::to_string(record.failures()) + " failures, last " +
                   MeasurementStatus_Name(record.last_status()));
    }
    FinishIfDone(run);
  } else {
    AddEvent(outcome == CampaignRun::ResultOutcome::kDuplicate ? "duplicate_result"
                                                               : "result_for_unknown_candidate",
             run.id(), worker.id, lease_id,
             measurement.candidate().pipeline_id() + " " + measurement.candidate().schedule_hash() +
                 " " + MeasurementStatus_Name(measurement.status()));
  }
  DeferToWorker(worker.id, ack, received);
}

void Coordinator::Impl::HandleLeaseRefused(Worker& worker, const ErrorReply& error) {
  LogEvent("warn", "lease_refused",
           {{"worker", worker.id}, {"lease", error.lease_id()}, {"error", error.error()}});
  if (error.lease_id().empty() || worker.leases.erase(error.lease_id()) == 0) return;
  hungry_.insert(worker.id);
  dispatch_needed_ = true;
  ReleaseLease(error.lease_id(), MEASUREMENT_STATUS_UNSPECIFIED,
               "worker " + worker.id + " refused the lease: " + error.error());
}

// A lease ends without a result: the candidate counts a failed attempt.
void Coordinator::Impl::ReleaseLease(const std::string& lease_id, MeasurementStatus status,
                                     const std::string& why) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return;
  const LeaseInfo lease = it->second;
  leases_.erase(it);
  auto holder = workers_.find(lease.worker_id);
  if (holder != workers_.end()) holder->second.leases.erase(lease_id);
  auto found = campaigns_.find(lease.campaign);
  if (found == campaigns_.end()) return;
  CampaignRun& run = *found->second;
  std::optional<CandidateRecord> record = run.FailLease(
      lease.pipeline_id, lease.slot, lease_id, status, why, options_.retry, UnixMillis());
  if (!record) return;
  if (metrics_ && record->state() != CANDIDATE_QUARANTINED) {
    metrics_->LeaseRequeued(status == WORKER_LOST ? "worker_lost" : "refused");
  }
  batch_.PutCandidate(*record);
  dirty_campaigns_.insert(run.id());
  AddEvent(record->state() == CANDIDATE_QUARANTINED ? "quarantined" : "lease_lost", run.id(),
           lease.worker_id, lease_id, why);
  dispatch_needed_ = true;
  FinishIfDone(run);
}

void Coordinator::Impl::WorkerDead(Worker& worker, const std::string& why) {
  if (!worker.alive) return;
  worker.alive = false;
  worker_of_peer_.erase(worker.peer);
  if (auto queued = queued_frames_.find(worker.peer); queued != queued_frames_.end()) {
    const int64_t frames = static_cast<int64_t>(queued->second.size());
    if (metrics_) metrics_->FramesDropped("worker_dead", frames);
    queued_frames_.erase(queued);
  }
  worker.peer.clear();
  hungry_.erase(worker.id);
  const std::vector<std::string> lost(worker.leases.begin(), worker.leases.end());
  for (const std::string& lease : lost) {
    ReleaseLease(lease, WORKER_LOST, "worker " + worker.id + " " + why);
  }
  AddEvent(worker.left ? "worker_left" : "worker_dead", "", worker.id, "", why);
  LogEvent(worker.left ? "info" : "warn", worker.left ? "worker_left" : "worker_dead",
           {{"worker", worker.id}, {"why", why}, {"leases_requeued", std::to_string(lost.size())}});
}

void Coordinator::Impl::Tick(int64_t now_ms) {
  const int64_t elapsed = std::max<int64_t>(0, now_ms - last_tick_ms_);
  last_tick_ms_ = now_ms;
  for (auto& [id, run] : campaigns_) {
    Campaign& campaign = run->campaign();
    if (campaign.state() != CAMPAIGN_RUNNING) continue;
    campaign.set_running_seconds(campaign.running_seconds() + elapsed / 1000.0);
    const double limit = run->config().budget().wall_time_seconds();
    if (limit > 0 && campaign.running_seconds() >= limit) {
      FinishCampaign(*run, CAMPAIGN_DONE, "wall time used");
    } else {
      FinishIfDone(*run);
    }
  }
  if (metrics_ && now_ms >= next_metrics_ms_) {
    next_metrics_ms_ = now_ms + 1000;
    RefreshMetrics(now_ms);
  }
  if (now_ms < next_heartbeat_ms_) return;
  next_heartbeat_ms_ = now_ms + options_.heartbeat_interval_ms;
  dispatch_needed_ = true;  // retries may have come due
  const int64_t silent_limit =
      static_cast<int64_t>(options_.heartbeat_interval_ms) * options_.liveness;
  const std::string heartbeat = EncodeEnvelope(MakeHeartbeat());
  for (auto& [id, worker] : workers_) {
    if (!worker.alive) continue;
    if (caught_up_ms_ - worker.last_heard_ms > silent_limit) {
      WorkerDead(worker, "silent for " + std::to_string(now_ms - worker.last_heard_ms) + " ms");
      continue;
    }
    SendFrame(worker.peer, heartbeat);
  }
  for (auto& [id, run] : campaigns_) {
    if (run->campaign().state() == CAMPAIGN_RUNNING) dirty_campaigns_.insert(id);
  }
}

void Coordinator::Impl::RefreshMetrics(int64_t now_ms) {
  CoordinatorMetrics::Snapshot snapshot;
  for (auto& [id, run] : campaigns_) {
    const Campaign& campaign = run->campaign();
    ++snapshot.campaigns_by_state[CampaignStateText(campaign.state())];
    if (!Active(campaign.state())) continue;
    snapshot.campaigns.push_back({id, campaign.counters().finished(), campaign.budget(),
                                  static_cast<int64_t>(run->waiting()),
                                  run->ResultsPerSecond(now_ms)});
  }
  snapshot.leases_in_flight = static_cast<int64_t>(leases_.size());
  for (const auto& [id, worker] : workers_) {
    ++snapshot.workers_by_state[WorkerStateText(StateOf(worker))];
  }
  snapshot.models = models_stored_;
  metrics_->Refresh(snapshot);
}

void Coordinator::Impl::Propose(int64_t now_ms) {
  size_t credits = 0;
  for (const std::string& id : hungry_) credits += workers_[id].credits;
  for (const auto& [id, worker] : workers_) {
    if (worker.alive) credits += worker.leases.size();
  }
  const size_t target = std::max(kMinReady, credits * kReadyPerCredit);
  for (auto& [id, run] : campaigns_) {
    if (run->campaign().state() != CAMPAIGN_RUNNING || run->waiting() >= target) continue;
    bool any = false;
    run->Propose(target, now_ms, [&](const CandidateRecord& record) {
      batch_.PutCandidate(record);
      any = true;
    });
    if (!any) continue;
    dirty_campaigns_.insert(id);
    dispatch_needed_ = true;
  }
}

void Coordinator::Impl::Dispatch(int64_t now_ms) {
  if (!dispatch_needed_ || hungry_.empty() || campaign_order_.empty()) return;
  dispatch_needed_ = false;
  std::vector<std::string> fed;
  // A copy: a worker found dead while sending leaves hungry_.
  const std::vector<std::string> hungry(hungry_.begin(), hungry_.end());
  for (const std::string& worker_id : hungry) {
    Worker& worker = workers_[worker_id];
    bool out_of_work = !worker.alive;
    while (static_cast<int>(worker.leases.size()) < worker.credits && !out_of_work) {
      out_of_work = true;
      for (size_t k = 0; k < campaign_order_.size(); ++k) {
        const std::string& campaign_id =
            campaign_order_[(next_campaign_ + k) % campaign_order_.size()];
        CampaignRun& run = *campaigns_[campaign_id];
        if (run.campaign().state() != CAMPAIGN_RUNNING || run.waiting() == 0 ||
            !run.Accepts(worker.record.host())) {
          continue;
        }
        const std::string lease_id = lease_prefix_ + std::to_string(next_lease_++);
        const CandidateRecord* record = run.Lease(lease_id, now_ms);
        if (record == nullptr) continue;
        next_campaign_ = (next_campaign_ + k + 1) % campaign_order_.size();
        std::string frame = EncodeLease(lease_id, record->candidate(),
                                        *run.pipeline(record->candidate().pipeline_id()),
                                        run.config().measurement());
        const std::string slot = store_keys::CandidateSlot(record->candidate().schedule_hash(),
                                                           record->candidate().repeat());
        leases_[lease_id] =
            LeaseInfo{campaign_id, record->candidate().pipeline_id(), slot, worker_id, now_ms};
        if (!SendFrame(worker.peer, std::move(frame))) {
          leases_.erase(lease_id);
          run.Unlease(record->candidate().pipeline_id(), slot, lease_id);
          if (metrics_) metrics_->LeaseRequeued("unsent");
          // The worker is gone; its liveness settles it. Not fed again until heard from.
          hungry_.erase(worker_id);
          break;
        }
        worker.leases.insert(lease_id);
        ++leases_sent_;
        if (metrics_) metrics_->LeaseSent();
        out_of_work = false;
        break;
      }
    }
    if (static_cast<int>(worker.leases.size()) >= worker.credits) fed.push_back(worker_id);
  }
  for (const std::string& id : fed) hungry_.erase(id);
}

void Coordinator::Impl::FinishCampaign(CampaignRun& run, CampaignState state,
                                       const std::string& why) {
  run.campaign().set_state(state);
  run.campaign().set_finished_unix_ms(UnixMillis());
  dirty_campaigns_.insert(run.id());
  const char* kind = state == CAMPAIGN_DONE ? "campaign_done" : "campaign_cancelled";
  AddEvent(kind, run.id(), "", "", why);
  LogEvent("info", kind,
           {{"campaign", run.id()},
            {"why", why},
            {"measured", std::to_string(run.campaign().counters().measured())},
            {"finished", std::to_string(run.campaign().counters().finished())}});
}

void Coordinator::Impl::FinishIfDone(CampaignRun& run) {
  if (run.campaign().state() != CAMPAIGN_RUNNING) return;
  if (const char* why = run.DoneReason()) FinishCampaign(run, CAMPAIGN_DONE, why);
}

void Coordinator::Impl::AddEvent(const std::string& kind, const std::string& campaign,
                                 const std::string& worker, const std::string& lease,
                                 const std::string& text) {
  Event event;
  event.set_unix_ms(UnixMillis());
  event.set_kind(kind);
  event.set_campaign(campaign);
  event.set_worker_id(worker);
  event.set_lease_id(lease);
  event.set_text(text);
  batch_.AddEvent(event);
  // What went wrong with a lease or a result is logged too, for whoever reads the log
  // of a network fault; the other kinds have log lines of their own.
  if (kind == "lease_lost" || kind == "quarantined" || kind == "duplicate_result" ||
      kind == "result_for_unknown_candidate") {
    LogEvent("warn", kind, {{"campaign", campaign}, {"worker", worker}, {"lease", lease}, {"why", text}});
  }
}

// ---------------------------------------------------------------------------
// Writes and sends

void Coordinator::Impl::HandOver() {
  for (const std::string& id : dirty_campaigns_) batch_.PutCampaign(campaigns_[id]->campaign());
  for (const std::string& id : dirty_workers_) batch_.PutWorker(workers_[id].record);
  dirty_campaigns_.clear();
  dirty_workers_.clear();
  if (batch_.empty() && deferred_.empty()) return;
  committer_->Add(std::exchange(batch_, Store::Batch()), std::exchange(deferred_, {}));
}

void Coordinator::Impl::ReleaseWritten(Status* error) {
  for (DeferredReply& reply : committer_->TakeWritten(error)) {
    if (!reply.to_worker) {
      SendFrame(reply.to, std::move(reply.frame));
      continue;
    }
    auto it = workers_.find(reply.to);
    // A worker that is gone resends the result when it registers again.
    if (it != workers_.end() && it->second.alive) {
      SendFrame(it->second.peer, std::move(reply.frame));
    } else if (metrics_) {
      metrics_->FramesDropped("worker_dead", 1);
    }
    if (metrics_ && reply.received_ms > 0) {
      metrics_->ResultAcknowledged((UnixMillis() - reply.received_ms) / 1000.0);
    }
  }
}

void Coordinator::Impl::DeferToWorker(const std::string& worker_id, const Envelope& envelope,
                                      int64_t received_ms) {
  deferred_.push_back(DeferredReply{true, worker_id, EncodeEnvelope(envelope), received_ms});
}

void Coordinator::Impl::DeferToClient(const std::string& peer, const Envelope& envelope) {
  deferred_.push_back(DeferredReply{false, peer, EncodeEnvelope(envelope)});
}

bool Coordinator::Impl::Send(const std::string& peer, const Envelope& envelope) {
  return SendFrame(peer, EncodeEnvelope(envelope));
}

bool Coordinator::Impl::SendFrame(const std::string& peer, std::string frame) {
  auto queued = queued_frames_.find(peer);
  if (queued == queued_frames_.end()) {
    try {
      zmq::message_t id(peer.data(), peer.size());
      // With ROUTER_MANDATORY an unroutable peer throws EHOSTUNREACH, and a full pipe
      // refuses the routing frame (EAGAIN): the frame then waits in the peer's queue.
      if (router_->send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) {
        zmq::message_t body(frame.data(), frame.size());
        router_->send(body, zmq::send_flags::none);
        return true;
      }
    } catch (const zmq::error_t& e) {
      if (e.num() != EHOSTUNREACH) LogEvent("warn", "send_failed", {{"error", e.what()}});
      if (metrics_) {
        metrics_->FramesDropped(e.num() == EHOSTUNREACH ? "unroutable" : "send_error", 1);
      }
      return false;
    }
    queued = queued_frames_.emplace(peer, std::deque<std::string>()).first;
  }
  if (queued->second.size() >= options_.max_queued_frames_per_peer) {
    LogEvent("warn", "peer_dropped",
             {{"why", "outbound queue full"}, {"frames", std::to_string(queued->second.size())}});
    if (metrics_) metrics_->PeerDropped(static_cast<int64_t>(queued->second.size()) + 1);
    queued_frames_.erase(queued);
    if (Worker* worker = WorkerOfPeer(peer)) WorkerDead(*worker, "does not read its messages");
    return false;
  }
  queued->second.push_back(std::move(frame));
  return true;
}

void Coordinator::Impl::FlushQueued() {
  for (auto it = queued_frames_.begin(); it != queued_frames_.end();) {
    std::deque<std::string>& frames = it->second;
    bool gone = false;
    while (!frames.empty()) {
      try {
        zmq::message_t id(it->first.data(), it->first.size());
        if (!router_->send(id, zmq::send_flags::sndmore | zmq::send_flags::dontwait)) break;
        zmq::message_t body(frames.front().data(), frames.front().size());
        router_->send(body, zmq::send_flags::none);
      } catch (const zmq::error_t&) {
        gone = true;
        if (metrics_) metrics_->FramesDropped("unroutable", static_cast<int64_t>(frames.size()));
        break;
      }
      frames.pop_front();
    }
    it = (gone || frames.empty()) ? queued_frames_.erase(it) : std::next(it);
  }
}

// ---------------------------------------------------------------------------
// Control API

void Coordinator::Impl::HandleClient(const std::string& peer, const ClientRequest& request) {
  bool deferred = false;
  ClientReply reply;
  switch (request.body_case()) {
    case ClientRequest::kSubmit:
      reply = HandleSubmit(request, &deferred);
      break;
    case ClientRequest::kStatus:
      reply = HandleStatus(request.status());
      break;
    case ClientRequest::kWorkers:
      reply = HandleWorkers();
      break;
    case ClientRequest::kBest:
      reply = HandleBest(request.best());
      break;
    case ClientRequest::kExportMeasurements:
      reply = HandleExport(request.export_measurements());
      break;
    case ClientRequest::kPause:
    case ClientRequest::kResume:
    case ClientRequest::kCancel:
    case ClientRequest::kBackup:
      if (auto done = control_replies_.find(request.request_id());
          done != control_replies_.end() && !request.request_id().empty()) {
        reply = done->second;  // a retry: the first outcome, not a second action
        deferred = true;
        break;
      }
      reply = request.has_backup() ? HandleBackup(request.backup())
                                   : HandleControl(request, &deferred);
      if (!request.request_id().empty()) {
        control_replies_[request.request_id()] = reply;
        control_reply_order_.push_back(request.request_id());
        if (control_reply_order_.size() > kRememberedControlReplies) {
          control_replies_.erase(control_reply_order_.front());
          control_reply_order_.pop_front();
        }
      }
      break;
    case ClientRequest::kPropose:
      reply = HandlePropose(request.propose());
      deferred = reply.code() == CLIENT_OK;  // answered once the candidates are durable
      break;
    case ClientRequest::kPipelines:
      reply = HandlePipelines(request.pipelines());
      break;
    case ClientRequest::kStoreModel:
      reply = HandleStoreModel(request.store_model(), &deferred);
      break;
    case ClientRequest::kModels:
      reply = HandleModels(request.models());
      break;
    case ClientRequest::kStoreValueRound:
      reply = HandleStoreValueRound(request.store_value_round(), &deferred);
      break;
    case ClientRequest::kValueRounds:
      reply = HandleValueRounds(request.value_rounds());
      break;
    case ClientRequest::kCandidates:
      reply = HandleCandidates(request.candidates());
      break;
    case ClientRequest::kComplete:
      reply = HandleComplete(request.complete(), &deferred);
      break;
    case ClientRequest::BODY_NOT_SET:
      reply.set_code(CLIENT_INVALID_ARGUMENT);
      reply.set_error("the request has no body");
      break;
  }
  reply.set_request_id(request.request_id());
  Envelope envelope;
  *envelope.mutable_client_reply() = std::move(reply);
  if (deferred) {
    DeferToClient(peer, envelope);
  } else {
    Send(peer, envelope);
  }
}

namespace {

ClientReply Refuse(ClientErrorCode code, const std::string& error) {
  ClientReply reply;
  reply.set_code(code);
  reply.set_error(error);
  return reply;
}

}  // namespace

ClientReply Coordinator::Impl::HandleSubmit(const ClientRequest& request, bool* deferred) {
  const SubmitCampaign& submit = request.submit();
  if (request.request_id().empty()) {
    return Refuse(CLIENT_INVALID_ARGUMENT, "submit: the request has no request_id");
  }
  StatusOr<CampaignConfig> config =
      ParseCampaignYaml(submit.yaml_source(), submit.file_name(), /*check_files=*/false);
  if (!config.ok()) return Refuse(CLIENT_INVALID_ARGUMENT, config.status().message());
  if (config->has_replay()) {
    // The dataset is where farmctl ran: the split comes with the submission.
    const ReplaySource& replay = submit.replay();
    if (replay.dataset_id().empty() || replay.held_out() != config->replay().held_out() ||
        replay.split_seed() != config->replay().split_seed()) {
      return Refuse(CLIENT_INVALID_ARGUMENT,
                    submit.file_name() + ": a replay campaign's submission must carry its "
                                         "dataset's id and split as its file gives them");
    }
    *config->mutable_replay() = replay;
  }
  std::vector<PipelineSpec> pipelines(submit.pipelines().begin(), submit.pipelines().end());
  Status checked = CheckCampaignPipelines(*config, pipelines);
  if (!checked.ok()) {
    return Refuse(CLIENT_INVALID_ARGUMENT, checked.WithContext(submit.file_name()).message());
  }
  // The id comes from the request id, so a retried submit finds its campaign.
  const std::string id = Slug(config->name()) + "-" + Sha256Hex(request.request_id()).substr(0, 8);
  ClientReply reply;
  *deferred = true;
  if (auto existing = campaigns_.find(id); existing != campaigns_.end()) {
    *reply.mutable_submitted() = existing->second->campaign();
    return reply;
  }
  Campaign campaign;
  campaign.set_id(id);
  campaign.set_name(config->name());
  campaign.set_yaml_source(submit.yaml_source());
  campaign.set_config_json(CampaignConfigToJson(*config));
  campaign.set_state(CAMPAIGN_RUNNING);
  campaign.set_budget(config->budget().benchmarks());
  campaign.set_submitted_unix_ms(UnixMillis());
  StatusOr<std::unique_ptr<CampaignRun>> run =
      CampaignRun::Create(campaign, *config, std::move(pipelines));
  if (!run.ok()) return Refuse(CLIENT_INVALID_ARGUMENT, run.status().message());
  Campaign& created = (*run)->campaign();
  for (int i = 0; i < created.pipeline_ids_size(); ++i) {
    batch_.PutPipeline(created.pipeline_ids(i), (*run)->pipelines()[i]);
  }
  dirty_campaigns_.insert(id);
  AddEvent("campaign_submitted", id, "", "", submit.file_name());
  LogEvent("info", "campaign_submitted",
           {{"campaign", id},
            {"pipelines", std::to_string(created.pipeline_ids_size())},
            {"budget", std::to_string(created.budget())}});
  *reply.mutable_submitted() = created;
  campaign_order_.push_back(id);
  campaigns_[id] = std::move(*run);
  dispatch_needed_ = true;
  return reply;
}

ClientReply Coordinator::Impl::HandleControl(const ClientRequest& request, bool* deferred) {
  const CampaignRef& ref = request.has_pause()    ? request.pause()
                           : request.has_resume() ? request.resume()
                                                  : request.cancel();
  auto found = campaigns_.find(ref.campaign());
  if (found == campaigns_.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + ref.campaign() + "'");
  }
  CampaignRun& run = *found->second;
  const CampaignState state = run.campaign().state();
  const std::string state_name = CampaignState_Name(state);
  if (request.has_pause()) {
    if (state != CAMPAIGN_RUNNING) {
      return Refuse(CLIENT_FAILED_PRECONDITION,
                    "campaign " + run.id() + " is " + state_name + ", not running");
    }
    run.campaign().set_state(CAMPAIGN_PAUSED);
    AddEvent("campaign_paused", run.id(), "", "", "");
  } else if (request.has_resume()) {
    if (state != CAMPAIGN_PAUSED) {
      return Refuse(CLIENT_FAILED_PRECONDITION,
                    "campaign " + run.id() + " is " + state_name + ", not paused");
    }
    run.campaign().set_state(CAMPAIGN_RUNNING);
    AddEvent("campaign_resumed", run.id(), "", "", "");
    dispatch_needed_ = true;
  } else {
    if (!Active(state)) {
      return Refuse(CLIENT_FAILED_PRECONDITION,
                    "campaign " + run.id() + " is " + state_name + " already");
    }
    FinishCampaign(run, CAMPAIGN_CANCELLED, "cancelled by a client");
  }
  dirty_campaigns_.insert(run.id());
  *deferred = true;
  ClientReply reply;
  *reply.mutable_campaign() = run.campaign();
  return reply;
}

ClientReply Coordinator::Impl::HandleStatus(const StatusRequest& request) {
  ClientReply reply;
  StatusReply* status = reply.mutable_status();
  if (!request.campaign().empty() && !campaigns_.count(request.campaign())) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  std::vector<CampaignRun*> runs;
  for (auto& [id, run] : campaigns_) {
    if (request.campaign().empty() || id == request.campaign()) runs.push_back(run.get());
  }
  std::sort(runs.begin(), runs.end(), [](const CampaignRun* a, const CampaignRun* b) {
    return a->campaign().submitted_unix_ms() > b->campaign().submitted_unix_ms();
  });
  const int64_t now = UnixMillis();
  for (CampaignRun* run : runs) {
    CampaignStatus* entry = status->add_campaigns();
    *entry->mutable_campaign() = run->campaign();
    entry->mutable_campaign()->mutable_counters()->set_queued(static_cast<int64_t>(run->waiting()));
    entry->mutable_campaign()->mutable_counters()->set_leased(static_cast<int64_t>(run->leased()));
    for (PipelineProgress& progress : run->Progress()) {
      *entry->add_pipelines() = std::move(progress);
    }
    for (const auto& [name, count] : run->failures_by_status()) {
      (*entry->mutable_failures_by_status())[name] = count;
    }
    entry->set_results_per_second(run->ResultsPerSecond(now));
  }
  for (const auto& [id, worker] : workers_) {
    (*status->mutable_workers_by_state())[WorkerState_Name(StateOf(worker))]++;
  }
  return reply;
}

ClientReply Coordinator::Impl::HandleWorkers() {
  ClientReply reply;
  reply.mutable_workers();  // an empty list is still an answer
  std::vector<const Worker*> sorted;
  for (const auto& [id, worker] : workers_) sorted.push_back(&worker);
  std::sort(sorted.begin(), sorted.end(),
            [](const Worker* a, const Worker* b) { return a->id < b->id; });
  for (const Worker* worker : sorted) {
    WorkerStatus* entry = reply.mutable_workers()->add_workers();
    *entry->mutable_record() = worker->record;
    entry->mutable_record()->set_last_seen_unix_ms(
        std::max(worker->record.last_seen_unix_ms(), worker->last_heard_ms));
    entry->set_state(StateOf(*worker));
    entry->set_credits(worker->credits);
    entry->set_leases(static_cast<int32_t>(worker->leases.size()));
  }
  return reply;
}

ClientReply Coordinator::Impl::HandleBest(const BestRequest& request) {
  auto found = campaigns_.find(request.campaign());
  if (found == campaigns_.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  const CampaignRun& run = *found->second;
  const size_t k =
      static_cast<size_t>(std::clamp(request.k() == 0 ? 1 : request.k(), 1, kMaxBestK));
  ClientReply reply;
  BestReply* best = reply.mutable_best();
  bool any = false;
  for (const std::string& pipeline_id : run.campaign().pipeline_ids()) {
    if (!request.pipeline_id().empty() && pipeline_id != request.pipeline_id()) continue;
    any = true;
    *best->add_pipelines() = *run.pipeline(pipeline_id);
    StatusOr<std::vector<StoredMeasurement>> measurements =
        store_->BestMeasurements(pipeline_id, k, run.id());
    if (!measurements.ok()) return Refuse(CLIENT_INTERNAL, measurements.status().message());
    for (StoredMeasurement& m : *measurements) {
      StoredMeasurementRecord* row = best->add_best();
      row->set_seq(m.seq);
      *row->mutable_measurement() = std::move(m.measurement);
    }
  }
  if (!any) {
    return Refuse(CLIENT_NOT_FOUND,
                  "campaign " + run.id() + " has no pipeline '" + request.pipeline_id() + "'");
  }
  return reply;
}

ClientReply Coordinator::Impl::HandleExport(const ExportRequest& request) {
  if (!campaigns_.count(request.campaign())) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  const int max_rows = std::clamp(request.max_rows() == 0 ? kDefaultExportRows : request.max_rows(),
                                  1, kMaxExportRows);
  ClientReply reply;
  ExportReply* page = reply.mutable_export_page();
  page->set_done(true);
  page->set_next_seq(request.from_seq());
  Status scanned = store_->ScanMeasurements(request.campaign(), request.from_seq(),
                                            [&](const StoredMeasurement& m) {
                                              if (page->rows_size() >= max_rows) {
                                                page->set_done(false);
                                                return false;
                                              }
                                              StoredMeasurementRecord* row = page->add_rows();
                                              row->set_seq(m.seq);
                                              *row->mutable_measurement() = m.measurement;
                                              page->set_next_seq(m.seq + 1);
                                              return true;
                                            });
  if (!scanned.ok()) return Refuse(CLIENT_INTERNAL, scanned.message());
  return reply;
}

ClientReply Coordinator::Impl::HandlePropose(const ProposeCandidates& request) {
  auto found = campaigns_.find(request.campaign());
  if (found == campaigns_.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  CampaignRun& run = *found->second;
  if (!Active(run.campaign().state())) {
    return Refuse(CLIENT_FAILED_PRECONDITION,
                  "campaign " + run.id() + " is " + CampaignState_Name(run.campaign().state()));
  }
  ClientReply reply;
  ProposeReply* proposed = reply.mutable_proposed();
  const int64_t now = UnixMillis();
  for (int i = 0; i < request.candidates_size(); ++i) {
    std::string why;
    switch (run.AddProposal(
        request.candidates(i), now,
        [&](const CandidateRecord& record) { batch_.PutCandidate(record); }, &why)) {
      case CampaignRun::ProposalOutcome::kAdded:
        proposed->set_accepted(proposed->accepted() + 1);
        break;
      case CampaignRun::ProposalOutcome::kDuplicate:
        proposed->set_duplicates(proposed->duplicates() + 1);
        break;
      case CampaignRun::ProposalOutcome::kOverBudget:
        proposed->set_over_budget(proposed->over_budget() + 1);
        break;
      case CampaignRun::ProposalOutcome::kRefused:
        proposed->add_refused("candidates[" + std::to_string(i) + "]: " + why);
        break;
    }
  }
  for (const std::string& failure : request.search_failures()) {
    AddEvent("search_failed", run.id(), "", "", failure);
    LogEvent("warn", "search_failed", {{"campaign", run.id()}, {"error", failure}});
  }
  if (proposed->accepted() > 0) {
    dirty_campaigns_.insert(run.id());
    dispatch_needed_ = true;
  }
  return reply;
}

ClientReply Coordinator::Impl::HandlePipelines(const CampaignRef& request) {
  auto found = campaigns_.find(request.campaign());
  if (found == campaigns_.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  ClientReply reply;
  PipelinesReply* pipelines = reply.mutable_pipelines();
  for (const std::string& id : found->second->campaign().pipeline_ids()) {
    *pipelines->add_pipelines() = *found->second->pipeline(id);
  }
  return reply;
}

ClientReply Coordinator::Impl::HandleStoreModel(const StoreModel& request, bool* deferred) {
  const Model& model = request.model();
  if (model.kind().empty() || model.version().empty()) {
    return Refuse(CLIENT_INVALID_ARGUMENT, "store_model: a model needs a kind and a version");
  }
  if (!model.campaign().empty() && !campaigns_.count(model.campaign())) {
    return Refuse(CLIENT_NOT_FOUND, "store_model: no campaign '" + model.campaign() + "'");
  }
  batch_.PutModel(model);
  ++models_stored_;
  AddEvent("model_stored", model.campaign(), "", "",
           model.kind() + " " + model.version() + " trained on " +
               std::to_string(model.training_set_size()));
  *deferred = true;
  ClientReply reply;
  *reply.mutable_stored_model() = model;
  reply.mutable_stored_model()->clear_weights();
  return reply;
}

ClientReply Coordinator::Impl::HandleModels(const ModelsRequest& request) {
  std::vector<Model> models;
  Status scanned = store_->ScanModels([&](const Model& model) {
    if ((request.campaign().empty() || model.campaign() == request.campaign()) &&
        (request.kind().empty() || model.kind() == request.kind())) {
      models.push_back(model);
      if (!request.with_weights()) models.back().clear_weights();
    }
    return true;
  });
  if (!scanned.ok()) return Refuse(CLIENT_INTERNAL, scanned.message());
  std::sort(models.begin(), models.end(), [](const Model& a, const Model& b) {
    return a.created_unix_ms() > b.created_unix_ms();
  });
  ClientReply reply;
  for (Model& model : models) *reply.mutable_models()->add_models() = std::move(model);
  return reply;
}

ClientReply Coordinator::Impl::HandleStoreValueRound(const ValueRound& round, bool* deferred) {
  if (!campaigns_.count(round.campaign())) {
    return Refuse(CLIENT_NOT_FOUND, "store_value_round: no campaign '" + round.campaign() + "'");
  }
  if (round.round() < 0) {
    return Refuse(CLIENT_INVALID_ARGUMENT,
                  "store_value_round: round " + std::to_string(round.round()) + " is negative");
  }
  if (round.state() != VALUE_ROUND_PLANNED && round.state() != VALUE_ROUND_FITTED) {
    return Refuse(CLIENT_INVALID_ARGUMENT, "store_value_round: round " +
                                               std::to_string(round.round()) +
                                               " is neither planned nor fitted");
  }
  batch_.PutValueRound(round);
  AddEvent("value_round_stored", round.campaign(), "", "",
           "round " + std::to_string(round.round()) + " " + ValueRoundState_Name(round.state()) +
               (round.fitted_model().empty() ? "" : " " + round.fitted_model()));
  *deferred = true;
  ClientReply reply;
  *reply.mutable_value_rounds()->add_rounds() = round;
  return reply;
}

ClientReply Coordinator::Impl::HandleValueRounds(const CampaignRef& request) {
  if (!campaigns_.count(request.campaign())) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  ClientReply reply;
  ValueRoundsReply* rounds = reply.mutable_value_rounds();
  Status scanned = store_->ScanValueRounds(request.campaign(), [&](const ValueRound& round) {
    *rounds->add_rounds() = round;
    return true;
  });
  if (!scanned.ok()) return Refuse(CLIENT_INTERNAL, scanned.message());
  return reply;
}

ClientReply Coordinator::Impl::HandleCandidates(const CandidatesRequest& request) {
  auto found = campaigns_.find(request.campaign());
  if (found == campaigns_.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  const CampaignRun& run = *found->second;
  ClientReply reply;
  CandidatesReply* candidates = reply.mutable_candidates();
  for (const CandidatesRequest::Key& key : request.keys()) {
    if (const CandidateRecord* live = run.LiveRecord(key.pipeline_id(), key.schedule_hash())) {
      *candidates->add_candidates() = *live;
      continue;
    }
    if (!run.Finished(key.pipeline_id(), key.schedule_hash())) continue;
    // Final records live in the store only (the proposal's reply came after its commit).
    StatusOr<std::optional<CandidateRecord>> stored =
        store_->GetCandidate(run.id(), key.pipeline_id(), key.schedule_hash());
    if (!stored.ok()) return Refuse(CLIENT_INTERNAL, stored.status().message());
    if (*stored) *candidates->add_candidates() = std::move(**stored);
  }
  return reply;
}

ClientReply Coordinator::Impl::HandleComplete(const CampaignRef& request, bool* deferred) {
  auto found = campaigns_.find(request.campaign());
  if (found == campaigns_.end()) {
    return Refuse(CLIENT_NOT_FOUND, "no campaign '" + request.campaign() + "'");
  }
  CampaignRun& run = *found->second;
  if (!Active(run.campaign().state())) {
    return Refuse(CLIENT_FAILED_PRECONDITION, "campaign " + run.id() + " is " +
                                                  CampaignState_Name(run.campaign().state()) +
                                                  " already");
  }
  if (run.ProposesItself()) {
    return Refuse(CLIENT_FAILED_PRECONDITION,
                  "campaign " + run.id() + " proposes its own candidates: only a strategy of "
                  "farm-learner completes a campaign");
  }
  run.CompleteStrategy();
  FinishIfDone(run);
  dirty_campaigns_.insert(run.id());
  *deferred = true;
  ClientReply reply;
  *reply.mutable_campaign() = run.campaign();
  return reply;
}

// The checkpoint holds every result acknowledged before the request (each was durable
// before its Ack) and is opened before the reply: the counts are the copy's own.
ClientReply Coordinator::Impl::HandleBackup(const BackupRequest& request) {
  const std::string& dir = request.dir();
  if (dir.empty() || dir[0] != '/') {
    return Refuse(CLIENT_INVALID_ARGUMENT,
                  "backup: '" + dir + "' is not an absolute path on the coordinator's host");
  }
  std::error_code error;
  if (std::filesystem::exists(dir, error)) {
    return Refuse(CLIENT_INVALID_ARGUMENT, "backup: '" + dir + "' exists already");
  }
  const auto start = std::chrono::steady_clock::now();
  Status copied = store_->Checkpoint(dir);
  if (!copied.ok()) return Refuse(CLIENT_INTERNAL, "backup: " + copied.message());
  StatusOr<std::unique_ptr<Store>> copy = Store::Open(dir);
  if (!copy.ok()) {
    return Refuse(CLIENT_INTERNAL, "backup: the copy does not open: " + copy.status().message());
  }
  ClientReply reply;
  BackupReply* backup = reply.mutable_backup();
  backup->set_dir(dir);
  backup->set_last_measurement_seq((*copy)->last_measurement_seq());
  // A campaign's results counter is written with its results: their sum is the copy's
  // measurements, without reading them all.
  int64_t campaigns = 0;
  Status counted = (*copy)->ScanCampaigns([&](const Campaign& c) {
    ++campaigns;
    backup->set_measurements(backup->measurements() + c.counters().results());
    return true;
  });
  if (!counted.ok()) return Refuse(CLIENT_INTERNAL, "backup: reading the copy: " + counted.message());
  backup->set_campaigns(campaigns);
  backup->set_seconds(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  LogEvent("info", "backup_taken",
           {{"dir", dir},
            {"campaigns", std::to_string(campaigns)},
            {"measurements", std::to_string(backup->measurements())},
            {"seconds", std::to_string(backup->seconds())}});
  return reply;
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
  stats.results_recorded = impl_->results_recorded_.load();
  stats.leases_sent = impl_->leases_sent_.load();
  if (impl_->committer_) {
    stats.store_writes = impl_->committer_->writes();
    stats.store_records = impl_->committer_->records();
  }
  return stats;
}

}  // namespace schedfarm
