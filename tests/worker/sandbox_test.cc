// The sandbox pool with real child processes (farm-worker --sandbox-child) and real
// Halide compiles: start-up and limits of the children, clean jobs, every injected
// fault classified with the pool serving on and no process left behind, real bad
// candidates (too much memory, too slow, too long to compile), timeouts counted from
// the start of each phase, the compile slots and the single benchmark slot, cpu
// pinning, a child that cannot start, and the self-check.
#include "worker/sandbox.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/cpus.h"
#include "gtest/gtest.h"
#include "tests/worker/worker_test_pipelines.h"
#include "worker/measure.h"
#include "worker/sandbox_check.h"

namespace schedfarm {
namespace {

using Clock = std::chrono::steady_clock;
using worker_testing::HugeIntermediate;
using worker_testing::MustBuild;
using worker_testing::ParseSchedule;
using worker_testing::SlowMatMul;
using worker_testing::TempDir;
using worker_testing::TinyMatMul;

constexpr int64_t kMemoryLimit = 1LL << 30;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

SandboxOptions Options(int children = 1, int compile_slots = 1) {
  SandboxOptions options;
  options.child_executable = FARM_WORKER_BIN;
  options.children = children;
  options.compile_slots = compile_slots;
  options.memory_limit_bytes = kMemoryLimit;
  return options;
}

std::unique_ptr<SandboxPool> MustStart(const SandboxOptions& options) {
  StatusOr<std::unique_ptr<SandboxPool>> pool = SandboxPool::Start(options);
  EXPECT_TRUE(pool.ok()) << pool.status().ToString();
  return pool.ok() ? std::move(*pool) : nullptr;
}

SandboxJob Job(const std::string& id, const PipelineSpec& pipeline,
               const ScheduleSpec& schedule = ScheduleSpec()) {
  SandboxJob job;
  job.set_job_id(id);
  *job.mutable_pipeline() = pipeline;
  *job.mutable_schedule() = schedule;
  job.mutable_settings()->set_samples(3);
  job.mutable_settings()->set_min_sample_seconds(0.001);
  return job;
}

bool ProcessExists(pid_t pid) {
  struct stat info;
  return stat(("/proc/" + std::to_string(pid)).c_str(), &info) == 0;
}

// The cpus of every thread of `pid`, from /proc ("0-1", "1"...).
std::set<std::string> CpusOfThreads(pid_t pid) {
  std::set<std::string> lists;
  std::error_code ec;
  for (const auto& task :
       std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream status(task.path() / "status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("Cpus_allowed_list:", 0) == 0) {
        lists.insert(line.substr(line.find_first_not_of(" \t", 18)));
      }
    }
  }
  return lists;
}

// "a-b" or "a" or "a,b" for a sorted cpu list, as the kernel prints it.
std::string CpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(cpus[i]);
    if (j > i) out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out;
}

// Waits until every thread of `pid` runs on exactly `expected`; false after 10 s.
bool EventuallyPinned(pid_t pid, const std::string& expected) {
  const Clock::time_point start = Clock::now();
  while (SecondsSince(start) < 10) {
    const std::set<std::string> lists = CpusOfThreads(pid);
    if (lists == std::set<std::string>{expected}) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return false;
}

TEST(SandboxPool, StartsLimitedChildrenInTheirOwnProcessGroups) {
  const Clock::time_point start = Clock::now();
  std::unique_ptr<SandboxPool> pool = MustStart(Options(2));
  ASSERT_NE(pool, nullptr);
  std::cout << "two children ready in " << SecondsSince(start) << " s\n";
  const std::vector<pid_t> pids = pool->child_pids();
  ASSERT_EQ(pids.size(), 2u);
  for (pid_t pid : pids) {
    EXPECT_TRUE(ProcessExists(pid));
    EXPECT_EQ(getpgid(pid), pid);  // setsid: it leads its own process group
    std::ifstream limits("/proc/" + std::to_string(pid) + "/limits");
    std::string text((std::istreambuf_iterator<char>(limits)), std::istreambuf_iterator<char>());
    std::istringstream lines(text);
    std::string line;
    bool saw_as = false, saw_core = false;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string a, b, c, soft;
      if (line.rfind("Max address space", 0) == 0) {
        fields >> a >> b >> c >> soft;
        EXPECT_EQ(soft, std::to_string(kMemoryLimit));
        saw_as = true;
      } else if (line.rfind("Max core file size", 0) == 0) {
        fields >> a >> b >> c >> a >> soft;
        EXPECT_EQ(soft, "0");
        saw_core = true;
      }
    }
    EXPECT_TRUE(saw_as && saw_core) << text;
  }
  EXPECT_EQ(pool->restarts(), 0);
  pool.reset();
  for (pid_t pid : pids) EXPECT_FALSE(ProcessExists(pid)) << pid;
}

