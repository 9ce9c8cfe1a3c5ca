// random_pipeline_check: checks the Halide lowering against the libtorch oracle on a
// range of random pipelines, one line per pipeline and a summary line. Each pipeline
// runs in a child process, so a crash or a hang is reported as that pipeline's
// failure and the sweep goes on. Run by ops/check_random_pipelines.sh.
//
// A mismatch is diagnosed against the same pipeline evaluated in float64 (inputs and
// parameters rounded to float32 first): if the float32 oracle is itself off from
// the float64 result by at least a tenth of Halide's deviation, the mismatch is
// float32 ill-conditioning of the pipeline rather than a lowering error; the line
// says which, with both deviations.
//
// Usage: random_pipeline_check [--first-seed S] [--count N] [--max-ops N]
//          [--max-elements N] [--max-flops F] [--math exact|pade|mixed] [--timeout S]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/spec.h"
#include "pipeline/tensor.h"
#include "pipeline/torch/torch_eval.h"
#include "tests/support/run_in_child.h"

namespace schedfarm {
namespace {

struct Flags {
  uint64_t first_seed = 1;
  int count = 300;
  RandomPipelineOptions options;
  std::string math = "mixed";  // exact, pade, or mixed (odd seeds Padé)
  int timeout_seconds = 300;
};

// What the child reports about one pipeline.
struct Outcome {
  bool pass = false;
  bool ill_conditioned = false;  // on failure: the float32 oracle deviates comparably
  double compile_seconds = 0;
  double run_ms = 0;
  double max_abs_error = 0;
  char message[768] = {};
};

void Usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--first-seed S] [--count N] [--max-ops N] [--max-elements N]\n"
               "          [--max-flops F] [--math exact|pade|mixed] [--timeout S]\n",
               argv0);
}

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    char* end = nullptr;
    if (arg == "--first-seed") {
      flags.first_seed = std::strtoull(value, &end, 10);
    } else if (arg == "--count") {
      flags.count = static_cast<int>(std::strtol(value, &end, 10));
    } else if (arg == "--max-ops") {
      flags.options.max_ops = static_cast<int>(std::strtol(value, &end, 10));
    } else if (arg == "--max-elements") {
      flags.options.max_elements = std::strtoll(value, &end, 10);
    } else if (arg == "--max-flops") {
      flags.options.max_flops = std::strtod(value, &end);
    } else if (arg == "--timeout") {
      flags.timeout_seconds = static_cast<int>(std::strtol(value, &end, 10));
    } else if (arg == "--math") {
      flags.math = value;
      if (flags.math != "exact" && flags.math != "pade" && flags.math != "mixed") return false;
      continue;
    } else {
      return false;
    }
    if (end == value || *end != '\0') return false;
  }
  return flags.count >= 0 && flags.timeout_seconds > 0;
}

void SetMessage(Outcome& outcome, const std::string& message) {
  std::snprintf(outcome.message, sizeof(outcome.message), "%s", message.c_str());
}

// `spec` in float64, with the float32 values of its inputs' dtype rounding kept:
// parameters become raw float64 data of their materialized (rounded) values.
StatusOr<PipelineGraph> Float64Graph(const PipelineSpec& spec) {
  PipelineSpec f64 = spec;
  for (TensorDecl& input : *f64.mutable_inputs()) input.set_dtype(FLOAT64);
  for (Parameter& param : *f64.mutable_parameters()) {
    SCHEDFARM_ASSIGN_OR_RETURN(HostTensor values, MaterializeParameter(param));
    std::string raw(values.data.size() * sizeof(double), '\0');
    std::memcpy(raw.data(), values.data.data(), raw.size());
    param.mutable_tensor()->set_dtype(FLOAT64);
    param.set_raw_data(std::move(raw));
  }
  for (Stage& stage : *f64.mutable_stages()) stage.set_dtype(FLOAT64);
  return PipelineGraph::Build(std::move(f64));
}

double MaxAbsDifference(const HostTensor& a, const HostTensor& b) {
  double result = 0;
  for (size_t i = 0; i < a.data.size() && i < b.data.size(); ++i) {
    result = std::max(result, std::fabs(a.data[i] - b.data[i]));
  }
  return result;
}

// Appends to the failure message how far Halide and the float32 oracle are from the
// float64 oracle, and marks the failure as ill-conditioning when they are comparable.
void DiagnoseAgainstFloat64(const PipelineGraph& graph, const std::vector<HostTensor>& inputs,
                            const std::vector<HostTensor>& halide,
                            const std::vector<HostTensor>& torch, Outcome& outcome) {
  if (graph.spec().stages(0).dtype() != FLOAT32) return;
  StatusOr<PipelineGraph> f64 = Float64Graph(graph.spec());
  if (!f64.ok()) return;
  std::vector<HostTensor> inputs64 = inputs;
  for (HostTensor& t : inputs64) t.dtype = FLOAT64;
  StatusOr<std::vector<HostTensor>> exact = EvaluateWithTorch(*f64, inputs64);
  if (!exact.ok()) return;
  double halide_error = 0, torch_error = 0;
  for (size_t i = 0; i < exact->size(); ++i) {
    halide_error = std::max(halide_error, MaxAbsDifference(halide[i], (*exact)[i]));
    torch_error = std::max(torch_error, MaxAbsDifference(torch[i], (*exact)[i]));
  }
  outcome.ill_conditioned = torch_error >= 0.1 * halide_error;
  char note[160];
  std::snprintf(note, sizeof(note), " [vs float64: halide %.3g, torch f32 %.3g: %s]", halide_error,
                torch_error,
                outcome.ill_conditioned ? "float32 ill-conditioning" : "lowering suspect");
  SetMessage(outcome, outcome.message + std::string(note));
}

