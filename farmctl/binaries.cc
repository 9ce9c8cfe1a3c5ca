#include "farmctl/binaries.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "common/programs.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

bool Executable(const fs::path& path) {
  return !path.empty() && access(path.c_str(), X_OK) == 0 && fs::is_regular_file(path);
}

}  // namespace

std::string FindBinary(const std::string& name, const std::string& build_folder) {
  std::vector<fs::path> candidates;
  if (const char* dir = std::getenv("SCHEDFARM_BIN_DIR"); dir != nullptr && *dir != '\0') {
    candidates.push_back(fs::path(dir) / name);
  }
  if (const std::string folder = ThisProgramFolder(); !folder.empty()) {
    candidates.push_back(fs::path(folder) / name);
    candidates.push_back(fs::path(folder).parent_path() / build_folder / name);
  }
  for (const fs::path& candidate : candidates) {
    if (Executable(candidate)) return candidate.string();
  }
  return OnPath(name);
}

int RunToEnd(const std::string& binary, const std::vector<std::string>& args, std::string* output) {
  output->clear();
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return -1;
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(binary.c_str()));
  for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return -1;
  }
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  char buffer[4096];
  for (ssize_t got; (got = read(pipe_fds[0], buffer, sizeof(buffer))) != 0;) {
    if (got > 0) output->append(buffer, got);
    if (got < 0 && errno != EINTR) break;
  }
  close(pipe_fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

}  // namespace schedfarm
