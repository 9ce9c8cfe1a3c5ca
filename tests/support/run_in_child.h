// Runs one case of a large checker in a forked child with a wall-clock limit, so that a
// crash or a hang is that case's failure and the checker carries on. The case's result
// travels back through a pipe, so it must be trivially copyable (fixed-size fields).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <type_traits>

namespace schedfarm {
namespace testing_support {

// Runs `body` in a child process killed after `timeout_seconds`. Returns true with the
// child's result in `*result`, or false with why there is none in `*failure` ("timed out
// after 120 s", "crashed: Segmentation fault", a pipe or fork error...).
template <typename Result, typename Body>
bool RunInChild(int timeout_seconds, Body body, Result* result, std::string* failure) {
  static_assert(std::is_trivially_copyable<Result>::value, "Result crosses a pipe");
  int fds[2];
  if (pipe(fds) != 0) {
    *failure = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    *failure = std::string("fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    alarm(static_cast<unsigned>(timeout_seconds));
    const Result child_result = body();
    const ssize_t written = write(fds[1], &child_result, sizeof(child_result));
    _exit(written == static_cast<ssize_t>(sizeof(child_result)) ? 0 : 1);
  }
  close(fds[1]);
  size_t got = 0;
  while (got < sizeof(Result)) {
    const ssize_t n = read(fds[0], reinterpret_cast<char*>(result) + got, sizeof(Result) - got);
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (got == sizeof(Result)) return true;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
    *failure = "timed out after " + std::to_string(timeout_seconds) + " s";
  } else if (WIFSIGNALED(status)) {
    *failure = std::string("crashed: ") + strsignal(WTERMSIG(status));
  } else {
    *failure =
        "child exited with status " + std::to_string(WEXITSTATUS(status)) + " without a result";
  }
  return false;
}

}  // namespace testing_support
}  // namespace schedfarm
