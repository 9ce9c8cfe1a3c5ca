// The per-layer benchmark of fast kernels (docs/SCHEDULES.md, "Templates"): for every
// distinct task of the networks given whose anchor is a convolution, a depthwise
// convolution, a matmul or a pool, the template schedule's time beside the same tile without
// layouts (the space before storage layouts and packed weights) and the contenders a
// user would run: libtorch at its best (the fastest of eager NCHW, eager channels-last
// and the frozen, inference-optimized TorchScript module) and ONNX Runtime (the task
// written as an ONNX model, worker/onnxruntime/onnxruntime_baseline.h), with GFLOP/s and
// the share of this host's fp32 peak measured in the same run (timing/peak.h), and the
// FLOP-weighted geometric means of each contender's time over the template's and of the
// fastest contender's per layer (goal: at least 1.0). Every schedule's and ONNX
// Runtime's outputs are checked against libtorch's before they are timed. Without node
// or the onnxruntime-node package the ONNX Runtime column is left out, saying why.
//
// Usage: conv_layer_bench [--threads N] [--samples K] [--rounds R] [--only TEXT]
//                         [--assembly DIR] [--layout nchw|channels_last] NETWORK.onnx...
// Each layer is timed in R rounds (default 3), each round libtorch's three ways, ONNX
// Runtime, then the template, K samples each (default 7); a time is the fastest of all
// its samples, so that a slow spell of a shared host falls on every side of a ratio. --only keeps
// the tasks whose summary contains TEXT; --assembly writes each template's assembly
// (DIR/<task id>.s), to check its inner loop; --layout is the layout the tasks
// exchange tensors in (PipelineSpec.boundary_layout; default channels_last).
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/cpus.h"
#include "common/elapsed.h"
#include "common/files.h"
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
#include "timing/peak.h"
#include "worker/onnxruntime/onnxruntime_baseline.h"

