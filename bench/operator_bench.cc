// The per-operator benchmark (docs/NETWORKS.md, "Every operator kind"): every distinct
// task of the networks given (tasks of several networks that are one pipeline are timed
// once, weighted by all their occurrences), grouped by operator kind (network/tasks.h,
// TaskKind): the template schedule's time, or the reference schedule's for a task
// without a template (what search starts from), beside the contenders a user would run:
// libtorch at its best (the fastest of eager NCHW, eager channels-last and the frozen,
// inference-optimized TorchScript module) and ONNX Runtime (the task written as an ONNX
// model, worker/onnxruntime/onnxruntime_baseline.h). With this host's fp32 peak
// (timing/peak.h) and memory bandwidth (timing/bandwidth.h) measured in the same run,
// each task's GFLOP/s and share of the peak, and its GB/s (the bytes it cannot avoid
// moving, PipelineGraph::compulsory_bytes, over its time) and share of the bandwidth roofline. Per
// kind: the geometric mean of the fastest contender's time over ours (weighted by the
// contender's time times the occurrences: the share of a network's time; goal at least
// 1.0 for every kind), the FLOP-weighted share of peak (goal 85% for dense convolutions)
// and the byte-weighted share of the bandwidth (goal 70% for the memory-bound kinds).
// Every schedule's and ONNX Runtime's outputs are checked against libtorch's before
// they are timed. The process keeps the memory it frees, as the worker's sandbox child
// does (common/memory.h): a schedule's buffers at root do not pay their page faults on
// every run. Without node or the onnxruntime-node package the ONNX Runtime column
// is left out, saying why.
//
// Usage: operator_bench [--threads N] [--samples K] [--rounds R] [--only TEXT]
//                       [--kind TEXT] [--list] [--schedules] [--assembly DIR]
//                       [--layout nchw|channels_last] [--fusion none|blocks]
//                       [--assembled] [--blocks] NETWORK.onnx...
// Each task is timed in R rounds (default 3), each round libtorch's three ways, ONNX
// Runtime, then ours, K samples each (default 7); a time is the fastest of all its
// samples, so that a slow spell of a shared host falls on every side of a ratio. --only
// keeps the tasks whose summary contains TEXT, --kind those whose kind contains it;
// --list prints the tasks, their kinds, FLOPs, bytes and template (or why none) without
// timing anything; --schedules prints each schedule timed; --assembly writes each template's
// assembly (DIR/<task id>.s) and lowered statement (.stmt), to check its inner loop; --layout is
// the layout the tasks exchange tensors in (PipelineSpec.boundary_layout; default channels_last);
// --fusion how the networks are cut into tasks (default none: one per anchor; blocks: fused tasks,
// each timed under every template, its cuts, TemplateSchedules). --assembled times, instead of the
// tasks, each network whole as a tune first measures it (every task's template, or its reference,
// assembled: network/assemble.h) beside the sum of its tasks' times under the same schedules
// (weight x time): what the assembly costs beyond its tasks (run it with HL_JIT_TARGET=host-profile
// for Halide's per-stage split). Each task is timed warm, as the worker times it (back-to-back
// runs: its weights and tensors stay in the caches), and cold (each run after writing a buffer
// larger than any cache), the two bounds of what it costs inside the network, where every layer's
// weights and inputs come after the other layers'; and the network is timed as well as a sequence
// of its task occurrences, each compiled alone and reading the outputs before it (checked against
// the assembly's outputs), with each occurrence's time inside that sequence. --blocks is the
// per-block benchmark of fused tasks (docs/NETWORKS.md, "The per-block benchmark"): every fused
// task of the networks (FUSION_BLOCKS) under each of its templates (its cuts), its best beside the
// same layers as tasks of their own (FUSION_NONE) under their templates, summed, and the contenders
// on the block, with the bytes each moves (the block's inputs, weights and outputs once; apart,
// every layer's) and the roofline's estimate, max(FLOPs / peak, bytes / bandwidth); the
// FLOP-weighted geometric mean of apart / fused over the depthwise-separable blocks (goal 1.3) and
// over all.
#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/cpus.h"
#include "common/elapsed.h"
#include "common/files.h"
#include "common/memory.h"
#include "common/repeats.h"
#include "network/assemble.h"
#include "network/tasks.h"
#include "pipeline/halide/jit_target.h"
#include "pipeline/halide/lowering.h"
#include "pipeline/onnx/onnx_export.h"
#include "pipeline/source/source.h"
#include "pipeline/spec.h"
#include "pipeline/torch/frozen_torch.h"
#include "pipeline/torch/torch_eval.h"
#include "scheduler/autoschedule/autoschedulers.h"
#include "scheduler/halide/apply.h"
#include "scheduler/templates.h"
#include "tests/support/scratch_dir.h"
#include "timing/bandwidth.h"
#include "timing/peak.h"
#include "worker/onnxruntime/onnxruntime_baseline.h"

namespace schedfarm {
namespace {

// libtorch's warnings, each printed once: the frozen module's oneDNN convolutions warn
// on every run of a channel count that is not a multiple of 16.
class WarnOnce : public c10::WarningHandler {
 public:
  void process(const c10::SourceLocation& where, const std::string& message,
               bool verbatim) override {
    if (seen_.insert(message).second) c10::WarningHandler::process(where, message, verbatim);
  }

