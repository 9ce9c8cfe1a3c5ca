// The coordinator's ingest benchmark: the real farm-coordinator (a process on a store
// in a scratch directory, tcp on 127.0.0.1) driven by simulated workers in this
// process: DEALER sockets speaking the real wire code that register, answer every
// Lease at once with a synthetic Result, send heartbeats and count Acks. Prints the
// durable results acknowledged per second, the dispatch latency percentiles (from the
// Result that frees a credit to that worker's next Lease), leases per second, the
// coordinator's store writes, and beside them the raw rate of synced batched RocksDB
// writes of the same records through Store::Batch measured in the same run, with each
// target's pass or miss.
//
// Two phases: saturation (every lease answered at once: the ingest ceiling; there the
// dispatch latency is the in-flight leases over the rate, by Little's law), then a
// paced phase in which each worker holds each lease for a while (a mean time with
// +-50% spread), so the farm offers a rate below the ceiling and the latency is the
// coordinator's own.
//
// coordinator_bench [--workers N] [--credits C] [--seconds S] [--warmup S] [--threads T]
//                   [--paced-rate R] [--paced-seconds S] [--raw-seconds S]
//                   [--coordinator PATH]
#include <dirent.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "campaign/campaign_pipelines.h"
#include "campaign/campaign_yaml.h"
#include "common/elapsed.h"
#include "common/flags.h"
#include "common/log.h"
#include "protocol/wire.h"
#include "storage/store.h"
#include "tests/support/proc_stats.h"
#include "tests/support/farm_rig.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/simulated_worker.h"

namespace schedfarm {
namespace {

using testing_support::CoordinatorProcess;
using testing_support::TestClient;
namespace sim = testing_support;

constexpr char kUsage[] =
    "usage: coordinator_bench [options]\n"
    "  --workers N       simulated workers (default 1000)\n"
    "  --credits C       credits per worker (default 2)\n"
    "  --seconds S       measured time after the warm-up (default 10)\n"
    "  --warmup S        warm-up after the campaign starts (default 3)\n"
    "  --threads T       threads polling the workers' sockets (default 2)\n"
    "  --paced-rate R    results/s offered in the paced phase (default: half the\n"
    "                    saturated rate)\n"
    "  --paced-seconds S measured time of the paced phase (default 5; 0 skips it)\n"
    "  --raw-seconds S   time per batch size of the raw store rate (default 3)\n"
    "  --coordinator P   the farm-coordinator binary (default: the one built beside)\n";

// Random schedules of small random pipelines: leases stay small, and the schedule
// spaces are large enough that proposals never run dry within a run.
constexpr char kCampaignYaml[] =
    "name: coordinator_bench\n"
    "pipelines:\n"
    "  - random: {seeds: [1, 16], max_ops: 4, max_elements: 65536}\n"
    "strategy: {name: random, settings: {seed: 11}}\n"
    "budget: {benchmarks: 1000000000}\n"
    "measurement: {samples: 3, max_samples: 3, min_sample_time: 1ms}\n";

// The coordinator's targets (bench/README.md).
constexpr int kTargetWorkers = 1000;
constexpr double kTargetResultsPerSecond = 50000;
constexpr double kTargetRawShare = 0.5;
constexpr double kTargetP99Ms = 5;

constexpr int64_t kHeartbeatNs = int64_t{kHeartbeatIntervalMs} * 1000000;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// ---------------------------------------------------------------------------
// Simulated workers

// The measurement windows: dispatch latencies are kept per window.
enum Window { kNoWindow = -1, kSaturated = 0, kPaced = 1, kNumWindows = 2 };

struct SimWorker {
  std::unique_ptr<zmq::socket_t> socket;
  HostFingerprint host;
  std::string instance;
  bool welcomed = false;
  // Send times of results not yet followed by a lease: each freed one credit.
  std::deque<int64_t> freed_ns;
  int64_t next_heartbeat_ns = 0;
};

// Counts of one polling thread, read by the main thread while it runs.
struct alignas(64) ThreadCounts {
  std::atomic<int64_t> leases{0};
  std::atomic<int64_t> acks{0};
  std::atomic<int64_t> disconnects{0};
  std::atomic<int64_t> errors{0};
  std::atomic<int64_t> send_failures{0};
};

struct Shared {
  std::string endpoint;
  int credits = 2;
  std::atomic<bool> stop{false};
  std::atomic<int> window{kNoWindow};
  // How long a worker holds a lease before its result goes out: 0 answers at once
  // (saturation); the paced phase sets it to offer a chosen rate.
  std::atomic<int64_t> hold_ns{0};
  std::atomic<int> registered{0};
  // One Result as the workers send it, for the raw store rate.
  std::mutex sample_mu;
  std::optional<Measurement> sample;
};

// Polls its share of the workers' sockets with epoll on their ZMQ_FDs. A ZMQ_FD
// signals edges, so a socket is read until it has nothing left after each signal and
// after each send outside such a read (a send may consume the signal); a sweep of
// every socket each 100 ms makes up for a lost edge.
class WorkerThread {
 public:
  WorkerThread(Shared& shared, zmq::context_t& context, int first, int count)
      : shared_(shared), context_(context), first_(first), count_(count) {}

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Join() { thread_.join(); }
  const ThreadCounts& counts() const { return counts_; }
  // Dispatch latencies (ns) of a window; after Join.
  const std::vector<int64_t>& latencies(Window window) const { return latencies_ns_[window]; }

