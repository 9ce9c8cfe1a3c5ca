#include "worker/child_end.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>

namespace schedfarm {
namespace {

const char* SignalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (segmentation fault)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGFPE:
      return "SIGFPE (arithmetic exception)";
    case SIGABRT:
      return "SIGABRT (abort)";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGSYS:
      return "SIGSYS (a system call the sandbox forbids: a new process, another program, a "
             "network socket or ptrace)";
    case SIGXFSZ:
      return "SIGXFSZ (a file past the sandbox's file size limit)";
    default:
      return nullptr;
  }
}

}  // namespace

std::string DescribeSignal(int sig) {
  const char* name = SignalName(sig);
  return name != nullptr ? std::string(name) : "signal " + std::to_string(sig);
}

std::string DescribeEnd(int wait_status) {
  if (wait_status == kStatusUnknown) return "ended (its exit status was reaped elsewhere)";
  if (WIFSIGNALED(wait_status)) return "was killed by " + DescribeSignal(WTERMSIG(wait_status));
  return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
}

bool SaysOutOfMemory(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("out of memory") != std::string::npos ||
         lower.find("bad_alloc") != std::string::npos;
}

std::string Printable(const std::string& tail) {
  std::string out;
  for (unsigned char c : tail) {
    if (c == '\n') {
      out += " | ";
    } else {
      out += std::isprint(c) ? static_cast<char>(c) : '?';
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '|')) out.pop_back();
  return out;
}

}  // namespace schedfarm
