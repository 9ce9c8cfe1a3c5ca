// The libtorch baseline's frozen run: the pipeline as a TorchScript module
// (torch_script.h) compiled, put in eval mode, frozen (torch::jit::freeze: attributes
// become constants, batch norms and constant scales and shifts fold into convolutions)
// and optimized for inference (torch::jit::optimize_for_inference: MKL-DNN convolutions
// with prepacked weights, in-place activations) where that keeps its outputs, then run
// under inference mode on the inputs as given, as a deployed TorchScript model runs.
// Torch-free header.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

class FrozenTorchProgram {
 public:
  // The run's name in Measurement.torch_layout and TorchLayoutRun.layout, also when it
  // could not be prepared; Name() says whether the optimized module runs.
  static constexpr char kName[] = "frozen";

  // Generates, compiles, freezes and optimizes the module of `graph` and converts
  // `inputs` (spec order); runs the frozen module once and the optimized one twice (the
  // JIT's profiling runs), and keeps the optimized one if its outputs match the frozen
  // one's within the dtype's tolerance, else the frozen one (run twice more): all before
  // any timed run. Errors name the pipeline and the step: the generator's name the
  // stage and its op. The graph must outlive the program.
  static StatusOr<FrozenTorchProgram> Prepare(const PipelineGraph& graph,
                                              const std::vector<HostTensor>& inputs);
  // Runs the optimized forward once on ATen's thread pool; errors name the pipeline.
  Status Run();
  // The outputs of the last Run (spec.outputs order), in their logical order.
  std::vector<HostTensor> Outputs() const;
  // kName when the optimized module runs, "frozen_unoptimized" when the frozen one does.
  const char* Name() const;
  // The forward's graph that Run runs, as torch::jit prints it.
  std::string Graph() const;

  FrozenTorchProgram(FrozenTorchProgram&&) noexcept;
  FrozenTorchProgram& operator=(FrozenTorchProgram&&) noexcept;
  ~FrozenTorchProgram();

 private:
  struct Impl;
  explicit FrozenTorchProgram(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace schedfarm
