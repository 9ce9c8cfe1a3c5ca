#include "worker/sandbox_check.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <thread>
#include <cstdio>
#include <memory>
#include <set>

#include "pipeline/builder.h"

namespace schedfarm {
namespace {

// The check's file size limit: the huge file is stopped at 64 MiB.
constexpr int64_t kCheckFileSizeLimit = 64 << 20;

// A matmul with a bias and a relu: compiles in a fraction of a second.
StatusOr<PipelineSpec> CheckPipeline() {
  PipelineBuilder b("sandbox_check");
  const std::string x = b.Input("x", {32, 48});
  b.Output(b.Relu(b.Add(b.MatMul(x, b.RandomParameter("w", {48, 40}, 0.2)),
                        b.RandomParameter("bias", {40}, 0.5))));
  return b.Finish();
}

struct CheckCase {
  const char* name;
  SandboxFault fault;
  bool in_run;
  MeasurementStatus expected;
};

constexpr CheckCase kCases[] = {
    {"clean", SANDBOX_FAULT_NONE, false, OK},
    {"segfault in compile", FAULT_SEGFAULT, false, CRASH},
    {"abort in run", FAULT_ABORT, true, CRASH},
    {"hang in compile", FAULT_HANG, false, COMPILE_TIMEOUT},
    {"hang in run", FAULT_HANG, true, RUN_TIMEOUT},
    {"allocate", FAULT_ALLOCATE, false, OUT_OF_MEMORY},
    {"flood in run", FAULT_FLOOD, true, OUTPUT_LIMIT},
    {"wrong output", FAULT_WRONG_OUTPUT, true, WRONG_ANSWER},
    {"fork bomb", FAULT_FORK_BOMB, false, CRASH},
    {"huge file", FAULT_HUGE_FILE, true, CRASH},
    {"socket", FAULT_SOCKET, false, CRASH},
    {"exec", FAULT_EXEC, true, CRASH},
    {"clean after faults", SANDBOX_FAULT_NONE, false, OK},
};

std::string Table(const SandboxCheckReport& report) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof(line), "%-20s %-16s %-16s %8s\n", "job", "expected", "got", "seconds");
  out += line;
  for (const SandboxCheckRow& row : report.rows) {
    std::snprintf(line, sizeof(line), "%-20s %-16s %-16s %8.3f%s\n", row.job.c_str(),
                  MeasurementStatus_Name(row.expected).c_str(),
                  MeasurementStatus_Name(row.got).c_str(), row.seconds,
                  row.expected == row.got ? "" : "  <- wrong");
    out += line;
  }
  out += report.confinement + "\n";
  out += "restarts: " + std::to_string(report.restarts) +
         ", orphan processes: " + std::to_string(report.orphans.size()) + "\n";
  out += report.ok ? "sandbox check: ok\n" : "sandbox check: FAILED\n";
  return out;
}

}  // namespace

bool ProcessAndGroupGone(pid_t pid, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    struct stat info;
    const bool left = stat(("/proc/" + std::to_string(pid)).c_str(), &info) == 0 || kill(-pid, 0) == 0;
    if (!left) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

SandboxCheckReport CheckSandbox(const SandboxOptions& options, int64_t timeout_ms) {
  SandboxCheckReport report;
  StatusOr<PipelineSpec> pipeline = CheckPipeline();
  if (!pipeline.ok()) {
    report.table = "sandbox check: " + pipeline.status().message() + "\n";
    return report;
  }
  SandboxOptions pool_options = options;
  pool_options.memory_limit_bytes = std::min<int64_t>(options.memory_limit_bytes, 2LL << 30);
  pool_options.file_size_limit_bytes = kCheckFileSizeLimit;
  StatusOr<std::unique_ptr<SandboxPool>> started = SandboxPool::Start(pool_options);
  if (!started.ok()) {
    report.table = "sandbox check: the pool did not start: " + started.status().message() + "\n";
    return report;
  }
  std::unique_ptr<SandboxPool> pool = std::move(*started);
  std::set<pid_t> pids;
  for (const CheckCase& c : kCases) {
    for (pid_t pid : pool->child_pids()) pids.insert(pid);
    SandboxJob job;
    job.set_job_id(c.name);
    *job.mutable_pipeline() = *pipeline;
    job.mutable_settings()->set_samples(3);
    job.mutable_settings()->set_min_sample_seconds(0.001);
    if (c.fault == FAULT_HANG) {
      job.mutable_settings()->set_compile_timeout_ms(timeout_ms);
      job.mutable_settings()->set_run_timeout_ms(timeout_ms);
    }
    job.set_fault(c.fault);
    job.set_fault_in_run(c.in_run);
    const SandboxOutcome outcome = pool->RunOne(job);
    SandboxCheckRow row;
    row.job = c.name;
    row.expected = c.expected;
    row.got = outcome.measurement.status();
    row.seconds = outcome.total_seconds;
    row.error = outcome.measurement.error();
    report.rows.push_back(row);
  }
  for (pid_t pid : pool->child_pids()) pids.insert(pid);
  report.restarts = pool->restarts();
  report.confinement = pool->confinement();
  pool.reset();
  // A child, or anything left in its process group (a fork that got through).
  for (pid_t pid : pids) {
    if (!ProcessAndGroupGone(pid)) report.orphans.push_back(pid);
  }
  report.ok = report.orphans.empty();
  for (const SandboxCheckRow& row : report.rows) report.ok = report.ok && row.expected == row.got;
  report.table = Table(report);
  return report;
}

}  // namespace schedfarm
