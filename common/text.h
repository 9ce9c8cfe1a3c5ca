// Small string helpers every layer uses: joining, suffixes, lower and upper case.
#pragma once

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

namespace schedfarm {

// The items written one after another with `separator` between them (operator<<).
template <typename T>
std::string Join(const std::vector<T>& items, const std::string& separator) {
  std::ostringstream out;
  for (size_t i = 0; i < items.size(); ++i) out << (i == 0 ? "" : separator) << items[i];
  return out.str();
}

inline bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ASCII lower case.
inline std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// ASCII upper case.
inline std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return s;
}

}  // namespace schedfarm
