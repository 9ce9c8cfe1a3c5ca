// Confine() in forked processes, one act each: threads still start and the scratch
// folder is writable; a new process, another program, a network socket end the process
// with SIGSYS; a file past the size limit with SIGXFSZ; a file outside the writable
// folders is refused (EACCES) where the kernel has Landlock, which the report says.
#include "worker/confinement.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <string>
#include <thread>

#include "tests/support/scratch_dir.h"

namespace schedfarm {
namespace {

constexpr int kConfineFailed = 90;

// Runs `act` in a forked, confined process; its wait status. `act` returns the exit
// code.
int RunConfined(const ScratchDir& dir, const std::function<int()>& act,
                std::string* report = nullptr) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(pipe_fds[0]);
    ConfinementOptions options;
    options.writable_dirs = {dir.path()};
    options.file_size_limit_bytes = 1 << 20;
    StatusOr<ConfinementReport> confined = Confine(options);
    const std::string text = confined.ok() ? std::to_string(confined->landlock_abi) + " " + confined->text
                                           : "error " + confined.status().message();
    if (write(pipe_fds[1], text.data(), text.size()) < 0) _exit(kConfineFailed);
    close(pipe_fds[1]);
    _exit(confined.ok() ? act() : kConfineFailed);
  }
  close(pipe_fds[1]);
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0;) text.append(buffer, n);
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (report != nullptr) *report = text;
  return status;
}

bool KilledBy(int status, int signal) { return WIFSIGNALED(status) && WTERMSIG(status) == signal; }

TEST(Confinement, ThreadsAndTheScratchFolderStillWork) {
  ScratchDir dir;
  std::string report;
  const int status = RunConfined(
      dir,
      [&] {
        int value = 0;
        std::thread([&] { value = 7; }).join();
        const int fd = open((dir.path() + "/inside").c_str(), O_WRONLY | O_CREAT, 0600);
        if (fd < 0 || write(fd, "ok", 2) != 2) return 2;
        close(fd);
        return value == 7 ? 0 : 1;
      },
      &report);
  ASSERT_TRUE(WIFEXITED(status)) << report;
  EXPECT_EQ(WEXITSTATUS(status), 0) << report;
  EXPECT_NE(report.find("seccomp"), std::string::npos) << report;
}

TEST(Confinement, ProcessesProgramsAndSocketsEndTheProcess) {
  ScratchDir dir;
  EXPECT_TRUE(KilledBy(RunConfined(dir, [] { return fork() < 0 ? 3 : 0; }), SIGSYS));
  EXPECT_TRUE(KilledBy(RunConfined(dir,
                                   [] {
                                     execl("/bin/true", "true", static_cast<char*>(nullptr));
                                     return 3;
                                   }),
                       SIGSYS));
  EXPECT_TRUE(KilledBy(RunConfined(dir, [] { return socket(AF_INET, SOCK_STREAM, 0) < 0 ? 3 : 0; }),
                       SIGSYS));
}

TEST(Confinement, AFilePastTheSizeLimitEndsTheProcess) {
  ScratchDir dir;
  const int status = RunConfined(dir, [&] {
    const int fd = open((dir.path() + "/big").c_str(), O_WRONLY | O_CREAT, 0600);
    const std::string chunk(64 << 10, 'x');
    for (int i = 0; i < 64; ++i) {
      if (write(fd, chunk.data(), chunk.size()) < 0) return 3;
    }
    return 0;
  });
  EXPECT_TRUE(KilledBy(status, SIGXFSZ)) << status;
}

TEST(Confinement, WritesOutsideTheWritableFoldersAreRefused) {
  ScratchDir dir, outside;
  std::string report;
  const int status = RunConfined(
      dir,
      [&] {
        const int fd = open((outside.path() + "/escaped").c_str(), O_WRONLY | O_CREAT, 0600);
        if (fd >= 0) return 1;
        return errno == EACCES ? 0 : 2;
      },
      &report);
  ASSERT_TRUE(WIFEXITED(status)) << report;
  if (report.rfind("0 ", 0) == 0) {
    GTEST_SKIP() << "this kernel has no Landlock: writes are not confined (" << report << ")";
  }
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a file outside the scratch folder was created: " << report;
}

}  // namespace
}  // namespace schedfarm
