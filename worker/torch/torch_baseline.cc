#include "worker/torch/torch_baseline.h"

#include <ATen/Parallel.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "common/blas_threads.h"
#include "common/elapsed.h"
#include "pipeline/graph.h"
#include "pipeline/torch/frozen_torch.h"
#include "pipeline/torch/torch_eval.h"
#include "scheduler/autoscheduler_names.h"
#include "timing/run_phase.h"

namespace schedfarm {
namespace {

// What each way of running records beyond the run phase: how many stages with a 4-D
// result ATen returned channels-last (the frozen module's operators are not the
// stages: nothing).
void RecordCensus(const TorchProgram& program, TorchLayoutRun* run) {
  const TorchLayoutCensus census = program.Census();
  run->set_four_d_stages(census.four_d_stages);
  run->set_channels_last_stages(census.channels_last_stages);
}
void RecordCensus(const FrozenTorchProgram&, TorchLayoutRun*) {}

// The name of a prepared way: an eager layout's as given; the frozen module's its own
// (FrozenTorchProgram::Name: "frozen", or "frozen_unoptimized").
std::string WayName(const TorchProgram&, const std::string& name) { return name; }
std::string WayName(const FrozenTorchProgram& program, const std::string&) {
  return program.Name();
}

// The run phase of the program `prepare` returns (called outside the timed region),
// and that way's run, named `name` (or as the program names itself), as the
// measurement records it.
template <typename Prepare>
Measurement MeasureWay(const std::string& name, const Prepare& prepare, const PipelineGraph& graph,
                       const std::vector<HostTensor>& reference,
                       const MeasurementSettings& settings, const std::string& where,
                       TorchLayoutRun* run) {
  auto program = prepare();
  run->set_layout(program.ok() ? WayName(*program, name) : name);
  const std::string way_where = where + " (" + run->layout() + ")";
  Measurement m;
  if (!program.ok()) {
    m = FailedMeasurement(RUNTIME_ERROR, way_where + ": " + program.status().message(), settings);
  } else {
    using Clock = std::chrono::steady_clock;
    RunTarget target;
    target.time_runs = [&](int repeats) -> StatusOr<double> {
      const auto start = Clock::now();
      for (int i = 0; i < repeats; ++i) SCHEDFARM_RETURN_IF_ERROR(program->Run());
      return SecondsSince(start);
    };
    target.run_once = [&] { return target.time_runs(1); };
    target.outputs = [&] { return program->Outputs(); };
    target.failure = [] { return RUNTIME_ERROR; };
    std::vector<std::string> names(graph.spec().outputs().begin(), graph.spec().outputs().end());
    m = RunPhase(target, reference, names, settings, way_where);
    RecordCensus(*program, run);
  }
  run->set_status(m.status());
  run->set_error(m.error());
  *run->mutable_stats() = m.stats();
  run->set_repeats_per_sample(m.repeats_per_sample());
  run->set_samples(m.samples_seconds_size());
  return m;
}

}  // namespace

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
  SetBlasThreads(std::max(1, settings.threads()));
  const std::vector<HostTensor> inputs = DeterministicInputs(graph->spec());

  std::vector<TorchLayout> layouts = {TorchLayout::kAsImported};
  if (HasFourDimTensors(*graph)) layouts.push_back(TorchLayout::kChannelsLast);
  // The ways (each eager layout, then the frozen module) share the run timeout: each
  // run phase extends its samples within half of its share, as one run phase does
  // within half of the whole.
  std::vector<std::string> names;
  for (TorchLayout layout : layouts) names.push_back(TorchLayoutName(layout));
  names.push_back(FrozenTorchProgram::kName);
  MeasurementSettings share = settings;
  share.set_run_timeout_ms(settings.run_timeout_ms() / static_cast<int64_t>(names.size()));
  std::vector<Measurement> measured;
  std::vector<TorchLayoutRun> runs(names.size());
  for (size_t i = 0; i < layouts.size(); ++i) {
    measured.push_back(MeasureWay(
        names[i], [&] { return TorchProgram::Prepare(*graph, inputs, layouts[i]); }, *graph,
        *reference, share, where, &runs[i]));
  }
  measured.push_back(MeasureWay(
      names.back(), [&] { return FrozenTorchProgram::Prepare(*graph, inputs); }, *graph, *reference,
      share, where, &runs.back()));
  // The fastest way of those that matched the reference; when none did, the imported
  // layout's failure.
  size_t chosen = 0;
  for (size_t i = 1; i < measured.size(); ++i) {
    const bool ok = measured[i].status() == OK;
    if (ok && (measured[chosen].status() != OK ||
               measured[i].stats().median_seconds() < measured[chosen].stats().median_seconds())) {
      chosen = i;
    }
  }
  Measurement result = std::move(measured[chosen]);
  *result.mutable_settings() = settings;
  result.set_torch_layout(runs[chosen].layout());
  result.set_runtime_version(std::string(kLibtorchBaseline) + " " + TORCH_VERSION);
  for (TorchLayoutRun& run : runs) *result.add_torch_layouts() = std::move(run);
  return result;
}

}  // namespace schedfarm
