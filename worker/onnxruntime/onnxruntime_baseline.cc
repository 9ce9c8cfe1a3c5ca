#include "worker/onnxruntime/onnxruntime_baseline.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "common/fd_io.h"
#include "common/files.h"
#include "common/programs.h"
#include "pipeline/graph.h"
#include "pipeline/onnx/onnx_export.h"
#include "pipeline/tensor.h"
#include "scheduler/autoscheduler_names.h"
#include "timing/run_phase.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

// The "version" of a package.json, or "".
std::string PackageVersion(const std::string& package_json) {
  StatusOr<std::string> text = ReadFileBytes(package_json);
  if (!text.ok()) return "";
  const size_t key = text->find("\"version\"");
  if (key == std::string::npos) return "";
  const size_t open = text->find('"', text->find(':', key) + 1);
  const size_t close = open == std::string::npos ? open : text->find('"', open + 1);
  return close == std::string::npos ? "" : text->substr(open + 1, close - open - 1);
}

// --- The tensor file format of runner.js ----------------------------------------

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(T));
}

std::string EncodeTensors(const std::vector<std::string>& names,
                          const std::vector<HostTensor>& tensors) {
  std::string out;
  Put<uint32_t>(out, static_cast<uint32_t>(tensors.size()));
  for (size_t t = 0; t < tensors.size(); ++t) {
    Put<uint32_t>(out, static_cast<uint32_t>(names[t].size()));
    out += names[t];
    Put<int32_t>(out, tensors[t].dtype);
    Put<uint32_t>(out, static_cast<uint32_t>(tensors[t].shape.size()));
    for (int64_t extent : tensors[t].shape) Put<int64_t>(out, extent);
    for (double v : tensors[t].data) {
      if (tensors[t].dtype == FLOAT64) {
        Put<double>(out, v);
      } else {
        Put<float>(out, static_cast<float>(v));
      }
    }
  }
  return out;
}