TEST(SandboxPool, CleanJobMeasuresLikeTheInProcessProtocol) {
  std::unique_ptr<SandboxPool> pool = MustStart(Options());
  ASSERT_NE(pool, nullptr);
  const PipelineSpec spec = TinyMatMul();
  const SandboxOutcome outcome =
      pool->RunOne(Job("clean", spec, ParseSchedule(worker_testing::kTinyMatMulSchedule)));
  EXPECT_EQ(outcome.job_id, "clean");
  const Measurement& m = outcome.measurement;
  ASSERT_EQ(m.status(), OK) << m.error();
  EXPECT_GT(m.compile_seconds(), 0);
  EXPECT_GE(m.samples_seconds_size(), 3);
  EXPECT_GT(m.repeats_per_sample(), 1);
  EXPECT_GT(m.stats().median_seconds(), 0);
  EXPECT_EQ(m.settings().max_samples(), 30);  // defaults filled in
  ReferenceCache cache;
  StatusOr<std::shared_ptr<const ReferenceOutputs>> reference = cache.Get(MustBuild(spec));
  ASSERT_TRUE(reference.ok());
  EXPECT_EQ(m.output_checksum(), TensorChecksum((*reference)->outputs[0]));
  EXPECT_EQ(outcome.child_pid, pool->child_pids()[0]);
  EXPECT_EQ(pool->jobs_in_hand(), 0);
  EXPECT_EQ(pool->restarts(), 0);
  // The second job of the pipeline finds the reference outputs in the child's memory.
  const SandboxOutcome second =
      pool->RunOne(Job("clean2", spec, ParseSchedule(worker_testing::kTinyMatMulSchedule)));
  ASSERT_EQ(second.measurement.status(), OK) << second.measurement.error();
  EXPECT_EQ(second.measurement.output_checksum(), m.output_checksum());
  std::cout << "first job " << outcome.total_seconds << " s (compile " << m.compile_seconds()
            << " s), second job " << second.total_seconds << " s (compile "
            << second.measurement.compile_seconds() << " s)\n";

  // An invalid pipeline is refused by the child, which carries on.
  PipelineSpec broken = spec;
  broken.mutable_stages(0)->clear_inputs();
  const SandboxOutcome refused = pool->RunOne(Job("broken", broken));
  EXPECT_EQ(refused.measurement.status(), COMPILE_ERROR);
  EXPECT_NE(refused.measurement.error().find("job 'broken'"), std::string::npos)
      << refused.measurement.error();
  EXPECT_EQ(pool->restarts(), 0);

  // A job larger than the pool takes fails without reaching a child.
  pool.reset();
  SandboxOptions small = Options();
  small.max_job_bytes = 64;
  pool = MustStart(small);
  ASSERT_NE(pool, nullptr);
  const SandboxOutcome oversized = pool->RunOne(Job("oversized", spec));
  EXPECT_EQ(oversized.measurement.status(), COMPILE_ERROR);
  EXPECT_NE(oversized.measurement.error().find("more than the sandbox takes (64)"),
            std::string::npos)
      << oversized.measurement.error();
  EXPECT_EQ(oversized.child_pid, 0);
}

