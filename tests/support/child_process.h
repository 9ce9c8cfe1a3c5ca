// A child process of the tests and benchmarks (a farm-worker, a farm-coordinator...)
// whose stderr (the structured log) and stdout are kept in a file; and whether a pid
// is alive.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace schedfarm {
namespace testing_support {

// A process started with `args`; its stderr (the structured log) and stdout go to one
// file. The destructor kills it if it still runs.
class ChildProcess {
 public:
  ChildProcess(const std::string& binary, const std::vector<std::string>& args) {
    std::string log_template =
        (std::filesystem::temp_directory_path() / "farm-process-log-XXXXXX").string();
    const int log_fd = mkstemp(log_template.data());
    log_path_ = log_template;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(log_fd, STDERR_FILENO);
      dup2(log_fd, STDOUT_FILENO);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(binary.c_str()));
      for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
      argv.push_back(nullptr);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(log_fd);
  }
  ~ChildProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    std::remove(log_path_.c_str());
  }

  pid_t pid() const { return pid_; }
  void Signal(int signal) { kill(pid_, signal); }

  // The exit status (as waitpid reports it) once the process ended within `timeout_ms`.
  std::optional<int> Wait(int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return std::nullopt;
  }

  std::string Log() const {
    std::ifstream in(log_path_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The pids of the sandbox children, from the log's sandbox_started event.
  std::vector<pid_t> SandboxPids() const {
    std::vector<pid_t> pids;
    const std::string log = Log();
    const size_t event = log.find("event=sandbox_started");
    if (event == std::string::npos) return pids;
    const size_t at = log.find("pids=", event);
    if (at == std::string::npos) return pids;
    std::stringstream list(log.substr(at + 5, log.find('\n', at) - at - 5));
    for (std::string pid; std::getline(list, pid, ',');) pids.push_back(std::stoi(pid));
    return pids;
  }

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
  std::string log_path_;
};

// Whether process `pid` exists (and is not a zombie).
inline bool ProcessAlive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string line;
  std::getline(stat, line);
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

}  // namespace testing_support
}  // namespace schedfarm