 private:
  std::set<std::string> seen_;
};

struct Options {
  int threads = 2;
  int samples = 7;
  int rounds = 3;
  std::string only, kind;
  bool list = false, schedules = false, assembled = false, blocks = false;
  std::string assembly_dir;
  BoundaryLayout layout = LAYOUT_CHANNELS_LAST;
  NetworkFusion fusion = FUSION_NONE;
  std::vector<std::string> networks;
};

// The template's code for this host, as assembly (`file`) and as Halide's lowered
// statement (`file` with .stmt for .s: its loops, allocations and bounds).
Status WriteAssembly(const PipelineGraph& graph, const ScheduleSpec& spec,
                     const std::string& file) {
  SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
  SCHEDFARM_RETURN_IF_ERROR(ApplySchedule(graph, lowered, spec));
  try {
    const std::vector<Halide::Argument> arguments = lowered.pipeline.infer_arguments();
    lowered.pipeline.compile_to_assembly(file, arguments, "template", HostJitTarget());
    lowered.pipeline.compile_to_lowered_stmt(file.substr(0, file.size() - 2) + ".stmt", arguments,
                                             Halide::Text, HostJitTarget());
  } catch (const Halide::Error& e) {
    return Status::Error(file + ": " + e.what());
  }
  return Status::Ok();
}

struct Row {
  std::string kind, task, networks;
  int weight = 0;
  double flops = 0, bytes = 0;
  bool has_template = false;
  double ours_s = 0, torch_s = 0, onnxruntime_s = 0;  // 0: not measured
  std::vector<double> templates_s;  // each template's time (TemplateSchedules), 0: none yet
  std::string torch_way;

  // The fastest contender's time and name.
  double fastest_s() const {
    return onnxruntime_s > 0 && onnxruntime_s < torch_s ? onnxruntime_s : torch_s;
  }
  const char* fastest() const {
    return onnxruntime_s > 0 && onnxruntime_s < torch_s ? "onnxruntime" : "libtorch";
  }
};

// `value` with 3 decimals, or "-" when it is 0 (not measured).
std::string Fixed3(double value) {
  if (value == 0) return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", value);
  return text;
}

// Keeps the lesser of `best` (0: none yet) and `seconds`.
bool KeepFastest(double& best, double seconds) {
  if (best != 0 && best <= seconds) return false;
  best = seconds;
  return true;
}

StatusOr<double> TimeSchedule(const PipelineGraph& graph, const ScheduleSpec& spec,
                              const std::vector<HostTensor>& inputs,
                              const std::vector<HostTensor>& expected, const Options& options) {
  RunOptions run;
  run.timing_samples = options.samples;
  run.min_sample_seconds = 0.02;
  run.threads = options.threads;
  SCHEDFARM_ASSIGN_OR_RETURN(RunResult result, RunWithSchedule(graph, spec, run, inputs));
  for (size_t i = 0; i < expected.size(); ++i) {
    const Comparison c =
        CompareTensors(result.outputs[i], expected[i], DefaultTolerance(expected[i].dtype));
    if (!c.match) return Status::Error("wrong answer against libtorch: " + c.message);
  }
  return result.min_seconds;
}

// The fastest of K samples of `program` (a TorchProgram or a FrozenTorchProgram).
template <typename Program>
StatusOr<double> TimeTorch(Program& program, const Options& options) {
  SCHEDFARM_RETURN_IF_ERROR(program.Run());  // warm-up
  double best = 1e30;
  for (int k = 0; k < options.samples; ++k) {
    int reps = 0;
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
      SCHEDFARM_RETURN_IF_ERROR(program.Run());
      ++reps;
      elapsed = SecondsSince(start);
    } while (elapsed < 0.02);
    best = std::min(best, elapsed / reps);
  }
  return best;
}

// The host's fp32 peak on the first `threads` cpus, in the ISA of Halide's target; 0
// when it cannot be measured.
double MeasuredPeak(int threads) {
  const std::optional<PeakIsa> isa = PeakIsaOfHalideTarget(HostJitTarget().to_string());
  std::vector<int> cpus = AllowedCpus();
  if (static_cast<int>(cpus.size()) > threads) cpus.resize(threads);
  StatusOr<PeakResult> peak =
      isa ? MeasurePeak(*isa, cpus) : StatusOr<PeakResult>(Status::Error("no known ISA"));
  if (!peak.ok()) {
    std::fprintf(stderr, "no peak: %s\n", peak.status().message().c_str());
    return 0;
  }
  std::printf("fp32 peak: %.1f GFLOP/s at %d threads (%s)\n", peak->gflops, threads,
              PeakIsaName(*isa));
  return peak->gflops;
}

// The host's memory bandwidth on the first `threads` cpus in GB/s; 0 when it cannot be
// measured.
double MeasuredBandwidth(int threads) {
  std::vector<int> cpus = AllowedCpus();
  if (static_cast<int>(cpus.size()) > threads) cpus.resize(threads);
  StatusOr<double> gbps = MeasureBandwidth(cpus);
  if (!gbps.ok()) {
    std::fprintf(stderr, "no bandwidth: %s\n", gbps.status().message().c_str());
    return 0;
  }
  std::printf("memory bandwidth: %.1f GB/s at %d threads (triad)\n", *gbps, threads);
  return *gbps;
}

// ONNX Runtime on the task written as `model_file`: the fastest of its samples, its
// outputs checked against `expected` by the measurement protocol.
StatusOr<double> TimeOnnxRuntime(const std::string& model_file, const PipelineGraph& graph,
                                 const std::vector<HostTensor>& expected, const Options& options,
                                 const std::string& scratch_dir) {
  MeasurementSettings settings;
  settings.set_samples(options.samples);
  settings.set_max_samples(options.samples);
  settings.set_min_sample_seconds(0.02);
  settings.set_threads(options.threads);
  const Measurement m =
      MeasureOnnxModelFile(model_file, graph.spec(), expected, settings, scratch_dir);
  if (m.status() != OK || m.samples_seconds().empty()) {
    return Status::Error("onnxruntime: " + m.error());
  }
  return *std::min_element(m.samples_seconds().begin(), m.samples_seconds().end());
}

// The distinct tasks of every network, one row per pipeline over all of them, in order
// of first occurrence; false after printing why a network cannot be read.
struct Task {
  Row row;
  PipelineSpec spec;
  std::string pipeline_id;
};
struct Network {
  std::string name;
  PipelineSpec spec;  // the tuned network
  NetworkPartition partition;
};
// The network at `path` as a network campaign tunes it (TunedNetwork), in the layout
// given.
StatusOr<PipelineGraph> TunedNetworkGraph(const std::string& path, BoundaryLayout layout) {
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph given, LoadPipelineSource(path));
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineSpec tuned, TunedNetwork(given.spec()));
  tuned.set_boundary_layout(layout);
  return PipelineGraph::Build(tuned);
}

