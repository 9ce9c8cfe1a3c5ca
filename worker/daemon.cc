#include "worker/daemon.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <random>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/log.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "protocol/keepalive.h"
#include "protocol/measurement_settings.h"
#include "scheduler/autoschedule/autoschedulers.h"
#include "scheduler/autoscheduler_names.h"
#include "scheduler/schedule_space.h"
#include "worker/replay.h"

namespace schedfarm {
namespace {

// A lying host's report (HostFingerprint.test_time_scale).
void ScaleTimes(double factor, Measurement* m) {
  SampleStats& stats = *m->mutable_stats();
  stats.set_min_seconds(stats.min_seconds() * factor);
  stats.set_median_seconds(stats.median_seconds() * factor);
  stats.set_mean_seconds(stats.mean_seconds() * factor);
  stats.set_stddev_seconds(stats.stddev_seconds() * factor);
  for (double& seconds : *m->mutable_samples_seconds()) seconds *= factor;
}

using Clock = std::chrono::steady_clock;

Clock::time_point After(int ms) { return Clock::now() + std::chrono::milliseconds(ms); }

// Whether the lease asks for a baseline: a baseline's origin (an autoscheduler or
// libtorch) and no schedule.
bool IsBaseline(const Candidate& candidate) {
  return candidate.schedule().stages_size() == 0 && IsBaselineName(candidate.origin());
}

// The sandbox job of a lease, or why the lease cannot run: its pipeline must build,
// match the candidate's pipeline id, and its schedule and settings must be legal. A
// baseline (IsBaseline) has no schedule to check; any other candidate with an empty
// schedule is refused. A replay worker answers measured schedules, which may predate a
// rule of the space: it checks them as measured (ScheduleSpace::CheckMeasured).
StatusOr<SandboxJob> JobOfLease(const Lease& lease, bool replay) {
  if (lease.lease_id().empty()) return Status::Error("lease without a lease_id");
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(lease.pipeline());
  if (!graph.ok()) return graph.status().WithContext("lease " + lease.lease_id());
  const std::string id = PipelineId(*graph);
  const Candidate& candidate = lease.candidate();
  if (!candidate.pipeline_id().empty() && candidate.pipeline_id() != id) {
    return Status::Error("lease " + lease.lease_id() + ": the candidate is for pipeline " +
                         candidate.pipeline_id() + " but the lease carries pipeline " + id);
  }
  SCHEDFARM_RETURN_IF_ERROR(
      ValidateMeasurementSettings(lease.settings()).WithContext("lease " + lease.lease_id()));
  const bool baseline = IsBaseline(candidate);
  if (!baseline && candidate.schedule().stages_size() == 0) {
    std::string names;
    for (const std::string& name : BaselineNames()) {
      names += (names.empty() ? "" : ", ") + name;
    }
    return Status::Error("lease " + lease.lease_id() +
                         ": schedule refused: the candidate of origin '" + candidate.origin() +
                         "' has an empty schedule; only baselines (origin " + names +
                         ") come without one");
  }
  if (!baseline) {
    // The space of the target this host compiles for: rule 8 counts its registers.
    const ScheduleSpace space(*graph, HalideTargetParams());
    const Status legal =
        replay ? space.CheckMeasured(candidate.schedule()) : space.Check(candidate.schedule());
    SCHEDFARM_RETURN_IF_ERROR(
        legal.WithContext("lease " + lease.lease_id() + ": schedule refused"));
  }
  SandboxJob job;
  job.set_job_id(lease.lease_id());
  *job.mutable_pipeline() = lease.pipeline();
  *job.mutable_schedule() = candidate.schedule();
  *job.mutable_settings() = lease.settings();  // the pool fills in the defaults
  if (baseline) job.set_autoscheduler(candidate.origin());
  job.set_campaign(candidate.campaign());
  return job;
}

}  // namespace

struct WorkerDaemon::State {
  WorkerOptions options;
  std::unique_ptr<JobRunner> runner;  // the sandbox pool, or the replay
  int stop_pipe[2] = {-1, -1};

  zmq::context_t context;
  std::unique_ptr<zmq::socket_t> socket;  // null while waiting to reconnect
  bool registered = false;
  Clock::time_point last_heard;
  Clock::time_point next_heartbeat;
  Clock::time_point reconnect_at;
  int backoff_ms = 0;
  int credits_sent = -1;  // the window last announced (-1: none since registering)
  // Tells the coordinator, when it sees this process register again, that the leases
  // it holds survived: a restarted worker registers under a new instance.
  const std::string instance = std::to_string(std::random_device{}()) + "-" +
                               std::to_string(::getpid()) + "-" + std::to_string(UnixMillis());

