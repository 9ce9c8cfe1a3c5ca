// The ONNX Runtime baseline: the leased pipeline written as an ONNX model
// (pipeline/onnx/onnx_export.h) and run by ONNX Runtime's CPU runtime, as a deployment
// runs it (the npm package onnxruntime-node under node, driven by runner.js), timed by
// the measurement protocol of every contender (timing/run_phase.h): a warm-up run whose
// outputs must match the reference, calibrated repeats, the samples and their median.
// farm-onnxruntime-baseline runs it for the worker's sandbox; node and the package are
// found where ops/setup.sh installs them, and their absence is a failed measurement that
// says what is missing, never a time.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/tensor.h"
#include "schedfarm.pb.h"

namespace schedfarm {

// Where ONNX Runtime is: node, the onnxruntime-node package folder and runner.js.
struct OnnxRuntimeInstall {
  std::string node;     // $SCHEDFARM_NODE, else `node` on PATH
  std::string package;  // $SCHEDFARM_ONNXRUNTIME_NODE, else the set-up script's cache folder
  std::string runner;   // runner.js beside the program that asks
  std::string version;  // the package's version
};

// The install, or an error naming what is missing and how to install it.
StatusOr<OnnxRuntimeInstall> FindOnnxRuntime();

// Measures `job.pipeline` with ONNX Runtime on job.settings().threads() intra-op threads;
// `reference_bytes` holds the reference outputs (EncodeReference), `scratch_dir` a folder
// for the model and input files. Every failure is a failed measurement that says why.
Measurement MeasureWithOnnxRuntime(const SandboxJob& job, const std::string& reference_bytes,
                                   const std::string& scratch_dir);

// Measures the ONNX model in `model_file` as MeasureWithOnnxRuntime measures the one it
// writes: fed `spec`'s deterministic inputs by their names, its outputs taken in the
// model's order as `spec`'s outputs and checked against `reference`. So a network's ONNX
// file as given is timed by the same protocol (bench/onnxruntime_export_bench).
Measurement MeasureOnnxModelFile(const std::string& model_file, const PipelineSpec& spec,
                                 const std::vector<HostTensor>& reference,
                                 const MeasurementSettings& settings,
                                 const std::string& scratch_dir);

}  // namespace schedfarm
