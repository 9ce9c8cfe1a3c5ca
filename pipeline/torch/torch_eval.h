// Evaluates a pipeline with libtorch (ATen) operators, one stage at a time: the
// independent oracle the Halide lowering is checked against, and later the
// libtorch baseline. Torch-free header.
#pragma once

#include <memory>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

// A pipeline prepared for libtorch: its inputs and parameters converted to ATen tensors
// once, then evaluated as often as needed, stage by stage, as EvaluateWithTorch does
// (the libtorch baseline times Run). The graph must outlive it.
class TorchProgram {
 public:
  // Converts `inputs` (spec order) and the parameters; errors name the tensor.
  static StatusOr<TorchProgram> Prepare(const PipelineGraph& graph,
                                        const std::vector<HostTensor>& inputs);
  // Evaluates every stage on ATen's thread pool; errors name the stage.
  Status Run();
  // The outputs of the last Run (spec.outputs order).
  std::vector<HostTensor> Outputs() const;

  TorchProgram(TorchProgram&&) noexcept;
  TorchProgram& operator=(TorchProgram&&) noexcept;
  ~TorchProgram();

 private:
  struct Impl;
  explicit TorchProgram(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Outputs of `graph` (spec.outputs order) for `inputs` (spec order). Transcendental
// functions are computed exactly whatever the stage's math mode.
StatusOr<std::vector<HostTensor>> EvaluateWithTorch(const PipelineGraph& graph,
                                                    const std::vector<HostTensor>& inputs);

}  // namespace schedfarm