// Counts another network's occurrences of a task already listed.
void AddOccurrences(const DistinctTask& distinct, const std::string& network, Row& row) {
  row.weight += distinct.weight();
  if (row.networks.find(network) == std::string::npos) row.networks += "," + network;
}

// A distinct task of `network` as a row to time; false after printing why it is no
// pipeline.
bool MakeTask(const DistinctTask& distinct, const std::string& network, Task& task) {
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(distinct.spec);
  if (!graph.ok()) {
    std::fprintf(stderr, "%s: %s\n", distinct.summary.c_str(), graph.status().message().c_str());
    return false;
  }
  task.spec = distinct.spec;
  task.pipeline_id = distinct.pipeline_id;
  task.row.kind = TaskKind(*graph);
  task.row.task = distinct.summary;
  task.row.networks = network;
  task.row.weight = distinct.weight();
  task.row.flops = graph->total_cost().flops;
  task.row.bytes = graph->compulsory_bytes();
  return true;
}

bool CollectTasks(const Options& options, std::vector<Task>& tasks,
                  std::vector<Network>* networks = nullptr) {
  std::map<std::string, int> by_id;
  for (const std::string& path : options.networks) {
    StatusOr<PipelineGraph> network = TunedNetworkGraph(path, options.layout);
    StatusOr<NetworkPartition> partition = network.ok()
                                               ? PartitionNetwork(*network, options.fusion)
                                               : StatusOr<NetworkPartition>(network.status());
    if (!partition.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), partition.status().message().c_str());
      return false;
    }
    const std::string name = network->spec().name() == "torch_jit" ? path : network->spec().name();
    if (networks != nullptr) networks->push_back({name, network->spec(), *partition});
    for (const DistinctTask& distinct : partition->distinct) {
      auto [it, added] = by_id.emplace(distinct.pipeline_id, static_cast<int>(tasks.size()));
      if (!added) {
        AddOccurrences(distinct, name, tasks[it->second].row);
        continue;
      }
      Task task;
      if (!MakeTask(distinct, name, task)) return false;
      tasks.push_back(std::move(task));
    }
  }
  return true;
}

bool Kept(const Options& options, const Row& row) {
  return (options.only.empty() || row.task.find(options.only) != std::string::npos) &&
         (options.kind.empty() || row.kind.find(options.kind) != std::string::npos);
}

// Times `task`'s schedules `specs` and the contenders in R rounds; 1 after printing why
// one of them failed (ONNX Runtime refusing a task only leaves its column out). A failed
// task is left out of the kinds' figures and named at the end; the run then exits 1.
int TimeTask(const Options& options, const Task& task, const std::vector<ScheduleSpec>& specs,
             bool with_onnxruntime, const std::string& model_file, const std::string& scratch_dir,
             Row& row) {
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(task.spec);
  if (!graph.ok()) return 1;
  const std::vector<HostTensor> inputs = DeterministicInputs(graph->spec());
  auto failed = [&](const std::string& what, const Status& status) {
    std::fprintf(stderr, "%s: %s: %s\n", row.task.c_str(), what.c_str(), status.message().c_str());
    return 1;
  };
  StatusOr<FrozenTorchProgram> frozen = FrozenTorchProgram::Prepare(*graph, inputs);
  if (!frozen.ok()) return failed("libtorch frozen", frozen.status());
  if (with_onnxruntime) {
    StatusOr<std::string> model = ExportOnnxModel(graph->spec());
    const Status written = model.ok() ? WriteFileAtomically(model_file, *model) : model.status();
    if (!written.ok()) return failed("as an ONNX model", written);
  }
  std::vector<HostTensor> expected;
  for (int round = 0; round < options.rounds; ++round) {
    // libtorch at its best: the fastest of its three ways.
    for (TorchLayout layout : {TorchLayout::kAsImported, TorchLayout::kChannelsLast}) {
      StatusOr<TorchProgram> program = TorchProgram::Prepare(*graph, inputs, layout);
      StatusOr<double> seconds =
          program.ok() ? TimeTorch(*program, options) : StatusOr<double>(program.status());
      if (!seconds.ok()) {
        return failed(std::string("libtorch ") + TorchLayoutName(layout), seconds.status());
      }
      if (expected.empty()) expected = program->Outputs();
      if (KeepFastest(row.torch_s, *seconds)) row.torch_way = TorchLayoutName(layout);
    }
    StatusOr<double> frozen_s = TimeTorch(*frozen, options);
    if (!frozen_s.ok()) return failed("libtorch frozen", frozen_s.status());
    if (KeepFastest(row.torch_s, *frozen_s)) row.torch_way = frozen->Name();
    if (with_onnxruntime) {
      StatusOr<double> onnxruntime_s =
          TimeOnnxRuntime(model_file, *graph, expected, options, scratch_dir);
      if (onnxruntime_s.ok()) {
        KeepFastest(row.onnxruntime_s, *onnxruntime_s);
      } else {
        // A task ONNX Runtime refuses is a failed contender: the task goes on.
        std::fprintf(stderr, "%s: %s\n", row.task.c_str(),
                     onnxruntime_s.status().message().c_str());
        with_onnxruntime = false;
        row.onnxruntime_s = 0;
      }
    }
    row.templates_s.resize(specs.size());
    for (size_t k = 0; k < specs.size(); ++k) {
      StatusOr<double> ours_s = TimeSchedule(*graph, specs[k], inputs, expected, options);
      if (!ours_s.ok()) {
        return failed(row.has_template ? "template " + std::to_string(k) : "reference",
                      ours_s.status());
      }
      KeepFastest(row.templates_s[k], *ours_s);
      KeepFastest(row.ours_s, *ours_s);
    }
  }
  return 0;
}