struct FaultCase {
  const char* name;
  SandboxFault fault;
  bool in_run;
  MeasurementStatus expected;
  const char* says;  // a part of the error message
  bool kills_child;  // the child dies (and is restarted)
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

class SandboxFaults : public testing::TestWithParam<FaultCase> {};

TEST_P(SandboxFaults, AreClassifiedAndThePoolCarriesOn) {
  const FaultCase& c = GetParam();
  SandboxOptions options = Options();
  options.cache_dir = TempDir("fault_cache");
  options.file_size_limit_bytes = 64 << 20;
  std::unique_ptr<SandboxPool> pool = MustStart(options);
  ASSERT_NE(pool, nullptr);
  std::set<pid_t> pids;
  for (pid_t pid : pool->child_pids()) pids.insert(pid);

  SandboxJob job = Job(c.name, TinyMatMul());
  job.set_fault(c.fault);
  job.set_fault_in_run(c.in_run);
  if (c.fault == FAULT_HANG || c.fault == FAULT_STALL) {
    job.mutable_settings()->set_compile_timeout_ms(1000);
    job.mutable_settings()->set_run_timeout_ms(1000);
  }
  const SandboxOutcome outcome = pool->RunOne(job);
  const Measurement& m = outcome.measurement;
  std::cout << c.name << ": " << MeasurementStatus_Name(m.status()) << " after "
            << outcome.total_seconds << " s: " << m.error().substr(0, 300) << "\n";
  EXPECT_EQ(m.status(), c.expected) << m.error();
  EXPECT_NE(m.error().find(c.says), std::string::npos) << m.error();
  EXPECT_NE(m.error().find(c.name), std::string::npos) << m.error();  // the job id
  EXPECT_EQ(m.samples_seconds_size(), 0);
  if (c.expected == RUN_TIMEOUT) {
    // Conclusive exactly when the run used 90% of its 1 s timeout as CPU time, which
    // the error says. A stalled run uses none; a spinning one as much as it is given.
    const size_t used = m.error().find("it used ");
    ASSERT_NE(used, std::string::npos) << m.error();
    const double cpu_seconds = std::stod(m.error().substr(used + 8));
    EXPECT_EQ(m.conclusive(), cpu_seconds >= 0.9) << m.error();
    if (c.fault == FAULT_STALL) {
      EXPECT_LT(cpu_seconds, 0.1) << m.error();
    } else {
      EXPECT_GT(cpu_seconds, 0) << m.error();
    }
  } else {
    EXPECT_FALSE(m.conclusive()) << m.error();
  }
  if (c.in_run && c.fault != FAULT_ALLOCATE) {
    EXPECT_GT(m.compile_seconds(), 0);
  }

  const SandboxOutcome clean = pool->RunOne(Job("after", TinyMatMul()));
  EXPECT_EQ(clean.measurement.status(), OK) << clean.measurement.error();
  EXPECT_EQ(pool->restarts(), c.kills_child ? 1 : 0);
  for (pid_t pid : pool->child_pids()) pids.insert(pid);
  EXPECT_EQ(pids.size(), c.kills_child ? 2u : 1u);
  pool.reset();
  for (pid_t pid : pids) EXPECT_TRUE(ProcessAndGroupGone(pid)) << "orphan in the group of " << pid;
  std::filesystem::remove_all(options.cache_dir);
}

INSTANTIATE_TEST_SUITE_P(
    EveryFault, SandboxFaults,
    testing::Values(
        FaultCase{"segfault_compile", FAULT_SEGFAULT, false, CRASH, "SIGSEGV", true},
        FaultCase{"segfault_run", FAULT_SEGFAULT, true, CRASH, "while running", true},
        FaultCase{"abort_compile", FAULT_ABORT, false, CRASH, "SIGABRT", true},
        FaultCase{"abort_run", FAULT_ABORT, true, CRASH, "SIGABRT", true},
        FaultCase{"hang_compile", FAULT_HANG, false, COMPILE_TIMEOUT, "compile timeout of 1000 ms",
                  true},
        FaultCase{"hang_run", FAULT_HANG, true, RUN_TIMEOUT, "run timeout of 1000 ms", true},
        FaultCase{"stall_run", FAULT_STALL, true, RUN_TIMEOUT, "did not have the CPU, retried",
                  true},
        FaultCase{"allocate_compile", FAULT_ALLOCATE, false, OUT_OF_MEMORY, "out of memory", false},
        FaultCase{"allocate_run", FAULT_ALLOCATE, true, OUT_OF_MEMORY, "out of memory", false},
        FaultCase{"flood_compile", FAULT_FLOOD, false, OUTPUT_LIMIT, "xxxxxxxx", true},
        FaultCase{"flood_run", FAULT_FLOOD, true, OUTPUT_LIMIT, "output limit of 1048576", true},
        FaultCase{"wrong_output", FAULT_WRONG_OUTPUT, true, WRONG_ANSWER, "output 'relu'", false},
        FaultCase{"fork_bomb", FAULT_FORK_BOMB, false, CRASH, "SIGSYS", true},
        FaultCase{"huge_file", FAULT_HUGE_FILE, true, CRASH, "SIGXFSZ", true},
        FaultCase{"socket", FAULT_SOCKET, false, CRASH, "SIGSYS", true},
        FaultCase{"exec", FAULT_EXEC, true, CRASH, "SIGSYS", true}),
    [](const testing::TestParamInfo<FaultCase>& info) { return std::string(info.param.name); });

TEST(SandboxPool, CandidateBeyondTheMemoryLimitIsOutOfMemory) {
  // "add" at root needs 1 GiB, more than the child has under its 1 GiB limit. The
  // reference needs as much: it is computed here, without a limit, and the child reads
  // it from the shared cache directory.
  SandboxOptions options = Options();
  options.cache_dir = TempDir("oom_cache");
  const PipelineSpec spec = HugeIntermediate(16384, 16384);
  ReferenceCache cache(options.cache_dir);
  ASSERT_TRUE(cache.Get(MustBuild(spec)).ok());
  std::unique_ptr<SandboxPool> pool = MustStart(options);
  ASSERT_NE(pool, nullptr);
  const SandboxOutcome outcome =
      pool->RunOne(Job("huge", spec, ParseSchedule(worker_testing::kHugeIntermediateSchedule)));
  EXPECT_EQ(outcome.measurement.status(), OUT_OF_MEMORY) << outcome.measurement.error();
  EXPECT_NE(outcome.measurement.error().find("Out of memory"), std::string::npos)
      << outcome.measurement.error();
  std::cout << "out of memory after " << outcome.total_seconds
            << " s: " << outcome.measurement.error() << "\n";
  EXPECT_EQ(pool->RunOne(Job("after", TinyMatMul())).measurement.status(), OK);
  std::filesystem::remove_all(options.cache_dir);
}

// A worker killed with -9 leaves its children's scratch folders: the next pool on the
// host removes those of workers no longer running, and leaves a live one's alone.
TEST(SandboxPool, RemovesTheScratchFoldersOfDeadWorkers) {
  const pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const std::filesystem::path tmp = std::filesystem::temp_directory_path();
  const std::filesystem::path left = tmp / ("schedfarm-sandbox-" + std::to_string(dead) + "-1");
  const std::filesystem::path live = tmp / ("schedfarm-sandbox-" + std::to_string(getppid()) + "-1");
  std::filesystem::create_directories(left / "torch-1");
  std::filesystem::create_directories(live);
  std::unique_ptr<SandboxPool> pool = MustStart(Options());
  ASSERT_NE(pool, nullptr);
  EXPECT_FALSE(std::filesystem::exists(left));
  EXPECT_TRUE(std::filesystem::exists(live));
  std::filesystem::remove_all(live);
}

// A batch system or service manager that stops a job signals all its processes: the
// children ignore SIGTERM, SIGINT and SIGHUP, so the worker's drain can finish them.
TEST(SandboxPool, ChildrenIgnoreTheStopSignalsOfTheirJob) {
  std::unique_ptr<SandboxPool> pool = MustStart(Options());
  ASSERT_NE(pool, nullptr);
  for (pid_t pid : pool->child_pids()) {
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) kill(pid, sig);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const SandboxOutcome outcome = pool->RunOne(Job("after_signals", TinyMatMul()));
  EXPECT_EQ(outcome.measurement.status(), OK) << outcome.measurement.error();
  EXPECT_EQ(pool->restarts(), 0);
}

TEST(SandboxPool, SlowCandidateHitsTheRunTimeout) {
  std::unique_ptr<SandboxPool> pool = MustStart(Options());
  ASSERT_NE(pool, nullptr);
  SandboxJob job = Job("slow", SlowMatMul(384));
  job.mutable_settings()->set_min_sample_seconds(0.1);
  job.mutable_settings()->set_run_timeout_ms(30);
  const SandboxOutcome outcome = pool->RunOne(job);
  EXPECT_EQ(outcome.measurement.status(), RUN_TIMEOUT) << outcome.measurement.error();
  EXPECT_NE(outcome.measurement.error().find("run timeout of 30 ms"), std::string::npos)
      << outcome.measurement.error();
  EXPECT_GT(outcome.measurement.compile_seconds(), 0);
  // With room to run, the same candidate is measured.
  job.set_job_id("slow_with_room");
  job.mutable_settings()->set_min_sample_seconds(0.001);
  job.mutable_settings()->set_run_timeout_ms(20000);
  EXPECT_EQ(pool->RunOne(job).measurement.status(), OK);
  EXPECT_EQ(pool->restarts(), 1);
}

TEST(SandboxPool, CompileTimeoutOfAFewMilliseconds) {
  std::unique_ptr<SandboxPool> pool = MustStart(Options());
  ASSERT_NE(pool, nullptr);
  SandboxJob job = Job("quick_compile", TinyMatMul());
  job.mutable_settings()->set_compile_timeout_ms(3);
  const SandboxOutcome outcome = pool->RunOne(job);
  EXPECT_EQ(outcome.measurement.status(), COMPILE_TIMEOUT) << outcome.measurement.error();
  EXPECT_NE(outcome.measurement.error().find("while compiling"), std::string::npos);
  EXPECT_EQ(pool->RunOne(Job("after", TinyMatMul())).measurement.status(), OK);
}

TEST(SandboxPool, TimeoutsCountFromThePhaseStartNotFromSubmission) {
  // One child, six jobs of about half a second each: the last one waits longer than
  // either timeout before it starts, and still finishes.
  std::unique_ptr<SandboxPool> pool = MustStart(Options());
  ASSERT_NE(pool, nullptr);
  for (int i = 0; i < 6; ++i) {
    SandboxJob job = Job("queued" + std::to_string(i), TinyMatMul(),
                         ParseSchedule(worker_testing::kTinyMatMulSchedule));
    job.mutable_settings()->set_min_sample_seconds(0.1);
    job.mutable_settings()->set_target_cv(1);  // no extension: runs of about 0.4 s
    job.mutable_settings()->set_compile_timeout_ms(2000);
    job.mutable_settings()->set_run_timeout_ms(1500);
    pool->Submit(job);
  }
  std::vector<SandboxOutcome> outcomes;
  while (outcomes.size() < 6) {
    pollfd fd = {pool->notify_fd(), POLLIN, 0};
    ASSERT_EQ(poll(&fd, 1, 60000), 1);
    for (SandboxOutcome& o : pool->TakeFinished()) outcomes.push_back(std::move(o));
  }
  EXPECT_EQ(pool->jobs_in_hand(), 0);
  for (size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].job_id, "queued" + std::to_string(i));  // in submission order
    EXPECT_EQ(outcomes[i].measurement.status(), OK) << outcomes[i].measurement.error();
  }
  std::cout << "last job queued " << outcomes.back().queued_seconds << " s\n";
  EXPECT_GT(outcomes.back().queued_seconds, 2.0);
}

