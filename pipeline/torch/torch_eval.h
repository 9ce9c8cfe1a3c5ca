// Evaluates a pipeline with libtorch's native (ATen) operators, one call or a few per
// stage (native_calls.h) under inference mode: the independent oracle the Halide
// lowering is checked against, and the libtorch baseline's eager run, in the imported
// layout or with 4-D tensors channels-last. Torch-free header.
#pragma once

#include <memory>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

// The memory layout a TorchProgram keeps its tensors in. Either way the tensors have
// the pipeline's logical shapes (N, C, H, W for a 2-D convolution) and its outputs are
// read back in that logical order; only the strides differ.
enum class TorchLayout {
  kAsImported,    // every tensor contiguous in its logical order (NCHW)
  kChannelsLast,  // every 4-D tensor at::MemoryFormat::ChannelsLast (NHWC in memory)
};

// "nchw" or "channels_last": the layout's name in Measurement.torch_layout.
const char* TorchLayoutName(TorchLayout layout);

// Whether channels-last changes anything for `graph`: some input, parameter or stage
// result is 4-D.
bool HasFourDimTensors(const PipelineGraph& graph);

// What layout the stages of a TorchProgram's last Run produced.
struct TorchLayoutCensus {
  int four_d_stages = 0;  // stages whose result is 4-D
  // Of those, the results the operator itself returned contiguous in channels-last
  // order and not in NCHW order (before the program's conversion to its layout).
  int channels_last_stages = 0;
  int channels_last_outputs = 0;  // outputs kept channels-last for Outputs() to read
};

// A pipeline prepared for libtorch: its inputs and parameters converted to ATen tensors
// once, then evaluated as often as needed, stage by stage, as EvaluateWithTorch does
// (the libtorch baseline times Run). The graph must outlive it.
class TorchProgram {
 public:
  // Converts `inputs` (spec order) and the parameters to `layout`; errors name the
  // tensor.
  static StatusOr<TorchProgram> Prepare(const PipelineGraph& graph,
                                        const std::vector<HostTensor>& inputs,
                                        TorchLayout layout = TorchLayout::kAsImported);
  // Evaluates every stage on ATen's thread pool under inference mode, each result
  // converted to the program's layout when the operator returned another, and dropped
  // after its last reader; errors name the stage.
  Status Run();
  // The outputs of the last Run (spec.outputs order), in their logical order.
  std::vector<HostTensor> Outputs() const;
  // The layouts the stages of the last Run produced.
  TorchLayoutCensus Census() const;

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
