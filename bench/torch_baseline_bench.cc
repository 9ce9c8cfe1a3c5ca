// The farm's libtorch baseline against torchvision's own networks run through PyTorch,
// measured in the same run: for each network, exported by
// tests/onnx/export_torchvision.py and imported, the baseline's three ways timed by
// MeasureWithTorch (worker/torch/torch_baseline.h: eager NCHW, eager channels-last, the
// frozen TorchScript module), beside torchvision's model timed by
// bench/torchvision_baseline.py (eager NCHW, eager channels-last, torch.jit.freeze and
// optimize_for_inference; inference mode, the same thread count). Each figure is the
// median of --runs runs; the rounds alternate the two sides, and each figure is its best
// round, so that a slow spell of a shared host falls on both sides. The ratio is the
// farm's best way over the faster of torchvision's channels-last and frozen runs
// (target: at most 1.1).
//
// Usage: torch_baseline_bench [--networks resnet18,mobilenet_v2] [--image-size 224]
//                             [--threads 2] [--runs 30] [--rounds 5] [--profile N]
// --profile N prints, after the rounds, torchvision's N operators of the largest self
// CPU time in each way (torch.autograd.profiler).
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/flags.h"
#include "pipeline/graph.h"
#include "pipeline/source/source.h"
#include "pipeline/torch/torch_eval.h"
#include "tests/support/proc_stats.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/shell.h"
#include "timing/run_phase.h"
#include "worker/fingerprint.h"
#include "worker/torch/torch_baseline.h"

namespace schedfarm {
namespace {

constexpr double kTargetRatio = 1.1;
constexpr char kPython[] = "/usr/bin/python3";

constexpr char kUsage[] =
    "usage: torch_baseline_bench [--networks resnet18,mobilenet_v2] [--image-size N]\n"
    "                            [--threads N] [--runs N] [--rounds N] [--profile N]\n";

struct Options {
  std::vector<std::string> networks;
  long long image_size = 224, threads = 2, runs = 30, rounds = 5, profile = 0;
};

// Seconds by side ("farm", "torchvision"), network and way: the best round's median.
using Figures = std::map<std::string, std::map<std::string, std::map<std::string, double>>>;

void Keep(Figures& figures, const std::string& side, const std::string& network,
          const std::string& way, double seconds) {
  double& best = figures[side][network][way];
  if (best == 0 || seconds < best) best = seconds;
}

// One round of the farm's baseline on `graph`: every way's median into `figures`.
Status MeasureFarm(const std::string& network, const PipelineGraph& graph,
                   const std::string& reference, const Options& options, Figures& figures) {
  SandboxJob job;
  job.set_job_id(network);
  *job.mutable_pipeline() = graph.spec();
  MeasurementSettings& s = *job.mutable_settings();
  s.set_samples(static_cast<int>(options.runs));
  s.set_max_samples(static_cast<int>(options.runs));
  s.set_min_sample_seconds(1e-6);  // one run a sample: the median of runs
  s.set_target_cv(0.03);
  s.set_threads(static_cast<int>(options.threads));
  s.set_compile_timeout_ms(600000);
  s.set_run_timeout_ms(1800000);
  const Measurement m = MeasureWithTorch(job, reference);
  for (const TorchLayoutRun& run : m.torch_layouts()) {
    if (run.status() != OK)
      return Status::Error(network + " (" + run.layout() + "): " + run.error());
    Keep(figures, "farm", network, run.layout(), run.stats().median_seconds());
  }
  return Status::Ok();
}

// One round of torchvision's runs of every network: "time NAME WAY SECONDS" lines into
// `figures`, and the profile's lines printed as they come.
Status MeasureTorchvision(const Options& options, bool profile, const ScratchDir& scratch,
                          Figures& figures) {
  std::string names;
  for (const std::string& n : options.networks) names += " " + n;
  const std::string command = std::string(kPython) + " " + TORCHVISION_BASELINE_SCRIPT + names +
                              " --threads " + std::to_string(options.threads) + " --image-size " +
                              std::to_string(options.image_size) + " --runs " +
                              std::to_string(options.runs) +
                              (profile ? " --profile " + std::to_string(options.profile) : "");
  const testing_support::ShellRun run = testing_support::RunShell(command, scratch);
  if (run.exit_code != 0) return Status::Error(command + " failed:\n" + run.output);
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string kind, network, way;
    double seconds = 0;
    fields >> kind >> network >> way;
    if (kind == "time" && fields >> seconds) Keep(figures, "torchvision", network, way, seconds);
    if (kind == "op") std::printf("  torchvision %s\n", line.c_str() + 3);
  }
  return Status::Ok();
}

std::string Milliseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", seconds * 1e3);
  return text;
}