// Whether a kind is bound by memory rather than arithmetic on a CPU: its goal is a share
// of the bandwidth roofline rather than of the peak.
bool MemoryBound(const std::string& kind) {
  for (const char* bound : {"depthwise", "pool", "elementwise", "reduction"}) {
    if (kind.find(bound) != std::string::npos) return true;
  }
  return false;
}

// One line per kind (then over all): the time-weighted geometric mean of the fastest
// contender over ours, the FLOP-weighted share of peak and the byte-weighted share of
// the bandwidth, each with its goal where the kind has one.
void PrintKinds(const std::vector<Row>& rows, double peak, double bandwidth) {
  std::vector<std::string> kinds;
  for (const Row& r : rows) {
    if (std::find(kinds.begin(), kinds.end(), r.kind) == kinds.end()) kinds.push_back(r.kind);
  }
  std::sort(kinds.begin(), kinds.end());
  kinds.push_back("");
  for (const std::string& kind : kinds) {
    double weight = 0, log_fastest = 0, flops = 0, bytes = 0, seconds = 0;
    int tasks = 0, templates = 0;
    for (const Row& r : rows) {
      if (!kind.empty() && r.kind != kind) continue;
      const double w = r.fastest_s() * r.weight;
      weight += w;
      log_fastest += w * std::log(r.fastest_s() / r.ours_s);
      flops += r.flops * r.weight;
      bytes += r.bytes * r.weight;
      seconds += r.ours_s * r.weight;
      ++tasks;
      templates += r.has_template;
    }
    if (weight == 0) continue;
    const double ratio = std::exp(log_fastest / weight);
    const double peak_share = peak > 0 ? flops / seconds / 1e9 / peak : 0;
    const double bandwidth_share = bandwidth > 0 ? bytes / seconds / 1e9 / bandwidth : 0;
    std::string goals = "fastest contender / ours " + Fixed3(ratio) + " (" + Fixed3(ratio / 1.0) +
                        "x the goal of 1.0)";
    char shares[160];
    std::snprintf(
        shares, sizeof(shares), "; %.0f%% of peak%s; %.0f%% of the bandwidth%s", 100 * peak_share,
        kind == "conv" ? (" (" + Fixed3(peak_share / 0.85) + "x the goal of 85%)").c_str() : "",
        100 * bandwidth_share,
        !kind.empty() && MemoryBound(kind)
            ? (" (" + Fixed3(bandwidth_share / 0.70) + "x the goal of 70%)").c_str()
            : "");
    std::printf("%-22s %3d tasks (%d with a template): %s%s\n",
                kind.empty() ? "all kinds" : kind.c_str(), tasks, templates, goals.c_str(), shares);
  }
}

// The template of a task (a fused task's first: its producers in strips), or its
// reference schedule where it has none.
ScheduleSpec TemplateOrReference(const ScheduleSpace& space) {
  std::vector<ScheduleSpec> specs = TemplateSchedules(space);
  return specs.empty() ? space.Reference() : specs.front();
}

// A schedule compiled once (or a network as its task occurrences, each compiled on its
// own and run in order, each reading its inputs from the outputs before it), timed warm
// (back-to-back runs, as the worker times it: its weights and tensors stay in the caches)
// and cold (each run after writing a buffer larger than the host's caches), the fastest
// of all rounds each.
struct TimedSchedule {
  std::string name;
  int weight = 1;
  std::vector<CompiledPipeline> compiled;  // run in order
  int repeats = 1;  // back-to-back runs per warm sample
  double warm_s = 1e30, cold_s = 1e30;
  std::vector<double> part_s;  // each compiled part's fastest run inside the whole

  StatusOr<double> Time(int runs) {
    part_s.resize(compiled.size(), 1e30);
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < runs; ++r) {
      for (size_t i = 0; i < compiled.size(); ++i) {
        SCHEDFARM_ASSIGN_OR_RETURN(double seconds, compiled[i].Realize());
        part_s[i] = std::min(part_s[i], seconds);
      }
    }
    return SecondsSince(start);
  }
};

StatusOr<CompiledPipeline> CompileSchedule(const PipelineGraph& graph, const ScheduleSpec& spec,
                                           const Options& options) {
  SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
  SCHEDFARM_RETURN_IF_ERROR(ApplySchedule(graph, lowered, spec));
  return CompiledPipeline::Compile(graph, lowered, options.threads);
}

// Warms `timed` up and finds the number of back-to-back runs that last 20 ms.
Status WarmUpAndCalibrate(TimedSchedule& timed) {
  SCHEDFARM_ASSIGN_OR_RETURN(double once, timed.Time(1));  // warm-up
  SCHEDFARM_ASSIGN_OR_RETURN(timed.repeats, CalibrateRepeats(0.02, once, [&](int repeats) {
                               return timed.Time(repeats);
                             }));
  return Status::Ok();
}

Status CompileTimed(const PipelineGraph& graph, const ScheduleSpec& spec, const Options& options,
                    TimedSchedule& timed) {
  SCHEDFARM_ASSIGN_OR_RETURN(CompiledPipeline compiled, CompileSchedule(graph, spec, options));
  timed.compiled.push_back(std::move(compiled));
  return WarmUpAndCalibrate(timed);
}

