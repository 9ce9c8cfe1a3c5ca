// random_schedule_check: the large run of the random-schedule contract. For COUNT
// random legal schedules (ScheduleSpace::RandomSchedule) of zoo blocks at half size
// and random pipelines, checks that the loop nest Halide builds agrees with the space
// and that the scheduled run computes the reference outputs; prints one line per
// schedule, the distributions of compile and run times, the failures grouped by
// cause, and "N passed, M failed". Each schedule runs in a child process with a time
// limit, so a crash or a hang is that schedule's failure. Run by
// ops/check_random_schedules.sh.
//
// Usage: random_schedule_check [--count N] [--first-pipeline P] [--per-pipeline K]
//          [--pipelines zoo|random|mixed] [--threads T] [--samples S] [--timeout S]
//          [--source 1] [--schedule FILE] [--random-limits OPS,ELEMENTS,FLOPS]
//          [--layout nchw|channels_last] [--network FILE]... [--fusion none|blocks]
// A failure names its pipeline's number P: --first-pipeline P --count K reruns it and
// the schedules before it on that pipeline; --source 1 prints the Halide source of
// each failed schedule (scheduler/schedule_source.h) and its ScheduleSpec as text;
// --schedule FILE checks that text (edited, say, to reduce a failure) on pipeline P
// instead of random schedules (an edit the space calls illegal fails as such).
// --random-limits sets the random pipelines' generator limits (default 12,32768,2e7;
// the dataset campaign's are 8,262144,1e8); --layout channels_last stores every
// pipeline's 4-D inputs and outputs channels innermost (PipelineSpec.boundary_layout).
// --network FILE (an ONNX model or any pipeline source; repeatable) checks the distinct
// tasks of the networks instead (TunedNetwork, split as a network campaign splits it,
// in the given layout, with fused tasks under --fusion blocks), each first under its
// templates (scheduler/templates.h, TemplateSchedules), then under random schedules.

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/files.h"
#include "google/protobuf/text_format.h"
#include "network/tasks.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/source/source.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_source.h"
#include "scheduler/schedule_space.h"
#include "scheduler/templates.h"
#include "tests/scheduler/halide/schedule_checks.h"
#include "tests/support/run_in_child.h"

namespace schedfarm {
namespace {

struct Flags {
  int count = 1000;
  int first_pipeline = 0;
  int per_pipeline = 4;
  std::string pipelines = "mixed";  // zoo, random, or mixed (every third a zoo block)
  BoundaryLayout layout = LAYOUT_NATURAL;  // of every pipeline's 4-D inputs and outputs
  NetworkFusion fusion = FUSION_NONE;      // how --network splits a network into tasks
  int threads = 2;
  int samples = 3;
  int timeout_seconds = 300;
  bool source = false;           // print the Halide source of each failed schedule
  std::string schedule_file;     // a text ScheduleSpec to check instead of random ones
  RandomPipelineOptions random;  // limits of the random pipelines
  std::vector<std::string> networks;  // whose distinct tasks are the pipelines
};

void Usage(const char* argv0) {
  std::fprintf(
      stderr,
      "usage: %s [--count N] [--first-pipeline P] [--per-pipeline K]\n"
      "          [--pipelines zoo|random|mixed] [--threads T] [--samples S]"
      " [--timeout S]\n"
      "          [--source 0|1] [--schedule FILE]"
      " [--random-limits OPS,ELEMENTS,FLOPS]\n"
      "          [--layout nchw|channels_last] [--network FILE]... [--fusion none|blocks]\n",
      argv0);
}

bool ParseFlags(int argc, char** argv, Flags& flags) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[++i];
    if (arg == "--schedule") {
      flags.schedule_file = value;
      continue;
    }
    if (arg == "--network") {
      flags.networks.push_back(value);
      continue;
    }
    if (arg == "--fusion") {
      if (std::strcmp(value, "none") != 0 && std::strcmp(value, "blocks") != 0) return false;
      flags.fusion = std::strcmp(value, "blocks") == 0 ? FUSION_BLOCKS : FUSION_NONE;
      continue;
    }
    if (arg == "--random-limits") {
      if (std::sscanf(value, "%d,%" SCNd64 ",%lf", &flags.random.max_ops,
                      &flags.random.max_elements, &flags.random.max_flops) != 3) {
        return false;
      }
      continue;
    }
    if (arg == "--layout") {
      const std::optional<BoundaryLayout> layout = BoundaryLayoutNamed(value);
      if (!layout) return false;
      flags.layout = *layout;
      continue;
    }
    if (arg == "--pipelines") {
      flags.pipelines = value;
      if (flags.pipelines != "zoo" && flags.pipelines != "random" && flags.pipelines != "mixed") {
        return false;
      }
      continue;
    }
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    if (end == value || *end != '\0' || n < 0) return false;
    if (arg == "--count") {
      flags.count = static_cast<int>(n);
    } else if (arg == "--first-pipeline") {
      flags.first_pipeline = static_cast<int>(n);
    } else if (arg == "--per-pipeline") {
      flags.per_pipeline = static_cast<int>(n);
    } else if (arg == "--threads") {
      flags.threads = static_cast<int>(n);
    } else if (arg == "--samples") {
      flags.samples = static_cast<int>(n);
    } else if (arg == "--timeout") {
      flags.timeout_seconds = static_cast<int>(n);
    } else if (arg == "--source" && n <= 1) {
      flags.source = n == 1;
    } else {
      return false;
    }
  }
  return flags.per_pipeline > 0 && flags.timeout_seconds > 0;
}

