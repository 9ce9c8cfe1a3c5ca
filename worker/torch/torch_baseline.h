// The libtorch baseline (docs/MEASUREMENT.md): a pipeline run by libtorch's eager
// operators, one ATen call per stage (pipeline/torch/torch_eval.h), timed by the run
// phase of the measurement protocol (timing/run_phase.h) with the campaign's settings:
// ATen's thread pool at settings.threads, the warm-up's outputs checked against the
// reference. It runs in the imported layout (NCHW) and, when the pipeline has 4-D
// tensors, channels-last, and reports the faster. farm-worker links no Torch: its
// sandbox child runs this in the executable farm-torch-baseline, which reads the job
// and the reference from files and writes the measurement to a file.
#pragma once

#include <string>

#include "schedfarm.pb.h"

namespace schedfarm {

// The measurement of `job` (its pipeline and settings, defaults filled in) against the
// reference outputs in `reference_bytes` (timing/run_phase.h's EncodeReference). Each
// layout is prepared (inputs and parameters converted) outside the timed region and
// timed by a run phase of its own with its share of the run timeout; the measurement
// is the faster layout's of those that matched the reference (torch_layout), with
// every layout's run in torch_layouts; when none matched, the imported layout's
// failure. A pipeline or reference that cannot be read is a RUNTIME_ERROR naming it.
Measurement MeasureWithTorch(const SandboxJob& job, const std::string& reference_bytes);

}  // namespace schedfarm