  std::map<std::string, Lease> in_hand;  // leases in the sandbox, by lease id
  struct Unacked {
    std::string frame;
    Clock::time_point sent;
  };
  std::map<std::string, Unacked> unacked;  // results awaiting the coordinator's Ack

  bool draining = false;
  Clock::time_point drain_deadline;

  // The credits: how many leases this worker wants in hand at once (0 while draining).
  int window() const { return draining ? 0 : options.sandbox.children + options.prefetch; }

  void Send(const Envelope& envelope) { SendFrame(EncodeEnvelope(envelope), BodyName(envelope)); }

  void SendFrame(const std::string& frame, const char* what) {
    if (!socket) return;
    if (!socket->send(zmq::buffer(frame), zmq::send_flags::dontwait)) {
      LogEvent("warn", "send_dropped", {{"message", what}, {"why", "send queue full"}});
    }
  }

  void Connect() {
    socket = std::make_unique<zmq::socket_t>(context, zmq::socket_type::dealer);
    socket->set(zmq::sockopt::linger, 0);
    SetTcpKeepalive(*socket);
    if (options.curve_keys) {
      // The keys were read and checked at start-up; setting them cannot fail.
      (void)MakeCurveClient(*socket, *options.curve_keys, options.server_public_key);
    }
    socket->connect(options.coordinator);
    registered = false;
    last_heard = Clock::now();
    next_heartbeat = After(options.heartbeat_interval_ms);
    Envelope envelope;
    *envelope.mutable_register_()->mutable_host() = options.host;
    envelope.mutable_register_()->set_credits(window());
    envelope.mutable_register_()->set_instance(instance);
    credits_sent = window();
    Send(envelope);
    LogEvent("info", "registering",
             {{"coordinator", options.coordinator},
              {"worker", options.host.worker_id()},
              {"credits", std::to_string(credits_sent)}});
  }

  // Tells the coordinator the window when it changed.
  void AnnounceCredits() {
    if (!registered || window() == credits_sent) return;
    credits_sent = window();
    Envelope envelope;
    envelope.mutable_work_request()->set_credits(credits_sent);
    Send(envelope);
  }

  void HandleLease(const Lease& lease) {
    const std::string& id = lease.lease_id();
    if (auto it = unacked.find(id); it != unacked.end()) {
      LogEvent("info", "lease_repeated", {{"lease", id}, {"action", "result sent again"}});
      SendFrame(it->second.frame, "result");
      it->second.sent = Clock::now();
      return;
    }
    if (in_hand.count(id)) {
      LogEvent("info", "lease_repeated", {{"lease", id}, {"action", "already running"}});
      return;
    }
    StatusOr<SandboxJob> job = JobOfLease(lease, options.replay != nullptr);
    if (!job.ok()) {
      LogEvent("warn", "lease_refused", {{"lease", id}, {"error", job.status().message()}});
      Send(MakeErrorReply(job.status().message(), id));
      return;
    }
    LogEvent("info", "lease_started",
             {{"lease", id},
              {"pipeline", lease.pipeline().name()},
              {"campaign", lease.candidate().campaign()}});
    in_hand.emplace(id, lease);
    runner->Submit(std::move(job).value());
  }

  void HandleFrame(const zmq::message_t& message) {
    const DecodedFrame decoded =
        DecodeEnvelope(std::string_view(static_cast<const char*>(message.data()), message.size()),
                       options.max_message_bytes);
    if (!decoded.ok()) {
      const bool answer = AnswerRefusal(decoded);
      LogEvent("warn", answer ? "message_refused" : "frame_dropped",
               {{"error", decoded.error}, {"bytes", std::to_string(message.size())}});
      if (answer) {
        Send(MakeErrorReply(decoded.error, decoded.envelope.has_lease()
                                               ? decoded.envelope.lease().lease_id()
                                               : ""));
      }
      return;
    }
    last_heard = Clock::now();
    const Envelope& envelope = decoded.envelope;
    switch (envelope.body_case()) {
      case Envelope::kWelcome:
        registered = true;
        backoff_ms = 0;
        LogEvent("info", "registered", {{"worker", envelope.welcome().worker_id()}});
        for (auto& [lease_id, result] : unacked) {
          SendFrame(result.frame, "result");
          result.sent = Clock::now();
        }
        credits_sent = -1;
        AnnounceCredits();
        break;
      case Envelope::kHeartbeat:
        break;
      case Envelope::kLease:
        HandleLease(envelope.lease());
        break;
      case Envelope::kAck:
        if (unacked.erase(envelope.ack().lease_id()) > 0) {
          LogEvent("info", "result_acked", {{"lease", envelope.ack().lease_id()}});
        }
        break;
      case Envelope::kError:
        LogEvent("warn", "coordinator_error",
                 {{"error", envelope.error().error()}, {"lease", envelope.error().lease_id()}});
        break;
      case Envelope::kDisconnect:
        LogEvent("info", "asked_to_register", {{"reason", envelope.disconnect().reason()}});
        socket.reset();
        Connect();
        break;
      default:
        Send(MakeErrorReply(std::string("unexpected message '") + BodyName(envelope) +
                            "' from the coordinator"));
        break;
    }
  }

  void HandleOutcomes() {
    for (SandboxOutcome& outcome : runner->TakeFinished()) {
      auto it = in_hand.find(outcome.job_id);
      if (it == in_hand.end()) continue;
      const Lease& lease = it->second;
      Measurement& m = outcome.measurement;
      // A baseline's candidate carries the schedule the child imported, if any; the
      // rest of the candidate (schedule_hash included) stays as leased.
      const bool baseline = IsBaseline(lease.candidate());
      ScheduleSpec imported = std::move(*m.mutable_candidate()->mutable_schedule());
      *m.mutable_candidate() = lease.candidate();
      if (baseline && imported.stages_size() > 0) {
        *m.mutable_candidate()->mutable_schedule() = std::move(imported);
      }
      *m.mutable_host() = options.host;
      m.set_lease_id(lease.lease_id());
      if (options.host.test_time_scale() > 0) ScaleTimes(options.host.test_time_scale(), &m);
      LogEvent("info", "lease_finished",
               {{"lease", lease.lease_id()},
                {"status", MeasurementStatus_Name(m.status())},
                {"median_s", std::to_string(m.stats().median_seconds())},
                {"compile_s", std::to_string(m.compile_seconds())}});
      if (baseline && !m.schedule_source().empty()) {
        const bool has_spec = m.candidate().schedule().stages_size() > 0;
        LogEvent(has_spec ? "info" : "warn", "baseline_schedule",
                 {{"lease", lease.lease_id()},
                  {"autoscheduler", lease.candidate().origin()},
                  {"imported", has_spec ? "yes" : "no"},
                  {"note", outcome.note}});
      }
      Envelope envelope;
      *envelope.mutable_result()->mutable_measurement() = std::move(m);
      Unacked& result = unacked[lease.lease_id()];
      result.frame = EncodeEnvelope(envelope);
      result.sent = Clock::now();
      SendFrame(result.frame, "result");
      in_hand.erase(it);
    }
  }

  // Heartbeats, the coordinator's liveness, reconnects and result resends.
  void ServeTimers() {
    const Clock::time_point now = Clock::now();
    if (!socket) {
      if (now >= reconnect_at) Connect();
      return;
    }
    if (now - last_heard >
        std::chrono::milliseconds(options.heartbeat_interval_ms * options.liveness)) {
      backoff_ms = backoff_ms == 0 ? options.reconnect_initial_ms
                                   : std::min(2 * backoff_ms, options.reconnect_max_ms);
      LogEvent(
          "warn", "coordinator_silent",
          {{"coordinator", options.coordinator}, {"reconnect_in_ms", std::to_string(backoff_ms)}});
      socket.reset();
      registered = false;
      reconnect_at = After(backoff_ms);
      return;
    }
    if (now >= next_heartbeat) {
      Send(MakeHeartbeat());
      next_heartbeat = now + std::chrono::milliseconds(options.heartbeat_interval_ms);
    }
    if (registered) {
      for (auto& [lease_id, result] : unacked) {
        if (now - result.sent > std::chrono::milliseconds(options.result_resend_ms)) {
          SendFrame(result.frame, "result");
          result.sent = now;
        }
      }
    }
  }