// Pipeline number p of the sweep: its display name, its spec, and how many times the
// same pipeline came before (zoo blocks repeat; each repeat takes fresh schedules).
struct PipelineCase {
  std::string name;
  StatusOr<PipelineSpec> spec = Status::Error("unset");
  int round = 0;
};

// The distinct tasks of `flags.networks` in order of first occurrence, or why a network
// cannot be read or split.
StatusOr<std::vector<DistinctTask>> NetworkTasks(const Flags& flags) {
  std::vector<DistinctTask> tasks;
  std::set<std::string> seen;
  for (const std::string& path : flags.networks) {
    StatusOr<PipelineGraph> given = LoadPipelineSource(path);
    StatusOr<PipelineSpec> tuned =
        given.ok() ? TunedNetwork(given->spec()) : StatusOr<PipelineSpec>(given.status());
    if (tuned.ok()) tuned->set_boundary_layout(flags.layout);
    StatusOr<PipelineGraph> network =
        tuned.ok() ? PipelineGraph::Build(*tuned) : StatusOr<PipelineGraph>(tuned.status());
    StatusOr<NetworkPartition> partition = network.ok()
                                               ? PartitionNetwork(*network, flags.fusion)
                                               : StatusOr<NetworkPartition>(network.status());
    if (!partition.ok()) return partition.status().WithContext(path);
    for (DistinctTask& task : partition->distinct) {
      if (seen.insert(task.pipeline_id).second) tasks.push_back(std::move(task));
    }
  }
  return tasks;
}

PipelineCase MakePipeline(const Flags& flags, const std::vector<DistinctTask>& tasks, int p) {
  const std::vector<std::string> zoo = ZooNames();
  PipelineCase c;
  if (!flags.networks.empty()) {
    const int t = p % static_cast<int>(tasks.size());
    c.name = "task:" + std::to_string(t);
    c.round = p / static_cast<int>(tasks.size());
    c.spec = tasks[t].spec;
    return c;
  }
  const bool use_zoo = flags.pipelines == "zoo" || (flags.pipelines == "mixed" && p % 3 == 0);
  if (use_zoo) {
    const int z = flags.pipelines == "zoo" ? p : p / 3;
    c.name = zoo[z % zoo.size()];
    c.round = z / static_cast<int>(zoo.size());
    c.spec = schedule_checks::ZooBlock(c.name);
  } else {
    const uint64_t seed =
        1 + static_cast<uint64_t>(flags.pipelines == "random" ? p : p - p / 3 - 1);
    c.name = "random:" + std::to_string(seed);
    c.spec = RandomPipeline(seed, flags.random);
  }
  if (c.spec.ok()) c.spec->set_boundary_layout(flags.layout);
  return c;
}

// What the child reports about one schedule.
struct Outcome {
  bool pass = false;
  double seconds = 0;  // the whole check: lowering, loop nest, compile, runs
  double compile_seconds = 0;
  double run_seconds = 0;
  double max_abs_error = 0;
  char message[1024] = {};
};

