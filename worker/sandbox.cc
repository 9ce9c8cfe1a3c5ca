#include "worker/sandbox.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "common/cpus.h"
#include "protocol/measurement_settings.h"
#include "worker/child_end.h"
#include "worker/cpu_plan.h"
#include "worker/measure.h"
#include "worker/sandbox_frame.h"

namespace schedfarm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kTailBytes = 2048;  // output kept for error messages

// The limit of a job's reference phase: the pool's, or the campaign's compile and run
// timeouts together when they allow longer (the reference outputs are a compile and a
// run under the reference schedule, and a whole network's take minutes: ViT-B/16's
// 630 stages took 387 s to compile).
int64_t ReferenceTimeoutMs(const SandboxOptions& options, const MeasurementSettings& settings) {
  return std::max(options.reference_timeout_ms,
                  settings.compile_timeout_ms() + settings.run_timeout_ms());
}

// A run killed by its timeout that used at least this share of the timeout as CPU time
// was computing all along: the timeout is conclusive. One that used less was starved
// (an overloaded or stopped host) and is worth another try.
constexpr double kConclusiveCpuShare = 0.9;

// The user and system CPU seconds of all threads of process `pid` (/proc/PID/stat),
// or 0 when it cannot be read.
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t name_end = text.rfind(')');
  if (name_end == std::string::npos) return 0;
  std::istringstream fields(text.substr(name_end + 1));
  std::string field;
  double ticks = 0;
  // After the name: state (field 3) ... utime (14) and stime (15).
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i >= 14) ticks += std::strtod(field.c_str(), nullptr);
  }
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

Clock::duration Millis(int64_t ms) { return std::chrono::milliseconds(ms); }

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

// Creates a pipe with both ends close-on-exec.
bool MakePipe(int fds[2]) { return pipe2(fds, O_CLOEXEC) == 0; }

// Moves `fd` to a close-on-exec descriptor >= 10, so that the forked child can dup2
// its ends onto 1 to 4 in any order.
int MoveHigh(int fd) {
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  close(fd);
  return high;
}

void SetNonBlocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Writes `text` with write(2) only: usable between fork and exec.
void WriteRaw(int fd, const char* text) {
  const ssize_t ignored = write(fd, text, strlen(text));
  (void)ignored;
}

enum class Phase {
  kDown,       // no process; relaunched at `next_start`
  kStarting,   // launched, Ready not yet received
  kIdle,       // ready, no job
  kReference,  // job sent: computing or loading the reference outputs
  kCompiling,  // CompileStarted received
  kCompiled,   // Compiled received, waiting for the benchmark slot
  kRunning,    // start_run sent
};

enum class KillReason { kNone, kStartTimeout, kTimeout, kOutputLimit, kProtocol, kLostPipe };

struct Job {
  SandboxJob job;
  Clock::time_point submitted;
};

struct Child {
  Phase phase = Phase::kDown;
  pid_t pid = -1;
  int pidfd = -1;
  int request_fd = -1;     // the child's fd 3
  int event_fd = -1;       // the child's fd 4
  int output_fd = -1;      // the child's stdout and stderr
  std::string to_child;    // request bytes not yet written
  std::string from_child;  // event bytes not yet parsed
  std::string tail;        // the last output bytes
  int64_t output_bytes = 0;
  Clock::time_point launched;
  std::optional<Clock::time_point> deadline;  // of the current phase
  Clock::time_point next_start;               // kDown: when to relaunch
  int start_failures = 0;                     // in a row, for the back-off
  bool ever_ready = false;
  bool launched_before = false;
  KillReason kill_reason = KillReason::kNone;
  std::string kill_detail;
  std::optional<Job> job;
  Clock::time_point dispatched;
  double compile_seconds = 0;
  uint64_t compiled_order = 0;  // FIFO order of the benchmark slot
  std::string scratch_dir;      // the one folder it may write (with the cache)
  double run_cpu_start = 0;     // the child's CPU seconds when its run began
  double run_cpu_seconds = -1;  // CPU seconds of a run killed by the run timeout
};

}  // namespace

struct SandboxPool::Impl {
  explicit Impl(const SandboxOptions& o) : options(o) {}
  ~Impl() { Stop(); }

  const SandboxOptions options;
  const std::vector<int> allowed_cpus = AllowedCpus();  // the children's, as they inherit them
  std::thread thread;
  int wake_fd = -1;   // eventfd: Submit and Stop wake the pool's thread
  int notify = -1;    // eventfd: readable while outcomes wait
  int dev_null = -1;  // the children's stdin