namespace schedfarm {
namespace {

struct Options {
  int threads = 2;
  int samples = 7;
  int rounds = 3;
  std::string only;
  std::string assembly_dir;
  BoundaryLayout layout = LAYOUT_CHANNELS_LAST;
  std::vector<std::string> networks;
};

// The template without its layouts: what the space held before them.
ScheduleSpec WithoutLayouts(ScheduleSpec spec) {
  for (StageSchedule& s : *spec.mutable_stages()) {
    s.clear_storage_innermost();
    s.clear_pack_weights();
    s.clear_padded_copy();
  }
  return spec;
}

// The template's code for this host, as assembly.
Status WriteAssembly(const PipelineGraph& graph, const ScheduleSpec& spec,
                     const std::string& file) {
  SCHEDFARM_ASSIGN_OR_RETURN(LoweredPipeline lowered, LowerToHalide(graph));
  SCHEDFARM_RETURN_IF_ERROR(ApplySchedule(graph, lowered, spec));
  try {
    lowered.pipeline.compile_to_assembly(file, lowered.pipeline.infer_arguments(), "template",
                                         HostJitTarget());
  } catch (const Halide::Error& e) {
    return Status::Error(file + ": " + e.what());
  }
  return Status::Ok();
}

struct Row {
  std::string network, task;
  int weight = 0;
  double flops = 0;
  double template_s = 0, plain_s = 0, torch_s = 0, onnxruntime_s = 0;  // 0: not measured
  std::string torch_way;
  bool conv = false;

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

int Run(const Options& options) {
  at::set_num_threads(options.threads);
  const double peak = MeasuredPeak(options.threads);
  const StatusOr<OnnxRuntimeInstall> onnxruntime = FindOnnxRuntime();
  if (onnxruntime.ok()) {
    std::printf("onnxruntime %s\n", onnxruntime->version.c_str());
  } else {
    std::printf("no onnxruntime column: %s\n", onnxruntime.status().message().c_str());
  }
  const ScratchDir scratch;
  const std::string model_file = scratch.Sub("task.onnx");
  std::vector<Row> rows;
  for (const std::string& path : options.networks) {
    StatusOr<PipelineGraph> given = LoadPipelineSource(path);
    StatusOr<PipelineSpec> tuned =
        given.ok() ? NetworkWithTileCopies(given->spec()) : StatusOr<PipelineSpec>(given.status());
    if (tuned.ok()) tuned->set_boundary_layout(options.layout);
    StatusOr<PipelineGraph> network =
        tuned.ok() ? PipelineGraph::Build(*tuned) : StatusOr<PipelineGraph>(tuned.status());
    if (!network.ok()) {
      std::fprintf(stderr, "%s: %s\n", path.c_str(), network.status().message().c_str());
      return 1;
    }
    StatusOr<NetworkPartition> partition = PartitionNetwork(*network);
    if (!partition.ok()) {
      std::fprintf(stderr, "%s\n", partition.status().message().c_str());
      return 1;
    }
    for (const DistinctTask& task : partition->distinct) {
      if (!options.only.empty() && task.summary.find(options.only) == std::string::npos) continue;
      StatusOr<PipelineGraph> graph = PipelineGraph::Build(task.spec);
      if (!graph.ok()) return 1;
      const ScheduleSpace space(*graph, HalideTargetParams(options.threads));
      StatusOr<ScheduleSpec> spec = TemplateSchedule(space);
      if (!spec.ok()) {
        // No CONV, MATMUL or POOL anchor; any other reason is reported.
        if (spec.status().message().find("no CONV, MATMUL or POOL stage") == std::string::npos) {
          std::printf("%-48s no template: %s\n", task.summary.c_str(),
                      spec.status().message().c_str());
        }
        continue;
      }
      Row row;
      row.network = network->spec().name() == "torch_jit" ? path : network->spec().name();
      row.task = task.summary;
      row.weight = task.weight();
      row.flops = graph->total_cost().flops;
      for (int s = 0; s < graph->num_stages(); ++s) {
        if (graph->stage(s).op() == CONV) row.conv = true;
      }
      if (!options.assembly_dir.empty()) {
        const Status written =
            WriteAssembly(*graph, *spec, options.assembly_dir + "/" + task.pipeline_id + ".s");
        if (!written.ok()) std::fprintf(stderr, "%s\n", written.message().c_str());
      }
      const std::vector<HostTensor> inputs = DeterministicInputs(graph->spec());
      auto failed = [&](const std::string& what, const Status& status) {
        std::fprintf(stderr, "%s: %s: %s\n", task.summary.c_str(), what.c_str(),
                     status.message().c_str());
        return 1;
      };
      StatusOr<FrozenTorchProgram> frozen = FrozenTorchProgram::Prepare(*graph, inputs);
      if (!frozen.ok()) return failed("libtorch frozen", frozen.status());
      bool with_onnxruntime = onnxruntime.ok();
      if (with_onnxruntime) {
        StatusOr<std::string> model = ExportOnnxModel(graph->spec());
        const Status written =
            model.ok() ? WriteFileAtomically(model_file, *model) : model.status();
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
              TimeOnnxRuntime(model_file, *graph, expected, options, scratch.path());
          if (onnxruntime_s.ok()) {
            KeepFastest(row.onnxruntime_s, *onnxruntime_s);
          } else {
            // A task ONNX Runtime refuses is a failed contender: the layer goes on.
            std::fprintf(stderr, "%s: %s\n", task.summary.c_str(),
                         onnxruntime_s.status().message().c_str());
            with_onnxruntime = false;
            row.onnxruntime_s = 0;
          }
        }
        StatusOr<double> template_s = TimeSchedule(*graph, *spec, inputs, expected, options);
        if (!template_s.ok()) return failed("template", template_s.status());
        KeepFastest(row.template_s, *template_s);
      }
      // The tile without layouts is 10 to 40 times slower: one round tells it.
      StatusOr<double> plain_s =
          TimeSchedule(*graph, WithoutLayouts(*spec), inputs, expected, options);
      if (!plain_s.ok()) return failed("template without layouts", plain_s.status());
      row.plain_s = *plain_s;
      const double gflops = row.flops / row.template_s / 1e9;
      std::printf(
          "%-48s w%d %7.2f MFLOP  template %7.3f ms %6.1f GFLOP/s %3.0f%% of peak  "
          "no-layouts %8.3f ms  libtorch %7.3f ms (%s)  onnxruntime %s ms  "
          "fastest/template %.2f (%s)\n",
          row.task.c_str(), row.weight, row.flops / 1e6, row.template_s * 1e3, gflops,
          peak > 0 ? 100 * gflops / peak : 0.0, row.plain_s * 1e3, row.torch_s * 1e3,
          row.torch_way.c_str(), Fixed3(row.onnxruntime_s * 1e3).c_str(),
          row.fastest_s() / row.template_s, row.fastest());
      std::fflush(stdout);
      rows.push_back(row);
    }
  }
  // Per network, then over all of them: the convolution tasks, then every task.
  std::vector<std::string> groups;
  for (const Row& r : rows) {
    if (std::find(groups.begin(), groups.end(), r.network) == groups.end())
      groups.push_back(r.network);
  }
  if (groups.size() > 1) groups.push_back("");
  for (const std::string& group : groups) {
    for (bool conv_only : {true, false}) {
      // Log-ratios over the template, FLOP-weighted: libtorch's, ONNX Runtime's (over the
      // layers it ran) and the fastest contender's per layer; the last over the tile
      // without layouts.
      double weight = 0, log_torch = 0, log_fastest = 0, log_plain = 0;
      double onnxruntime_weight = 0, log_onnxruntime = 0;
      for (const Row& r : rows) {
        if ((conv_only && !r.conv) || (!group.empty() && r.network != group)) continue;
        const double w = r.flops * r.weight;
        weight += w;
        log_torch += w * std::log(r.torch_s / r.template_s);
        log_fastest += w * std::log(r.fastest_s() / r.template_s);
        log_plain += w * std::log(r.fastest_s() / r.plain_s);
        if (r.onnxruntime_s > 0) {
          onnxruntime_weight += w;
          log_onnxruntime += w * std::log(r.onnxruntime_s / r.template_s);
        }
      }
      if (weight == 0) continue;
      const double fastest = std::exp(log_fastest / weight);
      std::printf(
          "%s, %s: FLOP-weighted geometric mean of the fastest contender / template %.3f "
          "(%.2fx the goal of 1.0); libtorch / template %.3f; onnxruntime / template %s; "
          "without layouts: fastest / tile %.3f\n",
          group.empty() ? "all networks" : group.c_str(),
          conv_only ? "convolution tasks" : "all tasks", fastest, fastest / 1.0,
          std::exp(log_torch / weight),
          Fixed3(onnxruntime_weight > 0 ? std::exp(log_onnxruntime / onnxruntime_weight) : 0)
              .c_str(),
          std::exp(log_plain / weight));
    }
  }
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  schedfarm::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--threads" || arg == "--samples" || arg == "--rounds" || arg == "--only" ||
         arg == "--assembly" || arg == "--layout") &&
        i + 1 < argc) {
      const std::string value = argv[++i];
      if (arg == "--layout") {
        const std::optional<schedfarm::BoundaryLayout> layout = schedfarm::BoundaryLayoutNamed(value);
        if (!layout) {
          std::fprintf(stderr, "conv_layer_bench: --layout '%s' is not nchw or channels_last\n",
                       value.c_str());
          return 2;
        }
        options.layout = *layout;
      } else if (arg == "--only") {
        options.only = value;
      } else if (arg == "--assembly") {
        options.assembly_dir = value;
      } else {
        (arg == "--threads"   ? options.threads
         : arg == "--samples" ? options.samples
                              : options.rounds) = std::atoi(value.c_str());
      }
    } else if (!arg.empty() && arg[0] == '-') {
      std::fprintf(stderr,
                   "usage: conv_layer_bench [--threads N] [--samples K] [--rounds R] "
                   "[--only TEXT] [--assembly DIR] [--layout nchw|channels_last] "
                   "NETWORK.onnx...\n");
      return 2;
    } else {
      options.networks.push_back(arg);
    }
  }
  if (options.threads < 1 || options.samples < 1 || options.rounds < 1) {
    std::fprintf(stderr,
                 "conv_layer_bench: --threads, --samples and --rounds must be at least 1\n");
    return 2;
  }
  if (options.networks.empty()) {
    std::fprintf(stderr, "usage: conv_layer_bench [--threads N] [--samples K] NETWORK.onnx...\n");
    return 2;
  }
  return schedfarm::Run(options);
}
