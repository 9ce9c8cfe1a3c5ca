// What a sandbox child may do (worker/sandbox.h). Confine() is called once by each
// child, after Halide's JIT runtime is warm and before its first job, and cannot be
// undone:
// - resource limits: open files (RLIMIT_NOFILE), processes of its user (RLIMIT_NPROC;
//   the kernel does not apply it to root, whom the filter below still holds), the
//   size of any file it writes (RLIMIT_FSIZE: past it, SIGXFSZ), no core files;
// - a seccomp filter (libseccomp): creating a process (any clone but a thread's),
//   running a program (execve, execveat), opening a network socket and ptrace kill
//   the child with SIGSYS, which the pool reports as a crash naming the cause;
// - Landlock: files may be written, created or removed only beneath the child's
//   scratch directory and the reference cache directory; reading is not restricted.
//   A kernel without Landlock (before 5.13, or with it disabled) keeps the other two,
//   and the report says so.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace schedfarm {

struct ConfinementOptions {
  std::vector<std::string> writable_dirs;  // the scratch and cache directories
  int64_t file_size_limit_bytes = 0;       // 0: none
  int open_files = 256;
  int processes = 4096;  // of the child's user, threads included
};

struct ConfinementReport {
  int landlock_abi = 0;  // 0: the kernel has no Landlock, writes are not confined
  std::string text;      // one line for the child's log
};

// Errors: a limit or the filter that could not be applied (the child must not run
// jobs then).
StatusOr<ConfinementReport> Confine(const ConfinementOptions& options);

}  // namespace schedfarm