// Two jobs that hang in the phase under test, each killed after 800 ms: with one slot
// the second starts when the first is killed, so their outcomes are 800 ms apart.
std::vector<double> OutcomeTimes(SandboxPool& pool, bool in_run) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < 2; ++i) {
    SandboxJob job = Job("hang" + std::to_string(i), TinyMatMul());
    job.set_fault(FAULT_HANG);
    job.set_fault_in_run(in_run);
    job.mutable_settings()->set_compile_timeout_ms(800);
    job.mutable_settings()->set_run_timeout_ms(800);
    pool.Submit(job);
  }
  std::vector<double> times;
  while (times.size() < 2) {
    pollfd fd = {pool.notify_fd(), POLLIN, 0};
    if (poll(&fd, 1, 60000) != 1) break;
    for (const SandboxOutcome& o : pool.TakeFinished()) {
      EXPECT_EQ(o.measurement.status(), in_run ? RUN_TIMEOUT : COMPILE_TIMEOUT);
      times.push_back(SecondsSince(start));
    }
  }
  return times;
}

// Options whose cache directory holds TinyMatMul's reference outputs already, so that
// the children's jobs reach the compile phase at once.
SandboxOptions OptionsWithReference(int children, int compile_slots) {
  SandboxOptions options = Options(children, compile_slots);
  options.cache_dir = TempDir("timing_cache");
  ReferenceCache cache(options.cache_dir);
  EXPECT_TRUE(cache.Get(MustBuild(TinyMatMul())).ok());
  return options;
}