// The network as its task occurrences in order, each under its distinct task's schedule
// (`schedules`), each input bound to the output of the occurrence that computes it; its
// network outputs checked against `expected` (the assembled network's, spec order).
Status CompileSequence(const Network& network, const std::vector<ScheduleSpec>& schedules,
                       const std::vector<HostTensor>& expected, const Options& options,
                       TimedSchedule& timed) {
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(network.spec));
  const NetworkPartition& partition = network.partition;
  std::map<std::string, std::pair<int, int>> computed;  // tensor -> (occurrence, output)
  for (int t = 0; t < static_cast<int>(partition.tasks.size()); ++t) {
    SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph task,
                               PipelineGraph::Build(OccurrenceSpec(graph, partition, t)));
    SCHEDFARM_ASSIGN_OR_RETURN(
        ScheduleSpec schedule,
        OccurrenceSchedule(partition, t, schedules[partition.tasks[t].distinct]));
    SCHEDFARM_ASSIGN_OR_RETURN(CompiledPipeline compiled, CompileSchedule(task, schedule, options));
    for (int i = 0; i < task.spec().inputs_size(); ++i) {
      auto it = computed.find(task.spec().inputs(i).name());
      if (it == computed.end()) continue;  // a network input
      SCHEDFARM_RETURN_IF_ERROR(
          compiled.ReadInputFrom(i, timed.compiled[it->second.first], it->second.second));
    }
    for (int o = 0; o < task.spec().outputs_size(); ++o) computed[task.spec().outputs(o)] = {t, o};
    timed.compiled.push_back(std::move(compiled));
  }
  SCHEDFARM_RETURN_IF_ERROR(timed.Time(1).status());
  for (int i = 0; i < network.spec.outputs_size(); ++i) {
    const auto [t, o] = computed.at(network.spec.outputs(i));
    const Comparison c = CompareTensors(timed.compiled[t].Outputs()[o], expected[i],
                                        DefaultTolerance(expected[i].dtype));
    if (!c.match) return Status::Error("output '" + network.spec.outputs(i) + "': " + c.message);
  }
  return WarmUpAndCalibrate(timed);
}

// One round: K warm samples, then K cold runs.
Status TimeRound(const Options& options, TimedSchedule& timed) {
  static std::vector<char> evict(512 << 20);
  for (int k = 0; k < options.samples; ++k) {
    SCHEDFARM_ASSIGN_OR_RETURN(double seconds, timed.Time(timed.repeats));
    timed.warm_s = std::min(timed.warm_s, seconds / timed.repeats);
  }
  for (int k = 0; k < options.samples; ++k) {
    for (size_t i = 0; i < evict.size(); i += 64) ++evict[i];
    SCHEDFARM_ASSIGN_OR_RETURN(double seconds, timed.Time(1));
    timed.cold_s = std::min(timed.cold_s, seconds);
  }
  return Status::Ok();
}

// --assembled: each network whole under its tasks' templates, beside its tasks' sums,
// warm and cold, all compiled first and timed in R interleaved rounds.
int RunAssembled(const Options& options, const std::vector<Network>& networks) {
  const TargetParams target = HalideTargetParams(options.threads);
  for (const Network& network : networks) {
    const auto started = std::chrono::steady_clock::now();
    std::vector<ScheduleSpec> schedules;
    const size_t distinct = network.partition.distinct.size();
    std::vector<TimedSchedule> timed(distinct + 2);  // the tasks, the assembled, the sequence
    for (size_t d = 0; d < distinct; ++d) {
      const DistinctTask& task = network.partition.distinct[d];
      StatusOr<PipelineGraph> graph = PipelineGraph::Build(task.spec);
      if (!graph.ok()) {
        std::fprintf(stderr, "%s: %s\n", task.summary.c_str(), graph.status().message().c_str());
        return 1;
      }
      schedules.push_back(TemplateOrReference(ScheduleSpace(*graph, target)));
      timed[d].name = task.summary;
      timed[d].weight = task.weight();
      const Status compiled = CompileTimed(*graph, schedules.back(), options, timed[d]);
      if (!compiled.ok()) {
        std::fprintf(stderr, "%s: %s\n", task.summary.c_str(), compiled.message().c_str());
        return 1;
      }
    }
    std::vector<const ScheduleSpec*> pointers;
    for (const ScheduleSpec& spec : schedules) pointers.push_back(&spec);
    StatusOr<PipelineGraph> assembly = PipelineGraph::Build(network.partition.assembly);
    if (!assembly.ok()) {
      std::fprintf(stderr, "%s: assembly: %s\n", network.name.c_str(),
                   assembly.status().message().c_str());
      return 1;
    }
    const ScheduleSpace space(*assembly, target);
    StatusOr<ScheduleSpec> spec = AssembleSchedule(network.partition, space, pointers);
    TimedSchedule& whole = timed[distinct];
    whole.name = "assembled";
    const Status compiled =
        spec.ok() ? CompileTimed(*assembly, *spec, options, whole) : spec.status();
    if (!compiled.ok()) {
      std::fprintf(stderr, "%s: assembled: %s\n", network.name.c_str(), compiled.message().c_str());
      return 1;
    }
    TimedSchedule& sequence = timed[distinct + 1];
    sequence.name = "sequence";
    const Status sequenced =
        CompileSequence(network, schedules, whole.compiled.front().Outputs(), options, sequence);
    if (!sequenced.ok()) {
      std::fprintf(stderr, "%s: sequence: %s\n", network.name.c_str(), sequenced.message().c_str());
      return 1;
    }
    for (int round = 0; round < options.rounds; ++round) {
      for (TimedSchedule& t : timed) {
        const Status status = TimeRound(options, t);
        if (!status.ok()) {
          std::fprintf(stderr, "%s: %s: %s\n", network.name.c_str(), t.name.c_str(),
                       status.message().c_str());
          return 1;
        }
      }
    }
    for (size_t t = 0; t < network.partition.tasks.size(); ++t) {
      const int d = network.partition.tasks[t].distinct;
      std::printf("  task %2zu %-56s warm %.3f ms  in the network %.3f ms (%.2f)\n", t,
                  timed[d].name.c_str(), timed[d].warm_s * 1e3, sequence.part_s[t] * 1e3,
                  sequence.part_s[t] / timed[d].warm_s);
    }
    double warm_s = 0, cold_s = 0;
    for (size_t d = 0; d < distinct; ++d) {
      std::printf("  %-56s x%d  warm %.3f ms  cold %.3f ms\n", timed[d].name.c_str(),
                  timed[d].weight, timed[d].warm_s * 1e3, timed[d].cold_s * 1e3);
      warm_s += timed[d].weight * timed[d].warm_s;
      cold_s += timed[d].weight * timed[d].cold_s;
    }
    std::printf(
        "%s: %zu distinct tasks; assembled %.3f ms (cold %.3f); as a sequence of its tasks %.3f "
        "ms (cold %.3f); its tasks' sum warm %.3f ms (assembled / warm %.2f, sequence / warm "
        "%.2f), cold %.3f ms (assembled / cold %.2f); %.0f s\n",
        network.name.c_str(), distinct, whole.warm_s * 1e3, whole.cold_s * 1e3,
        sequence.warm_s * 1e3, sequence.cold_s * 1e3, warm_s * 1e3, whole.warm_s / warm_s,
        sequence.warm_s / warm_s, cold_s * 1e3, whole.warm_s / cold_s, SecondsSince(started));
    std::fflush(stdout);
  }
  return 0;
}

