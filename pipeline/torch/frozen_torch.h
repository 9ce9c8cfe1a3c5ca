// The libtorch baseline's frozen run: the pipeline as a TorchScript module
// (torch_script.h) compiled, put in eval mode, frozen (torch::jit::freeze: attributes
// become constants, batch norms and constant scales and shifts fold into convolutions)
// and optimized for inference (torch::jit::optimize_for_inference: MKL-DNN convolutions
// with prepacked weights, in-place activations), then run under inference mode on the
// inputs as given, as a deployed TorchScript model runs. Torch-free header.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

// "frozen": the run's name in Measurement.torch_layout and TorchLayoutRun.layout.
extern const char kFrozenTorchName[];

class FrozenTorchProgram {
 public:
  // Generates, compiles, freezes and optimizes the module of `graph` and converts
  // `inputs` (spec order), then runs it twice (the JIT's profiling runs), all before
  // any timed run. Errors name the pipeline and the step: the generator's name the
  // stage and its op. The graph must outlive the program.
  static StatusOr<FrozenTorchProgram> Prepare(const PipelineGraph& graph,
                                              const std::vector<HostTensor>& inputs);
  // Runs the optimized forward once on ATen's thread pool; errors name the pipeline.
  Status Run();
  // The outputs of the last Run (spec.outputs order), in their logical order.
  std::vector<HostTensor> Outputs() const;
  // The optimized forward's graph, as torch::jit prints it.
  std::string OptimizedGraph() const;

  FrozenTorchProgram(FrozenTorchProgram&&) noexcept;
  FrozenTorchProgram& operator=(FrozenTorchProgram&&) noexcept;
  ~FrozenTorchProgram();

 private:
  struct Impl;
  explicit FrozenTorchProgram(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedfarm
