// The names of the baselines as schedfarm uses them (campaign baselines,
// Candidate.origin): Halide's autoschedulers, and the runtimes a user would deploy
// instead (libtorch, ONNX Runtime). Halide-free, for code that only names them; running
// the autoschedulers is scheduler/autoschedule/autoschedulers.h, the runtimes worker/torch/
// and worker/onnxruntime/.
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
// The ONNX Runtime baseline: the pipeline written as an ONNX model and run by ONNX
// Runtime's CPU runtime in a process of its own (worker/onnxruntime/), timed alike.
inline constexpr char kOnnxRuntimeBaseline[] = "onnxruntime";

// The runtime contenders: baselines that run the pipeline in another runtime rather
// than schedule it in Halide.
inline const std::vector<std::string>& RuntimeContenderNames() {
  static const std::vector<std::string> kNames = {kLibtorchBaseline, kOnnxRuntimeBaseline};
  return kNames;
}

inline bool IsRuntimeContender(const std::string& name) {
  const std::vector<std::string>& names = RuntimeContenderNames();
  return std::find(names.begin(), names.end(), name) != names.end();
}

// Every baseline a campaign may name: the autoschedulers, then the runtimes.
inline const std::vector<std::string>& BaselineNames() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> names = AutoschedulerNames();
    names.insert(names.end(), RuntimeContenderNames().begin(), RuntimeContenderNames().end());
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
