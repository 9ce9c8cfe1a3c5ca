#include "pipeline/halide/runner.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <numeric>

#include "common/elapsed.h"
#include "common/repeats.h"
#include "pipeline/halide/jit_target.h"
#include "pipeline/halide/lowering.h"

namespace schedfarm {
namespace {

using Clock = std::chrono::steady_clock;

// Sets the JIT runtime's thread pool to `threads` threads (0: Halide's default,
// HL_NUM_THREADS or the number of cores). The pool belongs to the runtime shared by
// every JIT-compiled pipeline of the process, so the setting is process-wide and must
// not change while a pipeline runs. halide_set_num_threads alone cannot shrink a pool
// whose workers exist, so the pool is shut down first; it restarts with the new size
// at the next parallel loop.
Status SetHalideThreads(const Halide::Target& target, int threads) {
  static std::mutex mutex;
  static int current = -1;
  std::lock_guard<std::mutex> lock(mutex);
  if (threads == current) return Status::Ok();
  const std::vector<Halide::Internal::JITModule> runtime =
      Halide::Internal::JITSharedRuntime::get(nullptr, target, /*create=*/true);
  if (runtime.empty()) return Status::Error("no Halide JIT runtime for " + target.to_string());
  const auto& exports = runtime[0].exports();
  const auto shutdown = exports.find("halide_shutdown_thread_pool");
  const auto set = exports.find("halide_set_num_threads");
  if (shutdown == exports.end() || set == exports.end()) {
    return Status::Error("the Halide JIT runtime exports no thread pool control");
  }
  reinterpret_cast<void (*)()>(shutdown->second.address)();
  reinterpret_cast<int (*)(int)>(set->second.address)(threads);
  current = threads;
  return Status::Ok();
}

Status CheckInputs(const PipelineSpec& spec, const std::vector<HostTensor>& inputs) {
  if (static_cast<int>(inputs.size()) != spec.inputs_size()) {
    return Status::Error("pipeline '" + spec.name() + "' has " +
                         std::to_string(spec.inputs_size()) + " inputs, " +
                         std::to_string(inputs.size()) + " given");
  }
  for (int i = 0; i < spec.inputs_size(); ++i) {
    const TensorDecl& decl = spec.inputs(i);
    const Shape shape(decl.shape().begin(), decl.shape().end());
    if (inputs[i].shape != shape || inputs[i].dtype != decl.dtype() ||
        inputs[i].size() != NumElements(shape)) {
      return Status::Error("pipeline '" + spec.name() + "', input '" + decl.name() +
                           "': expected " + DataTypeName(decl.dtype()) + " " +
                           ShapeToString(shape) + ", got " + DataTypeName(inputs[i].dtype) + " " +
                           ShapeToString(inputs[i].shape) + " with " +
                           std::to_string(inputs[i].size()) + " values");
    }
  }
  return Status::Ok();
}

bool SaysOutOfMemory(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower.find("out of memory") != std::string::npos;
}

// Runs `body` with Halide's and the standard library's exceptions turned into a
// Status that says `what` failed, and their class into `*error_kind` (when given).
// `phase_kind` is the class of Halide errors other than out of memory.
template <typename Body>
auto Guarded(const std::string& what, HalideErrorKind phase_kind, HalideErrorKind* error_kind,
             Body body) -> decltype(body()) {
  HalideErrorKind kind = phase_kind;
  std::string message;
  try {
    return body();
  } catch (const Halide::CompileError& e) {
    message = std::string("Halide compile error: ") + e.what();
  } catch (const Halide::RuntimeError& e) {
    message = std::string("Halide runtime error: ") + e.what();
  } catch (const Halide::InternalError& e) {
    message = std::string("Halide internal error: ") + e.what();
  } catch (const Halide::Error& e) {
    message = std::string("Halide error: ") + e.what();
  } catch (const std::bad_alloc& e) {
    kind = HalideErrorKind::kOutOfMemory;
    message = std::string("out of memory (") + e.what() + ")";
  } catch (const std::exception& e) {
    message = e.what();
  }
  if (SaysOutOfMemory(message)) kind = HalideErrorKind::kOutOfMemory;
  if (error_kind != nullptr) *error_kind = kind;
  return Status::Error(what + ": " + message);
}

// Rewrites the reads of parameter buffers, found by name, into reads of a Parameter
// (to query what a schedule reads) or of another Buffer.
class ReplaceParameterReads : public Halide::Internal::IRMutator {
 public:
  std::map<std::string, Halide::Internal::Parameter> to_parameter;
  std::map<std::string, Halide::Buffer<>> to_buffer;

