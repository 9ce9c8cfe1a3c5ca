#include "common/flags.h"

#include <cstdlib>
#include <sstream>

namespace schedfarm {

std::string Flags::get(const std::string& name, const std::string& fallback) const {
  const auto it = values.find(name);
  return it == values.end() ? fallback : it->second;
}

Flags ParseFlags(int argc, char** argv, const std::map<std::string, bool>& known, int first,
                 bool allow_positional) {
  Flags flags;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      if (!allow_positional) {
        flags.error = "unexpected argument '" + arg + "'";
        return flags;
      }
      flags.positional.push_back(arg);
      continue;
    }
    std::string value;
    const size_t eq = arg.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    const auto spec = known.find(arg);
    if (spec == known.end()) {
      flags.error = "unknown argument '" + std::string(argv[i]) + "'";
      return flags;
    }
    if (spec->second && !inline_value) {
      if (i + 1 >= argc) {
        flags.error = arg + " needs a value";
        return flags;
      }
      value = argv[++i];
    } else if (!spec->second && inline_value) {
      flags.error = arg + " takes no value";
      return flags;
    }
    flags.values[arg] = value;
  }
  return flags;
}

bool IntFlag(const Flags& flags, const std::string& name, long long min, long long max,
             long long fallback, long long* out, std::string* error) {
  const auto it = flags.values.find(name);
  if (it == flags.values.end()) {
    *out = fallback;
    return true;
  }
  char* end = nullptr;
  const long long value = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0' || value < min || value > max) {
    *error = name + " must be an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
             "], got '" + it->second + "'";
    return false;
  }
  *out = value;
  return true;
}

std::vector<std::string> SplitFlagList(const std::string& value, char sep) {
  std::vector<std::string> items;
  std::stringstream in(value);
  std::string item;
  while (std::getline(in, item, sep)) items.push_back(item);
  return items;
}

}  // namespace schedfarm
