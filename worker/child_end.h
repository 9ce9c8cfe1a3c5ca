// Internal to worker/: how a sandbox child ended, in the words of the failures the
// pool reports (sandbox.h): the signals that end candidates by name, a wait status
// described, whether a child's output says it ran out of memory, and that output as
// one printable line.
#pragma once

#include <string>

namespace schedfarm {

// The wait status of a child reaped by someone else (SIGCHLD ignored by the process).
inline constexpr int kStatusUnknown = -1;

// A signal by name, with what it means in the sandbox when that is known.
std::string DescribeSignal(int sig);

// How a child ended, from its wait status.
std::string DescribeEnd(int wait_status);

// Whether a child's output says it ran out of memory ("out of memory", bad_alloc).
bool SaysOutOfMemory(const std::string& text);

// The tail as one printable line.
std::string Printable(const std::string& tail);

}  // namespace schedfarm