// What a run times against, measured once: the host's fp32 peak and bandwidth at the
// run's threads and ONNX Runtime where it is installed (printed either way); libtorch
// runs at those threads, each of its warnings printed once.
struct RunHost {
  explicit RunHost(int threads) {
    at::set_num_threads(threads);
    peak = MeasuredPeak(threads);
    bandwidth = MeasuredBandwidth(threads);
    onnxruntime = FindOnnxRuntime();
    if (onnxruntime.ok()) {
      std::printf("onnxruntime %s\n", onnxruntime->version.c_str());
    } else {
      std::printf("no onnxruntime column: %s\n", onnxruntime.status().message().c_str());
    }
  }
  WarnOnce warn_once;
  const c10::Warning::WarningHandlerGuard quiet{&warn_once};
  double peak = 0, bandwidth = 0;
  StatusOr<OnnxRuntimeInstall> onnxruntime = Status::Error("not looked for");
};

// --blocks: one fused task of the networks (FUSION_BLOCKS), tasks of several networks
// that are one pipeline timed once.
struct Block {
  Task fused;
  std::vector<PipelineSpec> apart;  // the same layers as tasks of their own (FUSION_NONE)
  double apart_bytes = 0;           // their compulsory bytes, summed
  double apart_s = 0;               // their templates' times, summed
  bool depthwise_separable = false;
};

// The fused tasks of the networks, each with the tasks of its layers apart; false after
// printing why a network cannot be read.
bool CollectBlocks(const Options& options, std::vector<Block>& blocks) {
  std::map<std::string, int> by_id;
  for (const std::string& path : options.networks) {
    StatusOr<PipelineGraph> network = TunedNetworkGraph(path, options.layout);
    StatusOr<NetworkPartition> apart = network.ok() ? PartitionNetwork(*network, FUSION_NONE)
                                                    : StatusOr<NetworkPartition>(network.status());
    StatusOr<NetworkPartition> fused =
        apart.ok() ? PartitionNetwork(*network, FUSION_BLOCKS) : apart;
    if (!fused.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), fused.status().message().c_str());
      return false;
    }
    const std::string name = network->spec().name() == "torch_jit" ? path : network->spec().name();
    for (const DistinctTask& distinct : fused->distinct) {
      const NetworkTask& first = fused->tasks[distinct.occurrences.front()];
      if (first.anchors.size() < 2) continue;
      auto [it, added] = by_id.emplace(distinct.pipeline_id, static_cast<int>(blocks.size()));
      if (!added) {
        AddOccurrences(distinct, name, blocks[it->second].fused.row);
        continue;
      }
      Block block;
      if (!MakeTask(distinct, name, block.fused)) return false;
      block.depthwise_separable = block.fused.row.kind.find("depthwise") != std::string::npos;
      std::set<int> layers;
      for (int s : first.stages) layers.insert(apart->task_of_stage[s]);
      for (int t : layers) {
        const DistinctTask& layer = apart->distinct[apart->tasks[t].distinct];
        StatusOr<PipelineGraph> layer_graph = PipelineGraph::Build(layer.spec);
        if (!layer_graph.ok()) return false;
        block.apart.push_back(layer.spec);
        block.apart_bytes += layer_graph->compulsory_bytes();
      }
      blocks.push_back(std::move(block));
    }
  }
  return true;
}

// The time of `spec`'s template (its reference where it has none), checked against
// libtorch's outputs: the fastest of R rounds of K samples.
StatusOr<double> TimeTemplate(const Options& options, const PipelineSpec& spec) {
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(spec));
  const std::vector<HostTensor> inputs = DeterministicInputs(graph.spec());
  SCHEDFARM_ASSIGN_OR_RETURN(TorchProgram program,
                             TorchProgram::Prepare(graph, inputs, TorchLayout::kAsImported));
  SCHEDFARM_RETURN_IF_ERROR(program.Run());
  const std::vector<HostTensor> expected = program.Outputs();
  const ScheduleSpec schedule =
      TemplateOrReference(ScheduleSpace(graph, HalideTargetParams(options.threads)));
  double best = 0;
  for (int round = 0; round < options.rounds; ++round) {
    SCHEDFARM_ASSIGN_OR_RETURN(double seconds,
                               TimeSchedule(graph, schedule, inputs, expected, options));
    KeepFastest(best, seconds);
  }
  return best;
}