  // Applies the rewrite to every Func of `pipeline`, the wrappers' included.
  void ApplyTo(const Halide::Pipeline& pipeline) {
    std::map<std::string, Halide::Internal::Function> functions;
    for (const Halide::Func& output : pipeline.outputs()) {
      functions.emplace(output.name(), output.function());
      for (const auto& called : Halide::Internal::find_transitive_calls(output.function())) {
        functions.insert(called);
      }
    }
    std::vector<Halide::Internal::Function> wrappers;
    for (auto& [name, function] : functions) {
      for (const auto& [wrapped, wrapper] : function.schedule().wrappers()) {
        wrappers.emplace_back(wrapper);
      }
    }
    for (auto& [name, function] : functions) function.mutate(this);
    for (Halide::Internal::Function& wrapper : wrappers) wrapper.mutate(this);
  }

 protected:
  using Halide::Internal::IRMutator::visit;

  Halide::Expr visit(const Halide::Internal::Call* op) override {
    if (op->call_type != Halide::Internal::Call::Image) return IRMutator::visit(op);
    const auto parameter = to_parameter.find(op->name);
    const auto buffer = to_buffer.find(op->name);
    if (parameter == to_parameter.end() && buffer == to_buffer.end()) {
      return IRMutator::visit(op);
    }
    std::vector<Halide::Expr> args;
    for (const Halide::Expr& arg : op->args) args.push_back(mutate(arg));
    return parameter != to_parameter.end() ? Halide::Internal::Call::make(parameter->second, args)
                                           : Halide::Internal::Call::make(buffer->second, args);
  }
};

// `exact` when `read` (a buffer a bounds query bound) lies inside it, otherwise a
// buffer over both, with `exact`'s values and zeros around them.
Halide::Buffer<> CoverRead(const Halide::Buffer<>& exact, const Halide::Buffer<>& read) {
  std::vector<int> mins, extents;
  bool inside = true;
  for (int d = 0; d < exact.dimensions(); ++d) {
    const int lo = std::min(exact.dim(d).min(), read.dim(d).min());
    const int hi = std::max(exact.dim(d).max(), read.dim(d).max());
    inside = inside && lo == exact.dim(d).min() && hi == exact.dim(d).max();
    mins.push_back(lo);
    extents.push_back(hi - lo + 1);
  }
  if (inside) return exact;
  // In exact's storage order: the pipeline may be compiled for it (BoundaryStorageOrder).
  std::vector<int> order(exact.dimensions());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return exact.dim(a).stride() < exact.dim(b).stride(); });
  Halide::Buffer<> padded(exact.type(), extents, order, exact.name());
  padded.set_min(mins);
  std::memset(padded.data(), 0, padded.size_in_bytes());
  padded.get()->copy_from(*exact.get());
  return padded;
}

// InputBuffers::kCoverScheduleReads for `lowered`, scheduled and not compiled yet:
// compiles it with its parameters read from unbound Parameters and its inputs
// unbound, asks Halide what the schedule reads of each (a bounds query for
// `realization`), then makes the Funcs read parameter buffers that cover it and
// widens `inputs` (spec order) likewise.
void CoverScheduleReads(LoweredPipeline& lowered, const Halide::Target& target,
                        Halide::Realization& realization, std::vector<Halide::Buffer<>>& inputs) {
  ReplaceParameterReads to_query;
  std::vector<Halide::Internal::Parameter> queries;
  for (const Halide::Buffer<>& parameter : lowered.parameters) {
    queries.emplace_back(parameter.type(), /*is_buffer=*/true, parameter.dimensions(),
                         parameter.name());
    to_query.to_parameter.emplace(parameter.name(), queries.back());
  }
  to_query.ApplyTo(lowered.pipeline);
  for (Halide::ImageParam& input : lowered.inputs) input.reset();
  lowered.pipeline.invalidate_cache();
  lowered.pipeline.compile_jit(target);
  lowered.pipeline.infer_input_bounds(realization, target);
  for (size_t i = 0; i < inputs.size(); ++i) {
    inputs[i] = CoverRead(inputs[i], lowered.inputs[i].get());
  }
  ReplaceParameterReads to_padded;
  for (size_t i = 0; i < queries.size(); ++i) {
    const Halide::Buffer<>& exact = lowered.parameters[i];
    to_padded.to_buffer.emplace(exact.name(), CoverRead(exact, queries[i].buffer()));
  }
  to_padded.ApplyTo(lowered.pipeline);
  lowered.pipeline.invalidate_cache();
}

}  // namespace

