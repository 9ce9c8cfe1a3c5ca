#include "pipeline/halide/runner.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "pipeline/halide/lowering.h"

namespace schedfarm {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Halide::Target JitTarget() { return Halide::get_jit_target_from_environment(); }

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

StatusOr<RunResult> Run(const PipelineGraph& graph, LoweredPipeline& lowered,
                        const RunOptions& options, std::vector<HostTensor> inputs) {
  const PipelineSpec& spec = graph.spec();
  if (inputs.empty()) inputs = DeterministicInputs(spec);
  SCHEDFARM_RETURN_IF_ERROR(CheckInputs(spec, inputs));
  if (options.timing_samples < 0 || options.threads < 0 || !(options.min_sample_seconds >= 0)) {
    return Status::Error(
        "run options need timing_samples >= 0, threads >= 0 and "
        "min_sample_seconds >= 0");
  }
  if (lowered.stages.size() != static_cast<size_t>(graph.num_stages()) ||
      lowered.inputs.size() != static_cast<size_t>(spec.inputs_size())) {
    return Status::Error("pipeline '" + spec.name() +
                         "': the lowered pipeline does not match the graph (" +
                         std::to_string(lowered.stages.size()) + " stages, " +
                         std::to_string(lowered.inputs.size()) + " inputs)");
  }

  RunResult result;
  const Halide::Target target = JitTarget();
  const Clock::time_point compile_start = Clock::now();
  lowered.pipeline.compile_jit(target);
  result.compile_seconds = SecondsSince(compile_start);

  for (int i = 0; i < spec.inputs_size(); ++i) lowered.inputs[i].set(ToHalideBuffer(inputs[i]));
  std::vector<Halide::Buffer<>> buffers;
  for (int s : graph.output_stages()) {
    const Value& v = graph.value(graph.stage_value(s));
    buffers.push_back(
        ToHalideBuffer(HostTensor{v.dtype, v.shape, std::vector<double>(NumElements(v.shape))}));
  }
  Halide::Realization realization(buffers);
  SCHEDFARM_RETURN_IF_ERROR(SetHalideThreads(target, options.threads));

  lowered.pipeline.realize(realization, target);  // the warm-up (or only) run
  for (int k = 0; k < options.timing_samples; ++k) {
    int repeats = 0;
    const Clock::time_point start = Clock::now();
    double elapsed = 0;
    do {
      lowered.pipeline.realize(realization, target);
      ++repeats;
      elapsed = SecondsSince(start);
    } while (elapsed < options.min_sample_seconds);
    result.sample_seconds.push_back(elapsed / repeats);
  }
  if (!result.sample_seconds.empty()) {
    std::vector<double> sorted = result.sample_seconds;
    std::sort(sorted.begin(), sorted.end());
    result.min_seconds = sorted.front();
    const size_t n = sorted.size();
    result.median_seconds = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    result.outputs.push_back(FromHalideBuffer(
        buffers[i], graph.value(graph.stage_value(graph.output_stages()[i])).dtype));
  }
  return result;
}

// Runs `body` with Halide's exceptions turned into a Status that names the pipeline.
template <typename Body>
StatusOr<RunResult> Guarded(const PipelineGraph& graph, Body body) {
  const std::string where = "pipeline '" + graph.spec().name() + "'";
  try {
    return body();
  } catch (const Halide::CompileError& e) {
    return Status::Error(where + ": Halide compile error: " + e.what());
  } catch (const Halide::RuntimeError& e) {
    return Status::Error(where + ": Halide runtime error: " + e.what());
  } catch (const Halide::InternalError& e) {
    return Status::Error(where + ": Halide internal error: " + e.what());
  } catch (const Halide::Error& e) {
    return Status::Error(where + ": Halide error: " + e.what());
  } catch (const std::exception& e) {
    return Status::Error(where + ": " + e.what());
  }
}

}  // namespace

StatusOr<RunResult> RunReference(const PipelineGraph& graph, const RunOptions& options,
                                 std::vector<HostTensor> inputs) {
  return Guarded(graph, [&]() -> StatusOr<RunResult> {
    SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
    ApplyReferenceSchedule(graph, lowered);
    return Run(graph, lowered, options, std::move(inputs));
  });
}

StatusOr<RunResult> RunScheduled(const PipelineGraph& graph, LoweredPipeline& lowered,
                                 const RunOptions& options, std::vector<HostTensor> inputs) {
  return Guarded(graph, [&]() -> StatusOr<RunResult> {
    return Run(graph, lowered, options, std::move(inputs));
  });
}

std::string HalideHostTarget() {
  try {
    return JitTarget().without_feature(Halide::Target::JIT).to_string();
  } catch (const Halide::Error& e) {
    return std::string("invalid target: ") + e.what();
  }
}

}  // namespace schedfarm