 private:
  struct Held {
    int64_t due_ns;
    int worker;
    std::string frame;
  };
  static bool Later(const Held& a, const Held& b) { return a.due_ns > b.due_ns; }

  void Run() {
    workers_.resize(count_);
    const int epoll = epoll_create1(EPOLL_CLOEXEC);
    const int64_t start = NowNs();
    for (int i = 0; i < count_; ++i) {
      SimWorker& w = workers_[i];
      w.socket = sim::SimulatedWorkerSocket(context_, shared_.endpoint);
      char id[32];
      std::snprintf(id, sizeof(id), "bench-w%05d", first_ + i);
      w.host = sim::SimulatedHost(id, "bench-host-" + std::to_string((first_ + i) % 64));
      w.instance = std::to_string(rng_());
      // Heartbeats spread over the interval, as independent workers send them.
      w.next_heartbeat_ns = start + static_cast<int64_t>(rng_() % kHeartbeatNs);
      epoll_event event{};
      event.events = EPOLLIN | EPOLLET;
      event.data.u32 = static_cast<uint32_t>(i);
      epoll_ctl(epoll, EPOLL_CTL_ADD, w.socket->get(zmq::sockopt::fd), &event);
      SendRegister(i);
    }
    std::vector<epoll_event> events(256);
    int64_t next_heartbeat_check = 0, next_sweep = 0;
    while (!shared_.stop.load(std::memory_order_relaxed)) {
      int timeout_ms = 10;
      if (!held_.empty()) {
        const int64_t wait = held_.front().due_ns - NowNs();
        timeout_ms = static_cast<int>(std::clamp<int64_t>((wait + 999999) / 1000000, 0, 10));
      }
      const int n = epoll_wait(epoll, events.data(), static_cast<int>(events.size()), timeout_ms);
      for (int e = 0; e < n; ++e) Drain(static_cast<int>(events[e].data.u32));
      int64_t now = NowNs();
      while (!held_.empty() && held_.front().due_ns <= now) {
        std::pop_heap(held_.begin(), held_.end(), Later);
        Held held = std::move(held_.back());
        held_.pop_back();
        SendResult(held.worker, held.frame);
        Drain(held.worker);
      }
      if (now >= next_sweep) {
        next_sweep = now + 100000000;
        for (int i = 0; i < count_; ++i) Drain(i);
      }
      now = NowNs();
      if (now < next_heartbeat_check) continue;
      next_heartbeat_check = now + 20000000;
      const std::string heartbeat = EncodeEnvelope(MakeHeartbeat());
      for (int i = 0; i < count_; ++i) {
        SimWorker& w = workers_[i];
        if (!w.welcomed || now < w.next_heartbeat_ns) continue;
        w.next_heartbeat_ns += kHeartbeatNs;
        Send(i, heartbeat);
        Drain(i);
      }
    }
    close(epoll);
  }