  int PollTimeoutMs() const {
    const Clock::time_point now = Clock::now();
    Clock::time_point next =
        socket ? std::min(next_heartbeat,
                          last_heard + std::chrono::milliseconds(options.heartbeat_interval_ms *
                                                                 options.liveness))
               : reconnect_at;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    return static_cast<int>(std::clamp<int64_t>(ms + 1, 1, 100));
  }
};

WorkerDaemon::WorkerDaemon(std::unique_ptr<State> state) : state_(std::move(state)) {}

WorkerDaemon::~WorkerDaemon() {
  for (int fd : state_->stop_pipe) {
    if (fd >= 0) close(fd);
  }
}

StatusOr<std::unique_ptr<WorkerDaemon>> WorkerDaemon::Create(WorkerOptions options) {
  if (options.coordinator.empty()) return Status::Error("no coordinator endpoint given");
  if (options.prefetch < 0) return Status::Error("prefetch must not be negative");
  auto state = std::make_unique<State>();
  if (pipe2(state->stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    return Status::Error("cannot create the stop pipe");
  }
  if (options.replay) {
    StatusOr<std::unique_ptr<ReplayRunner>> replay = ReplayRunner::Create(options.replay);
    if (!replay.ok()) return replay.status().WithContext("replay");
    state->runner = std::move(replay).value();
    LogEvent("info", "replay_started",
             {{"dataset", options.replay->path},
              {"id", options.replay->id},
              {"measurements", std::to_string(options.replay->data.measurements_size())}});
  } else {
    StatusOr<std::unique_ptr<SandboxPool>> pool = SandboxPool::Start(options.sandbox);
    if (!pool.ok()) return pool.status().WithContext("sandbox");
    std::string pids;
    for (pid_t pid : (*pool)->child_pids()) pids += (pids.empty() ? "" : ",") + std::to_string(pid);
    LogEvent("info", "sandbox_started",
             {{"children", std::to_string(options.sandbox.children)}, {"pids", pids}});
    state->runner = std::move(pool).value();
  }
  state->options = std::move(options);
  return std::unique_ptr<WorkerDaemon>(new WorkerDaemon(std::move(state)));
}

void WorkerDaemon::RequestStop() {
  const char byte = 1;
  const ssize_t ignored = write(state_->stop_pipe[1], &byte, 1);
  (void)ignored;
}

Status WorkerDaemon::Run() {
  State& s = *state_;
  s.Connect();
  int stop_requests = 0;
  while (true) {
    std::vector<zmq::pollitem_t> items = {{nullptr, s.runner->notify_fd(), ZMQ_POLLIN, 0},
                                          {nullptr, s.stop_pipe[0], ZMQ_POLLIN, 0}};
    if (s.socket) items.push_back({s.socket->handle(), 0, ZMQ_POLLIN, 0});
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(s.PollTimeoutMs()));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) return Status::Error(std::string("poll: ") + e.what());
      continue;  // a signal: its byte waits in the stop pipe
    }

    if (items[1].revents & ZMQ_POLLIN) {
      char bytes[16];
      const ssize_t n = read(s.stop_pipe[0], bytes, sizeof(bytes));
      stop_requests += n > 0 ? static_cast<int>(n) : 0;
    }
    if (stop_requests >= 2) {
      LogEvent("warn", "stopped",
               {{"abandoned_leases", std::to_string(s.in_hand.size())},
                {"unacknowledged_results", std::to_string(s.unacked.size())}});
      return Status::Ok();
    }
    if (stop_requests == 1 && !s.draining) {
      s.draining = true;
      s.drain_deadline = After(s.options.drain_timeout_ms);
      LogEvent("info", "draining", {{"leases", std::to_string(s.in_hand.size())}});
    }
    if (items[0].revents & ZMQ_POLLIN) s.HandleOutcomes();
    while (s.socket) {
      zmq::message_t message;
      zmq::recv_result_t received;
      try {
        received = s.socket->recv(message, zmq::recv_flags::dontwait);
      } catch (const zmq::error_t& e) {
        if (e.num() != EINTR) return Status::Error(std::string("receive: ") + e.what());
        continue;
      }
      if (!received) break;
      s.HandleFrame(message);
    }
    s.ServeTimers();
    s.AnnounceCredits();

    if (s.draining && s.in_hand.empty() && s.unacked.empty()) {
      if (s.socket) {
        s.Send(MakeDisconnect("drained"));
        s.socket->set(zmq::sockopt::linger, 1000);  // let the Disconnect leave
      }
      LogEvent("info", "drained", {});
      return Status::Ok();
    }
    if (s.draining && Clock::now() > s.drain_deadline) {
      return Status::Error("drain timed out with " + std::to_string(s.in_hand.size()) +
                           " leases running and " + std::to_string(s.unacked.size()) +
                           " results unacknowledged");
    }
  }
}

}  // namespace schedfarm
