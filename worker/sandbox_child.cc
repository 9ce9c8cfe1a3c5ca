// The sandbox child: `farm-worker --sandbox-child`, one job at a time over its pipes
// (worker/sandbox.h describes the phases), measured with worker/measure.h.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "common/cpus.h"
#include "common/fd_io.h"
#include "common/files.h"
#include "common/flags.h"
#include "common/memory.h"
#include "common/programs.h"
#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "protocol/measurement_settings.h"
#include "scheduler/autoscheduler_names.h"
#include "worker/confinement.h"
#include "worker/cpu_plan.h"
#include "worker/measure.h"
#include "worker/sandbox.h"
#include "worker/sandbox_frame.h"

namespace schedfarm {
namespace {

constexpr int kRequestFd = 3;
constexpr int kEventFd = 4;

enum class ReadResult { kOk, kClosed, kInvalid };

ReadResult ReadRequest(SandboxRequest* request) {
  char header[4];
  if (!ReadFully(kRequestFd, header, sizeof(header))) return ReadResult::kClosed;
  const uint32_t length = DecodeSandboxFrameLength(header);
  if (length > kMaxSandboxFrameBytes) return ReadResult::kInvalid;
  std::string payload(length, '\0');
  if (!ReadFully(kRequestFd, payload.data(), length)) return ReadResult::kClosed;
  return request->ParseFromString(payload) ? ReadResult::kOk : ReadResult::kInvalid;
}

// The pool has gone when the event pipe breaks; nothing is left to do.
void Send(const SandboxEvent& event) {
  if (!WriteFully(kEventFd, EncodeSandboxFrame(event))) std::_Exit(0);
}

void SendFinished(const Measurement& measurement) {
  SandboxEvent event;
  *event.mutable_finished() = measurement;
  Send(event);
}

// Pins every thread of the process (Halide's thread pool included) to `cpus`.
void PinTo(const std::vector<int>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) CPU_SET(cpu, &set);
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) {
    sched_setaffinity(0, sizeof(set), &set);
    return;
  }
  while (const dirent* entry = readdir(tasks)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (tid > 0 && sched_setaffinity(tid, sizeof(set), &set) != 0 && errno != ESRCH) {
      std::cerr << "sandbox child: cannot pin thread " << tid << ": " << std::strerror(errno)
                << "\n";
    }
  }
  closedir(tasks);
}

// Misbehaviour on request (SandboxJob.fault). WRONG_OUTPUT is an OutputHook instead.
void InjectFault(SandboxFault fault) {
  switch (fault) {
    case FAULT_SEGFAULT: {
      volatile uintptr_t invalid = 16;  // opaque to the compiler
      *reinterpret_cast<volatile int*>(invalid) = 1;
      break;
    }
    case FAULT_ABORT:
      std::abort();
    case FAULT_HANG: {
      volatile uint64_t spins = 0;
      while (true) spins = spins + 1;
    }
    case FAULT_STALL:
      while (true) pause();
    case FAULT_FORK_BOMB:
      // Bounded, should the sandbox ever let it through: the pool kills the group.
      for (int i = 0; i < 256; ++i) {
        if (fork() == 0) {
          while (true) pause();
        }
      }
      while (true) pause();
    case FAULT_HUGE_FILE: {  // in the scratch folder, the one it may write
      const int fd = open("huge", O_WRONLY | O_CREAT | O_TRUNC, 0600);
      const std::string chunk(1 << 20, 'x');
      while (fd >= 0 && WriteFully(fd, chunk)) {
      }
      std::cerr << "huge file: " << std::strerror(errno) << "\n";
      break;
    }
    case FAULT_SOCKET:
      socket(AF_INET, SOCK_STREAM, 0);
      break;
    case FAULT_EXEC:
      execl("/bin/true", "true", static_cast<char*>(nullptr));
      break;
    case FAULT_ALLOCATE: {
      // 64 MiB chunks, every page touched, until the memory limit makes new throw.
      constexpr size_t kChunk = 64 << 20;
      std::vector<std::unique_ptr<char[]>> chunks;
      while (true) {
        chunks.emplace_back(new char[kChunk]);
        volatile char* chunk = chunks.back().get();
        for (size_t i = 0; i < kChunk; i += 4096) chunk[i] = 1;
      }
    }
    case FAULT_FLOOD: {
      const std::string line(1023, 'x');
      while (true) {
        if (!WriteFully(1, line + "\n")) break;
      }
      break;
    }
    default:
      break;
  }
}