TEST(SandboxPool, OneBenchmarkSlotWhileCompilesRunInParallel) {
  const SandboxOptions options = OptionsWithReference(2, 2);
  std::unique_ptr<SandboxPool> pool = MustStart(options);
  ASSERT_NE(pool, nullptr);
  // Both compile at once: two compile hangs end together.
  std::vector<double> times = OutcomeTimes(*pool, false);
  ASSERT_EQ(times.size(), 2u);
  EXPECT_LT(times[1] - times[0], 0.5);
  // Both compile, one runs at a time: the run hangs end one timeout apart.
  times = OutcomeTimes(*pool, true);
  ASSERT_EQ(times.size(), 2u);
  EXPECT_GT(times[1] - times[0], 0.7);
  std::filesystem::remove_all(options.cache_dir);
}

TEST(SandboxPool, CompileSlotsLimitConcurrentCompiles) {
  const SandboxOptions options = OptionsWithReference(2, 1);
  std::unique_ptr<SandboxPool> pool = MustStart(options);
  ASSERT_NE(pool, nullptr);
  const std::vector<double> times = OutcomeTimes(*pool, false);
  ASSERT_EQ(times.size(), 2u);
  EXPECT_GT(times[1] - times[0], 0.7);
  std::filesystem::remove_all(options.cache_dir);
}

// Outcomes of `jobs` submitted at once, each with the seconds from submission.
std::vector<std::pair<SandboxOutcome, double>> TimedOutcomes(SandboxPool& pool,
                                                             const std::vector<SandboxJob>& jobs) {
  const Clock::time_point start = Clock::now();
  for (const SandboxJob& job : jobs) pool.Submit(job);
  std::vector<std::pair<SandboxOutcome, double>> outcomes;
  while (outcomes.size() < jobs.size()) {
    pollfd fd = {pool.notify_fd(), POLLIN, 0};
    if (poll(&fd, 1, 60000) != 1) break;
    for (SandboxOutcome& o : pool.TakeFinished()) outcomes.emplace_back(o, SecondsSince(start));
  }
  return outcomes;
}

