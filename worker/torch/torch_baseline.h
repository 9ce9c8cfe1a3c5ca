// The libtorch baseline (docs/MEASUREMENT.md): a pipeline run by libtorch, timed by the
// run phase of the measurement protocol (timing/run_phase.h) with the campaign's
// settings: ATen's thread pool at settings.threads, the warm-up's outputs checked
// against the reference. Three ways, each a run phase of its own: eager, one native
// ATen call per stage under inference mode (pipeline/torch/torch_eval.h), in the
// imported layout ("nchw") and, when the pipeline has 4-D tensors, "channels_last";
// and "frozen", a TorchScript module of the pipeline frozen and optimized for
// inference (pipeline/torch/frozen_torch.h; "frozen_unoptimized" where the optimization
// changed its outputs). The fastest is reported. farm-worker links
// no Torch: its sandbox child runs this in the executable farm-torch-baseline, which
// reads the job and the reference from files and writes the measurement to a file.
#pragma once

#include <string>

#include "schedfarm.pb.h"

namespace schedfarm {

// The measurement of `job` (its pipeline and settings, defaults filled in) against the
// reference outputs in `reference_bytes` (timing/run_phase.h's EncodeReference). Each
// way is prepared (inputs and parameters converted; the module generated, compiled,
// frozen and optimized) outside the timed region and timed by a run phase of its own
// with its share of the run timeout; the measurement is the fastest way's of those that
// matched the reference (named in torch_layout), with every way's run in torch_layouts;
// when none matched, the imported layout's failure. A way that cannot be prepared (the
// generator's error naming a stage) fails alone. A pipeline or reference that cannot be
// read is a RUNTIME_ERROR naming it.
Measurement MeasureWithTorch(const SandboxJob& job, const std::string& reference_bytes);

}  // namespace schedfarm