// The tensors of a file runner.js wrote, in its order (the model's outputs' order).
StatusOr<std::vector<HostTensor>> DecodeTensors(const std::string& bytes) {
  size_t at = 0;
  auto take = [&](void* into, size_t size) {
    if (at + size > bytes.size()) return false;
    std::memcpy(into, bytes.data() + at, size);
    at += size;
    return true;
  };
  const Status truncated = Status::Error("the outputs file of ONNX Runtime's runner is truncated");
  uint32_t count = 0;
  if (!take(&count, sizeof(count))) return truncated;
  std::vector<HostTensor> tensors;
  for (uint32_t t = 0; t < count; ++t) {
    uint32_t name_size = 0, rank = 0;
    int32_t dtype = 0;
    if (!take(&name_size, sizeof(name_size)) || at + name_size > bytes.size()) return truncated;
    at += name_size;
    if (!take(&dtype, sizeof(dtype)) || !take(&rank, sizeof(rank))) return truncated;
    HostTensor tensor;
    tensor.dtype = dtype == FLOAT64 ? FLOAT64 : FLOAT32;
    int64_t size = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      int64_t extent = 0;
      if (!take(&extent, sizeof(extent))) return truncated;
      tensor.shape.push_back(extent);
      size *= extent;
    }
    tensor.data.resize(static_cast<size_t>(size));
    for (double& v : tensor.data) {
      if (tensor.dtype == FLOAT64) {
        if (!take(&v, sizeof(v))) return truncated;
      } else {
        float f = 0;
        if (!take(&f, sizeof(f))) return truncated;
        v = f;
      }
    }
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

// --- runner.js as a child process -----------------------------------------------

// node running runner.js: commands on its standard input, one reply line each on its
// standard output; its standard error is this process's. It dies with this process.
class Runner {
 public:
  ~Runner() {
    if (to_ >= 0) close(to_);
    if (from_ >= 0) close(from_);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }

  // Starts it; its "ready" line gives the runtime's version. An error carries what
  // ONNX Runtime said when it could not build the session.
  Status Start(const OnnxRuntimeInstall& install, const std::string& model,
               const std::string& tensors, int threads) {
    int to[2], from[2];
    if (pipe2(to, O_CLOEXEC) != 0) return Status::Error("pipe: " + std::string(strerror(errno)));
    if (pipe2(from, O_CLOEXEC) != 0) {
      close(to[0]);
      close(to[1]);
      return Status::Error("pipe: " + std::string(strerror(errno)));
    }
    const std::string thread_text = std::to_string(threads);
    // glibc keeps the memory freed by node's collections for the next runs' outputs
    // rather than returning it to the system (runner.js says why that matters).
    std::vector<std::string> environment = {"MALLOC_MMAP_THRESHOLD_=33554432",
                                            "MALLOC_TRIM_THRESHOLD_=4294967296"};
    for (char** variable = environ; *variable != nullptr; ++variable) {
      if (std::strncmp(*variable, "MALLOC_", 7) != 0) environment.push_back(*variable);
    }
    std::vector<char*> envp;
    for (std::string& variable : environment) envp.push_back(variable.data());
    envp.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      dup2(to[0], STDIN_FILENO);
      dup2(from[1], STDOUT_FILENO);
      execle(install.node.c_str(), install.node.c_str(), "--expose-gc", install.runner.c_str(),
             install.package.c_str(), model.c_str(), tensors.c_str(), thread_text.c_str(),
             static_cast<char*>(nullptr), envp.data());
      _exit(127);
    }
    close(to[0]);
    close(from[1]);
    to_ = to[1];
    from_ = from[0];
    if (pid_ < 0) return Status::Error("fork: " + std::string(strerror(errno)));
    SCHEDFARM_ASSIGN_OR_RETURN(std::string ready, ReadReply());
    if (ready.rfind("ready ", 0) != 0) {
      return Status::Error("ONNX Runtime's runner said '" + ready + "' where it should be ready");
    }
    version_ = ready.substr(6);
    return Status::Ok();
  }

  const std::string& version() const { return version_; }

  // The text after "ok" of the reply to `command`; "error MESSAGE" is an error.
  StatusOr<std::string> Ask(const std::string& command) {
    if (!WriteFully(to_, command + "\n")) return Ended();
    SCHEDFARM_ASSIGN_OR_RETURN(std::string reply, ReadReply());
    if (reply == "ok") return std::string();
    if (reply.rfind("ok ", 0) == 0) return reply.substr(3);
    return Status::Error("ONNX Runtime's runner answered '" + reply + "' to '" + command + "'");
  }

 private:
  // One line of its output; "error MESSAGE" becomes an error with MESSAGE.
  StatusOr<std::string> ReadReply() {
    std::string line;
    char c = 0;
    while (ReadFully(from_, &c, 1)) {
      if (c == '\n') {
        if (line.rfind("error ", 0) == 0) return Status::Error("ONNX Runtime: " + line.substr(6));
        return line;
      }
      line += c;
    }
    return Ended();
  }

  Status Ended() {
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
      pid_ = -1;
      if (WIFSIGNALED(status)) {
        return Status::Error("ONNX Runtime's runner (node) died of signal " +
                             std::to_string(WTERMSIG(status)));
      }
      return Status::Error("ONNX Runtime's runner (node) ended with exit status " +
                           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                           (WIFEXITED(status) && WEXITSTATUS(status) == 127
                                ? " (node could not be started)"
                                : "; its message is in the worker's log"));
    }
    return Status::Error("ONNX Runtime's runner (node) closed its output");
  }

  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
  std::string version_;
};

}  // namespace

StatusOr<OnnxRuntimeInstall> FindOnnxRuntime() {
  OnnxRuntimeInstall install;
  install.node = Env("SCHEDFARM_NODE");
  if (install.node.empty()) install.node = OnPath("node");
  if (install.node.empty() || access(install.node.c_str(), X_OK) != 0) {
    return Status::Error("ONNX Runtime is unavailable on this worker: no node program (" +
                         std::string(install.node.empty() ? "none on PATH" : install.node) +
                         "); ops/setup.sh installs Debian's nodejs");
  }
  install.package = Env("SCHEDFARM_ONNXRUNTIME_NODE");
  if (install.package.empty()) {
    const std::string cache =
        !Env("XDG_CACHE_HOME").empty() ? Env("XDG_CACHE_HOME") : Env("HOME") + "/.cache";
    install.package = cache + "/schedfarm/onnxruntime/node_modules/onnxruntime-node";
  }
  install.version = PackageVersion(install.package + "/package.json");
  if (install.version.empty()) {
    return Status::Error(
        "ONNX Runtime is unavailable on this worker: no onnxruntime-node package in '" +
        install.package + "'; ops/setup.sh installs it");
  }
  const std::string folder = ThisProgramFolder();
  install.runner = (fs::path(folder) / "runner.js").string();
  if (folder.empty() || access(install.runner.c_str(), R_OK) != 0) {
    return Status::Error("ONNX Runtime's runner.js is not installed beside " + ThisProgram());
  }
  return install;
}