// On a host with no cpu to spare (the benchmark takes every allowed cpu, so compiles
// run on them too), a compile and a timed run never overlap: a compiled job waits for
// another's compile to end, and a job does not start compiling while a run waits for
// the slot or runs.
TEST(SandboxPool, CompilesKeepOffTheCpusOfATimedRun) {
  const int every_cpu = static_cast<int>(AllowedCpus().size());
  const auto job = [&](const std::string& id, bool hang_in_run) {
    SandboxJob j = Job(id, TinyMatMul(), ParseSchedule(worker_testing::kTinyMatMulSchedule));
    j.mutable_settings()->set_threads(every_cpu);
    j.set_fault(FAULT_HANG);
    j.set_fault_in_run(hang_in_run);
    j.mutable_settings()->set_compile_timeout_ms(800);
    j.mutable_settings()->set_run_timeout_ms(800);
    return j;
  };
  {
    // Two compile slots: both compile at once, the first hangs there for 800 ms; the
    // second, compiled long before, runs (and hangs for 800 ms) only after that.
    const SandboxOptions options = OptionsWithReference(2, 2);
    std::unique_ptr<SandboxPool> pool = MustStart(options);
    ASSERT_NE(pool, nullptr);
    const auto outcomes = TimedOutcomes(*pool, {job("compile_hang", false), job("run_hang", true)});
    ASSERT_EQ(outcomes.size(), 2u);
    EXPECT_EQ(outcomes[0].first.job_id, "compile_hang");
    EXPECT_EQ(outcomes[0].first.measurement.status(), COMPILE_TIMEOUT);
    EXPECT_EQ(outcomes[1].first.job_id, "run_hang");
    EXPECT_EQ(outcomes[1].first.measurement.status(), RUN_TIMEOUT);
    EXPECT_GT(outcomes[1].second - outcomes[0].second, 0.7) << "the run began after the compile";
    std::filesystem::remove_all(options.cache_dir);
  }
  {
    // One compile slot: the first compiles at once and hangs in its run; the second
    // compiles (and hangs for 800 ms) only when that run has ended.
    const SandboxOptions options = OptionsWithReference(2, 1);
    std::unique_ptr<SandboxPool> pool = MustStart(options);
    ASSERT_NE(pool, nullptr);
    const auto outcomes = TimedOutcomes(*pool, {job("run_hang", true), job("compile_hang", false)});
    ASSERT_EQ(outcomes.size(), 2u);
    EXPECT_EQ(outcomes[0].first.job_id, "run_hang");
    EXPECT_EQ(outcomes[1].first.job_id, "compile_hang");
    EXPECT_GT(outcomes[1].second - outcomes[0].second, 0.7) << "the compile began after the run";
    std::filesystem::remove_all(options.cache_dir);
  }
}

TEST(SandboxPool, PinsTheChildToCompileCpusThenToBenchmarkCpus) {
  const std::vector<int> allowed = AllowedCpus();
  ASSERT_FALSE(allowed.empty());
  const std::vector<int> benchmark = {allowed.back()};  // threads = 1
  const std::vector<int> compile =
      allowed.size() > 1 ? std::vector<int>(allowed.begin(), allowed.end() - 1) : allowed;
  std::unique_ptr<SandboxPool> pool = MustStart(Options());
  ASSERT_NE(pool, nullptr);
  for (bool in_run : {false, true}) {
    SandboxJob job = Job(in_run ? "hang_run" : "hang_compile", TinyMatMul());
    job.set_fault(FAULT_HANG);
    job.set_fault_in_run(in_run);
    job.mutable_settings()->set_compile_timeout_ms(20000);
    job.mutable_settings()->set_run_timeout_ms(20000);
    const pid_t pid = pool->child_pids()[0];
    pool->Submit(job);
    const std::string expected = CpuList(in_run ? benchmark : compile);
    EXPECT_TRUE(EventuallyPinned(pid, expected)) << "expected " << expected;
    // Let the pool kill it: destroying the pool ends the hang.
    pool.reset();
    EXPECT_FALSE(ProcessExists(pid));
    pool = MustStart(Options());
    ASSERT_NE(pool, nullptr);
  }
}

