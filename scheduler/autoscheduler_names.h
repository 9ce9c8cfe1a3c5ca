// The names of Halide's autoschedulers as schedfarm uses them (campaign baselines,
// Candidate.origin). Halide-free, for code that only names them; running them is
// scheduler/autoschedule/autoschedulers.h.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace schedfarm {

// "adams2019", "li2018", "mullapudi2016": Halide 14's Adams2019, Li2018 and
// Mullapudi2016. scheduler/autoschedule/autoschedulers.cc holds their plugins in this
// order.
inline const std::vector<std::string>& AutoschedulerNames() {
  static const std::vector<std::string> kNames = {"adams2019", "li2018", "mullapudi2016"};
  return kNames;
}

// Whether `name` is one of AutoschedulerNames() (a baseline's Candidate.origin).
inline bool IsAutoschedulerName(const std::string& name) {
  const std::vector<std::string>& names = AutoschedulerNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace schedfarm