// Compiles and runs `graph` with Halide, evaluates it with libtorch, compares.
Outcome Check(const PipelineGraph& graph) {
  Outcome outcome;
  const std::vector<HostTensor> inputs = DeterministicInputs(graph.spec());
  RunOptions options;
  options.timing_samples = 3;
  StatusOr<RunResult> halide = RunReference(graph, options, inputs);
  if (!halide.ok()) {
    SetMessage(outcome, "halide: " + halide.status().message());
    return outcome;
  }
  outcome.compile_seconds = halide->compile_seconds;
  outcome.run_ms = halide->median_seconds * 1e3;
  StatusOr<std::vector<HostTensor>> torch = EvaluateWithTorch(graph, inputs);
  if (!torch.ok()) {
    SetMessage(outcome, "torch: " + torch.status().message());
    return outcome;
  }
  if (torch->size() != halide->outputs.size()) {
    SetMessage(outcome, "output counts differ");
    return outcome;
  }
  outcome.pass = true;
  for (size_t i = 0; i < torch->size(); ++i) {
    const Comparison c =
        CompareTensors(halide->outputs[i], (*torch)[i], DefaultTolerance((*torch)[i].dtype));
    outcome.max_abs_error = std::max(outcome.max_abs_error, c.max_abs_error);
    if (!c.match && outcome.pass) {
      outcome.pass = false;
      SetMessage(outcome,
                 "output '" + graph.spec().outputs(static_cast<int>(i)) + "': " + c.message);
    }
  }
  if (!outcome.pass) DiagnoseAgainstFloat64(graph, inputs, halide->outputs, *torch, outcome);
  return outcome;
}

// Runs Check in a child process with a time limit; crashes and timeouts are failures.
Outcome CheckInChild(const PipelineGraph& graph, int timeout_seconds) {
  Outcome outcome;
  std::string failure;
  if (!testing_support::RunInChild(
          timeout_seconds, [&] { return Check(graph); }, &outcome, &failure)) {
    outcome = Outcome();
    SetMessage(outcome, failure);
  }
  return outcome;
}

int Main(int argc, char** argv) {
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) {
    Usage(argv[0]);
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  int passed = 0, failed = 0, ill_conditioned = 0;
  double compile_total = 0;
  std::vector<std::string> failures;
  for (int k = 0; k < flags.count; ++k) {
    const uint64_t seed = flags.first_seed + static_cast<uint64_t>(k);
    RandomPipelineOptions options = flags.options;
    options.math = flags.math == "pade" || (flags.math == "mixed" && seed % 2 == 1) ? PADE : EXACT;
    std::string line = "seed " + std::to_string(seed);
    Outcome outcome;
    StatusOr<PipelineSpec> spec = RandomPipeline(seed, options);
    StatusOr<PipelineGraph> graph =
        spec.ok() ? PipelineGraph::Build(*spec) : StatusOr<PipelineGraph>(spec.status());
    char buffer[256];
    if (!graph.ok()) {
      SetMessage(outcome, "generator: " + graph.status().message());
      line += "  stages -  id -";
    } else {
      outcome = CheckInChild(*graph, flags.timeout_seconds);
      std::snprintf(buffer, sizeof(buffer), "  stages %3d  id %s  %s", graph->num_stages(),
                    PipelineId(*graph).substr(0, 12).c_str(),
                    options.math == PADE ? "pade " : "exact");
      line += buffer;
    }
    std::snprintf(buffer, sizeof(buffer), "  compile %6.2f s  run %9.3f ms  max abs err %9.3g  %s",
                  outcome.compile_seconds, outcome.run_ms, outcome.max_abs_error,
                  outcome.pass ? "PASS" : "FAIL");
    line += buffer;
    if (!outcome.pass) {
      line += std::string("  ") + outcome.message;
      failures.push_back(line);
    }
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
    compile_total += outcome.compile_seconds;
    (outcome.pass ? passed : failed) += 1;
    ill_conditioned += outcome.ill_conditioned;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("total %.1f s (compile %.1f s)\n", seconds, compile_total);
  if (!failures.empty()) {
    std::printf("failures:\n");
    for (const std::string& f : failures) std::printf("  %s\n", f.c_str());
  }
  if (failed > 0) {
    std::printf("%d of the failures are float32 ill-conditioning, %d suspect the lowering\n",
                ill_conditioned, failed - ill_conditioned);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) { return schedfarm::Main(argc, argv); }