// Changes one value of the first output by more than any tolerance allows.
void PerturbOutputs(std::vector<HostTensor>& outputs) {
  if (outputs.empty() || outputs[0].data.empty()) return;
  HostTensor& t = outputs[0];
  double largest = 0;
  for (double v : t.data) largest = std::max(largest, std::abs(v));
  t.data[t.data.size() / 2] += 1 + largest;
}

// Compiles and runs a trivial pipeline, so that Halide's JIT runtime (built once per
// process, a few hundred milliseconds) is ready before the first job.
void WarmUpHalide() {
  PipelineBuilder b("warm_up");
  b.Output(b.Relu(b.Input("x", {8})));
  StatusOr<PipelineSpec> spec = b.Finish();
  StatusOr<PipelineGraph> graph =
      spec.ok() ? PipelineGraph::Build(*spec) : StatusOr<PipelineGraph>(spec.status());
  RunOptions once;
  once.timing_samples = 0;
  const Status ran = graph.ok() ? RunReference(*graph, once).status() : graph.status();
  if (!ran.ok()) std::cerr << "sandbox child: Halide warm-up failed: " << ran.message() << "\n";
}

// Tells the pool the compile phase is over and waits for its start_run (the benchmark
// slot); false when the pool broke the protocol or went away.
bool ReportCompiledAndAwaitRun(double compile_seconds) {
  SandboxEvent compiled;
  compiled.mutable_compiled()->set_compile_seconds(compile_seconds);
  Send(compiled);
  SandboxRequest request;
  if (ReadRequest(&request) != ReadResult::kOk) return false;
  if (request.body_case() != SandboxRequest::kStartRun) {
    std::cerr << "sandbox child: expected start_run, got request " << request.body_case() << "\n";
    return false;
  }
  return true;
}

// The program that runs a runtime contender (IsRuntimeContender) for the child.
const char* ContenderProgram(const std::string& baseline) {
  return baseline == kOnnxRuntimeBaseline ? "farm-onnxruntime-baseline" : "farm-torch-baseline";
}

// `program` beside this farm-worker, or in the build tree's worker/torch/ or
// worker/onnxruntime/; empty when none holds it.
std::string ContenderBinary(const std::string& program) {
  const std::string folder = ThisProgramFolder();
  if (folder.empty()) return "";
  const std::filesystem::path dir = folder;
  for (const std::filesystem::path& path :
       {dir / program, dir / "torch" / program, dir / "onnxruntime" / program}) {
    if (access(path.c_str(), X_OK) == 0) return path.string();
  }
  return "";
}