int Run(const Options& options) {
  const HostFingerprint host = DetectHostFingerprint();
  std::printf("host: %s, %d cores; load average %s\n", host.cpu_model().c_str(), host.cores(),
              LoadAverage().c_str());
  ScratchDir scratch;
  std::string only;
  for (const std::string& n : options.networks) only += (only.empty() ? "" : ",") + n;
  const testing_support::ShellRun exported = testing_support::RunShell(
      std::string(kPython) + " " + EXPORT_TORCHVISION_SCRIPT + " " + scratch.Sub("networks") +
          " --image-size " + std::to_string(options.image_size) + " --only " + only,
      scratch);
  if (exported.exit_code != 0) {
    std::fprintf(stderr, "torch_baseline_bench: the export failed:\n%s", exported.output.c_str());
    return 1;
  }
  std::vector<PipelineGraph> graphs;
  std::vector<std::string> references;
  for (const std::string& network : options.networks) {
    const std::string path = scratch.Sub("networks/" + network + "/model.onnx");
    StatusOr<PipelineGraph> graph = LoadPipelineSource(path);
    // The eager oracle's outputs are the reference every way's warm-up is checked against.
    StatusOr<std::vector<HostTensor>> outputs =
        graph.ok() ? EvaluateWithTorch(*graph, DeterministicInputs(graph->spec()))
                   : StatusOr<std::vector<HostTensor>>(graph.status());
    if (!outputs.ok()) {
      std::fprintf(stderr, "torch_baseline_bench: %s: %s\n", path.c_str(),
                   outputs.status().message().c_str());
      return 1;
    }
    std::printf("%s: %d stages\n", network.c_str(), graph->num_stages());
    references.push_back(EncodeReference(*outputs));
    graphs.push_back(std::move(*graph));
  }

  Figures figures;
  for (long long round = 1; round <= options.rounds; ++round) {
    for (size_t i = 0; i < graphs.size(); ++i) {
      const Status farm =
          MeasureFarm(options.networks[i], graphs[i], references[i], options, figures);
      if (!farm.ok()) {
        std::fprintf(stderr, "torch_baseline_bench: %s\n", farm.message().c_str());
        return 1;
      }
    }
    const Status torchvision = MeasureTorchvision(
        options, options.profile > 0 && round == options.rounds, scratch, figures);
    if (!torchvision.ok()) {
      std::fprintf(stderr, "torch_baseline_bench: %s\n", torchvision.message().c_str());
      return 1;
    }
    std::printf("round %lld of %lld done; load average %s\n", round, options.rounds,
                LoadAverage().c_str());
    std::fflush(stdout);
  }

  std::printf(
      "\n%lldx%lld, batch 1, %lld threads; each figure the median of %lld runs, the "
      "best of %lld rounds\n",
      options.image_size, options.image_size, options.threads, options.runs, options.rounds);
  for (const std::string& network : options.networks) {
    const std::map<std::string, double>& farm = figures["farm"][network];
    std::map<std::string, double>& torchvision = figures["torchvision"][network];
    auto best = [](const std::map<std::string, double>& ways) {
      auto fastest = ways.begin();
      for (auto it = ways.begin(); it != ways.end(); ++it) {
        if (it->second < fastest->second) fastest = it;
      }
      return *fastest;
    };
    const auto [farm_way, farm_seconds] = best(farm);
    const auto [torchvision_way, torchvision_seconds] =
        best({{"channels_last", torchvision["channels_last"]}, {"frozen", torchvision["frozen"]}});
    std::printf("%s\n", network.c_str());
    for (const char* side : {"farm", "torchvision"}) {
      std::printf("  %-12s", side);
      for (const auto& [way, seconds] : figures[side][network]) {
        std::printf("  %s %s", way.c_str(), Milliseconds(seconds).c_str());
      }
      std::printf("\n");
    }
    const double ratio = farm_seconds / torchvision_seconds;
    std::printf(
        "  farm's best (%s %s) / torchvision's best of channels_last and frozen (%s %s): "
        "%.3f, %.2fx the target of at most %.1f (%s)\n",
        farm_way.c_str(), Milliseconds(farm_seconds).c_str(), torchvision_way.c_str(),
        Milliseconds(torchvision_seconds).c_str(), ratio, ratio / kTargetRatio, kTargetRatio,
        ratio <= kTargetRatio ? "met" : "missed");
  }
  std::printf("load average at the end %s\n", LoadAverage().c_str());
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  using namespace schedfarm;
  const Flags flags = ParseFlags(argc, argv,
                                 {{"--networks", true},
                                  {"--image-size", true},
                                  {"--threads", true},
                                  {"--runs", true},
                                  {"--rounds", true},
                                  {"--profile", true},
                                  {"--help", false}});
  if (flags.has("--help")) {
    std::printf("%s", kUsage);
    return 0;
  }
  Options options;
  options.networks = SplitFlagList(flags.get("--networks", "resnet18,mobilenet_v2"));
  std::string error = flags.error;
  const bool parsed = error.empty() &&
                      IntFlag(flags, "--image-size", 32, 1024, 224, &options.image_size, &error) &&
                      IntFlag(flags, "--threads", 1, 256, 2, &options.threads, &error) &&
                      IntFlag(flags, "--runs", 1, 1000, 30, &options.runs, &error) &&
                      IntFlag(flags, "--rounds", 1, 100, 5, &options.rounds, &error) &&
                      IntFlag(flags, "--profile", 0, 100, 0, &options.profile, &error);
  for (const std::string& network : options.networks) {
    if (error.empty() && network != "resnet18" && network != "mobilenet_v2") {
      error = "--networks: '" + network + "' is not resnet18 or mobilenet_v2";
    }
  }
  if (!parsed || !error.empty()) {
    std::fprintf(stderr, "torch_baseline_bench: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  return Run(options);
}
