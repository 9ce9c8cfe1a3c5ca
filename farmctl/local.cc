#include "farmctl/local.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <thread>
#include <vector>

#include "common/cpus.h"
#include "farmctl/binaries.h"
#include "farmctl/render.h"
#include "farmctl/submission.h"
#include "protocol/control_client.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

constexpr auto kStartTimeout = std::chrono::seconds(30);
constexpr auto kWorkerStopTimeout = std::chrono::seconds(30);
constexpr auto kCoordinatorStopTimeout = std::chrono::seconds(10);

// A process of the farm, in its own session (so in its own process group, and in its
// own scheduler autogroup where the kernel has them), its stderr in a log file; it gets
// SIGTERM if farmctl dies first. With `avoid_last_cpu` (and two cpus or more allowed)
// it runs on every allowed cpu but the last, which is a worker's benchmark core.
class FarmProcess {
 public:
  FarmProcess(const std::string& binary, const std::vector<std::string>& args,
              const std::string& log_path, bool avoid_last_cpu = false)
      : log_path_(log_path) {
    const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      setsid();  // its own session: its own process group, and its own scheduler autogroup
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);
      if (avoid_last_cpu) AvoidLastCpu();
      if (log_fd >= 0) {
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
      }
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    if (log_fd >= 0) close(log_fd);
  }
  ~FarmProcess() { Stop(std::chrono::seconds(0)); }

  static void AvoidLastCpu() {
    std::vector<int> cpus = AllowedCpus();
    if (cpus.size() < 2) return;
    cpus.pop_back();
    SetAllowedCpus(cpus);
  }

  bool running() {
    if (exited_ || pid_ <= 0) return false;
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) exited_ = true;
    return !exited_;
  }

  // SIGTERM, then SIGKILL after `grace`.
  void Stop(std::chrono::seconds grace) {
    if (!running()) return;
    kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + grace;
    while (running() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      exited_ = true;
    }
  }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  const std::string& log_path() const { return log_path_; }

 private:
  std::string log_path_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

// The last lines of a log, for an error message.
std::string Tail(const std::string& text, int lines = 8) {
  size_t at = text.size();
  for (int i = 0; i <= lines && at != std::string::npos && at > 0; ++i) {
    at = text.rfind('\n', at - 1);
  }
  return at == std::string::npos ? text : text.substr(at + 1);
}

// What each campaign's search started from when it asked for a model (model_from):
// the learner's events saying which model it took, or why it took none, as logged.
void PrintModelStarts(const std::string& learner_log, std::ostream& out) {
  std::ifstream log(learner_log);
  bool any = false;
  for (std::string line; std::getline(log, line);) {
    for (const char* event : {"event=model_seeded ", "event=pretrained_missing ",
                              "event=pretrained_refused ", "event=model_source_missing "}) {
      const size_t at = line.find(event);
      if (at == std::string::npos) continue;
      if (!any) out << "\nwhere the searches' models came from (the learner's log):\n";
      any = true;
      out << "  " << line.substr(at + 6) << "\n";
    }
  }
}

// Watches the campaigns in order until each has ended, then prints each one's status
// and best schedules (and for a value-iteration campaign its rounds) and, for two
// campaigns or more, their comparison. Returns the first
// exit code that is not 0. Ctrl-C ends farmctl; the farm's processes then get SIGTERM
// (PR_SET_PDEATHSIG) and stop cleanly, and the campaigns stay in the store.
int WatchAndReport(const std::string& endpoint, const std::vector<std::string>& ids,
                   const std::set<std::string>& value_iteration, const std::string& learner_log,
                   const CliStreams& streams) {
  const auto farmctl = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--coordinator", endpoint});
    return RunFarmctl(args, streams);
  };
  int code = kExitOk;
  const auto keep = [&code](int next) {
    if (code == kExitOk) code = next;
  };
  for (const std::string& id : ids) {
    streams.out << "\n";
    keep(farmctl({"watch", id}));
  }
  for (const std::string& id : ids) {
    streams.out << "\n";
    farmctl({"status", id});
    streams.out << "\n";
    keep(farmctl({"best", id}));
    if (value_iteration.count(id)) {
      streams.out << "\n";
      keep(farmctl({"rounds", id}));
    }
  }
  PrintModelStarts(learner_log, streams.out);
  if (ids.size() > 1) {
    std::vector<std::string> compare = {"compare"};
    compare.insert(compare.end(), ids.begin(), ids.end());
    streams.out << "\n";
    keep(farmctl(compare));
  }
  return code;
}

}  // namespace