struct CompiledPipeline::Impl {
  std::string where;  // "pipeline 'name'"
  Halide::Target target;
  LoweredPipeline lowered;
  std::vector<DataType> output_dtypes;
  std::vector<Halide::Buffer<>> outputs;
  std::unique_ptr<Halide::Realization> realization;
  int threads = 0;
  double compile_seconds = 0;
};

CompiledPipeline::CompiledPipeline(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
CompiledPipeline::CompiledPipeline(CompiledPipeline&&) noexcept = default;
CompiledPipeline& CompiledPipeline::operator=(CompiledPipeline&&) noexcept = default;
CompiledPipeline::~CompiledPipeline() = default;

StatusOr<CompiledPipeline> CompiledPipeline::Compile(const PipelineGraph& graph,
                                                     const LoweredPipeline& lowered, int threads,
                                                     std::vector<HostTensor> inputs,
                                                     HalideErrorKind* error_kind,
                                                     InputBuffers input_buffers) {
  const PipelineSpec& spec = graph.spec();
  const std::string where = "pipeline '" + spec.name() + "'";
  auto invalid = [&](const Status& status) {
    if (error_kind != nullptr) *error_kind = HalideErrorKind::kInvalidArgument;
    return status;
  };
  if (threads < 0) return invalid(Status::Error(where + ": threads must be >= 0"));
  if (lowered.stages.size() != static_cast<size_t>(graph.num_stages()) ||
      lowered.inputs.size() != static_cast<size_t>(spec.inputs_size())) {
    return invalid(Status::Error(where + ": the lowered pipeline does not match the graph (" +
                                 std::to_string(lowered.stages.size()) + " stages, " +
                                 std::to_string(lowered.inputs.size()) + " inputs)"));
  }
  if (inputs.empty()) inputs = DeterministicInputs(spec);
  const Status inputs_ok = CheckInputs(spec, inputs);
  if (!inputs_ok.ok()) return invalid(inputs_ok);

  return Guarded(where, HalideErrorKind::kCompile, error_kind, [&]() -> StatusOr<CompiledPipeline> {
    auto impl = std::make_unique<Impl>();
    impl->where = where;
    impl->target = HostJitTarget();
    impl->lowered = lowered;
    impl->threads = threads;
    for (int s : graph.output_stages()) {
      const Value& v = graph.value(graph.stage_value(s));
      impl->output_dtypes.push_back(v.dtype);
      impl->outputs.push_back(
          ToHalideBuffer(HostTensor{v.dtype, v.shape, std::vector<double>(NumElements(v.shape))},
                         BoundaryStorageOrder(spec, static_cast<int>(v.shape.size()))));
    }
    impl->realization = std::make_unique<Halide::Realization>(impl->outputs);
    std::vector<Halide::Buffer<>> input_values;
    for (const HostTensor& input : inputs) {
      input_values.push_back(
          ToHalideBuffer(input, BoundaryStorageOrder(spec, static_cast<int>(input.shape.size()))));
    }
    const Clock::time_point start = Clock::now();
    if (input_buffers == InputBuffers::kCoverScheduleReads) {
      CoverScheduleReads(impl->lowered, impl->target, *impl->realization, input_values);
    }
    impl->lowered.pipeline.compile_jit(impl->target);
    impl->compile_seconds = SecondsSince(start);
    for (int i = 0; i < spec.inputs_size(); ++i) impl->lowered.inputs[i].set(input_values[i]);
    return CompiledPipeline(std::move(impl));
  });
}

double CompiledPipeline::compile_seconds() const { return impl_->compile_seconds; }

StatusOr<double> CompiledPipeline::Realize(HalideErrorKind* error_kind) {
  return TimeRealizations(1, error_kind);
}

StatusOr<double> CompiledPipeline::TimeRealizations(int repeats, HalideErrorKind* error_kind) {
  Impl& impl = *impl_;
  if (repeats < 1) {
    if (error_kind != nullptr) *error_kind = HalideErrorKind::kInvalidArgument;
    return Status::Error(impl.where + ": repeats must be >= 1");
  }
  const Status threads = SetHalideThreads(impl.target, impl.threads);
  if (!threads.ok()) {
    if (error_kind != nullptr) *error_kind = HalideErrorKind::kRuntime;
    return threads.WithContext(impl.where);
  }
  return Guarded(impl.where, HalideErrorKind::kRuntime, error_kind, [&]() -> StatusOr<double> {
    const Clock::time_point start = Clock::now();
    for (int r = 0; r < repeats; ++r) impl.lowered.pipeline.realize(*impl.realization, impl.target);
    return SecondsSince(start);
  });
}

StatusOr<int> CompiledPipeline::CalibrateRepeats(double min_sample_seconds,
                                                 double one_realization_seconds,
                                                 HalideErrorKind* error_kind) {
  return schedfarm::CalibrateRepeats(min_sample_seconds, one_realization_seconds,
                                     [&](int repeats) { return TimeRealizations(repeats, error_kind); });
}

Status CompiledPipeline::ReadInputFrom(int input, const CompiledPipeline& producer, int output) {
  Impl& impl = *impl_;
  if (input < 0 || input >= static_cast<int>(impl.lowered.inputs.size()) || output < 0 ||
      output >= static_cast<int>(producer.impl_->outputs.size())) {
    return Status::Error(impl.where + ": no input " + std::to_string(input) + " or no output " +
                         std::to_string(output) + " of " + producer.impl_->where);
  }
  const Halide::Buffer<>& buffer = producer.impl_->outputs[output];
  const Halide::ImageParam& param = impl.lowered.inputs[input];
  const Halide::Buffer<>& bound = param.get();
  bool same = buffer.type() == bound.type() && buffer.dimensions() == bound.dimensions();
  for (int d = 0; same && d < buffer.dimensions(); ++d) {
    same = buffer.dim(d).min() == bound.dim(d).min() &&
           buffer.dim(d).extent() == bound.dim(d).extent() &&
           buffer.dim(d).stride() == bound.dim(d).stride();
  }
  if (!same) {
    return Status::Error(impl.where + ": input '" + param.name() +
                         "' does not have the shape, type and storage order of output " +
                         std::to_string(output) + " of " + producer.impl_->where);
  }
  impl.lowered.inputs[input].set(buffer);
  return Status::Ok();
}

std::vector<HostTensor> CompiledPipeline::Outputs() const {
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < impl_->outputs.size(); ++i) {
    outputs.push_back(FromHalideBuffer(impl_->outputs[i], impl_->output_dtypes[i]));
  }
  return outputs;
}