Measurement MeasureWithOnnxRuntime(const SandboxJob& job, const std::string& reference_bytes,
                                   const std::string& scratch_dir) {
  const MeasurementSettings& settings = job.settings();
  const std::string where = "ONNX Runtime run of pipeline '" + job.pipeline().name() + "'";
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(job.pipeline());
  if (!graph.ok())
    return FailedMeasurement(RUNTIME_ERROR, where + ": " + graph.status().message(), settings);
  StatusOr<std::vector<HostTensor>> reference = DecodeReference(reference_bytes, *graph);
  if (!reference.ok()) {
    return FailedMeasurement(RUNTIME_ERROR,
                             where + ": reference file: " + reference.status().message(), settings);
  }
  StatusOr<std::string> model = ExportOnnxModel(graph->spec());
  const std::string model_file = scratch_dir + "/model.onnx";
  const Status written = model.ok()
                             ? WriteFileAtomically(model_file, *model)
                             : Status::Error("as an ONNX model: " + model.status().message());
  if (!written.ok())
    return FailedMeasurement(RUNTIME_ERROR, where + ": " + written.message(), settings);
  return MeasureOnnxModelFile(model_file, graph->spec(), *reference, settings, scratch_dir);
}

Measurement MeasureOnnxModelFile(const std::string& model_file, const PipelineSpec& spec,
                                 const std::vector<HostTensor>& reference,
                                 const MeasurementSettings& settings,
                                 const std::string& scratch_dir) {
  const std::string where = "ONNX Runtime run of pipeline '" + spec.name() + "'";
  auto failed = [&](MeasurementStatus status, const std::string& why) {
    return FailedMeasurement(status, where + ": " + why, settings);
  };
  StatusOr<OnnxRuntimeInstall> install = FindOnnxRuntime();
  if (!install.ok()) return failed(RUNTIME_ERROR, install.status().message());

  const std::string inputs_file = scratch_dir + "/inputs", outputs_file = scratch_dir + "/outputs";
  std::vector<std::string> input_names;
  for (const TensorDecl& input : spec.inputs()) input_names.push_back(input.name());
  const Status written =
      WriteFileAtomically(inputs_file, EncodeTensors(input_names, DeterministicInputs(spec)));
  if (!written.ok()) return failed(RUNTIME_ERROR, written.message());

  Runner runner;
  const Status started =
      runner.Start(*install, model_file, inputs_file, std::max(1, settings.threads()));
  if (!started.ok()) return failed(RUNTIME_ERROR, started.message());

  const std::vector<std::string> output_names(spec.outputs().begin(), spec.outputs().end());
  Status output_error;
  RunTarget target;
  target.time_runs = [&](int repeats) -> StatusOr<double> {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string seconds, runner.Ask("run " + std::to_string(repeats)));
    char* end = nullptr;
    const double value = std::strtod(seconds.c_str(), &end);
    if (end == seconds.c_str() || value < 0) {
      return Status::Error("ONNX Runtime's runner timed a run as '" + seconds + "'");
    }
    return value;
  };
  target.run_once = [&] { return target.time_runs(1); };
  target.outputs = [&] {
    StatusOr<std::string> asked = runner.Ask("outputs " + outputs_file);
    StatusOr<std::string> bytes = asked.ok() ? ReadFileBytes(outputs_file) : asked.status();
    StatusOr<std::vector<HostTensor>> outputs = bytes.ok() ? DecodeTensors(*bytes) : bytes.status();
    if (outputs.ok() && outputs->size() != output_names.size()) {
      outputs =
          Status::Error("the model has " + std::to_string(outputs->size()) +
                        " outputs where the pipeline has " + std::to_string(output_names.size()));
    }
    if (!outputs.ok()) {
      output_error = outputs.status();
      return std::vector<HostTensor>();
    }
    return *std::move(outputs);
  };
  target.failure = [] { return RUNTIME_ERROR; };
  Measurement m = RunPhase(target, reference, output_names, settings, where);
  if (!output_error.ok()) m = failed(RUNTIME_ERROR, output_error.message());
  m.set_runtime_version(std::string(kOnnxRuntimeBaseline) + " " + runner.version());
  return m;
}

}  // namespace schedfarm
