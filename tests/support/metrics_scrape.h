// The coordinator's Prometheus metrics (coordinator/metrics.h) as the tests and
// benchmarks read them: the port from farm-coordinator's log, a scrape over plain
// HTTP, a sample's value, and a histogram's buckets with their quantiles.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace schedfarm {
namespace testing_support {

// GET http://127.0.0.1:port/path with HTTP/1.0: the body, or nullopt.
inline std::optional<std::string> HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return std::nullopt;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) {
    const std::string request = "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buffer[4096];
      for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, n);
    }
  }
  close(fd);
  const size_t body = response.find("\r\n\r\n");
  if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") == std::string::npos ||
      body == std::string::npos) {
    return std::nullopt;
  }
  return response.substr(body + 4);
}

// The value of the sample `name` (with its labels, as exposed) in a scrape, or -1.
inline double Sample(const std::string& scrape, const std::string& name) {
  std::istringstream lines(scrape);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::stod(line.substr(name.size() + 1));
  }
  return -1;
}

// The metrics port farm-coordinator logged at start (--metrics-endpoint HOST:0), or 0.
inline int MetricsPort(const std::string& coordinator_log) {
  const size_t at = coordinator_log.find("metrics_port=");
  return at == std::string::npos ? 0 : std::stoi(coordinator_log.substr(at + 13));
}

// The buckets of the unlabelled histogram `name` in a scrape: upper bound (+Inf as
// infinity) and cumulative count, in order; empty when it is absent.
using HistogramBuckets = std::vector<std::pair<double, double>>;
inline HistogramBuckets ScrapeHistogram(const std::string& scrape, const std::string& name) {
  HistogramBuckets buckets;
  const std::string prefix = name + "_bucket{le=\"";
  std::istringstream lines(scrape);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(prefix, 0) != 0) continue;
    const std::string bound =
        line.substr(prefix.size(), line.find('"', prefix.size()) - prefix.size());
    const double le = bound == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(bound);
    buckets.emplace_back(le, std::stod(line.substr(line.find("} ") + 2)));
  }
  return buckets;
}

// The observations between two scrapes of a histogram: `after` less `before`.
inline HistogramBuckets Subtract(HistogramBuckets after, const HistogramBuckets& before) {
  for (size_t i = 0; i < after.size() && i < before.size(); ++i)
    after[i].second -= before[i].second;
  return after;
}

// The q-quantile of `buckets` as Prometheus's histogram_quantile estimates it: linear
// within the bucket that holds it (from 0 in the first). -1 when there is no
// observation; the last finite bound when the quantile is past it.
inline double Quantile(const HistogramBuckets& buckets, double q) {
  if (buckets.empty() || buckets.back().second <= 0) return -1;
  const double rank = q * buckets.back().second;
  double lower = 0, below = 0;
  for (const auto& [le, count] : buckets) {
    if (count >= rank) {
      if (std::isinf(le)) return lower;
      return count == below ? le : lower + (le - lower) * (rank - below) / (count - below);
    }
    lower = le;
    below = count;
  }
  return lower;
}

// The upper bound of the highest bucket with an observation: the longest one is at
// most this. 0 when there is none.
inline double LongestBound(const HistogramBuckets& buckets) {
  double below = 0, lower = 0;
  for (const auto& [le, count] : buckets) {
    if (count > below) lower = le;
    below = count;
  }
  return lower;
}

}  // namespace testing_support
}  // namespace schedfarm
