// Command-line flags of the farm's binaries: `--name VALUE` or `--name=VALUE`, only
// the names a binary knows, other arguments kept in order, and integer values checked
// against a range, with errors that name the flag.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace schedfarm {

struct Flags {
  std::map<std::string, std::string> values;  // flags without a value map to ""
  std::vector<std::string> positional;        // arguments that are not flags
  std::string error;                          // the first error, empty when none

  bool has(const std::string& name) const { return values.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
};

// `known` maps each flag name (with its dashes) to whether it takes a value. Arguments
// from argv[first] on are read; without allow_positional, a non-flag is an error.
Flags ParseFlags(int argc, char** argv, const std::map<std::string, bool>& known, int first = 1,
                 bool allow_positional = false);

// The integer value of flag `name` in [min, max], `fallback` when absent. False with
// *error set when the value is not an integer in range.
bool IntFlag(const Flags& flags, const std::string& name, long long min, long long max,
             long long fallback, long long* out, std::string* error);

// The items of a list flag's value, split at `sep` ("a,b" -> {"a", "b"}; empty items
// kept).
std::vector<std::string> SplitFlagList(const std::string& value, char sep = ',');

}  // namespace schedfarm
