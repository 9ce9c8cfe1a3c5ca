#include "common/log.h"

#include <unistd.h>

#include <chrono>

namespace schedfarm {
namespace {

bool NeedsQuotes(const std::string& value) {
  if (value.empty()) return true;
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || c == '\n' || c == '\t') return true;
  }
  return false;
}

std::string Quote(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string FormatLogFields(const LogFields& fields) {
  std::string line;
  for (const auto& [key, value] : fields) {
    line += ' ';
    line += key;
    line += '=';
    line += NeedsQuotes(value) ? Quote(value) : value;
  }
  return line;
}

int64_t UnixMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void LogEvent(const char* level, const std::string& event, const LogFields& fields) {
  const std::string line = "ts=" + std::to_string(UnixMillis()) + " level=" + level +
                           " event=" + event + FormatLogFields(fields) + "\n";
  // One write per line keeps lines whole when threads or processes share stderr.
  const ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
}

}  // namespace schedfarm