  mutable std::mutex mutex;
  std::condition_variable changed;
  bool stop = false;
  std::deque<Job> submitted;  // handed over to the pool's thread
  std::vector<SandboxOutcome> finished;
  int in_hand = 0;
  std::vector<pid_t> pids;
  int64_t restarts = 0;
  int64_t start_failures = 0;
  bool all_ready = false;
  std::string start_error;  // a child that never became ready died or timed out
  std::string confinement;  // as the newest ready child reported it

  // Owned by the pool's thread.
  std::vector<Child> children;
  std::deque<Job> queue;
  uint64_t compiled_counter = 0;
  uint64_t launches = 0;  // names the children's scratch folders

  void Stop();
  void Loop();
  void Launch(Child& child);
  void RefuseOversizedJobs(Clock::time_point now);
  void Dispatch(Clock::time_point now);
  void Send(Child& child, const SandboxRequest& request);
  void FlushRequests(Child& child);
  void ReadOutput(Child& child);
  void ReadEvents(Child& child, Clock::time_point now);
  void HandleEvent(Child& child, const SandboxEvent& event, Clock::time_point now);
  void Kill(Child& child, KillReason reason, const std::string& detail);
  void Reap(Child& child, Clock::time_point now);
  Measurement Classify(const Child& child, int wait_status) const;
  void Deliver(const Job& job, pid_t pid, Clock::time_point dispatched, Measurement measurement,
               Clock::time_point now);
  void Deliver(Child& child, Measurement measurement, Clock::time_point now);
  void UpdatePids();
  void RemoveScratch(Child& child);
  void Shutdown();
};

void SandboxPool::Impl::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stop = true;
  }
  if (wake_fd >= 0) {
    const uint64_t one = 1;
    const ssize_t ignored = write(wake_fd, &one, sizeof(one));
    (void)ignored;
  }
  if (thread.joinable()) thread.join();
  CloseFd(wake_fd);
  CloseFd(notify);
  CloseFd(dev_null);
}

void SandboxPool::Impl::UpdatePids() {
  std::lock_guard<std::mutex> lock(mutex);
  pids.clear();
  for (const Child& c : children) {
    if (c.phase != Phase::kDown) pids.push_back(c.pid);
  }
  bool ready = true;
  for (const Child& c : children) ready = ready && c.ever_ready;
  all_ready = ready;
  changed.notify_all();
}