TEST(SandboxPool, PoolThreadServesOthersWhileAChildHangs) {
  std::unique_ptr<SandboxPool> pool = MustStart(Options(2, 2));
  ASSERT_NE(pool, nullptr);
  SandboxJob hang = Job("hang", TinyMatMul());
  hang.set_fault(FAULT_HANG);
  hang.mutable_settings()->set_compile_timeout_ms(20000);
  pool->Submit(hang);
  const Clock::time_point start = Clock::now();
  const SandboxOutcome clean = pool->RunOne(Job("clean", TinyMatMul()));
  EXPECT_EQ(clean.measurement.status(), OK) << clean.measurement.error();
  EXPECT_LT(SecondsSince(start), 15);
  EXPECT_EQ(pool->jobs_in_hand(), 1);  // the hang is still in hand
  const std::vector<pid_t> pids = pool->child_pids();
  pool.reset();  // kills the hung child
  for (pid_t pid : pids) EXPECT_FALSE(ProcessExists(pid));
}

TEST(SandboxPool, ChildThatCannotStartIsRetriedWithBackOff) {
  // A wrapper that refuses to start the child while a file exists.
  const std::string dir = TempDir("wrapper");
  const std::string stop = dir + "/stop";
  const std::string wrapper = dir + "/child.sh";
  {
    std::ofstream script(wrapper);
    script << "#!/bin/sh\nif [ -e '" << stop << "' ]; then echo 'refusing to start'; exit 7; fi\n"
           << "exec '" << FARM_WORKER_BIN << "' \"$@\"\n";
  }
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  SandboxOptions options = Options();
  options.child_executable = wrapper;
  std::unique_ptr<SandboxPool> pool = MustStart(options);
  ASSERT_NE(pool, nullptr);

  std::ofstream(stop).put('x');
  SandboxJob crash = Job("crash", TinyMatMul());
  crash.set_fault(FAULT_SEGFAULT);
  EXPECT_EQ(pool->RunOne(crash).measurement.status(), CRASH);
  std::this_thread::sleep_for(std::chrono::milliseconds(1600));
  // Back-off 100, 200, 400, 800 ms: about five attempts in 1.6 s, not hundreds.
  const int64_t failures = pool->start_failures();
  EXPECT_GE(failures, 3);
  EXPECT_LE(failures, 6);
  EXPECT_TRUE(pool->child_pids().empty() || pool->child_pids().size() == 1u);

  std::filesystem::remove(stop);
  const Clock::time_point start = Clock::now();
  const SandboxOutcome after = pool->RunOne(Job("after", TinyMatMul()));
  EXPECT_EQ(after.measurement.status(), OK) << after.measurement.error();
  EXPECT_LT(SecondsSince(start), 15);
  EXPECT_GE(pool->restarts(), failures);
  std::filesystem::remove_all(dir);
}

TEST(SandboxPool, StartFailsWhenTheChildCannotBeExecuted) {
  SandboxOptions options = Options();
  options.child_executable = "/nonexistent/farm-worker";
  StatusOr<std::unique_ptr<SandboxPool>> pool = SandboxPool::Start(options);
  ASSERT_FALSE(pool.ok());
  EXPECT_NE(pool.status().message().find("exited with code 127"), std::string::npos)
      << pool.status().message();
  EXPECT_NE(pool.status().message().find("cannot execute /nonexistent/farm-worker"),
            std::string::npos)
      << pool.status().message();
  options.child_executable = FARM_WORKER_BIN;
  options.compile_slots = 0;
  EXPECT_FALSE(SandboxPool::Start(options).ok());
}

TEST(SandboxPool, KillByAnotherHandIsOutOfMemory) {
  // A SIGKILL the pool did not send is what the kernel's out-of-memory killer does.
  std::unique_ptr<SandboxPool> pool = MustStart(Options());
  ASSERT_NE(pool, nullptr);
  SandboxJob hang = Job("killed", TinyMatMul());
  hang.set_fault(FAULT_HANG);
  const pid_t pid = pool->child_pids()[0];
  pool->Submit(hang);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(kill(pid, SIGKILL), 0);
  pollfd fd = {pool->notify_fd(), POLLIN, 0};
  ASSERT_EQ(poll(&fd, 1, 30000), 1);
  const std::vector<SandboxOutcome> outcomes = pool->TakeFinished();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_EQ(outcomes[0].measurement.status(), OUT_OF_MEMORY) << outcomes[0].measurement.error();
  EXPECT_NE(outcomes[0].measurement.error().find("not sent by the pool"), std::string::npos)
      << outcomes[0].measurement.error();
}

