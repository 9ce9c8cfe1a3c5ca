// ONNX Runtime on a network's ONNX file as given, beside the same network as the farm's
// ONNX Runtime baseline runs it: the network a campaign times (network/tasks.h
// TimedNetwork: weights replaced by random ones of the same shapes and statistics, tile
// copies, which the writer leaves out) written by the farm's ONNX writer
// (pipeline/onnx/onnx_export.h), and, to tell the writer from the weights, the imported
// network written back with its own weights. All three in the same run, each by the
// measurement protocol of every contender (MeasureOnnxModelFile), its outputs checked
// against libtorch's on the same network; the rounds alternate them and each figure is
// its best round's median. Target: the campaign's network within 5% of the file as given.
//
// Usage: onnxruntime_export_bench [--threads 2] [--runs 30] [--rounds 3] NETWORK.onnx...
// (the networks from tests/onnx/export_torchvision.py DIR --image-size 224).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "common/files.h"
#include "common/flags.h"
#include "network/tasks.h"
#include "pipeline/graph.h"
#include "pipeline/onnx/onnx_export.h"
#include "pipeline/source/source.h"
#include "pipeline/torch/torch_eval.h"
#include "tests/support/scratch_dir.h"
#include "worker/onnxruntime/onnxruntime_baseline.h"

namespace schedfarm {
namespace {

constexpr double kTargetDeviation = 0.05;

constexpr char kUsage[] =
    "usage: onnxruntime_export_bench [--threads N] [--runs N] [--rounds N] NETWORK.onnx...\n";

struct Options {
  long long threads = 2, runs = 30, rounds = 3;
  std::vector<std::string> networks;
};

// One way of giving a network to ONNX Runtime: a model file, the pipeline it is (its
// inputs and outputs), libtorch's outputs of it and the best median so far.
struct Way {
  std::string name, model_file;
  PipelineSpec spec;
  std::vector<HostTensor> reference;
  double seconds = 0;
};

// The way of `spec` written to `model_file` by the farm's ONNX writer (or, with
// `given_file`, that file as it is).
StatusOr<Way> Prepare(const std::string& name, const PipelineSpec& spec,
                      const std::string& model_file, const std::string& given_file = "") {
  Way way{name, given_file.empty() ? model_file : given_file, spec, {}, 0};
  SCHEDFARM_ASSIGN_OR_RETURN(PipelineGraph graph, PipelineGraph::Build(spec));
  SCHEDFARM_ASSIGN_OR_RETURN(way.reference,
                             EvaluateWithTorch(graph, DeterministicInputs(graph.spec())));
  if (given_file.empty()) {
    SCHEDFARM_ASSIGN_OR_RETURN(std::string model, ExportOnnxModel(spec));
    SCHEDFARM_RETURN_IF_ERROR(WriteFileAtomically(model_file, model));
  }
  return way;
}

int Run(const Options& options) {
  const StatusOr<OnnxRuntimeInstall> install = FindOnnxRuntime();
  if (!install.ok()) {
    std::fprintf(stderr, "onnxruntime_export_bench: %s\n", install.status().message().c_str());
    return 1;
  }
  std::printf(
      "onnxruntime %s, %lld threads; each figure the median of %lld runs, the best of "
      "%lld rounds\n",
      install->version.c_str(), options.threads, options.runs, options.rounds);
  MeasurementSettings settings;
  settings.set_samples(static_cast<int>(options.runs));
  settings.set_max_samples(static_cast<int>(options.runs));
  settings.set_min_sample_seconds(1e-6);  // one run a sample: the median of runs
  settings.set_threads(static_cast<int>(options.threads));
  settings.set_run_timeout_ms(1800000);
  const ScratchDir scratch;
  for (size_t n = 0; n < options.networks.size(); ++n) {
    const std::string& path = options.networks[n];
    const std::string prefix = scratch.Sub(std::to_string(n));
    auto failed = [&](const Status& status) {
      std::fprintf(stderr, "onnxruntime_export_bench: %s: %s\n", path.c_str(),
                   status.message().c_str());
      return 1;
    };
    StatusOr<PipelineGraph> imported = LoadPipelineSource(path);
    if (!imported.ok()) return failed(imported.status());
    StatusOr<PipelineSpec> timed = TimedNetwork(imported->spec(), LAYOUT_CHANNELS_LAST);
    if (!timed.ok()) return failed(timed.status());
    std::vector<Way> ways;
    for (StatusOr<Way> way :
         {Prepare("the file as given", imported->spec(), "", path),
          Prepare("written back (its weights)", imported->spec(), prefix + "_written.onnx"),
          Prepare("the campaign's network", *timed, prefix + "_campaign.onnx")}) {
      if (!way.ok()) return failed(way.status());
      ways.push_back(*std::move(way));
    }
    for (long long round = 0; round < options.rounds; ++round) {
      for (Way& way : ways) {
        const Measurement m =
            MeasureOnnxModelFile(way.model_file, way.spec, way.reference, settings, scratch.path());
        if (m.status() != OK) return failed(Status::Error(way.name + ": " + m.error()));
        const double median = m.stats().median_seconds();
        if (way.seconds == 0 || median < way.seconds) way.seconds = median;
      }
    }
    std::printf("%s\n", path.c_str());
    for (const Way& way : ways) {
      std::printf("  %-28s %8.3f ms  %.3fx the file as given\n", way.name.c_str(),
                  way.seconds * 1e3, way.seconds / ways[0].seconds);
    }
    const double deviation = std::fabs(ways.back().seconds / ways[0].seconds - 1);
    const bool met = deviation <= kTargetDeviation;
    std::printf(
        "  the campaign's network deviates %.1f%% from the file as given: %.2fx the "
        "target of at most %.0f%% (%s)\n",
        100 * deviation, deviation / kTargetDeviation, 100 * kTargetDeviation,
        met ? "met" : "missed");
  }
  return 0;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  using namespace schedfarm;
  const Flags flags = ParseFlags(
      argc, argv, {{"--threads", true}, {"--runs", true}, {"--rounds", true}, {"--help", false}}, 1,
      /*allow_positional=*/true);
  if (flags.has("--help")) {
    std::printf("%s", kUsage);
    return 0;
  }
  Options options;
  options.networks = flags.positional;
  std::string error = flags.error;
  const bool parsed = error.empty() &&
                      IntFlag(flags, "--threads", 1, 256, 2, &options.threads, &error) &&
                      IntFlag(flags, "--runs", 1, 1000, 30, &options.runs, &error) &&
                      IntFlag(flags, "--rounds", 1, 100, 3, &options.rounds, &error);
  if (parsed && options.networks.empty()) error = "no NETWORK.onnx given";
  if (!parsed || !error.empty()) {
    std::fprintf(stderr, "onnxruntime_export_bench: %s\n%s", error.c_str(), kUsage);
    return 2;
  }
  return Run(options);
}