void SandboxPool::Impl::Launch(Child& child) {
  int request[2], event[2], output[2];
  if (!MakePipe(request)) {
    child.next_start = Clock::now() + std::chrono::seconds(1);
    return;
  }
  if (!MakePipe(event)) {
    close(request[0]);
    close(request[1]);
    child.next_start = Clock::now() + std::chrono::seconds(1);
    return;
  }
  if (!MakePipe(output)) {
    for (int fd : {request[0], request[1], event[0], event[1]}) close(fd);
    child.next_start = Clock::now() + std::chrono::seconds(1);
    return;
  }
  const int child_requests = MoveHigh(request[0]);
  const int child_events = MoveHigh(event[1]);
  const int child_output = MoveHigh(output[1]);

  // A folder of its own, made here and removed when it is reaped.
  std::error_code made;
  child.scratch_dir = (std::filesystem::temp_directory_path(made) /
                       ("schedfarm-sandbox-" + std::to_string(getpid()) + "-" +
                        std::to_string(++launches)))
                          .string();
  std::filesystem::remove_all(child.scratch_dir, made);
  if (!std::filesystem::create_directory(child.scratch_dir, made)) {
    for (int fd : {child_requests, child_events, child_output, request[1], event[0], output[0]}) {
      close(fd);
    }
    child.next_start = Clock::now() + std::chrono::seconds(1);
    return;
  }
  const std::string memory = "--memory-limit-bytes=" + std::to_string(options.memory_limit_bytes);
  const std::string scratch = "--scratch-dir=" + child.scratch_dir;
  const std::string file_size =
      "--file-size-limit-bytes=" + std::to_string(options.file_size_limit_bytes > 0
                                                      ? options.file_size_limit_bytes
                                                      : options.memory_limit_bytes);
  // Absolute: the child runs in its scratch folder.
  const std::string cache =
      "--cache-dir=" + (options.cache_dir.empty()
                            ? std::string()
                            : std::filesystem::absolute(options.cache_dir, made).string());
  const std::string beam = "--adams2019-beam=" + std::to_string(options.adams2019_beam);
  std::vector<char*> argv = {const_cast<char*>(options.child_executable.c_str()),
                             const_cast<char*>("--sandbox-child"),
                             const_cast<char*>(memory.c_str()), const_cast<char*>(beam.c_str()),
                             const_cast<char*>(scratch.c_str()),
                             const_cast<char*>(file_size.c_str())};
  if (!options.cache_dir.empty()) argv.push_back(const_cast<char*>(cache.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();

  const pid_t pid = fork();
  if (pid == 0) {
    // The child of a multithreaded process: async-signal-safe calls only until exec.
    setsid();
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(1);  // the pool's thread ended before prctl
    dup2(dev_null, 0);
    dup2(child_output, 1);
    dup2(child_output, 2);
    dup2(child_requests, 3);
    dup2(child_events, 4);
    close_range(5, ~0U, 0);
    // SIGPIPE back to its default; SIGINT, SIGTERM and SIGHUP ignored (kept across exec):
    // a batch system or service manager that signals every process of the job stops the
    // worker, which drains, and must not kill the candidates it is finishing. The pool
    // itself stops children only with SIGKILL.
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);
    struct sigaction ignore = {};
    ignore.sa_handler = SIG_IGN;
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &ignore, nullptr);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execv(argv[0], argv.data());
    WriteRaw(2, "sandbox child: cannot execute ");
    WriteRaw(2, argv[0]);
    WriteRaw(2, errno == ENOENT ? ": no such file\n" : ": exec failed\n");
    _exit(127);
  }
  close(child_requests);
  close(child_events);
  close(child_output);
  child.launched = Clock::now();
  if (pid < 0) {
    for (int fd : {request[1], event[0], output[0]}) close(fd);
    child.next_start = child.launched + std::chrono::seconds(1);
    return;
  }
  child.pid = pid;
  child.pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // readable at exit
  child.request_fd = request[1];
  child.event_fd = event[0];
  child.output_fd = output[0];
  for (int fd : {child.request_fd, child.event_fd, child.output_fd}) SetNonBlocking(fd);
  child.to_child.clear();
  child.from_child.clear();
  child.tail.clear();
  child.output_bytes = 0;
  child.kill_reason = KillReason::kNone;
  child.kill_detail.clear();
  child.phase = Phase::kStarting;
  child.deadline = child.launched + Millis(options.start_timeout_ms);
  if (child.launched_before) {
    std::lock_guard<std::mutex> lock(mutex);
    ++restarts;
  }
  child.launched_before = true;
  if (child.pidfd < 0) {  // cannot watch it: end it and try again later
    kill(pid, SIGKILL);
    while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    for (int* fd : {&child.request_fd, &child.event_fd, &child.output_fd}) CloseFd(*fd);
    child.phase = Phase::kDown;
    child.pid = -1;
    child.next_start = Clock::now() + std::chrono::seconds(1);
    std::lock_guard<std::mutex> lock(mutex);
    ++start_failures;
    return;
  }
  UpdatePids();
}

void SandboxPool::Impl::Send(Child& child, const SandboxRequest& request) {
  child.to_child += EncodeSandboxFrame(request);
  FlushRequests(child);
}

void SandboxPool::Impl::FlushRequests(Child& child) {
  while (!child.to_child.empty() && child.request_fd >= 0) {
    const ssize_t n = write(child.request_fd, child.to_child.data(), child.to_child.size());
    if (n > 0) {
      child.to_child.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) {
      // The child is gone (its exit is reported by the pidfd). SIGPIPE is blocked
      // on this thread; take the pending one.
      sigset_t pipe_set;
      sigemptyset(&pipe_set);
      sigaddset(&pipe_set, SIGPIPE);
      const timespec zero = {0, 0};
      sigtimedwait(&pipe_set, nullptr, &zero);
      child.to_child.clear();
    }
    return;  // EAGAIN: poll for POLLOUT
  }
}