// The per-block benchmark (docs/NETWORKS.md, "The per-block benchmark").
int RunBlocks(const Options& options) {
  std::vector<Block> blocks;
  if (!CollectBlocks(options, blocks)) return 1;
  const RunHost host(options.threads);
  const double peak = host.peak, bandwidth = host.bandwidth;
  const StatusOr<OnnxRuntimeInstall>& onnxruntime = host.onnxruntime;
  const ScratchDir scratch;
  const std::string model_file = scratch.Sub("task.onnx");
  // The roofline's estimate of a time: the larger of the FLOPs at the peak and the bytes
  // at the bandwidth.
  auto roofline_ms = [&](double flops, double bytes) {
    return 1e3 * std::max(peak > 0 ? flops / (peak * 1e9) : 0.0,
                          bandwidth > 0 ? bytes / (bandwidth * 1e9) : 0.0);
  };
  std::vector<std::string> failed;
  // FLOP-weighted logs of apart / fused and of the fastest contender / fused, over the
  // depthwise-separable blocks and over all.
  double weight_ds = 0, log_ds = 0, weight_all = 0, log_all = 0, log_contender = 0;
  for (Block& block : blocks) {
    Row& row = block.fused.row;
    if (!Kept(options, row)) continue;
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(block.fused.spec);
    if (!graph.ok()) return 1;
    std::vector<ScheduleSpec> specs =
        TemplateSchedules(ScheduleSpace(*graph, HalideTargetParams(options.threads)));
    row.has_template = !specs.empty();
    if (specs.empty()) specs.push_back(ScheduleSpace(*graph).Reference());
    if (TimeTask(options, block.fused, specs, onnxruntime.ok(), model_file, scratch.path(), row) !=
        0) {
      failed.push_back(row.task);
      continue;
    }
    bool apart_ok = true;
    for (const PipelineSpec& layer : block.apart) {
      StatusOr<double> seconds = TimeTemplate(options, layer);
      if (!seconds.ok()) {
        std::fprintf(stderr, "%s: a layer apart: %s\n", row.task.c_str(),
                     seconds.status().message().c_str());
        apart_ok = false;
        break;
      }
      block.apart_s += *seconds;
    }
    if (!apart_ok) {
      failed.push_back(row.task);
      continue;
    }
    const size_t cut = static_cast<size_t>(
        std::min_element(row.templates_s.begin(), row.templates_s.end()) - row.templates_s.begin());
    std::printf(
        "%-34s %-60s w%-2d %7.2f MFLOP  bytes apart %6.3f MB fused %6.3f MB  roofline apart "
        "%6.3f ms fused %6.3f ms  apart %7.3f ms  fused %7.3f ms (cut %zu of %zu)  %s %7.3f ms  "
        "apart/fused %.2f  fastest/fused %.2f\n",
        row.kind.c_str(), row.task.substr(0, 60).c_str(), row.weight, row.flops / 1e6,
        block.apart_bytes / 1e6, row.bytes / 1e6, roofline_ms(row.flops, block.apart_bytes),
        roofline_ms(row.flops, row.bytes), block.apart_s * 1e3, row.ours_s * 1e3, cut + 1,
        row.templates_s.size(), row.fastest(), row.fastest_s() * 1e3, block.apart_s / row.ours_s,
        row.fastest_s() / row.ours_s);
    std::fflush(stdout);
    const double w = row.flops * row.weight;
    weight_all += w;
    log_all += w * std::log(block.apart_s / row.ours_s);
    log_contender += w * std::log(row.fastest_s() / row.ours_s);
    if (block.depthwise_separable) {
      weight_ds += w;
      log_ds += w * std::log(block.apart_s / row.ours_s);
    }
  }
  if (weight_ds > 0) {
    const double ratio = std::exp(log_ds / weight_ds);
    std::printf(
        "depthwise-separable blocks: apart / fused %.3f, FLOP-weighted (%.3fx the goal of 1.3)\n",
        ratio, ratio / 1.3);
  }
  if (weight_all > 0) {
    std::printf("all blocks: apart / fused %.3f, fastest contender / fused %.3f, FLOP-weighted\n",
                std::exp(log_all / weight_all), std::exp(log_contender / weight_all));
  }
  for (const std::string& task : failed) std::printf("failed (see above): %s\n", task.c_str());
  return failed.empty() ? 0 : 1;
}

