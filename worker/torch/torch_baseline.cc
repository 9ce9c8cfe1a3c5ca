#include "worker/torch/torch_baseline.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>

#include "pipeline/graph.h"
#include "pipeline/torch/torch_eval.h"
#include "timing/run_phase.h"

namespace schedfarm {

Measurement MeasureWithTorch(const SandboxJob& job, const std::string& reference_bytes) {
  const MeasurementSettings& settings = job.settings();
  const std::string where = "libtorch run of pipeline '" + job.pipeline().name() + "'";
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(job.pipeline());
  if (!graph.ok()) return FailedMeasurement(RUNTIME_ERROR, where + ": " + graph.status().message(), settings);
  StatusOr<std::vector<HostTensor>> reference = DecodeReference(reference_bytes, *graph);
  if (!reference.ok()) {
    return FailedMeasurement(RUNTIME_ERROR, where + ": reference file: " + reference.status().message(),
                             settings);
  }
  at::set_num_threads(std::max(1, settings.threads()));
  StatusOr<TorchProgram> program =
      TorchProgram::Prepare(*graph, DeterministicInputs(graph->spec()));
  if (!program.ok()) return FailedMeasurement(RUNTIME_ERROR, program.status().message(), settings);

  using Clock = std::chrono::steady_clock;
  RunTarget target;
  target.time_runs = [&](int repeats) -> StatusOr<double> {
    const auto start = Clock::now();
    for (int i = 0; i < repeats; ++i) SCHEDFARM_RETURN_IF_ERROR(program->Run());
    return std::chrono::duration<double>(Clock::now() - start).count();
  };
  target.run_once = [&] { return target.time_runs(1); };
  target.outputs = [&] { return program->Outputs(); };
  target.failure = [] { return RUNTIME_ERROR; };
  std::vector<std::string> names(graph->spec().outputs().begin(), graph->spec().outputs().end());
  return RunPhase(target, *reference, names, settings, where);
}

}  // namespace schedfarm