void SandboxPool::Impl::ReadOutput(Child& child) {
  char buffer[65536];
  // A bounded number of reads per wake-up, so that a flood cannot starve the others.
  for (int i = 0; i < 16 && child.output_fd >= 0; ++i) {
    const ssize_t n = read(child.output_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN
    if (n == 0) {
      CloseFd(child.output_fd);
      return;
    }
    child.output_bytes += n;
    child.tail.append(buffer, static_cast<size_t>(n));
    if (child.tail.size() > 2 * kTailBytes) child.tail.erase(0, child.tail.size() - kTailBytes);
    if (child.job && child.output_bytes > options.output_limit_bytes &&
        child.kill_reason == KillReason::kNone) {
      Kill(child, KillReason::kOutputLimit,
           "wrote more than the output limit of " + std::to_string(options.output_limit_bytes) +
               " bytes");
      return;
    }
  }
}

void SandboxPool::Impl::ReadEvents(Child& child, Clock::time_point now) {
  char buffer[65536];
  while (child.event_fd >= 0 && child.kill_reason == KillReason::kNone) {
    const ssize_t n = read(child.event_fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // EAGAIN
    if (n == 0) {
      CloseFd(child.event_fd);
      // Normally the child is exiting; the pidfd reports it. One that lives on
      // without its event pipe is killed after a grace period.
      child.deadline = now + std::chrono::seconds(2);
      break;
    }
    child.from_child.append(buffer, static_cast<size_t>(n));
  }
  while (child.from_child.size() >= 4 && child.kill_reason == KillReason::kNone) {
    const uint32_t length = DecodeSandboxFrameLength(child.from_child.data());
    if (length > kMaxSandboxFrameBytes) {
      Kill(child, KillReason::kProtocol,
           "sent an event frame of " + std::to_string(length) + " bytes");
      return;
    }
    if (child.from_child.size() < 4 + static_cast<size_t>(length)) return;
    SandboxEvent event;
    if (!event.ParseFromArray(child.from_child.data() + 4, static_cast<int>(length))) {
      Kill(child, KillReason::kProtocol, "sent an event that does not parse");
      return;
    }
    child.from_child.erase(0, 4 + static_cast<size_t>(length));
    HandleEvent(child, event, now);
  }
}

void SandboxPool::Impl::HandleEvent(Child& child, const SandboxEvent& event,
                                    Clock::time_point now) {
  const Phase phase = child.phase;
  switch (event.body_case()) {
    case SandboxEvent::kReady:
      if (phase != Phase::kStarting || event.ready().pid() != child.pid) break;
      child.phase = Phase::kIdle;
      child.deadline.reset();
      child.start_failures = 0;
      child.ever_ready = true;
      {
        std::lock_guard<std::mutex> lock(mutex);
        confinement = event.ready().confinement();
      }
      UpdatePids();
      return;
    case SandboxEvent::kCompileStarted:
      if (phase != Phase::kReference) break;
      child.phase = Phase::kCompiling;
      child.deadline = now + Millis(child.job->job.settings().compile_timeout_ms());
      return;
    case SandboxEvent::kCompiled:
      if (phase != Phase::kCompiling) break;
      child.phase = Phase::kCompiled;
      child.deadline.reset();
      child.compile_seconds = event.compiled().compile_seconds();
      child.compiled_order = ++compiled_counter;
      return;
    case SandboxEvent::kFinished:
      if (phase != Phase::kReference && phase != Phase::kCompiling && phase != Phase::kRunning) {
        break;
      }
      child.phase = Phase::kIdle;
      child.deadline.reset();
      Deliver(child, event.finished(), now);
      return;
    case SandboxEvent::BODY_NOT_SET:
      break;
  }
  Kill(child, KillReason::kProtocol,
       "sent event " + std::to_string(event.body_case()) + " out of turn");
}

void SandboxPool::Impl::Kill(Child& child, KillReason reason, const std::string& detail) {
  if (child.kill_reason != KillReason::kNone) return;
  child.kill_reason = reason;
  child.kill_detail = detail;
  child.deadline.reset();
  if (reason == KillReason::kTimeout && child.phase == Phase::kRunning) {
    child.run_cpu_seconds = ProcessCpuSeconds(child.pid) - child.run_cpu_start;
  }
  // The process group (the child and anything it started), and the child itself in
  // case it has not reached setsid yet.
  kill(-child.pid, SIGKILL);
  kill(child.pid, SIGKILL);
}

Measurement SandboxPool::Impl::Classify(const Child& child, int wait_status) const {
  const SandboxJob& job = child.job->job;
  std::string during;
  MeasurementStatus timeout_status = RUN_TIMEOUT;
  int64_t timeout_ms = job.settings().run_timeout_ms();
  switch (child.phase) {
    case Phase::kReference:
      during = "while computing the reference outputs";
      timeout_ms = ReferenceTimeoutMs(options, job.settings());
      break;
    case Phase::kCompiling:
      during = "while compiling";
      timeout_status = COMPILE_TIMEOUT;
      timeout_ms = job.settings().compile_timeout_ms();
      break;
    case Phase::kCompiled:
      during = "while waiting for the benchmark slot";
      break;
    default:
      during = "while running";
      break;
  }
  MeasurementStatus status = CRASH;
  std::string what;
  switch (child.kill_reason) {
    case KillReason::kTimeout:
      status = timeout_status;
      what = "was killed after the " +
             std::string(child.phase == Phase::kReference   ? "reference"
                         : child.phase == Phase::kCompiling ? "compile"
                                                            : "run") +
             " timeout of " + std::to_string(timeout_ms) + " ms";
      break;
    case KillReason::kOutputLimit:
      status = OUTPUT_LIMIT;
      what = "was killed: it " + child.kill_detail;
      break;
    case KillReason::kProtocol:
    case KillReason::kLostPipe:
      what = "was killed: it " + child.kill_detail;
      break;
    default:
      if (wait_status != kStatusUnknown && WIFSIGNALED(wait_status)) {
        const int sig = WTERMSIG(wait_status);
        what = "was killed by " + DescribeSignal(sig);
        if (sig == SIGKILL) {
          status = OUT_OF_MEMORY;
          what += ", not sent by the pool (the kernel's out-of-memory killer)";
        } else if (SaysOutOfMemory(child.tail)) {
          status = OUT_OF_MEMORY;
        }
      } else {
        what = DescribeEnd(wait_status);
        if (SaysOutOfMemory(child.tail)) status = OUT_OF_MEMORY;
      }
      break;
  }
  std::string error = "sandbox child " + std::to_string(child.pid) + " " + what + " " + during +
                      " (job '" + job.job_id() + "', pipeline '" + job.pipeline().name() + "')";
  const std::string tail = Printable(child.tail.size() > kTailBytes / 2
                                         ? child.tail.substr(child.tail.size() - kTailBytes / 2)
                                         : child.tail);
  if (!tail.empty()) error += "; output tail: " + tail;
  const bool conclusive = child.kill_reason == KillReason::kTimeout &&
                          child.phase == Phase::kRunning &&
                          child.run_cpu_seconds >= kConclusiveCpuShare * timeout_ms / 1000.0;
  if (child.kill_reason == KillReason::kTimeout && child.phase == Phase::kRunning) {
    char used[64];
    std::snprintf(used, sizeof(used), "; it used %.2f s of CPU: ", std::max(0.0, child.run_cpu_seconds));
    error += used;
    error += conclusive ? "conclusive, not retried" : "it did not have the CPU, retried";
  }
  Measurement m = FailedMeasurement(status, error, job.settings());
  m.set_conclusive(conclusive);
  if (child.phase == Phase::kCompiled || child.phase == Phase::kRunning) {
    m.set_compile_seconds(child.compile_seconds);
  }
  return m;
}

void SandboxPool::Impl::Deliver(const Job& job, pid_t pid, Clock::time_point dispatched,
                                Measurement measurement, Clock::time_point now) {
  SandboxOutcome outcome;
  outcome.job_id = job.job.job_id();
  outcome.measurement = std::move(measurement);
  if (outcome.measurement.status() == OK && !outcome.measurement.error().empty()) {
    outcome.note = outcome.measurement.error();
    outcome.measurement.clear_error();
  }
  outcome.child_pid = pid;
  outcome.queued_seconds = Seconds(dispatched - job.submitted);
  outcome.total_seconds = Seconds(now - job.submitted);
  std::lock_guard<std::mutex> lock(mutex);
  finished.push_back(std::move(outcome));
  const uint64_t one = 1;
  const ssize_t ignored = write(notify, &one, sizeof(one));
  (void)ignored;
  changed.notify_all();
}

void SandboxPool::Impl::Deliver(Child& child, Measurement measurement, Clock::time_point now) {
  Deliver(*child.job, child.pid, child.dispatched, std::move(measurement), now);
  child.job.reset();
}

void SandboxPool::Impl::Reap(Child& child, Clock::time_point now) {
  // Everything the child wrote is in the pipes by now.
  ReadOutput(child);
  if (child.kill_reason == KillReason::kNone) ReadEvents(child, now);
  kill(-child.pid, SIGKILL);  // whatever it started
  int wait_status = 0;
  const pid_t reaped = waitpid(child.pid, &wait_status, WNOHANG);
  if (reaped == 0) return;  // not yet
  if (reaped < 0) wait_status = kStatusUnknown;
  if (child.job) Deliver(child, Classify(child, wait_status), now);
  RemoveScratch(child);
  if (child.phase == Phase::kStarting) {
    ++child.start_failures;
    const int64_t backoff_ms =
        std::min<int64_t>(100LL << std::min(child.start_failures - 1, 10), 10000);
    child.next_start = now + Millis(backoff_ms);
    std::lock_guard<std::mutex> lock(mutex);
    ++start_failures;
    if (!child.ever_ready && start_error.empty()) {
      const std::string why =
          child.kill_reason == KillReason::kStartTimeout
              ? "did not report ready within " + std::to_string(options.start_timeout_ms) + " ms"
              : DescribeEnd(wait_status);
      start_error = "sandbox child '" + options.child_executable + "' " + why;
      if (!child.tail.empty()) start_error += "; output: " + Printable(child.tail);
    }
  } else {
    child.next_start = now;
  }
  CloseFd(child.pidfd);
  CloseFd(child.request_fd);
  CloseFd(child.event_fd);
  CloseFd(child.output_fd);
  child.phase = Phase::kDown;
  child.deadline.reset();
  child.pid = -1;
  UpdatePids();
}

void SandboxPool::Impl::RefuseOversizedJobs(Clock::time_point now) {
  const size_t limit = std::min<size_t>(options.max_job_bytes, kMaxSandboxFrameBytes - 16);
  for (auto it = queue.begin(); it != queue.end();) {
    const size_t bytes = it->job.ByteSizeLong();
    if (bytes <= limit) {
      ++it;
      continue;
    }
    const std::string error = "job '" + it->job.job_id() + "' (pipeline '" +
                              it->job.pipeline().name() + "') is " + std::to_string(bytes) +
                              " bytes, more than the sandbox takes (" + std::to_string(limit) + ")";
    Deliver(*it, 0, now, FailedMeasurement(COMPILE_ERROR, error, it->job.settings()), now);
    it = queue.erase(it);
  }
}

void SandboxPool::Impl::Dispatch(Clock::time_point now) {
  // A compile on the cpus of a timed run would slow it (a host with no cpu to spare
  // compiles on all of them): such a run waits for the compile, and such a compile
  // does not start while a run on its cpus runs or waits for the slot.
  const auto plan = [&](const Job& job) {
    return PlanCpus(allowed_cpus, job.job.settings().threads());
  };
  bool running = false;
  Child* next_run = nullptr;
  int compiling = 0;
  std::vector<std::vector<int>> compile_cpus;  // of the children computing or compiling
  std::vector<std::vector<int>> run_cpus;      // of the children running or compiled
  for (Child& c : children) {
    if (c.kill_reason != KillReason::kNone) continue;
    running = running || c.phase == Phase::kRunning;
    if (c.phase == Phase::kReference || c.phase == Phase::kCompiling) {
      ++compiling;
      compile_cpus.push_back(plan(*c.job).compile);
    }
    if (c.phase == Phase::kRunning || c.phase == Phase::kCompiled) {
      run_cpus.push_back(plan(*c.job).benchmark);
    }
    if (c.phase == Phase::kCompiled &&
        (next_run == nullptr || c.compiled_order < next_run->compiled_order)) {
      next_run = &c;
    }
  }
  const auto overlaps_any = [](const std::vector<int>& cpus,
                               const std::vector<std::vector<int>>& others) {
    return std::any_of(others.begin(), others.end(),
                       [&](const std::vector<int>& other) { return CpusOverlap(cpus, other); });
  };
  if (!running && next_run != nullptr &&
      !overlaps_any(plan(*next_run->job).benchmark, compile_cpus)) {
    SandboxRequest start;
    start.set_start_run(true);
    next_run->phase = Phase::kRunning;
    next_run->deadline = now + Millis(next_run->job->job.settings().run_timeout_ms());
    next_run->run_cpu_start = ProcessCpuSeconds(next_run->pid);
    next_run->run_cpu_seconds = -1;
    Send(*next_run, start);
  }
  for (Child& c : children) {
    if (queue.empty() || compiling >= options.compile_slots) break;
    if (overlaps_any(plan(queue.front()).compile, run_cpus)) break;
    if (c.phase != Phase::kIdle || c.kill_reason != KillReason::kNone) continue;
    c.job = std::move(queue.front());
    queue.pop_front();
    c.dispatched = now;
    c.phase = Phase::kReference;
    c.deadline = now + Millis(ReferenceTimeoutMs(options, c.job->job.settings()));
    c.output_bytes = 0;
    c.tail.clear();
    c.compile_seconds = 0;
    ++compiling;
    SandboxRequest request;
    *request.mutable_job() = c.job->job;
    Send(c, request);
  }
}

void SandboxPool::Impl::RemoveScratch(Child& child) {
  std::error_code ignored;
  if (!child.scratch_dir.empty()) std::filesystem::remove_all(child.scratch_dir, ignored);
  child.scratch_dir.clear();
}

void SandboxPool::Impl::Shutdown() {
  for (Child& c : children) {
    if (c.phase == Phase::kDown) continue;
    kill(-c.pid, SIGKILL);
    kill(c.pid, SIGKILL);
  }
  for (Child& c : children) {
    if (c.phase == Phase::kDown) continue;
    while (waitpid(c.pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    RemoveScratch(c);
    CloseFd(c.pidfd);
    CloseFd(c.request_fd);
    CloseFd(c.event_fd);
    CloseFd(c.output_fd);
    c.phase = Phase::kDown;
  }
  UpdatePids();
}

void SandboxPool::Impl::Loop() {
  // Writes to a dead child's request pipe fail with EPIPE instead of killing the
  // process; the children unblock it again before exec.
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, nullptr);

  for (Child& c : children) Launch(c);
  std::vector<pollfd> fds;
  struct Watch {
    Child* child;
    int kind;  // 0 output, 1 events, 2 requests, 3 pidfd
  };
  std::vector<Watch> watches;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (stop) break;
      while (!submitted.empty()) {
        queue.push_back(std::move(submitted.front()));
        submitted.pop_front();
      }
    }
    Clock::time_point now = Clock::now();
    RefuseOversizedJobs(now);
    Dispatch(now);

    fds.assign(1, pollfd{wake_fd, POLLIN, 0});
    watches.assign(1, Watch{nullptr, -1});
    std::optional<Clock::time_point> nearest;
    auto consider = [&](Clock::time_point t) {
      if (!nearest || t < *nearest) nearest = t;
    };
    for (Child& c : children) {
      if (c.phase == Phase::kDown) {
        consider(c.next_start);
        continue;
      }
      if (c.deadline) consider(*c.deadline);
      if (c.output_fd >= 0) {
        fds.push_back({c.output_fd, POLLIN, 0});
        watches.push_back({&c, 0});
      }
      if (c.event_fd >= 0 && c.kill_reason == KillReason::kNone) {
        fds.push_back({c.event_fd, POLLIN, 0});
        watches.push_back({&c, 1});
      }
      if (c.request_fd >= 0 && !c.to_child.empty()) {
        fds.push_back({c.request_fd, POLLOUT, 0});
        watches.push_back({&c, 2});
      }
      fds.push_back({c.pidfd, POLLIN, 0});
      watches.push_back({&c, 3});
    }
    int timeout_ms = -1;
    if (nearest) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*nearest - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(wait, 0, 3600 * 1000));
    }
    const int ready = poll(fds.data(), fds.size(), timeout_ms);
    if (ready < 0 && errno != EINTR) break;
    now = Clock::now();
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      const ssize_t ignored = read(wake_fd, &count, sizeof(count));
      (void)ignored;
    }
    for (size_t i = 1; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Child& c = *watches[i].child;
      switch (watches[i].kind) {
        case 0:
          ReadOutput(c);
          break;
        case 1:
          ReadEvents(c, now);
          break;
        case 2:
          FlushRequests(c);
          break;
        default:
          Reap(c, now);
          break;
      }
    }
    for (Child& c : children) {
      if (c.phase == Phase::kDown) {
        if (now >= c.next_start) Launch(c);
        continue;
      }
      if (!c.deadline || now < *c.deadline) continue;
      if (c.phase == Phase::kStarting) {
        Kill(c, KillReason::kStartTimeout, "did not report ready in time");
      } else if (c.event_fd < 0) {
        Kill(c, KillReason::kLostPipe, "closed its event pipe");
      } else {
        Kill(c, KillReason::kTimeout, "timed out");
      }
    }
  }
  Shutdown();
}

