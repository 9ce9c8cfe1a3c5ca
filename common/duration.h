// Durations as campaign files and command-line flags write them: a number, then ms, s,
// m or h (or nothing: seconds), "90s", "7.5m", "500ms".
#pragma once

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "common/text.h"

namespace schedfarm {

// `text` in seconds; nothing when it is not a duration (a negative number is one:
// callers say whether they take it).
inline std::optional<double> DurationSeconds(const std::string& text) {
  static const std::pair<const char*, double> kUnits[] = {
      {"ms", 0.001}, {"s", 1}, {"m", 60}, {"h", 3600}};
  std::string number = text;
  double scale = 1;
  for (const auto& [unit, seconds] : kUnits) {
    const size_t n = std::char_traits<char>::length(unit);
    if (text.size() > n && EndsWith(text, unit) &&
        std::isdigit(static_cast<unsigned char>(text[text.size() - n - 1]))) {
      number = text.substr(0, text.size() - n);
      scale = seconds;
      break;
    }
  }
  if (number.empty() || std::isspace(static_cast<unsigned char>(number[0]))) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(number.c_str(), &end);
  if (*end != '\0' || !std::isfinite(value)) return std::nullopt;
  return value * scale;
}

}  // namespace schedfarm