// Keeps the message on one line (Halide's errors span several).
void SetMessage(Outcome& outcome, const std::string& message) {
  std::string line;
  for (char c : message) {
    if (c != '\n') {
      line += c;
    } else if (!line.empty() && line.back() != ' ') {
      line += ' ';
    }
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  std::snprintf(outcome.message, sizeof(outcome.message), "%s", line.c_str());
}

Outcome Check(const ScheduleSpace& space, const ScheduleSpec& spec,
              const std::vector<HostTensor>& reference, const Flags& flags) {
  Outcome outcome;
  const std::vector<std::string> differences = schedule_checks::CheckLoopNest(space, spec);
  if (!differences.empty()) {
    SetMessage(outcome, "loop nest differs from the space (" + std::to_string(differences.size()) +
                            "): " + differences[0]);
    return outcome;
  }
  RunOptions options;
  options.timing_samples = flags.samples;
  options.threads = flags.threads;
  const schedule_checks::RunOutcome run =
      schedule_checks::RunAndCompare(space, spec, reference, options);
  outcome.pass = run.pass;
  outcome.compile_seconds = run.compile_seconds;
  outcome.run_seconds = run.run_seconds;
  outcome.max_abs_error = run.max_abs_error;
  SetMessage(outcome, run.message);
  return outcome;
}

// Runs Check in a child process with a time limit; crashes and timeouts are failures.
Outcome CheckInChild(const ScheduleSpace& space, const ScheduleSpec& spec,
                     const std::vector<HostTensor>& reference, const Flags& flags) {
  Outcome outcome;
  std::string failure;
  const auto check = [&] {
    const auto start = std::chrono::steady_clock::now();
    Outcome result = Check(space, spec, reference, flags);
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  if (!testing_support::RunInChild(flags.timeout_seconds, check, &outcome, &failure)) {
    outcome = Outcome();
    SetMessage(outcome, failure);
  }
  return outcome;
}

// "min a  median b  p90 c  max d" of `values` scaled by `scale`.
std::string Distribution(std::vector<double> values, double scale) {
  if (values.empty()) return "none";
  std::sort(values.begin(), values.end());
  const auto at = [&](double q) {
    return values[std::min(values.size() - 1, static_cast<size_t>(q * (values.size() - 1) + 0.5))] *
           scale;
  };
  char buffer[160];
  std::snprintf(buffer, sizeof(buffer), "min %.3g  median %.3g  p90 %.3g  max %.3g  (n %zu)", at(0),
                at(0.5), at(0.9), at(1), values.size());
  return buffer;
}

// The cause of a failure without its numbers and quoted names, to group failures.
std::string Cause(const std::string& message) {
  std::string cause;
  bool quoted = false;
  for (char c : message) {
    if (c == '\'') {
      quoted = !quoted;
      if (quoted) cause += "'*'";
    } else if (quoted) {
      continue;
    } else if (c >= '0' && c <= '9') {
      if (cause.empty() || cause.back() != '#') cause += '#';
    } else {
      cause += c;
    }
    if (cause.size() >= 80) break;
  }
  return cause;
}

int Main(int argc, char** argv) {
  Flags flags;
  flags.random = schedule_checks::RandomPipelineCaseOptions();
  if (!ParseFlags(argc, argv, flags)) {
    Usage(argv[0]);
    return 2;
  }
  ScheduleSpec given;
  if (!flags.schedule_file.empty()) {
    const StatusOr<std::string> text = ReadFileBytes(flags.schedule_file);
    if (!text.ok() || !google::protobuf::TextFormat::ParseFromString(*text, &given)) {
      std::fprintf(stderr, "%s: not a text ScheduleSpec\n", flags.schedule_file.c_str());
      return 2;
    }
    flags.count = 1;
  }
  StatusOr<std::vector<DistinctTask>> tasks = NetworkTasks(flags);
  if (!tasks.ok() || (!flags.networks.empty() && tasks->empty())) {
    std::fprintf(stderr, "%s\n",
                 tasks.ok() ? "the networks have no tasks" : tasks.status().ToString().c_str());
    return 2;
  }
  for (size_t t = 0; t < tasks->size(); ++t) {
    std::printf("task:%zu  %s\n", t, (*tasks)[t].summary.c_str());
  }
  const auto start = std::chrono::steady_clock::now();
  int passed = 0, failed = 0;
  std::vector<double> check_seconds, compile_seconds, run_seconds;
  std::vector<std::string> failures;
  std::map<std::string, int> causes;
  int done = 0;
  for (int p = flags.first_pipeline; done < flags.count; ++p) {
    const PipelineCase pipeline = MakePipeline(flags, *tasks, p);
    const int schedules = std::min(flags.per_pipeline, flags.count - done);
    StatusOr<PipelineGraph> graph = pipeline.spec.ok()
                                        ? PipelineGraph::Build(*pipeline.spec)
                                        : StatusOr<PipelineGraph>(pipeline.spec.status());
    StatusOr<RunResult> reference = Status::Error("no graph");
    if (graph.ok()) {
      RunOptions options;
      options.timing_samples = 0;
      options.threads = 1;  // the reference has no parallel loop: no pool in the parent
      reference = RunReference(*graph, options);
    }
    for (int k = 0; k < schedules; ++k, ++done) {
      char buffer[512];
      std::string line;
      Outcome outcome;
      std::string failed_source;
      if (!graph.ok() || !reference.ok()) {
        SetMessage(outcome,
                   "pipeline: " + (graph.ok() ? reference.status() : graph.status()).message());
        std::snprintf(buffer, sizeof(buffer), "#%-5d %-34s", done, pipeline.name.c_str());
        line = buffer;
      } else {
        const ScheduleSpace space(*graph);
        // A network task's first schedules are its templates, where it has them.
        std::vector<ScheduleSpec> templates;
        if (!flags.networks.empty() && pipeline.round == 0) templates = TemplateSchedules(space);
        const ScheduleSpec spec =
            !flags.schedule_file.empty() ? given
            : k < static_cast<int>(templates.size())
                ? templates[k]
                : space.RandomSchedule(schedule_checks::ScheduleSeed(
                      graph->spec().name(), k + flags.per_pipeline * pipeline.round));
        outcome = CheckInChild(space, spec, reference->outputs, flags);
        if (!outcome.pass && flags.source) {
          const StatusOr<std::string> source = ScheduleSource(*graph, spec);
          failed_source = "\n" + (source.ok() ? *source : source.status().message()) + "\n" +
                          spec.DebugString();
        }
        std::snprintf(buffer, sizeof(buffer), "#%-5d %-24s stages %3d  schedule %s", done,
                      pipeline.name.c_str(), graph->num_stages(),
                      ScheduleHash(space, spec).substr(0, 12).c_str());
        line = buffer;
      }
      std::snprintf(buffer, sizeof(buffer),
                    "  %6.1f s  compile %6.2f s  run %9.3f ms  max abs err %9.3g  %s",
                    outcome.seconds, outcome.compile_seconds, outcome.run_seconds * 1e3,
                    outcome.max_abs_error, outcome.pass ? "PASS" : "FAIL");
      line += buffer;
      check_seconds.push_back(outcome.seconds);
      if (outcome.pass) {
        ++passed;
        compile_seconds.push_back(outcome.compile_seconds);
        run_seconds.push_back(outcome.run_seconds);
      } else {
        ++failed;
        line += "  [pipeline " + std::to_string(p) + "] " + outcome.message;
        failures.push_back(line);
        line += failed_source;
        ++causes[Cause(outcome.message)];
      }
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("total %.1f s\n", seconds);
  std::printf("check s (all: lower, loop nest, compile, runs): %s\n",
              Distribution(check_seconds, 1).c_str());
  std::printf("compile s (passed): %s\n", Distribution(compile_seconds, 1).c_str());
  std::printf("run ms (passed, median of %d samples, %d threads): %s\n", flags.samples,
              flags.threads, Distribution(run_seconds, 1e3).c_str());
  if (!failures.empty()) {
    std::printf("failures by cause:\n");
    for (const auto& [cause, n] : causes) std::printf("  %5d  %s\n", n, cause.c_str());
    std::printf("failures:\n");
    for (const std::string& f : failures) std::printf("  %s\n", f.c_str());
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) { return schedfarm::Main(argc, argv); }