SandboxPool::SandboxPool(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

SandboxPool::~SandboxPool() { impl_->Stop(); }

namespace {

// The scratch folders of children whose worker died without removing them (kill -9):
// schedfarm-sandbox-PID-N in the temporary directory, PID no longer running.
void RemoveScratchOfDeadWorkers() {
  const std::string prefix = "schedfarm-sandbox-";
  std::error_code error;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(error);
  if (error) return;
  for (const auto& entry : std::filesystem::directory_iterator(tmp, error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const pid_t pid = static_cast<pid_t>(std::atoi(name.c_str() + prefix.size()));
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH)) {
      std::error_code ignored;
      std::filesystem::remove_all(entry.path(), ignored);
    }
  }
}

}  // namespace

StatusOr<std::unique_ptr<SandboxPool>> SandboxPool::Start(const SandboxOptions& options) {
  if (options.child_executable.empty()) {
    return Status::Error("sandbox: no child executable given");
  }
  if (options.children < 1 || options.compile_slots < 1 || options.memory_limit_bytes <= 0 ||
      options.output_limit_bytes <= 0 || options.reference_timeout_ms <= 0 ||
      options.start_timeout_ms <= 0 || options.max_job_bytes <= 0 || options.adams2019_beam <= 0) {
    return Status::Error(
        "sandbox options need children, compile_slots, memory_limit_bytes, "
        "output_limit_bytes, reference_timeout_ms, start_timeout_ms, max_job_bytes and "
        "adams2019_beam > 0");
  }
  RemoveScratchOfDeadWorkers();
  auto impl = std::make_unique<Impl>(options);
  impl->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  impl->notify = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  impl->dev_null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (impl->wake_fd < 0 || impl->notify < 0 || impl->dev_null < 0) {
    return Status::Error(std::string("sandbox: cannot create descriptors: ") +
                         std::strerror(errno));
  }
  impl->children.resize(options.children);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->Loop(); });
  std::unique_lock<std::mutex> lock(impl->mutex);
  const bool settled =
      impl->changed.wait_for(lock, Millis(options.start_timeout_ms) + std::chrono::seconds(1),
                             [&] { return impl->all_ready || !impl->start_error.empty(); });
  if (!impl->start_error.empty() || !settled) {
    const std::string error =
        settled ? impl->start_error : "sandbox children did not report ready in time";
    lock.unlock();
    return Status::Error(error);
  }
  lock.unlock();
  return std::unique_ptr<SandboxPool>(new SandboxPool(std::move(impl)));
}