  // Reads every message waiting on worker i's socket, answering as they come.
  void Drain(int i) {
    for (int k = 0; k < 10000; ++k) {
      zmq::message_t message;
      if (!workers_[i].socket->recv(message, zmq::recv_flags::dontwait)) return;
      Handle(i, message, NowNs());
    }
  }

  void SendRegister(int i) {
    Send(i, sim::RegisterFrame(workers_[i].host, shared_.credits, workers_[i].instance));
  }

  bool Send(int i, const std::string& frame) {
    const bool sent =
        workers_[i].socket->send(zmq::buffer(frame), zmq::send_flags::dontwait).has_value();
    if (!sent) counts_.send_failures.fetch_add(1, std::memory_order_relaxed);
    return sent;
  }

  void SendResult(int i, const std::string& frame) {
    if (Send(i, frame)) workers_[i].freed_ns.push_back(NowNs());
  }

  void Handle(int i, const zmq::message_t& message, int64_t received_ns) {
    SimWorker& w = workers_[i];
    DecodedFrame decoded = DecodeEnvelope(message.to_string_view());
    if (!decoded.ok()) {
      counts_.errors.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    Envelope& envelope = decoded.envelope;
    switch (envelope.body_case()) {
      case Envelope::kWelcome:
        if (!w.welcomed) {
          w.welcomed = true;
          shared_.registered.fetch_add(1);
        }
        return;
      case Envelope::kLease: {
        counts_.leases.fetch_add(1, std::memory_order_relaxed);
        if (!w.freed_ns.empty()) {
          const int window = shared_.window.load(std::memory_order_relaxed);
          if (window != kNoWindow)
            latencies_ns_[window].push_back(received_ns - w.freed_ns.front());
          w.freed_ns.pop_front();
        }
        std::string frame = ResultFrame(w, envelope.mutable_lease());
        const int64_t hold = shared_.hold_ns.load(std::memory_order_relaxed);
        if (hold == 0 && held_.empty()) {
          SendResult(i, frame);
        } else {
          // Hold times spread over [hold/2, 3 hold/2], as real jobs' durations vary.
          const int64_t jitter = static_cast<int64_t>(rng_() % static_cast<uint64_t>(hold + 1));
          held_.push_back(Held{received_ns + hold / 2 + jitter, i, std::move(frame)});
          std::push_heap(held_.begin(), held_.end(), Later);
        }
        return;
      }
      case Envelope::kAck:
        if (envelope.ack().durable()) counts_.acks.fetch_add(1, std::memory_order_relaxed);
        return;
      case Envelope::kDisconnect:
        // The coordinator does not know this worker (any more): register again.
        counts_.disconnects.fetch_add(1, std::memory_order_relaxed);
        w.freed_ns.clear();
        SendRegister(i);
        return;
      case Envelope::kError:
        counts_.errors.fetch_add(1, std::memory_order_relaxed);
        return;
      default:
        return;  // heartbeats
    }
  }

  // The encoded synthetic Result of a lease.
  std::string ResultFrame(const SimWorker& w, Lease* lease) {
    const double base = 1e-3 * (1 + static_cast<double>(next_sample_++ % 997) / 997);
    Envelope envelope = sim::SyntheticResult(w.host, lease, base);
    if (!sample_taken_) {
      sample_taken_ = true;
      std::lock_guard<std::mutex> lock(shared_.sample_mu);
      if (!shared_.sample) shared_.sample = envelope.result().measurement();
    }
    return EncodeEnvelope(std::move(envelope));
  }

  Shared& shared_;
  zmq::context_t& context_;
  const int first_;
  const int count_;
  std::vector<SimWorker> workers_;
  // Results held back in the paced phase: a heap, the earliest due first.
  std::vector<Held> held_;
  std::mt19937_64 rng_{std::random_device{}()};
  ThreadCounts counts_;
  std::vector<int64_t> latencies_ns_[kNumWindows];
  uint64_t next_sample_ = 0;
  bool sample_taken_ = false;
  std::thread thread_;
};

// ---------------------------------------------------------------------------
// The raw store rate

struct RawRate {
  int batch = 0;
  double results_per_second = 0;
  double ms_per_commit = 0;
};

// Synced batched writes of `batch` results each (the Measurement and the candidate's
// record per result, the campaign once per batch) on a fresh store at `dir`, for
// `seconds`. Only Store::Commit is timed: the records are serialized beforehand, as
// the coordinator's loop does before it hands a batch to its writer thread.
StatusOr<RawRate> MeasureRaw(const std::filesystem::path& dir, const Measurement& sample,
                             Campaign campaign, int batch, double seconds) {
  std::filesystem::remove_all(dir);
  SCHEDFARM_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, Store::Open(dir.string()));
  int64_t results = 0, commits = 0;
  double commit_seconds = 0;
  const auto start = std::chrono::steady_clock::now();
  Measurement m = sample;
  while (SecondsSince(start) < seconds) {
    Store::Batch records;
    for (int r = 0; r < batch; ++r) {
      const std::string n = std::to_string(results + r);
      m.mutable_candidate()->set_schedule_hash("raw" + n);
      m.set_lease_id("raw-lease-" + n);
      m.mutable_stats()->set_median_seconds(1e-3 *
                                            (1 + static_cast<double>((results + r) % 997) / 997));
      CandidateRecord record;
      *record.mutable_candidate() = m.candidate();
      record.set_state(CANDIDATE_MEASURED);
      record.set_attempts(1);
      record.set_last_status(OK);
      record.add_recorded_leases(m.lease_id());
      record.set_updated_unix_ms(m.finished_unix_ms());
      records.AddMeasurement(m);
      records.PutCandidate(record);
    }
    campaign.mutable_counters()->set_measured(results + batch);
    campaign.mutable_counters()->set_results(results + batch);
    campaign.mutable_counters()->set_finished(results + batch);
    records.PutCampaign(campaign);
    const auto before = std::chrono::steady_clock::now();
    StatusOr<Store::Committed> committed = store->Commit(records);
    commit_seconds += SecondsSince(before);
    if (!committed.ok()) return committed.status();
    results += batch;
    ++commits;
  }
  store.reset();
  std::filesystem::remove_all(dir);
  RawRate rate;
  rate.batch = batch;
  rate.results_per_second = results / commit_seconds;
  rate.ms_per_commit = 1e3 * commit_seconds / commits;
  return rate;
}

// ---------------------------------------------------------------------------

// The integer after `key=` in the line of `event` in a structured log, or -1.
int64_t LogField(const std::string& log, const std::string& event, const std::string& key) {
  const size_t line = log.rfind("event=" + event);
  if (line == std::string::npos) return -1;
  const size_t end = log.find('\n', line);
  const std::string text = log.substr(line, end == std::string::npos ? end : end - line);
  const size_t at = text.find(" " + key + "=");
  if (at == std::string::npos) return -1;
  return std::atoll(text.c_str() + at + key.size() + 2);
}

double Percentile(std::vector<int64_t>& values, double q) {
  if (values.empty()) return 0;
  const size_t k = std::min(values.size() - 1, static_cast<size_t>(q * (values.size() - 1) + 0.5));
  std::nth_element(values.begin(), values.begin() + k, values.end());
  return values[k] / 1e6;
}

const char* Verdict(bool pass) { return pass ? "pass" : "MISS"; }

ClientRequest Submission() {
  ClientRequest request;
  SubmitCampaign* submit = request.mutable_submit();
  submit->set_yaml_source(kCampaignYaml);
  submit->set_file_name("coordinator_bench.yaml");
  StatusOr<CampaignConfig> config = ParseCampaignYaml(kCampaignYaml, "coordinator_bench.yaml");
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().message().c_str());
    return request;
  }
  for (const PipelineSource& source : config->pipelines()) {
    for (uint64_t k = 0; k < source.random().count(); ++k) {
      StatusOr<PipelineSpec> spec =
          BuildRandomPipeline(source.random(), source.random().first_seed() + k);
      if (spec.ok()) *submit->add_pipelines() = *spec;
    }
  }
  return request;
}

