// Structured logs: one line per event on stderr, `ts=<unix ms> level=<l> event=<e>`
// followed by key=value fields (values with spaces or quotes are quoted), so that the
// daemons' logs can be read by people and by grep alike.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace schedfarm {

using LogFields = std::vector<std::pair<std::string, std::string>>;

// Writes one event line to stderr (thread-safe: one write per line).
void LogEvent(const char* level, const std::string& event, const LogFields& fields = {});
// The line LogEvent writes, without the timestamp (for tests).
std::string FormatLogFields(const LogFields& fields);

// Wall-clock milliseconds since the Unix epoch: the stamp of log lines, heartbeats and
// measurements.
int64_t UnixMillis();

}  // namespace schedfarm
