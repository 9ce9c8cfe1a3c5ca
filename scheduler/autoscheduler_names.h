// The names of the baselines as schedfarm uses them (campaign baselines,
// Candidate.origin): Halide's autoschedulers and libtorch. Halide-free, for code that only names them; running them is
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

// The libtorch baseline: the pipeline run by libtorch's eager operators in a process of
// its own (worker/torch/), timed by the same protocol as the Halide schedules.
inline constexpr char kLibtorchBaseline[] = "libtorch";

// Every baseline a campaign may name: the autoschedulers, then libtorch.
inline const std::vector<std::string>& BaselineNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names = AutoschedulerNames();
    names.push_back(kLibtorchBaseline);
    return names;
  }();
  return kNames;
}

// Whether `name` is one of BaselineNames() (a baseline's Candidate.origin).
inline bool IsBaselineName(const std::string& name) {
  const std::vector<std::string>& names = BaselineNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace schedfarm