// What one measurement window saw.
struct WindowFigures {
  double seconds = 0;
  int64_t acks = 0;
  int64_t leases = 0;
  std::vector<int64_t> latencies_ns;
  std::map<std::string, double> coordinator_cpu;  // CPU seconds by thread
  double coordinator_cpu_total = 0;
  double bench_cpu = 0;
  double machine_cpu = 0;  // all processes, all cores
};

void PrintWindow(const char* title, WindowFigures& w) {
  std::vector<int64_t>& lat = w.latencies_ns;
  std::printf("\n--- %s (%.2f s) ---\n", title, w.seconds);
  std::printf("durable results acknowledged  %10.0f /s  (%lld acks)\n", w.acks / w.seconds,
              static_cast<long long>(w.acks));
  std::printf("leases received               %10.0f /s\n", w.leases / w.seconds);
  const double max_ms = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end()) / 1e6;
  std::printf("dispatch latency (ms)         p50 %.3f  p90 %.3f  p99 %.3f  max %.3f  (%zu)\n",
              Percentile(lat, 0.50), Percentile(lat, 0.90), Percentile(lat, 0.99), max_ms,
              lat.size());
  std::printf("CPU, %% of one core            coordinator %.0f (",
              100 * w.coordinator_cpu_total / w.seconds);
  bool first = true;
  for (const auto& [name, used] : w.coordinator_cpu) {
    if (used < 0.005 * w.seconds) continue;
    std::printf("%s%s %.0f", first ? "" : ", ", name.c_str(), 100 * used / w.seconds);
    first = false;
  }
  std::printf(
      "), bench %.0f, other processes %.0f, of %u cores\n", 100 * w.bench_cpu / w.seconds,
      100 * std::max(0.0, w.machine_cpu - w.coordinator_cpu_total - w.bench_cpu) / w.seconds,
      std::thread::hardware_concurrency());
  if (w.acks > 0) {
    std::printf("CPU per result                coordinator %.1f us, bench %.1f us\n",
                1e6 * w.coordinator_cpu_total / w.acks, 1e6 * w.bench_cpu / w.acks);
  }
}