// The reference phase has the pool's limit, or the job's compile and run timeouts
// together when they are longer.
TEST(SandboxPool, ReferenceTimeout) {
  std::unique_ptr<SandboxPool> pool = [] {
    SandboxOptions options = Options();
    options.reference_timeout_ms = 5;
    return MustStart(options);
  }();
  ASSERT_NE(pool, nullptr);
  SandboxJob job = Job("reference", TinyMatMul());
  job.mutable_settings()->set_compile_timeout_ms(1);
  job.mutable_settings()->set_run_timeout_ms(1);
  const SandboxOutcome outcome = pool->RunOne(job);
  EXPECT_EQ(outcome.measurement.status(), RUN_TIMEOUT) << outcome.measurement.error();
  EXPECT_NE(outcome.measurement.error().find("reference timeout of 5 ms"), std::string::npos)
      << outcome.measurement.error();

  const SandboxOutcome longer = pool->RunOne(Job("campaign timeouts", TinyMatMul()));
  EXPECT_EQ(longer.measurement.status(), OK) << longer.measurement.error();
}

// A stand-in child written in Python that speaks the pipe protocol and then misbehaves
// as `mode` says, to check how the pool reads exits, output and broken frames.
std::string FakeChild(const std::string& dir, const std::string& mode) {
  const std::string path = dir + "/fake_child_" + mode + ".py";
  std::ofstream script(path);
  script << R"py(#!/usr/bin/python3
import os, struct, sys, time
MODE = ")py"
         << mode << R"py("
def varint(v):
    out = b""
    while v >= 128:
        out += bytes([(v & 127) | 128])
        v >>= 7
    return out + bytes([v])
def send(payload):
    os.write(4, struct.pack("<I", len(payload)) + payload)
def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = os.read(3, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data
if MODE == "silent":
    time.sleep(60)
pid = b"\x08" + varint(os.getpid())
send(b"\x0a" + bytes([len(pid)]) + pid)               # Ready
read_exact(struct.unpack("<I", read_exact(4))[0])      # the job
send(b"\x12\x00")                                      # CompileStarted
if MODE == "exit":
    print("giving up", flush=True)
    sys.exit(5)
if MODE == "llvm_oom":
    sys.stderr.write("LLVM ERROR: out of memory\n")
    sys.stderr.flush()
    os.abort()
if MODE == "garbage":
    os.write(4, b"\x05\x00\x00\x00\xff\xff\xff\xff\xff")
    time.sleep(60)
)py";
  script.close();
  std::filesystem::permissions(path, std::filesystem::perms::owner_all);
  return path;
}

TEST(SandboxPool, ClassifiesExitsOutputAndBrokenFrames) {
  ASSERT_TRUE(std::filesystem::exists("/usr/bin/python3")) << "ops/setup.sh installs python3";
  const std::string dir = TempDir("fake_children");
  struct Case {
    const char* mode;
    MeasurementStatus expected;
    std::vector<std::string> says;
  };
  const Case cases[] = {
      {"exit", CRASH, {"exited with code 5", "while compiling", "output tail: giving up"}},
      {"llvm_oom", OUT_OF_MEMORY, {"SIGABRT", "LLVM ERROR: out of memory"}},
      {"garbage", CRASH, {"sent an event that does not parse"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.mode);
    SandboxOptions options = Options();
    options.child_executable = FakeChild(dir, c.mode);
    std::unique_ptr<SandboxPool> pool = MustStart(options);
    ASSERT_NE(pool, nullptr);
    const SandboxOutcome outcome = pool->RunOne(Job(c.mode, TinyMatMul()));
    EXPECT_EQ(outcome.measurement.status(), c.expected) << outcome.measurement.error();
    for (const std::string& part : c.says) {
      EXPECT_NE(outcome.measurement.error().find(part), std::string::npos)
          << outcome.measurement.error();
    }
  }
  // A child that never reports ready fails the start after start_timeout_ms.
  SandboxOptions options = Options();
  options.child_executable = FakeChild(dir, "silent");
  options.start_timeout_ms = 300;
  StatusOr<std::unique_ptr<SandboxPool>> silent = SandboxPool::Start(options);
  ASSERT_FALSE(silent.ok());
  EXPECT_NE(silent.status().message().find("did not report ready within 300 ms"), std::string::npos)
      << silent.status().message();
  std::filesystem::remove_all(dir);
}

TEST(CheckSandbox, EveryFaultGetsItsStatus) {
  const SandboxCheckReport report = CheckSandbox(Options(2), /*timeout_ms=*/1000);
  std::cout << report.table;
  EXPECT_TRUE(report.ok) << report.table;
  EXPECT_EQ(report.rows.size(), 13u);
  EXPECT_TRUE(report.orphans.empty());
  EXPECT_GE(report.restarts, 5);

  SandboxOptions missing = Options();
  missing.child_executable = "/nonexistent/farm-worker";
  const SandboxCheckReport failed = CheckSandbox(missing);
  EXPECT_FALSE(failed.ok);
  EXPECT_NE(failed.table.find("did not start"), std::string::npos) << failed.table;
}

}  // namespace
}  // namespace schedfarm
