#include "pipeline/torch/frozen_torch.h"

#include <c10/core/InferenceMode.h>
#include <torch/script.h>

#include <exception>
#include <utility>

#include "pipeline/torch/aten_tensors.h"
#include "pipeline/torch/torch_script.h"

namespace schedfarm {

namespace {

// Whether every output of `got` matches `expected` within the dtype's tolerance.
bool SameOutputs(const std::vector<HostTensor>& got, const std::vector<HostTensor>& expected) {
  if (got.size() != expected.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (!CompareTensors(got[i], expected[i], DefaultTolerance(expected[i].dtype)).match) {
      return false;
    }
  }
  return true;
}

// libtorch's message of an exception, without the C++ backtrace c10 errors carry.
std::string MessageOf(const std::exception& e) {
  const auto* error = dynamic_cast<const c10::Error*>(&e);
  return error ? error->what_without_backtrace() : e.what();
}

}  // namespace

struct FrozenTorchProgram::Impl {
  const PipelineGraph* graph = nullptr;
  std::string where;
  torch::jit::Module module;        // the one Run runs
  bool optimized = false;           // optimize_for_inference kept
  std::vector<c10::IValue> inputs;  // spec order, as given
  std::vector<at::Tensor> outputs;  // of the last run, spec.outputs order
};

FrozenTorchProgram::FrozenTorchProgram(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FrozenTorchProgram::FrozenTorchProgram(FrozenTorchProgram&&) noexcept = default;
FrozenTorchProgram& FrozenTorchProgram::operator=(FrozenTorchProgram&&) noexcept = default;
FrozenTorchProgram::~FrozenTorchProgram() = default;

StatusOr<FrozenTorchProgram> FrozenTorchProgram::Prepare(const PipelineGraph& graph,
                                                         const std::vector<HostTensor>& inputs) {
  SCHEDFARM_ASSIGN_OR_RETURN(TorchScriptModule script, GenerateTorchScript(graph));
  auto impl = std::make_unique<Impl>();
  impl->graph = &graph;
  impl->where = "pipeline '" + graph.spec().name() + "'";
  SCHEDFARM_ASSIGN_OR_RETURN(std::vector<at::Tensor> values,
                             AtenValues(graph, inputs, impl->where));
  impl->inputs.resize(inputs.size());
  for (size_t id = 0; id < values.size(); ++id) {
    const Value& value = graph.value(static_cast<int>(id));
    if (value.kind == Value::Kind::kInput) impl->inputs[value.index] = values[id];
  }
  const char* step = "module";
  torch::jit::Module optimized;
  try {
    torch::jit::Module module("__torch__.schedfarm.Pipeline");
    for (const ScriptAttribute& attribute : script.attributes) {
      module.register_buffer(attribute.name,
                             attribute.parameter >= 0
                                 ? values[attribute.parameter].reshape(attribute.shape)
                                 : ToAten(attribute.values, attribute.values.dtype));
    }
    step = "compile";
    module.define(script.source);
    module.eval();
    step = "freeze";
    impl->module = torch::jit::freeze(module);
    step = "optimize_for_inference";
    // On a frozen copy of its own: the pass rewrites the graph of the module it gets.
    torch::jit::Module copy = torch::jit::freeze(module);
    optimized = torch::jit::optimize_for_inference(copy);
  } catch (const std::exception& e) {
    return Status::Error(impl->where + ": TorchScript " + step + ": " + MessageOf(e));
  }
  // The optimized module must compute what the frozen one does: libtorch 1.13's MKL-DNN
  // clamp (clip, hard sigmoid, hard swish after a convolution whose channels are not a
  // multiple of 16) does not. Where it does not, the frozen module runs as it is.
  FrozenTorchProgram program(std::move(impl));
  Impl& p = *program.impl_;
  // The module that is to run, then its profiling runs.
  auto run = [&](torch::jit::Module module, bool is_optimized) -> Status {
    p.module = std::move(module);
    p.optimized = is_optimized;
    for (int profiling_run = 0; profiling_run < 2; ++profiling_run) {
      SCHEDFARM_RETURN_IF_ERROR(program.Run());
    }
    return Status::Ok();
  };
  SCHEDFARM_RETURN_IF_ERROR(program.Run());
  const std::vector<HostTensor> frozen_outputs = program.Outputs();
  torch::jit::Module frozen = std::move(p.module);
  SCHEDFARM_RETURN_IF_ERROR(run(std::move(optimized), true));
  if (!SameOutputs(program.Outputs(), frozen_outputs)) {
    SCHEDFARM_RETURN_IF_ERROR(run(std::move(frozen), false));
  }
  return program;
}

Status FrozenTorchProgram::Run() {
  c10::InferenceMode inference;
  Impl& p = *impl_;
  try {
    const c10::IValue result = p.module.forward(p.inputs);
    p.outputs.clear();
    if (result.isTuple()) {
      for (const c10::IValue& output : result.toTuple()->elements()) {
        p.outputs.push_back(output.toTensor());
      }
    } else {
      p.outputs.push_back(result.toTensor());
    }
  } catch (const std::exception& e) {
    return Status::Error(p.where + ": frozen TorchScript run: " + MessageOf(e));
  }
  return Status::Ok();
}

std::vector<HostTensor> FrozenTorchProgram::Outputs() const {
  const PipelineGraph& graph = *impl_->graph;
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < impl_->outputs.size(); ++i) {
    outputs.push_back(ToHost(impl_->outputs[i], graph.stage(graph.output_stages()[i]).dtype()));
  }
  return outputs;
}

const char* FrozenTorchProgram::Name() const {
  return impl_->optimized ? kName : "frozen_unoptimized";
}

std::string FrozenTorchProgram::Graph() const {
  return impl_->module.get_method("forward").graph()->toString();
}

}  // namespace schedfarm
