#include "worker/measure.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>

#include "common/elapsed.h"
#include "common/log.h"
#include "pipeline/halide/lowering.h"
#include "pipeline/spec.h"
#include "protocol/measurement_settings.h"
#include "scheduler/autoschedule/import.h"
#include "scheduler/halide/apply.h"

namespace schedfarm {
namespace {

using Clock = std::chrono::steady_clock;

MeasurementStatus StatusOfCompileError(HalideErrorKind kind) {
  return kind == HalideErrorKind::kOutOfMemory ? OUT_OF_MEMORY : COMPILE_ERROR;
}

MeasurementStatus StatusOfRunError(HalideErrorKind kind) {
  return kind == HalideErrorKind::kOutOfMemory ? OUT_OF_MEMORY : RUNTIME_ERROR;
}

// Writes `bytes` to `path` through a temporary file renamed into place.
Status WriteAtomically(const std::string& path, const std::string& bytes) {
  static std::atomic<int> counter{0};
  const std::string tmp =
      path + ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::Error("cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return Status::Error("cannot rename " + tmp + " to " + path + ": " + why);
  }
  return Status::Ok();
}

// The reference outputs of `graph`, as RunReference computes them with
// timing_samples 0, with the class of a failure.
StatusOr<std::vector<HostTensor>> ComputeReference(const PipelineGraph& graph,
                                                   MeasurementStatus* failure) {
  *failure = COMPILE_ERROR;
  SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
  try {
    ApplyReferenceSchedule(graph, lowered);
  } catch (const std::exception& e) {
    return Status::Error("pipeline '" + graph.spec().name() + "': reference schedule: " + e.what());
  }
  HalideErrorKind kind = HalideErrorKind::kCompile;
  StatusOr<CompiledPipeline> compiled = CompiledPipeline::Compile(graph, lowered, 0, {}, &kind);
  if (!compiled.ok()) {
    *failure = StatusOfCompileError(kind);
    return compiled.status();
  }
  StatusOr<double> ran = compiled->Realize(&kind);
  if (!ran.ok()) {
    *failure = StatusOfRunError(kind);
    return ran.status();
  }
  return compiled->Outputs();
}

}  // namespace

// --- ReferenceCache ----------------------------------------------------------------

ReferenceCache::ReferenceCache(std::string dir, int max_in_memory)
    : dir_(std::move(dir)), max_in_memory_(std::max(1, max_in_memory)) {}

std::string ReferenceCache::PathOf(const std::string& pipeline_id) const {
  return dir_ + "/" + pipeline_id + ".ref";
}

StatusOr<std::shared_ptr<const ReferenceOutputs>> ReferenceCache::Get(const PipelineGraph& graph,
                                                                      MeasurementStatus* failure) {
  if (graph.spec().checked_outputs() > 0) {
    StatusOr<PipelineGraph> checked = PipelineGraph::Build(CheckedPipeline(graph));
    if (!checked.ok()) {
      if (failure != nullptr) *failure = COMPILE_ERROR;
      return checked.status().WithContext("reference outputs");
    }
    return Get(*checked, failure);
  }
  const std::string id = PipelineId(graph);
  {
    MutexLock lock(mutex_);
    for (auto it = recent_.begin(); it != recent_.end(); ++it) {
      if ((*it)->pipeline_id != id) continue;
      std::shared_ptr<const ReferenceOutputs> found = *it;
      recent_.splice(recent_.begin(), recent_, it);
      return found;
    }
  }
  auto reference = std::make_shared<ReferenceOutputs>();
  reference->pipeline_id = id;
  bool from_disk = false;
  if (!dir_.empty()) {
    std::ifstream in(PathOf(id), std::ios::binary);
    if (in) {
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      StatusOr<std::vector<HostTensor>> decoded = DecodeReference(bytes, graph);
      if (decoded.ok()) {
        reference->outputs = std::move(*decoded);
        from_disk = true;
      }
    }
  }
  if (!from_disk) {
    MeasurementStatus status = COMPILE_ERROR;
    auto compute = [&]() -> StatusOr<std::vector<HostTensor>> {
      try {
        return ComputeReference(graph, &status);
      } catch (const std::bad_alloc& e) {
        status = OUT_OF_MEMORY;
        return Status::Error("pipeline '" + graph.spec().name() + "': out of memory (" + e.what() +
                             ")");
      }
    };
    StatusOr<std::vector<HostTensor>> computed = compute();
    if (!computed.ok()) {
      if (failure != nullptr) *failure = status;
      return computed.status().WithContext("reference outputs");
    }
    reference->outputs = std::move(*computed);
    if (!dir_.empty()) {
      std::error_code ignored;  // a failure to create it shows when writing
      std::filesystem::create_directories(dir_, ignored);
      const Status written = WriteAtomically(PathOf(id), EncodeReference(reference->outputs));
      if (!written.ok()) std::cerr << "reference cache: " << written.message() << "\n";
    }
  }
  MutexLock lock(mutex_);
  ++(from_disk ? loaded_ : computed_);
  recent_.push_front(reference);
  if (static_cast<int>(recent_.size()) > max_in_memory_) recent_.pop_back();
  return std::shared_ptr<const ReferenceOutputs>(reference);
}

int64_t ReferenceCache::computed() const {
  MutexLock lock(mutex_);
  return computed_;
}

int64_t ReferenceCache::loaded() const {
  MutexLock lock(mutex_);
  return loaded_;
}

// --- CompiledCandidate -------------------------------------------------------------

CompiledCandidate::CompiledCandidate(CompiledPipeline compiled, const PipelineGraph& graph,
                                     const MeasurementSettings& settings, double compile_seconds)
    : compiled_(std::move(compiled)),
      where_("pipeline '" + graph.spec().name() + "'"),
      settings_(settings),
      compile_seconds_(compile_seconds),
      checked_outputs_(graph.spec().checked_outputs()) {
  for (int s : graph.output_stages()) output_names_.push_back(graph.stage(s).name());
  if (checked_outputs_ > 0) output_names_.resize(checked_outputs_);
}

StatusOr<CompiledCandidate> CompiledCandidate::CompileWith(
    const PipelineGraph& graph, const MeasurementSettings& settings, MeasurementStatus* failure,
    InputBuffers input_buffers, const std::function<Status(LoweredPipeline&)>& schedule,
    const std::function<void(const LoweredPipeline&)>& after_compile) {
  const MeasurementSettings filled = WithDefaults(settings);
  MeasurementStatus status = COMPILE_ERROR;
  auto failed = [&](const Status& error) {
    if (failure != nullptr) *failure = status;
    return error;
  };
  try {
    const Clock::time_point start = Clock::now();
    StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
    if (!lowered.ok()) return failed(lowered.status());
    const Status scheduled = schedule(*lowered);
    if (!scheduled.ok()) return failed(scheduled);
    HalideErrorKind kind = HalideErrorKind::kCompile;
    StatusOr<CompiledPipeline> compiled =
        CompiledPipeline::Compile(graph, *lowered, filled.threads(), {}, &kind, input_buffers);
    if (!compiled.ok()) {
      status = StatusOfCompileError(kind);
      return failed(compiled.status());
    }
    const double seconds = SecondsSince(start);
    if (after_compile) after_compile(*lowered);
    return CompiledCandidate(std::move(*compiled), graph, filled, seconds);
  } catch (const std::bad_alloc& e) {
    status = OUT_OF_MEMORY;
    return failed(Status::Error("pipeline '" + graph.spec().name() +
                                "': out of memory while compiling (" + e.what() + ")"));
  }
}

StatusOr<CompiledCandidate> CompiledCandidate::Compile(const PipelineGraph& graph,
                                                       const ScheduleSpec& schedule,
                                                       const MeasurementSettings& settings,
                                                       MeasurementStatus* failure) {
  return CompileWith(
      graph, settings, failure, InputBuffers::kExact,
      [&](LoweredPipeline& lowered) { return ApplySchedule(graph, lowered, schedule); }, nullptr);
}

StatusOr<CompiledCandidate> CompiledCandidate::CompileBaseline(const PipelineGraph& graph,
                                                               const BaselineRequest& request,
                                                               const MeasurementSettings& settings,
                                                               MeasurementStatus* failure,
                                                               BaselineSchedule* chosen) {
  const MeasurementSettings filled = WithDefaults(settings);
  AutoscheduleOptions options;
  options.threads = filled.threads();
  options.beam_size = request.adams2019_beam;
  BaselineSchedule baseline;
  bool autoscheduled = false;
  StatusOr<CompiledCandidate> candidate = CompileWith(
      graph, filled, failure, InputBuffers::kCoverScheduleReads,
      [&](LoweredPipeline& lowered) -> Status {
        StatusOr<HalideAutoscheduleResult> result =
            ApplyAutoscheduler(lowered, request.autoscheduler, options);
        if (!result.ok()) {
          return result.status().WithContext("pipeline '" + graph.spec().name() + "'");
        }
        baseline.schedule_source = result->schedule_source;
        baseline.autoschedule_seconds = result->seconds;
        autoscheduled = true;
        return Status::Ok();
      },
      [&](const LoweredPipeline& lowered) {
        StatusOr<ImportedSchedule> imported =
            ImportHalideSchedule(graph, lowered, HalideTargetParams(filled.threads()));
        if (!imported.ok()) {
          baseline.import_note = "not imported: " + imported.status().message();
          return;
        }
        baseline.imported = true;
        baseline.imported_spec = std::move(imported->spec);
        const std::vector<LeftOut>& left_out = imported->left_out;
        if (left_out.empty()) return;
        int changes = 0;
        for (const LeftOut& l : left_out) changes += l.changes_loop_nest;
        baseline.import_note = "imported without " + std::to_string(left_out.size()) +
                               " constructs the schedule space cannot express (" +
                               std::to_string(changes) + " change the loop nest)";
        constexpr size_t kListed = 4;
        for (size_t i = 0; i < left_out.size() && i < kListed; ++i) {
          std::string line = DescribeLeftOut({left_out[i]});
          if (!line.empty() && line.back() == '\n') line.pop_back();
          baseline.import_note += "; " + line;
        }
        if (left_out.size() > kListed) {
          baseline.import_note += "; and " + std::to_string(left_out.size() - kListed) + " more";
        }
      });
  if (chosen != nullptr && autoscheduled) *chosen = baseline;
  if (!candidate.ok()) return candidate;
  candidate->baseline_ = std::move(baseline);
  return candidate;
}

void RecordBaseline(const BaselineSchedule& baseline, Measurement* m) {
  m->set_schedule_source(baseline.schedule_source);
  if (baseline.imported) {
    *m->mutable_candidate()->mutable_schedule() = baseline.imported_spec;
  } else {
    m->mutable_candidate()->clear_schedule();
  }
}

Measurement CompiledCandidate::Run(const ReferenceOutputs& reference, const OutputHook& hook) {
  HalideErrorKind kind = HalideErrorKind::kRuntime;
  RunTarget target;
  target.run_once = [&] { return compiled_.Realize(&kind); };
  target.time_runs = [&](int repeats) { return compiled_.TimeRealizations(repeats, &kind); };
  target.outputs = [&] {
    std::vector<HostTensor> outputs = compiled_.Outputs();
    if (checked_outputs_ > 0) outputs.resize(checked_outputs_);
    return outputs;
  };
  target.failure = [&] { return StatusOfRunError(kind); };
  Measurement m = RunPhase(target, reference.outputs, output_names_, settings_, where_, hook);
  m.set_compile_seconds(compile_seconds_);
  if (baseline_) RecordBaseline(*baseline_, &m);
  return m;
}

Measurement MeasureInProcess(const PipelineGraph& graph, const ScheduleSpec& schedule,
                             const MeasurementSettings& settings, ReferenceCache& cache) {
  const MeasurementSettings filled = WithDefaults(settings);
  MeasurementStatus failure = COMPILE_ERROR;
  StatusOr<std::shared_ptr<const ReferenceOutputs>> reference = cache.Get(graph, &failure);
  if (!reference.ok()) return FailedMeasurement(failure, reference.status().message(), filled);
  StatusOr<CompiledCandidate> candidate =
      CompiledCandidate::Compile(graph, schedule, filled, &failure);
  if (!candidate.ok()) return FailedMeasurement(failure, candidate.status().message(), filled);
  return candidate->Run(**reference);
}

}  // namespace schedfarm