int Main(int argc, char** argv) {
  const Flags flags = ParseFlags(argc, argv,
                                 {{"--workers", true},
                                  {"--credits", true},
                                  {"--seconds", true},
                                  {"--warmup", true},
                                  {"--threads", true},
                                  {"--paced-rate", true},
                                  {"--paced-seconds", true},
                                  {"--raw-seconds", true},
                                  {"--coordinator", true},
                                  {"--help", false}});
  if (flags.has("--help")) {
    std::printf("%s", kUsage);
    return 0;
  }
  long long workers, credits, seconds, warmup, threads, paced_rate, paced_seconds, raw_seconds;
  std::string error = flags.error;
  const bool parsed = error.empty() &&
                      IntFlag(flags, "--workers", 1, 100000, 1000, &workers, &error) &&
                      IntFlag(flags, "--credits", 1, 1024, 2, &credits, &error) &&
                      IntFlag(flags, "--seconds", 1, 3600, 10, &seconds, &error) &&
                      IntFlag(flags, "--warmup", 0, 3600, 3, &warmup, &error) &&
                      IntFlag(flags, "--threads", 1, 64, 2, &threads, &error) &&
                      IntFlag(flags, "--paced-rate", 0, 10000000, 0, &paced_rate, &error) &&
                      IntFlag(flags, "--paced-seconds", 0, 3600, 5, &paced_seconds, &error) &&
                      IntFlag(flags, "--raw-seconds", 1, 600, 3, &raw_seconds, &error);
  if (!parsed) {
    std::fprintf(stderr, "coordinator_bench: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  const std::string binary = flags.get("--coordinator", FARM_COORDINATOR_BIN);

  // Every simulated worker holds a socket with its connection and mailbox.
  rlimit limit{};
  getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  setrlimit(RLIMIT_NOFILE, &limit);
  getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < static_cast<rlim_t>(3 * workers + 100)) {
    std::fprintf(stderr, "warning: RLIMIT_NOFILE %llu may be too low for %lld workers\n",
                 static_cast<unsigned long long>(limit.rlim_cur), workers);
  }

  ScratchDir scratch;
  const std::string load_before = LoadAverage();
  CoordinatorProcess coordinator(binary, scratch.Sub("store"));
  if (coordinator.endpoint().empty()) {
    std::fprintf(stderr, "farm-coordinator did not start:\n%s\n", coordinator.Log().c_str());
    return 1;
  }
  const pid_t coordinator_pid = coordinator.process().pid();

  zmq::context_t context;
  context.set(zmq::ctxopt::max_sockets, static_cast<int>(workers + 64));
  Shared shared;
  shared.endpoint = coordinator.endpoint();
  shared.credits = static_cast<int>(credits);
  std::vector<std::unique_ptr<WorkerThread>> pollers;
  for (int t = 0; t < threads; ++t) {
    const int first = static_cast<int>(workers * t / threads);
    const int last = static_cast<int>(workers * (t + 1) / threads);
    pollers.push_back(std::make_unique<WorkerThread>(shared, context, first, last - first));
  }
  std::printf(
      "coordinator_bench: %lld simulated workers x %lld credits on %lld threads, "
      "coordinator at %s\n",
      workers, credits, threads, coordinator.endpoint().c_str());
  const auto register_start = std::chrono::steady_clock::now();
  for (auto& poller : pollers) poller->Start();
  auto stop_all = [&] {
    shared.stop = true;
    for (auto& poller : pollers) poller->Join();
  };
  while (shared.registered.load() < workers &&
         std::chrono::steady_clock::now() - register_start < std::chrono::seconds(60)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const int registered = shared.registered.load();
  const double register_seconds = SecondsSince(register_start);
  std::printf("workers registered: %d of %lld in %.2f s\n", registered, workers, register_seconds);

  TestClient client(coordinator.endpoint());
  std::optional<ClientReply> submitted = client.Call(Submission(), 30000);
  if (!submitted || submitted->code() != CLIENT_OK) {
    std::fprintf(stderr, "submit failed: %s\n%s\n",
                 submitted ? submitted->error().c_str() : "no reply", coordinator.Log().c_str());
    stop_all();
    return 1;
  }
  const Campaign campaign = submitted->submitted();
  std::printf(
      "campaign %s: %d random pipelines; every lease answered at once: warm-up %lld s, "
      "measured %lld s\n",
      campaign.id().c_str(), campaign.pipeline_ids_size(), warmup, seconds);

  auto sum = [&](std::atomic<int64_t> ThreadCounts::*field) {
    int64_t total = 0;
    for (auto& poller : pollers) total += (poller->counts().*field).load();
    return total;
  };
  // Counts and CPU times over `window_seconds`, latencies kept under `window`.
  auto measure = [&](Window window, long long window_seconds) {
    WindowFigures f;
    const int64_t acks0 = sum(&ThreadCounts::acks), leases0 = sum(&ThreadCounts::leases);
    const std::map<std::string, double> cpu0 = ThreadCpuSeconds(coordinator_pid);
    const double bench0 = Total(ThreadCpuSeconds(getpid()));
    const double machine0 = MachineBusySeconds();
    const auto start = std::chrono::steady_clock::now();
    shared.window = window;
    std::this_thread::sleep_for(std::chrono::seconds(window_seconds));
    shared.window = kNoWindow;
    f.seconds = SecondsSince(start);
    f.acks = sum(&ThreadCounts::acks) - acks0;
    f.leases = sum(&ThreadCounts::leases) - leases0;
    for (const auto& [name, s1] : ThreadCpuSeconds(coordinator_pid)) {
      auto before = cpu0.find(name);
      f.coordinator_cpu[name] = s1 - (before == cpu0.end() ? 0 : before->second);
    }
    f.coordinator_cpu_total = Total(f.coordinator_cpu);
    f.bench_cpu = Total(ThreadCpuSeconds(getpid())) - bench0;
    f.machine_cpu = MachineBusySeconds() - machine0;
    return f;
  };

  std::this_thread::sleep_for(std::chrono::seconds(warmup));
  WindowFigures saturated = measure(kSaturated, seconds);
  const double results_per_second = saturated.acks / saturated.seconds;
  std::optional<ClientReply> status = client.Status(campaign.id());

  // The paced phase: each worker holds a lease for a while (on average the same time)
  // before it answers, so that the farm offers `rate` results per second, below the
  // coordinator's ceiling.
  const double rate = paced_rate > 0 ? static_cast<double>(paced_rate) : results_per_second / 2;
  WindowFigures paced;
  if (paced_seconds > 0 && rate > 0) {
    shared.hold_ns = static_cast<int64_t>(1e9 * static_cast<double>(workers * credits) / rate);
    std::this_thread::sleep_for(std::chrono::nanoseconds(shared.hold_ns.load() * 3 / 2) +
                                std::chrono::seconds(1));
    paced = measure(kPaced, paced_seconds);
  }
  stop_all();
  for (auto& poller : pollers) {
    for (Window window : {kSaturated, kPaced}) {
      WindowFigures& f = window == kSaturated ? saturated : paced;
      f.latencies_ns.insert(f.latencies_ns.end(), poller->latencies(window).begin(),
                            poller->latencies(window).end());
    }
  }
  const int64_t disconnects = sum(&ThreadCounts::disconnects);
  const int64_t errors = sum(&ThreadCounts::errors);
  const int64_t send_failures = sum(&ThreadCounts::send_failures);

  // SIGTERM: the coordinator writes what it holds and logs its totals.
  coordinator.process().Signal(SIGTERM);
  const std::optional<int> exit_status = coordinator.process().Wait(30000);
  const std::string log = coordinator.Log();
  if (!exit_status || *exit_status != 0) {
    // Its log without the registrations and the deaths of workers.
    std::string kept;
    std::istringstream lines(log);
    for (std::string line; std::getline(lines, line);) {
      if (line.find("event=worker_registered") == std::string::npos &&
          line.find("event=worker_dead") == std::string::npos) {
        kept += line + "\n";
      }
    }
    const size_t tail = kept.size() > 4000 ? kept.size() - 4000 : 0;
    std::fprintf(stderr, "farm-coordinator did not stop cleanly (%s); its log ends:\n%s\n",
                 exit_status ? ("status " + std::to_string(*exit_status)).c_str() : "still running",
                 kept.substr(tail).c_str());
  }
  const int64_t store_writes = LogField(log, "coordinator_stats", "store_writes");
  const int64_t store_records = LogField(log, "coordinator_stats", "store_records");
  const int64_t results_recorded = LogField(log, "coordinator_stats", "results");
  const std::string load_after = LoadAverage();

  PrintWindow("saturated: every lease answered at once", saturated);
  const double p99 = Percentile(saturated.latencies_ns, 0.99);
  if (paced.seconds > 0) {
    char title[160];
    std::snprintf(title, sizeof(title),
                  "paced: leases held %.1f ms on average, offering %.0f results/s",
                  shared.hold_ns.load() / 1e6, rate);
    PrintWindow(title, paced);
  }
  const double paced_p99 = Percentile(paced.latencies_ns, 0.99);
  std::printf("\n");
  double results_per_write = 0;
  if (store_writes > 0) {
    results_per_write = static_cast<double>(results_recorded) / store_writes;
    std::printf(
        "store writes (whole run)      %lld synced writes, %.1f records and %.1f results "
        "per write\n",
        static_cast<long long>(store_writes), static_cast<double>(store_records) / store_writes,
        results_per_write);
  } else {
    std::printf("store writes                  not in the coordinator's log\n");
  }
  if (status && status->code() == CLIENT_OK && status->status().campaigns_size() == 1) {
    const CampaignStatus& s = status->status().campaigns(0);
    std::printf("campaign after the saturation %s, %lld results, %lld queued, %lld leased\n",
                CampaignState_Name(s.campaign().state()).c_str(),
                static_cast<long long>(s.campaign().counters().results()),
                static_cast<long long>(s.campaign().counters().queued()),
                static_cast<long long>(s.campaign().counters().leased()));
  }
  if (disconnects + errors + send_failures > 0) {
    std::printf("anomalies                     %lld disconnects, %lld errors, %lld failed sends\n",
                static_cast<long long>(disconnects), static_cast<long long>(errors),
                static_cast<long long>(send_failures));
  }
  std::printf("load average                  before %s, after %s\n", load_before.c_str(),
              load_after.c_str());

  // The raw store rate, with the coordinator stopped.
  std::optional<Measurement> sample;
  {
    std::lock_guard<std::mutex> lock(shared.sample_mu);
    sample = shared.sample;
  }
  if (!sample) {
    std::fprintf(stderr, "no result was sent: no sample for the raw store rate\n");
    return 1;
  }
  std::printf("\n--- raw synced batched writes (Store::Batch + Commit, %lld s each) ---\n",
              raw_seconds);
  std::printf("%10s %14s %14s\n", "batch", "results/s", "ms/commit");
  std::vector<int> sizes = {std::max(1, static_cast<int>(results_per_write + 0.5)), 256, 1024};
  std::vector<RawRate> raw;
  for (int size : sizes) {
    StatusOr<RawRate> measured =
        MeasureRaw(scratch.Sub("raw"), *sample, campaign, size, static_cast<double>(raw_seconds));
    if (!measured.ok()) {
      std::fprintf(stderr, "%s\n", measured.status().message().c_str());
      return 1;
    }
    std::printf("%10d %14.0f %14.3f%s\n", measured->batch, measured->results_per_second,
                measured->ms_per_commit, size == sizes[0] ? "   (the coordinator's batch)" : "");
    raw.push_back(*measured);
  }
  const double raw_same = raw[0].results_per_second;
  double raw_best = 0;
  for (const RawRate& r : raw) raw_best = std::max(raw_best, r.results_per_second);

  std::printf("\n--- targets ---\n");
  std::printf("workers connected            %8d      >= %d             %s\n", registered,
              kTargetWorkers, Verdict(registered >= kTargetWorkers));
  std::printf("durable results/s            %8.0f      >= %.0f            %s\n", results_per_second,
              kTargetResultsPerSecond, Verdict(results_per_second >= kTargetResultsPerSecond));
  std::printf("coordinator / raw, same batch %7.2f      >= %.1f              %s\n",
              results_per_second / raw_same, kTargetRawShare,
              Verdict(results_per_second >= kTargetRawShare * raw_same));
  std::printf("coordinator / raw, best batch %7.2f      >= %.1f              %s\n",
              results_per_second / raw_best, kTargetRawShare,
              Verdict(results_per_second >= kTargetRawShare * raw_best));
  std::printf("p99 dispatch latency (ms)    %8.3f      < %.0f                %s\n", p99,
              kTargetP99Ms, Verdict(p99 < kTargetP99Ms));
  if (paced.seconds > 0) {
    std::printf("  paced at %6.0f results/s   %8.3f      < %.0f                %s\n", rate,
                paced_p99, kTargetP99Ms, Verdict(paced_p99 < kTargetP99Ms));
  }
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) { return schedfarm::Main(argc, argv); }