int Run(const Options& options) {
  if (options.blocks) return RunBlocks(options);
  std::vector<Task> tasks;
  std::vector<Network> networks;
  if (!CollectTasks(options, tasks, &networks)) return 1;
  if (options.assembled) return RunAssembled(options, networks);
  if (options.list) {
    for (const Task& task : tasks) {
      if (!Kept(options, task.row)) continue;
      StatusOr<PipelineGraph> graph = PipelineGraph::Build(task.spec);
      if (!graph.ok()) return 1;
      const ScheduleSpace space(*graph, HalideTargetParams(options.threads));
      const std::vector<ScheduleSpec> specs = TemplateSchedules(space);
      const StatusOr<ScheduleSpec> single = TemplateSchedule(space);
      std::printf("%-22s %-56s w%-2d %9.2f MFLOP %8.3f MB  %s  [%s]\n", task.row.kind.c_str(),
                  task.row.task.c_str(), task.row.weight, task.row.flops / 1e6,
                  task.row.bytes / 1e6,
                  specs.size() > 1 ? (std::to_string(specs.size()) + " templates").c_str()
                  : !specs.empty() ? "template"
                  : single.ok()    ? "no template"
                                   : ("no template: " + single.status().message()).c_str(),
                  task.row.networks.c_str());
    }
    return 0;
  }
  const RunHost host(options.threads);
  const double peak = host.peak, bandwidth = host.bandwidth;
  const StatusOr<OnnxRuntimeInstall>& onnxruntime = host.onnxruntime;
  const ScratchDir scratch;
  const std::string model_file = scratch.Sub("task.onnx");
  std::vector<Row> rows;
  std::vector<std::string> failed;
  for (const Task& task : tasks) {
    if (!Kept(options, task.row)) continue;
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(task.spec);
    if (!graph.ok()) return 1;
    const ScheduleSpace space(*graph, HalideTargetParams(options.threads));
    std::vector<ScheduleSpec> specs = TemplateSchedules(space);
    Row row = task.row;
    row.has_template = !specs.empty();
    if (specs.empty()) specs.push_back(space.Reference());
    for (size_t k = 0; k < specs.size(); ++k) {
      if (options.schedules) {
        std::printf("%s: %s\n", row.task.c_str(), specs[k].DebugString().c_str());
      }
      if (row.has_template && !options.assembly_dir.empty()) {
        const std::string file = options.assembly_dir + "/" + task.pipeline_id +
                                 (k > 0 ? "." + std::to_string(k) : "") + ".s";
        const Status written = WriteAssembly(*graph, specs[k], file);
        if (!written.ok()) std::fprintf(stderr, "%s\n", written.message().c_str());
      }
    }
    if (TimeTask(options, task, specs, onnxruntime.ok(), model_file, scratch.path(), row) != 0) {
      failed.push_back(row.task);  // said why; the other tasks go on
      continue;
    }
    const double gflops = row.flops / row.ours_s / 1e9;
    const double gbps = row.bytes / row.ours_s / 1e9;
    std::printf(
        "%-20s %-52s w%-2d %8.2f MFLOP %7.3f MB  %-9s %7.3f ms %6.1f GFLOP/s %3.0f%% of peak "
        "%6.1f GB/s %3.0f%% of bw  libtorch %7.3f ms (%s)  onnxruntime %s ms  "
        "fastest/ours %.2f (%s)\n",
        row.kind.c_str(), row.task.c_str(), row.weight, row.flops / 1e6, row.bytes / 1e6,
        row.has_template ? "template" : "reference", row.ours_s * 1e3, gflops,
        peak > 0 ? 100 * gflops / peak : 0.0, gbps, bandwidth > 0 ? 100 * gbps / bandwidth : 0.0,
        row.torch_s * 1e3, row.torch_way.c_str(), Fixed3(row.onnxruntime_s * 1e3).c_str(),
        row.fastest_s() / row.ours_s, row.fastest());
    if (row.templates_s.size() > 1) {
      std::string each;
      for (double t : row.templates_s) each += (each.empty() ? "" : ", ") + Fixed3(t * 1e3);
      std::printf("%-20s   its templates (the cuts, TemplateSchedules): %s ms\n", "", each.c_str());
    }
    std::fflush(stdout);
    rows.push_back(row);
  }
  PrintKinds(rows, peak, bandwidth);
  for (const std::string& task : failed) std::printf("failed (see above): %s\n", task.c_str());
  return failed.empty() ? 0 : 1;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  schedfarm::KeepFreedMemory();  // as the worker's sandbox child times schedules
  schedfarm::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--list" || arg == "--schedules" || arg == "--assembled" || arg == "--blocks") {
      (arg == "--list"        ? options.list
       : arg == "--schedules" ? options.schedules
       : arg == "--blocks"    ? options.blocks
                              : options.assembled) = true;
    } else if ((arg == "--threads" || arg == "--samples" || arg == "--rounds" || arg == "--only" ||
                arg == "--kind" || arg == "--assembly" || arg == "--layout" || arg == "--fusion") &&
               i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--layout") {
        const std::optional<schedfarm::BoundaryLayout> layout =
            schedfarm::BoundaryLayoutNamed(value);
        if (!layout) {
          std::fprintf(stderr, "operator_bench: --layout '%s' is not nchw or channels_last\n",
                       value.c_str());
          return 2;
        }
        options.layout = *layout;
      } else if (arg == "--fusion") {
        if (value != "none" && value != "blocks") {
          std::fprintf(stderr, "operator_bench: --fusion '%s' is not none or blocks\n",
                       value.c_str());
          return 2;
        }
        options.fusion = value == "blocks" ? schedfarm::FUSION_BLOCKS : schedfarm::FUSION_NONE;
      } else if (arg == "--only") {
        options.only = value;
      } else if (arg == "--kind") {
        options.kind = value;
      } else if (arg == "--assembly") {
        options.assembly_dir = value;
      } else {
        (arg == "--threads"   ? options.threads
         : arg == "--samples" ? options.samples
                              : options.rounds) = std::atoi(value.c_str());
      }
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr,
                   "usage: operator_bench [--threads N] [--samples K] [--rounds R] "
                   "[--only TEXT] [--kind TEXT] [--list] [--schedules] [--assembly DIR] "
                   "[--layout nchw|channels_last] [--fusion none|blocks] [--assembled] "
                   "[--blocks] NETWORK.onnx...\n");
      return 2;
    } else {
      options.networks.push_back(arg);
    }
  }
  if (options.threads < 1 || options.samples < 1 || options.rounds < 1) {
    std::fprintf(stderr, "operator_bench: --threads, --samples and --rounds must be at least 1\n");
    return 2;
  }
  if (options.networks.empty()) {
    std::fprintf(stderr, "usage: operator_bench [--threads N] [--samples K] NETWORK.onnx...\n");
    return 2;
  }
  return schedfarm::Run(options);
}