void SandboxPool::Submit(SandboxJob job) {
  *job.mutable_settings() = WithDefaults(job.settings());
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->submitted.push_back(Job{std::move(job), Clock::now()});
    ++impl_->in_hand;
  }
  const uint64_t one = 1;
  const ssize_t ignored = write(impl_->wake_fd, &one, sizeof(one));
  (void)ignored;
}

int SandboxPool::notify_fd() const { return impl_->notify; }

std::vector<SandboxOutcome> SandboxPool::TakeFinished() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  std::vector<SandboxOutcome> taken = std::move(impl_->finished);
  impl_->finished.clear();
  impl_->in_hand -= static_cast<int>(taken.size());
  uint64_t count;
  const ssize_t ignored = read(impl_->notify, &count, sizeof(count));
  (void)ignored;
  return taken;
}

SandboxOutcome SandboxPool::RunOne(SandboxJob job) {
  static std::atomic<int64_t> counter{0};
  if (job.job_id().empty()) job.set_job_id("job-" + std::to_string(++counter));
  const std::string id = job.job_id();
  Submit(std::move(job));
  std::unique_lock<std::mutex> lock(impl_->mutex);
  SandboxOutcome outcome;
  impl_->changed.wait(lock, [&] {
    auto& finished = impl_->finished;
    for (auto it = finished.begin(); it != finished.end(); ++it) {
      if (it->job_id != id) continue;
      outcome = std::move(*it);
      finished.erase(it);
      return true;
    }
    return false;
  });
  --impl_->in_hand;
  if (impl_->finished.empty()) {
    uint64_t count;
    const ssize_t ignored = read(impl_->notify, &count, sizeof(count));
    (void)ignored;
  }
  return outcome;
}

int SandboxPool::jobs_in_hand() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->in_hand;
}

std::vector<pid_t> SandboxPool::child_pids() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->pids;
}

std::string SandboxPool::confinement() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->confinement;
}

int64_t SandboxPool::restarts() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->restarts;
}

int64_t SandboxPool::start_failures() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->start_failures;
}

}  // namespace schedfarm
