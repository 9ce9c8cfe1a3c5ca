// The per-layer benchmark of fast kernels (docs/SCHEDULES.md, "Templates"): for every
// distinct task of the networks given whose anchor is a convolution, a depthwise
// convolution or a matmul, the template schedule's time beside the same tile without
// layouts (the space before storage layouts and packed weights) and libtorch's at its
// best (the faster of NCHW and channels-last), with GFLOP/s and the share of this host's
// fp32 peak measured in the same run (timing/peak.h), and the FLOP-weighted geometric
// mean of libtorch's time over the template's (goal: at least 1.0). Every schedule's
// outputs are checked against libtorch's before it is timed.
//
// Usage: conv_layer_bench [--threads N] [--samples K] [--rounds R] [--only TEXT]
//                         [--assembly DIR] [--layout nchw|channels_last] NETWORK.onnx...
// Each layer is timed in R rounds (default 3), each round libtorch in both layouts then
// the template, K samples each (default 7); a time is the fastest of all its samples,
// so that a slow spell of a shared host falls on both sides of a ratio. --only keeps
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
#include "network/tasks.h"
#include "pipeline/halide/jit_target.h"
#include "pipeline/halide/lowering.h"
#include "pipeline/source/source.h"
#include "pipeline/spec.h"
#include "pipeline/torch/torch_eval.h"
#include "scheduler/autoschedule/autoschedulers.h"
#include "scheduler/halide/apply.h"
#include "scheduler/templates.h"
#include "timing/peak.h"

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
  double template_s = 0, plain_s = 0, torch_s = 0;
  std::string torch_layout;
  bool conv = false;
};

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

StatusOr<double> TimeTorch(TorchProgram& program, const Options& options) {
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

int Run(const Options& options) {
  at::set_num_threads(options.threads);
  const double peak = MeasuredPeak(options.threads);
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
        // No CONV or MATMUL anchor; any other reason is reported.
        if (spec.status().message().find("no CONV or MATMUL stage") == std::string::npos) {
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
      std::vector<HostTensor> expected;
      for (int round = 0; round < options.rounds; ++round) {
        // libtorch at its best: the faster of the two layouts.
        for (TorchLayout layout : {TorchLayout::kAsImported, TorchLayout::kChannelsLast}) {
          StatusOr<TorchProgram> program = TorchProgram::Prepare(*graph, inputs, layout);
          StatusOr<double> seconds =
              program.ok() ? TimeTorch(*program, options) : StatusOr<double>(program.status());
          if (!seconds.ok()) {
            std::fprintf(stderr, "%s: libtorch %s: %s\n", task.summary.c_str(),
                         TorchLayoutName(layout), seconds.status().message().c_str());
            return 1;
          }
          if (expected.empty()) expected = program->Outputs();
          if (row.torch_s == 0 || *seconds < row.torch_s) {
            row.torch_s = *seconds;
            row.torch_layout = TorchLayoutName(layout);
          }
        }
        StatusOr<double> template_s = TimeSchedule(*graph, *spec, inputs, expected, options);
        if (!template_s.ok()) {
          std::fprintf(stderr, "%s: %s\n", task.summary.c_str(),
                       template_s.status().message().c_str());
          return 1;
        }
        if (round == 0 || *template_s < row.template_s) row.template_s = *template_s;
      }
      // The tile without layouts is 10 to 40 times slower: one round tells it.
      StatusOr<double> plain_s =
          TimeSchedule(*graph, WithoutLayouts(*spec), inputs, expected, options);
      if (!plain_s.ok()) {
        std::fprintf(stderr, "%s: %s\n", task.summary.c_str(), plain_s.status().message().c_str());
        return 1;
      }
      row.plain_s = *plain_s;
      const double gflops = row.flops / row.template_s / 1e9;
      std::printf(
          "%-48s w%d %7.2f MFLOP  template %7.3f ms %6.1f GFLOP/s %3.0f%% of peak  "
          "no-layouts %8.3f ms  libtorch %7.3f ms (%s)  libtorch/template %.2f\n",
          row.task.c_str(), row.weight, row.flops / 1e6, row.template_s * 1e3, gflops,
          peak > 0 ? 100 * gflops / peak : 0.0, row.plain_s * 1e3, row.torch_s * 1e3,
          row.torch_layout.c_str(), row.torch_s / row.template_s);
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
      double weight = 0, log_sum = 0, log_plain = 0;
      for (const Row& r : rows) {
        if ((conv_only && !r.conv) || (!group.empty() && r.network != group)) continue;
        const double w = r.flops * r.weight;
        weight += w;
        log_sum += w * std::log(r.torch_s / r.template_s);
        log_plain += w * std::log(r.torch_s / r.plain_s);
      }
      if (weight == 0) continue;
      const double ratio = std::exp(log_sum / weight);
      std::printf(
          "%s, %s: FLOP-weighted geometric mean of libtorch / template %.3f (%.2fx the "
          "goal of 1.0); without layouts %.3f\n",
          group.empty() ? "all networks" : group.c_str(),
          conv_only ? "convolution tasks" : "all tasks", ratio, ratio / 1.0,
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
