// The TorchScript generator: a pipeline as the source of a TorchScript module whose
// forward computes each stage with libtorch's native operators, making the calls the
// eager TorchProgram makes (native_calls.h), and reads the parameters and helper
// tensors as module attributes. The frozen libtorch run (frozen_torch.h) compiles,
// freezes and optimizes it. Torch-free.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {

// A tensor the forward reads as `self.<name>`: a parameter of the graph (by value id)
// viewed with `shape` (its own, or with leading 1s so that a broadcasting operand has
// the rank of its result, the form freezing folds into a convolution), or `values`.
struct ScriptAttribute {
  std::string name;
  int parameter = -1;  // the parameter's value id; -1 for `values`
  Shape shape;
  HostTensor values;
};

struct TorchScriptModule {
  // "def forward(self, x0: Tensor, ...) -> ...:" then one or a few statements per
  // stage, each stage's preceded by a comment naming it; input i is x<i>, the value of
  // id v is v<v>. Returns the outputs in spec.outputs order (a tuple for several).
  std::string source;
  std::vector<ScriptAttribute> attributes;
};

// The module of `graph`. An op or function the generator does not know is an error
// naming the pipeline, the stage and its op.
StatusOr<TorchScriptModule> GenerateTorchScript(const PipelineGraph& graph);

}  // namespace schedfarm