// Runs the runtime contenders' programs for the child, which may not start programs
// once it is confined: a process forked before that, while the child has one thread,
// which starts only the programs it was given then (by baseline name). A request is
// BASELINE, CPUS, JOB, REFERENCE and RESULT each ended by a NUL byte (CPUS as CpuList
// writes it), then a newline; the reply the program's wait status, 4 bytes (exit status
// 127 when the launcher has no program for BASELINE). The launcher dies with the child
// and ends when its request pipe closes; a program dies with the launcher.
class ContenderLauncher {
 public:
  // `programs`: baseline name -> program path, those that were found.
  bool Start(const std::map<std::string, std::string>& programs) {
    int requests[2], replies[2];
    if (pipe2(requests, O_CLOEXEC) != 0) return false;
    if (pipe2(replies, O_CLOEXEC) != 0) {
      close(requests[0]);
      close(requests[1]);
      return false;
    }
    const pid_t pid = fork();
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(kRequestFd);  // the pool's pipes stay the child's alone
      close(kEventFd);
      close(requests[1]);
      close(replies[0]);
      Serve(programs, requests[0], replies[1]);
      _exit(0);
    }
    close(requests[0]);
    close(replies[1]);
    request_fd_ = requests[1];
    reply_fd_ = replies[0];
    return pid > 0;
  }

  // The program's wait status, or nullopt when the launcher is gone.
  std::optional<int> Run(const std::string& baseline, const std::vector<int>& cpus,
                         const std::string& job, const std::string& reference,
                         const std::string& result) const {
    const std::string request = baseline + '\0' + CpuList(cpus) + '\0' + job + '\0' + reference +
                                '\0' + result + '\0' + '\n';
    int status = 0;
    if (request_fd_ < 0 || !WriteFully(request_fd_, request) ||
        !ReadFully(reply_fd_, reinterpret_cast<char*>(&status), sizeof(status))) {
      return std::nullopt;
    }
    return status;
  }

 private:
  static void Serve(const std::map<std::string, std::string>& programs, int requests, int replies) {
    std::string pending;
    char buffer[4096];
    for (ssize_t n; (n = read(requests, buffer, sizeof(buffer))) > 0;) {
      pending.append(buffer, static_cast<size_t>(n));
      for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
        std::istringstream line(pending.substr(0, end));
        pending.erase(0, end + 1);
        std::string baseline, cpus, job, reference, result;
        for (std::string* field : {&baseline, &cpus, &job, &reference, &result}) {
          std::getline(line, *field, '\0');
        }
        int status = 127 << 8;  // as a shell reports a program it cannot start
        const auto program = programs.find(baseline);
        const pid_t pid = program == programs.end() ? -1 : fork();
        if (pid == 0) {
          prctl(PR_SET_PDEATHSIG, SIGKILL);
          std::vector<int> allowed;
          for (const std::string& cpu : SplitFlagList(cpus)) {
            if (!cpu.empty()) allowed.push_back(std::atoi(cpu.c_str()));
          }
          if (!allowed.empty()) SetAllowedCpus(allowed);
          dup2(STDERR_FILENO, STDOUT_FILENO);
          const char* path = program->second.c_str();
          execl(path, path, job.c_str(), reference.c_str(), result.c_str(),
                static_cast<char*>(nullptr));
          _exit(127);
        }
        while (pid > 0 && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (!WriteFully(replies, std::string(reinterpret_cast<char*>(&status), sizeof(status)))) {
          return;
        }
      }
    }
  }

  int request_fd_ = -1;
  int reply_fd_ = -1;
};