int RunLocalFarm(const LocalFarmOptions& options, const CliStreams& streams) {
  auto fail = [&](int code, const std::string& message) {
    streams.err << "farmctl local: " << message << "\n";
    return code;
  };
  // Every file is checked before anything starts.
  std::vector<SubmitCampaign> submissions;
  std::vector<bool> value_iteration_files;
  std::set<std::string> replay_datasets;  // each gets a replay worker
  bool measures = false;                  // some campaign needs measuring workers
  for (const std::string& file : options.campaign_files) {
    CampaignConfig config;
    StatusOr<SubmitCampaign> submission = BuildSubmission(file, &config);
    value_iteration_files.push_back(config.strategy().name() == "value-iteration");
    if (!submission.ok()) return fail(kExitInvalidInput, submission.status().message());
    if (config.has_replay()) {
      replay_datasets.insert(config.replay().dataset());
    } else {
      measures = true;
    }
    submissions.push_back(std::move(*submission));
  }
  const std::string coordinator_bin = FindBinary("farm-coordinator", "coordinator");
  const std::string worker_bin = FindBinary("farm-worker", "worker");
  const std::string learner_bin = FindBinary("farm-learner", "learner_daemon");
  for (const auto& [name, path] :
       {std::pair<const char*, const std::string&>{"farm-coordinator", coordinator_bin},
        {"farm-worker", worker_bin},
        {"farm-learner", learner_bin}}) {
    if (path.empty()) {
      return fail(kExitFailed, std::string("cannot find ") + name +
                                   " (set SCHEDFARM_BIN_DIR to the folder that holds it)");
    }
  }
  std::error_code error;
  const fs::path dir = fs::absolute(options.dir, error);
  fs::create_directories(dir / "logs", error);
  if (error)
    return fail(kExitFailed, "cannot create " + (dir / "logs").string() + ": " + error.message());

  // The bound endpoint, from the start-up line this run appends to the log (measured
  // before the process starts: it may log before farmctl reads).
  const fs::path coordinator_log = dir / "logs" / "coordinator.log";
  const size_t log_start = fs::exists(coordinator_log) ? fs::file_size(coordinator_log) : 0;
  FarmProcess coordinator(coordinator_bin,
                          {"--store", (dir / "store").string(), "--endpoint", "tcp://127.0.0.1:*"},
                          coordinator_log.string());
  std::string endpoint;
  const auto deadline = std::chrono::steady_clock::now() + kStartTimeout;
  while (endpoint.empty() && std::chrono::steady_clock::now() < deadline) {
    const std::string log = coordinator.Log();
    const size_t started = log.find("event=coordinator_started", log_start);
    if (started != std::string::npos) {
      const size_t at = log.find("endpoint=", started) + 9;
      endpoint = log.substr(at, log.find_first_of(" \n", at) - at);
      break;
    }
    if (!coordinator.running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (endpoint.empty()) {
    return fail(kExitFailed, "farm-coordinator did not start; the end of " +
                                 coordinator.log_path() + ":\n" + Tail(coordinator.Log()));
  }

  std::vector<std::unique_ptr<FarmProcess>> workers;
  for (int k = 0; measures && k < options.workers; ++k) {
    const std::string id = "local-" + std::to_string(k + 1);
    workers.push_back(std::make_unique<FarmProcess>(
        worker_bin,
        std::vector<std::string>{"--coordinator", endpoint, "--id", id, "--cache-dir",
                                 (dir / "cache").string(), "--drain-timeout-s", "20"},
        (dir / "logs" / (id + ".log")).string()));
  }
  for (const std::string& dataset : replay_datasets) {
    const std::string id = "replay-" + std::to_string(workers.size() + 1);
    workers.push_back(std::make_unique<FarmProcess>(
        worker_bin,
        std::vector<std::string>{"--coordinator", endpoint, "--id", id, "--replay", dataset,
                                 "--drain-timeout-s", "20"},
        (dir / "logs" / (id + ".log")).string()));
  }

  // The learner trains on one thread at low priority, off the worker's benchmark core.
  // Replay campaigns wait for nothing but the learner: with no benchmark core to keep
  // free, it trains on every core and asks for news more often.
  std::vector<std::string> learner_args = {"--coordinator", endpoint, "--nice", "10"};
  if (measures) {
    learner_args.insert(learner_args.end(), {"--threads", "1"});
  } else {
    learner_args.insert(learner_args.end(), {"--poll-ms", "100"});
  }
  FarmProcess learner(learner_bin, learner_args, (dir / "logs" / "learner.log").string(),
                      /*avoid_last_cpu=*/measures);

  FarmClientOptions client_options;
  client_options.endpoint = endpoint;
  StatusOr<std::unique_ptr<FarmClient>> client = FarmClient::Create(client_options);
  if (!client.ok()) return fail(kExitFailed, client.status().message());
  const size_t n = submissions.size();
  streams.out << n << " campaign" << (n == 1 ? "" : "s") << " on a local farm: coordinator "
              << endpoint << ", " << workers.size() << " worker" << (workers.size() == 1 ? "" : "s")
              << (replay_datasets.empty()
                      ? ""
                      : " (" + std::to_string(replay_datasets.size()) + " replaying a dataset)")
              << ", a learner, logs in " << (dir / "logs").string() << "\n";
  std::vector<std::string> ids;
  std::set<std::string> value_iteration;
  for (SubmitCampaign& submission : submissions) {
    const std::string file = submission.file_name();
    ClientRequest request;
    *request.mutable_submit() = std::move(submission);
    StatusOr<ClientReply> reply = (*client)->Call(request);
    if (!reply.ok()) return fail(kExitUnreachable, reply.status().message());
    if (reply->code() != CLIENT_OK) {
      return fail(kExitFailed, "submit " + file + ": " + reply->error());
    }
    ids.push_back(reply->submitted().id());
    if (value_iteration_files[ids.size() - 1]) value_iteration.insert(ids.back());
    streams.out << "submitted " << RenderCampaignLine(reply->submitted());
  }
  streams.out.flush();

  const int code = WatchAndReport(endpoint, ids, value_iteration,
                                  (dir / "logs" / "learner.log").string(), streams);
  learner.Stop(kWorkerStopTimeout);
  for (auto& worker : workers) worker->Stop(kWorkerStopTimeout);
  coordinator.Stop(kCoordinatorStopTimeout);
  return code;
}

}  // namespace schedfarm
