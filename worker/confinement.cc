#include "worker/confinement.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace schedfarm {
namespace {

Status SetLimit(int resource, const char* name, rlim_t value) {
  const rlimit limit = {value, value};
  if (setrlimit(resource, &limit) != 0) {
    return Status::Error(std::string("cannot set ") + name + " to " + std::to_string(value) + ": " +
                         std::strerror(errno));
  }
  return Status::Ok();
}

// The seccomp filter: everything is allowed but the calls below, which kill the process.
Status LoadSeccompFilter() {
  std::unique_ptr<void, void (*)(scmp_filter_ctx)> filter(seccomp_init(SCMP_ACT_ALLOW),
                                                          seccomp_release);
  if (!filter) return Status::Error("seccomp_init failed");
  int rc = 0;
  for (int call : {SCMP_SYS(fork), SCMP_SYS(vfork), SCMP_SYS(execve), SCMP_SYS(execveat),
                   SCMP_SYS(socket), SCMP_SYS(ptrace), SCMP_SYS(process_vm_writev)}) {
    if (rc == 0) rc = seccomp_rule_add(filter.get(), SCMP_ACT_KILL_PROCESS, call, 0);
  }
  // clone without CLONE_THREAD makes a process; with it, a thread of this one.
  if (rc == 0) {
    rc = seccomp_rule_add(filter.get(), SCMP_ACT_KILL_PROCESS, SCMP_SYS(clone), 1,
                          SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0));
  }
  // clone3 passes its flags in memory, which a filter cannot read: it fails with ENOSYS
  // and the C library falls back to clone for its threads.
  if (rc == 0) rc = seccomp_rule_add(filter.get(), SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
  if (rc == 0) rc = seccomp_load(filter.get());  // sets no_new_privs first
  if (rc != 0) return Status::Error(std::string("seccomp filter: ") + std::strerror(-rc));
  return Status::Ok();
}

// Landlock: writes only beneath `dirs`. Returns the ABI version applied, 0 when the
// kernel has none.
StatusOr<int> RestrictWrites(const std::vector<std::string>& dirs) {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return 0;
  landlock_ruleset_attr ruleset = {};
  ruleset.handled_access_fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                              LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                              LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                              LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                              LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
#ifdef LANDLOCK_ACCESS_FS_REFER
  if (abi >= 2) ruleset.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3) ruleset.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
  const int ruleset_fd =
      static_cast<int>(syscall(SYS_landlock_create_ruleset, &ruleset, sizeof(ruleset), 0));
  if (ruleset_fd < 0) return Status::Error(std::string("landlock ruleset: ") + std::strerror(errno));
  Status status = Status::Ok();
  // /dev/null stays writable: some libraries open it for output they discard.
  std::vector<std::pair<std::string, uint64_t>> rules = {
      {"/dev/null", LANDLOCK_ACCESS_FS_WRITE_FILE}};
  for (const std::string& dir : dirs) rules.push_back({dir, ruleset.handled_access_fs});
  for (const auto& [path, access] : rules) {
    const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      status = Status::Error("landlock: cannot open '" + path + "': " + std::strerror(errno));
      break;
    }
    landlock_path_beneath_attr beneath = {};
    beneath.allowed_access = access;
    beneath.parent_fd = fd;
    const long added = syscall(SYS_landlock_add_rule, ruleset_fd, LANDLOCK_RULE_PATH_BENEATH,
                               &beneath, 0);
    close(fd);
    if (added != 0) {
      status = Status::Error("landlock: cannot allow '" + path + "': " + std::strerror(errno));
      break;
    }
  }
  if (status.ok() && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    status = Status::Error(std::string("no_new_privs: ") + std::strerror(errno));
  }
  if (status.ok() && syscall(SYS_landlock_restrict_self, ruleset_fd, 0) != 0) {
    status = Status::Error(std::string("landlock_restrict_self: ") + std::strerror(errno));
  }
  close(ruleset_fd);
  if (!status.ok()) return status;
  return static_cast<int>(abi);
}

}  // namespace

StatusOr<ConfinementReport> Confine(const ConfinementOptions& options) {
  SCHEDFARM_RETURN_IF_ERROR(SetLimit(RLIMIT_CORE, "RLIMIT_CORE", 0));
  SCHEDFARM_RETURN_IF_ERROR(SetLimit(RLIMIT_NOFILE, "RLIMIT_NOFILE", options.open_files));
  SCHEDFARM_RETURN_IF_ERROR(SetLimit(RLIMIT_NPROC, "RLIMIT_NPROC", options.processes));
  if (options.file_size_limit_bytes > 0) {
    SCHEDFARM_RETURN_IF_ERROR(SetLimit(RLIMIT_FSIZE, "RLIMIT_FSIZE",
                                       static_cast<rlim_t>(options.file_size_limit_bytes)));
  }
  StatusOr<int> landlock = RestrictWrites(options.writable_dirs);
  if (!landlock.ok()) return landlock.status();
  SCHEDFARM_RETURN_IF_ERROR(LoadSeccompFilter());
  ConfinementReport report;
  report.landlock_abi = *landlock;
  report.text = "confined: seccomp (no processes, programs, sockets, ptrace), " +
                std::string(*landlock > 0 ? "landlock ABI " + std::to_string(*landlock) +
                                                " (writes only in the scratch and cache directories)"
                                          : "no landlock in this kernel (writes not confined)") +
                ", open files " + std::to_string(options.open_files) + ", file size " +
                (options.file_size_limit_bytes > 0 ? std::to_string(options.file_size_limit_bytes)
                                                   : std::string("unlimited"));
  return report;
}

}  // namespace schedfarm