namespace {

StatusOr<RunResult> Run(const PipelineGraph& graph, LoweredPipeline& lowered,
                        const RunOptions& options, std::vector<HostTensor> inputs) {
  if (options.timing_samples < 0 || options.threads < 0 || !(options.min_sample_seconds >= 0)) {
    return Status::Error(
        "run options need timing_samples >= 0, threads >= 0 and "
        "min_sample_seconds >= 0");
  }
  SCHEDFARM_ASSIGN_OR_RETURN(
      CompiledPipeline compiled,
      CompiledPipeline::Compile(graph, lowered, options.threads, std::move(inputs), nullptr,
                                options.input_buffers));
  RunResult result;
  result.compile_seconds = compiled.compile_seconds();
  SCHEDFARM_ASSIGN_OR_RETURN(const double warm_up, compiled.Realize());
  if (options.timing_samples > 0) {
    SCHEDFARM_ASSIGN_OR_RETURN(const int repeats,
                               compiled.CalibrateRepeats(options.min_sample_seconds, warm_up));
    for (int k = 0; k < options.timing_samples; ++k) {
      SCHEDFARM_ASSIGN_OR_RETURN(const double seconds, compiled.TimeRealizations(repeats));
      result.sample_seconds.push_back(seconds / repeats);
    }
    std::vector<double> sorted = result.sample_seconds;
    std::sort(sorted.begin(), sorted.end());
    result.min_seconds = sorted.front();
    const size_t n = sorted.size();
    result.median_seconds = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  }
  result.outputs = compiled.Outputs();
  return result;
}

}  // namespace

StatusOr<RunResult> RunReference(const PipelineGraph& graph, const RunOptions& options,
                                 std::vector<HostTensor> inputs) {
  const std::string where = "pipeline '" + graph.spec().name() + "'";
  return Guarded(where, HalideErrorKind::kCompile, nullptr, [&]() -> StatusOr<RunResult> {
    SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
    ApplyReferenceSchedule(graph, lowered);
    return Run(graph, lowered, options, std::move(inputs));
  });
}

StatusOr<RunResult> RunScheduled(const PipelineGraph& graph, LoweredPipeline& lowered,
                                 const RunOptions& options, std::vector<HostTensor> inputs) {
  const std::string where = "pipeline '" + graph.spec().name() + "'";
  return Guarded(where, HalideErrorKind::kRuntime, nullptr, [&]() -> StatusOr<RunResult> {
    return Run(graph, lowered, options, std::move(inputs));
  });
}

std::string HalideHostTarget() {
  try {
    return HostJitTarget().without_feature(Halide::Target::JIT).to_string();
  } catch (const Halide::Error& e) {
    return std::string("invalid target: ") + e.what();
  }
}

}  // namespace schedfarm