// A runtime contender (worker/torch/, worker/onnxruntime/) in its own process, on the
// benchmark cpus: the job and the reference go to files of a folder in the child's
// scratch folder (which the program may use for files of its own), the measurement
// comes back in a third.
Measurement RunContender(const SandboxJob& job, const MeasurementSettings& settings,
                         const ReferenceOutputs& reference, const ContenderLauncher& launcher,
                         const std::string& scratch_dir, const std::vector<int>& cpus) {
  static int runs = 0;
  const std::string program = ContenderProgram(job.autoscheduler());
  const std::string dir = scratch_dir + "/contender-" + std::to_string(++runs);
  std::error_code made;
  if (!std::filesystem::create_directory(dir, made)) {
    return FailedMeasurement(RUNTIME_ERROR, "cannot make '" + dir + "': " + made.message(),
                             settings);
  }
  const std::string job_file = dir + "/job.pb", reference_file = dir + "/reference",
                    result_file = dir + "/result.pb";
  SandboxJob filled = job;
  *filled.mutable_settings() = settings;
  Status written = WriteFileAtomically(job_file, filled.SerializeAsString());
  if (written.ok()) written = WriteFileAtomically(reference_file, EncodeReference(reference.outputs));
  Measurement m;
  if (!written.ok()) {
    m = FailedMeasurement(RUNTIME_ERROR, written.message(), settings);
  } else if (const std::optional<int> status =
                 launcher.Run(job.autoscheduler(), cpus, job_file, reference_file, result_file);
             !status) {
    m = FailedMeasurement(RUNTIME_ERROR, program + "'s launcher died", settings);
  } else {
    StatusOr<std::string> result = ReadFileBytes(result_file);
    if (WIFEXITED(*status) && WEXITSTATUS(*status) == 0 && result.ok() &&
        m.ParseFromString(*result)) {
      // the measurement as the program took it
    } else if (WIFSIGNALED(*status)) {
      m = FailedMeasurement(CRASH, program + " died of signal " + std::to_string(WTERMSIG(*status)),
                            settings);
    } else if (WIFEXITED(*status) && WEXITSTATUS(*status) == 127) {
      m = FailedMeasurement(RUNTIME_ERROR, program + " is not installed beside farm-worker",
                            settings);
    } else {
      m = FailedMeasurement(RUNTIME_ERROR,
                            program + " failed (exit status " +
                                std::to_string(WIFEXITED(*status) ? WEXITSTATUS(*status) : -1) +
                                "; its message is in the worker's log)",
                            settings);
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return m;
}

// What a child keeps from one job to the next.
struct ChildContext {
  std::vector<int> allowed;  // cpus
  int adams2019_beam = 32;
  std::string scratch_dir;
  ReferenceCache* cache = nullptr;
  ContenderLauncher launcher;
};

// Runs one job; false when the pool broke the protocol or went away. A baseline job
// (job.autoscheduler()) runs its autoscheduler with Adams2019's beam of `context`.
bool HandleJob(const SandboxJob& job, ChildContext& context) {
  const MeasurementSettings settings = WithDefaults(job.settings());
  const CpuPlan cpus = PlanCpus(context.allowed, settings.threads());
  const bool fault_in_compile =
      job.fault() != SANDBOX_FAULT_NONE && !job.fault_in_run() && job.fault() != FAULT_WRONG_OUTPUT;
  const std::string autoscheduler = job.autoscheduler();
  const std::string where =
      "job '" + job.job_id() + "'" +
      (autoscheduler.empty() ? std::string() : " (baseline " + autoscheduler + ")") + ": ";
  double compile_seconds = 0;
  std::optional<BaselineSchedule> chosen;
  auto fail = [&](MeasurementStatus status, const std::string& error) {
    Measurement m = FailedMeasurement(status, where + error, settings);
    m.set_compile_seconds(compile_seconds);
    if (chosen) RecordBaseline(*chosen, &m);
    SendFinished(m);
    return true;
  };
  try {
    PinTo(cpus.compile);
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(job.pipeline());
    if (!graph.ok()) return fail(COMPILE_ERROR, graph.status().message());
    MeasurementStatus failure = COMPILE_ERROR;
    StatusOr<std::shared_ptr<const ReferenceOutputs>> reference = context.cache->Get(*graph, &failure);
    if (!reference.ok()) return fail(failure, reference.status().message());
    SandboxEvent started;
    started.mutable_compile_started();
    Send(started);
    if (fault_in_compile) InjectFault(job.fault());
    if (IsRuntimeContender(autoscheduler)) {  // nothing to compile: the runtime runs it
      if (!ReportCompiledAndAwaitRun(0)) return false;
      Measurement measurement = RunContender(job, settings, **reference, context.launcher,
                                             context.scratch_dir, cpus.benchmark);
      if (measurement.status() != OK) measurement.set_error(where + measurement.error());
      SendFinished(measurement);
      return true;
    }
    StatusOr<CompiledCandidate> candidate = [&] {
      if (autoscheduler.empty()) {
        return CompiledCandidate::Compile(*graph, job.schedule(), settings, &failure);
      }
      BaselineSchedule baseline;
      StatusOr<CompiledCandidate> compiled = CompiledCandidate::CompileBaseline(
          *graph, BaselineRequest{autoscheduler, context.adams2019_beam}, settings, &failure, &baseline);
      if (!baseline.schedule_source.empty()) chosen = std::move(baseline);
      return compiled;
    }();
    if (!candidate.ok()) return fail(failure, candidate.status().message());
    compile_seconds = candidate->compile_seconds();
    if (!ReportCompiledAndAwaitRun(compile_seconds)) return false;
    PinTo(cpus.benchmark);
    if (job.fault_in_run() && job.fault() != FAULT_WRONG_OUTPUT) InjectFault(job.fault());
    const OutputHook hook =
        job.fault() == FAULT_WRONG_OUTPUT ? OutputHook(PerturbOutputs) : nullptr;
    Measurement measurement = candidate->Run(**reference, hook);
    if (measurement.status() != OK) {
      measurement.set_error(where + measurement.error());
    } else if (candidate->baseline() != nullptr) {
      // The import's remark rides in the error of an OK measurement; the pool moves it
      // to SandboxOutcome::note.
      measurement.set_error(candidate->baseline()->import_note);
    }
    SendFinished(measurement);
    return true;
  } catch (const std::bad_alloc& e) {
    return fail(OUT_OF_MEMORY, std::string("out of memory (") + e.what() + ")");
  } catch (const std::exception& e) {
    return fail(RUNTIME_ERROR, e.what());
  }
}

}  // namespace

int RunSandboxChild(int argc, char** argv) {
  int64_t memory_limit = 0, file_size_limit = 0;
  std::string cache_dir, scratch_dir;
  ChildContext context;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--memory-limit-bytes=", 0) == 0) {
      memory_limit = std::strtoll(arg.c_str() + std::strlen("--memory-limit-bytes="), nullptr, 10);
    } else if (arg.rfind("--file-size-limit-bytes=", 0) == 0) {
      file_size_limit =
          std::strtoll(arg.c_str() + std::strlen("--file-size-limit-bytes="), nullptr, 10);
    } else if (arg.rfind("--cache-dir=", 0) == 0) {
      cache_dir = arg.substr(std::strlen("--cache-dir="));
    } else if (arg.rfind("--scratch-dir=", 0) == 0) {
      scratch_dir = arg.substr(std::strlen("--scratch-dir="));
    } else if (arg.rfind("--adams2019-beam=", 0) == 0) {
      context.adams2019_beam = std::atoi(arg.c_str() + std::strlen("--adams2019-beam="));
      if (context.adams2019_beam < 1) {
        std::cerr << "sandbox child: bad argument '" << arg << "'\n";
        return 2;
      }
    } else {
      std::cerr << "sandbox child: unknown argument '" << arg << "'\n";
      return 2;
    }
  }
  if (scratch_dir.empty() || chdir(scratch_dir.c_str()) != 0) {
    std::cerr << "sandbox child: no scratch folder ('" << scratch_dir << "')\n";
    return 2;
  }
  context.scratch_dir = scratch_dir;
  if (memory_limit > 0) {
    const rlimit memory = {static_cast<rlim_t>(memory_limit), static_cast<rlim_t>(memory_limit)};
    if (setrlimit(RLIMIT_AS, &memory) != 0) {
      std::cerr << "sandbox child: cannot limit memory to " << memory_limit
                << " bytes: " << std::strerror(errno) << "\n";
      return 2;
    }
  }
  std::map<std::string, std::string> contenders;
  for (const std::string& baseline : RuntimeContenderNames()) {
    const std::string binary = ContenderBinary(ContenderProgram(baseline));
    if (!binary.empty()) contenders[baseline] = binary;
  }
  context.launcher.Start(contenders);  // while this process has one thread
  // Fixed malloc thresholds. Left dynamic, glibc raises its mmap threshold (up to
  // 32 MiB) as a process frees large blocks, so the buffers of a realization stop
  // costing page faults and the same schedule times faster in an older sandbox
  // process. Fixed at the top of that range, a fresh process times like an old one.
  KeepFreedMemory();
  context.allowed = AllowedCpus();
  std::vector<std::string> writable = {scratch_dir};
  if (!cache_dir.empty()) {
    std::error_code made;
    std::filesystem::create_directories(cache_dir, made);
    writable.push_back(cache_dir);
  }
  ReferenceCache cache(cache_dir);
  context.cache = &cache;
  WarmUpHalide();
  ConfinementOptions confinement;
  confinement.writable_dirs = writable;
  confinement.file_size_limit_bytes = file_size_limit;
  StatusOr<ConfinementReport> confined = Confine(confinement);
  if (!confined.ok()) {
    std::cerr << "sandbox child: " << confined.status().message() << "\n";
    return 2;
  }

  SandboxEvent ready;
  ready.mutable_ready()->set_pid(getpid());
  ready.mutable_ready()->set_confinement(confined->text);
  Send(ready);
  while (true) {
    SandboxRequest request;
    const ReadResult read = ReadRequest(&request);
    if (read == ReadResult::kClosed) return 0;
    if (read == ReadResult::kInvalid || request.body_case() != SandboxRequest::kJob) {
      std::cerr << "sandbox child: expected a job\n";
      return 3;
    }
    if (!HandleJob(request.job(), context)) return 3;
  }
}

}  // namespace schedfarm
