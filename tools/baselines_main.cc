// farm-baselines: Halide 14's autoschedulers (Adams2019, Li2018, Mullapudi2016) on
// pipelines, timed with the farm's harness against the reference schedule: the
// yardstick the farm's search is measured against. Per pipeline it prints the
// reference time, and per autoscheduler its time, speedup, autoscheduling time,
// correctness and how much of its schedule the schedule space can express.
//
// Exit codes: 0 success (wrong answers, schedules Halide cannot compile or run, and
// autoscheduler failures are results shown in the table), 1 a pipeline that cannot be
// built or whose reference run fails, 2 bad arguments.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "common/flags.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/source/source.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"
#include "scheduler/autoschedule/autoschedulers.h"
#include "scheduler/autoscheduler_names.h"
#include "tools/text_table.h"

namespace schedfarm {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage: farm-baselines [OPTIONS] SOURCE...\n"
    "\n"
    "SOURCE is one of:\n"
    "  zoo                  every model zoo block\n"
    "  zoo:NAME or NAME     a model zoo block\n"
    "  random:SEED          a random pipeline of the generator\n"
    "  FILE.yaml, FILE.yml  a pipeline in YAML\n"
    "  FILE.onnx            an ONNX model\n"
    "  FILE.pb              a binary PipelineSpec\n"
    "\n"
    "OPTIONS:\n"
    "  --threads T            cores for the autoschedulers and Halide's thread pool\n"
    "                         (default: all of this machine's)\n"
    "  --samples N            timed runs per schedule after one warm-up (default 5)\n"
    "  --min-sample-seconds S repeat each sample until it lasts S seconds (default 0)\n"
    "  --autoschedulers LIST  comma-separated subset of adams2019,li2018,mullapudi2016\n"
    "  --beam-size B          Adams2019's beam width (default 32, Halide's)\n"
    "  --spatial-scale X      multiplies the default spatial size (zoo blocks)\n"
    "  --channel-scale X      multiplies the default channel counts (zoo blocks)\n"
    "  --details              also print each schedule source and what the schedule\n"
    "                         space leaves out of it\n";

[[noreturn]] void UsageError(const std::string& message) {
  std::cerr << "farm-baselines: " << message << "\n\n" << kUsage;
  std::exit(kExitUsage);
}

struct Args {
  int threads = 0;
  RunOptions run;
  std::vector<std::string> autoschedulers = AutoschedulerNames();
  int beam_size = 32;
  bool details = false;
  PipelineSourceOptions source_options;
  std::vector<std::string> sources;
};

int64_t ParseInt(const std::string& flag, const std::string& text, int64_t min, int64_t max) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
    UsageError("option " + flag + ": '" + text + "' is not an integer in [" + std::to_string(min) +
               ", " + std::to_string(max) + "]");
  }
  return v;
}

double ParseDouble(const std::string& flag, const std::string& text, double min, double max) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
    UsageError("option " + flag + ": '" + text + "' is not a number in [" +
               FormatNumber("%g", min) + ", " + FormatNumber("%g", max) + "]");
  }
  return v;
}

Args ParseArgs(int argc, char** argv) {
  Args args;
  args.run.timing_samples = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << kUsage;
      std::exit(0);
    }
    if (arg == "--details") {
      args.details = true;
      continue;
    }
    if (arg.rfind("--", 0) != 0) {
      args.sources.push_back(arg);
      continue;
    }
    std::string value;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else {
      if (i + 1 >= argc) UsageError("option " + arg + " needs a value");
      value = argv[++i];
    }
    if (arg == "--threads") {
      args.threads = static_cast<int>(ParseInt(arg, value, 1, 4096));
    } else if (arg == "--samples") {
      args.run.timing_samples = static_cast<int>(ParseInt(arg, value, 1, 100000));
    } else if (arg == "--min-sample-seconds") {
      args.run.min_sample_seconds = ParseDouble(arg, value, 0, 3600);
    } else if (arg == "--spatial-scale") {
      args.source_options.spatial_scale = ParseDouble(arg, value, 1e-3, 64);
    } else if (arg == "--channel-scale") {
      args.source_options.channel_scale = ParseDouble(arg, value, 1e-3, 64);
    } else if (arg == "--beam-size") {
      args.beam_size = static_cast<int>(ParseInt(arg, value, 1, 4096));
    } else if (arg == "--autoschedulers") {
      args.autoschedulers.clear();
      for (const std::string& name : SplitFlagList(value)) {
        if (!IsAutoschedulerName(name)) UsageError("unknown autoscheduler '" + name + "'");
        args.autoschedulers.push_back(name);
      }
      if (args.autoschedulers.empty()) UsageError("option --autoschedulers: empty list");
    } else {
      UsageError("unknown option '" + arg + "'");
    }
  }
  if (args.sources.empty()) UsageError("no SOURCE given");
  std::vector<std::string> expanded;
  for (const std::string& source : args.sources) {
    if (source == "zoo") {
      for (const std::string& name : ZooNames()) expanded.push_back(name);
      continue;
    }
    const Status usage = CheckPipelineSource(source, args.source_options);
    if (!usage.ok()) UsageError(usage.message());
    expanded.push_back(source);
  }
  args.sources = expanded;
  return args;
}

// --- output ----------------------------------------------------------------------

std::string Millis(double s) { return FormatNumber("%.3f", s * 1e3); }

// A table whose first column is left-aligned and the others (numbers) right-aligned.
TextTable NumericTable(std::vector<std::string> header) {
  std::vector<bool> right(header.size(), true);
  right[0] = false;
  return TextTable(std::move(header), std::move(right));
}

// The kind of a left-out directive: its name without arguments, "update(0)." or the
// reason of the space's refusal, e.g. "fuse", "store_in", "space rejected vectorize".
std::string DirectiveKind(const LeftOut& l) {
  std::string d = l.directive;
  if (d.rfind("update(0).", 0) == 0) d = d.substr(10);
  d = d.substr(0, d.find('('));
  if (d.rfind("loop ", 0) == 0) d = "unknown loop";
  if (d.rfind("tails ", 0) == 0) d = "mixed tails";
  if (l.why.find("reduction loops in their natural order") != std::string::npos) {
    return "space rejected reorder of RVars (kept in natural order)";
  }
  if (l.why.rfind("rejected by the schedule space", 0) == 0) return "space rejected " + d;
  if (l.why.find("keeps helper Funcs inline") != std::string::npos) return "helper Func " + d;
  if (l.why.find("is a helper Func") != std::string::npos) return d + " in a helper Func";
  return d;
}

struct Totals {
  int failed = 0;
  int runs = 0;
  int correct = 0;
  int exact = 0;
  double log_speedup = 0;
  std::map<std::string, int> kinds;  // left-out kind -> count
};

int Main(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  const HostMachineParams machine = DetectMachineParams(args.threads);
  std::cout << "target          " << HalideHostTarget() << "\n"
            << "machine params  " << MachineParamsString(machine) << " (parallelism "
            << machine.parallelism << ", last-level cache from " << machine.cache_source
            << ", balance " << machine.balance << ")\n"
            << "adams2019       beam " << args.beam_size << ", no dropout, built-in weights\n"
            << "timing          " << args.run.timing_samples << " samples (min shown), "
            << "min sample " << args.run.min_sample_seconds << " s, threads " << machine.parallelism
            << "\n\n";

  int exit_code = 0;
  std::map<std::string, Totals> totals;
  std::vector<std::string> summary_header = {"pipeline", "reference ms"};
  for (const std::string& a : args.autoschedulers) {
    summary_header.push_back(a + " ms");
    summary_header.push_back("x");
  }
  TextTable summary = NumericTable(summary_header);

  for (const std::string& source : args.sources) {
    StatusOr<PipelineGraph> graph = LoadPipelineSource(source, args.source_options);
    if (!graph.ok()) {
      std::cerr << "farm-baselines: " << graph.status().message() << "\n";
      exit_code = kExitFailure;
      continue;
    }
    std::cout << "pipeline " << graph->spec().name() << " (" << source << ", "
              << graph->num_stages() << " stages, id " << PipelineId(*graph) << ")\n"
              << std::flush;
    RunOptions ref_options = args.run;
    ref_options.threads = machine.parallelism;
    StatusOr<RunResult> reference = RunReference(*graph, ref_options);
    if (!reference.ok()) {
      std::cerr << "farm-baselines: reference run: " << reference.status().message() << "\n";
      exit_code = kExitFailure;
      continue;
    }
    const double ref_seconds = reference->min_seconds;
    std::vector<std::string> summary_row = {graph->spec().name(), Millis(ref_seconds)};
    TextTable table =
        NumericTable({"schedule", "min ms", "median ms", "speedup", "autoschedule s", "compile s",
                      "correct", "import: left out (changing the loop nest)"});
    table.Add({"reference", Millis(ref_seconds), Millis(reference->median_seconds), "1.00x", "-",
               FormatNumber("%.2f", reference->compile_seconds), "reference", "-"});
    std::vector<std::string> details;
    for (const std::string& name : args.autoschedulers) {
      AutoscheduleOptions options;
      options.threads = machine.parallelism;
      options.beam_size = args.beam_size;
      options.run = args.run;
      options.import_schedule = true;
      StatusOr<BaselineResult> result = RunAutoscheduler(*graph, name, options, reference->outputs);
      if (!result.ok()) {
        table.Add({name, "failed", "-", "-", "-", "-", "-", "-"});
        details.push_back(result.status().message());
        summary_row.push_back("failed");
        summary_row.push_back("-");
        ++totals[name].failed;
        continue;
      }
      Totals& t = totals[name];
      std::string imported = "error";
      if (result->imported) {
        int changing = 0;
        for (const LeftOut& l : result->imported->left_out) {
          changing += l.changes_loop_nest;
          ++t.kinds[DirectiveKind(l)];
        }
        t.exact += result->imported->exact_loop_nest();
        imported = std::to_string(result->imported->left_out.size()) + " (" +
                   std::to_string(changing) + ")";
      }
      if (!result->import_error.empty()) {
        details.push_back(name + ": import failed: " + result->import_error);
      }
      if (args.details) {
        details.push_back(name + " schedule source:\n" + result->schedule_source);
        if (result->imported) {
          details.push_back(name + " left out by the import:\n" +
                            DescribeLeftOut(result->imported->left_out));
        }
      }
      if (!result->run_error.empty()) {  // Halide cannot compile or run the schedule
        table.Add({name, "error", "-", "-", FormatNumber("%.2f", result->autoschedule_seconds), "-",
                   "ERROR", imported});
        details.push_back(name + ": the schedule does not run: " + result->run_error);
        summary_row.push_back("error");
        summary_row.push_back("-");
        ++t.failed;
        continue;
      }
      const double speedup = ref_seconds / result->run.min_seconds;
      ++t.runs;
      t.correct += result->correct;
      t.log_speedup += std::log(speedup);
      table.Add({name, Millis(result->run.min_seconds), Millis(result->run.median_seconds),
                 FormatNumber("%.2fx", speedup), FormatNumber("%.2f", result->autoschedule_seconds),
                 FormatNumber("%.2f", result->run.compile_seconds),
                 result->correct ? "yes" : "WRONG", imported});
      summary_row.push_back(Millis(result->run.min_seconds) + (result->correct ? "" : " WRONG"));
      summary_row.push_back(FormatNumber("%.2f", speedup));
      if (!result->correct) details.push_back(name + ": wrong answer: " + result->mismatch);
    }
    table.Print(std::cout);
    for (const std::string& d : details) std::cout << "  " << d << "\n";
    std::cout << "\n" << std::flush;
    summary.Add(summary_row);
  }

  if (args.sources.size() > 1) {
    std::cout << "summary (min ms; x = speedup over the reference schedule)\n";
    summary.Print(std::cout);
    std::cout << "\n";
  }
  std::cout << "import statistics (left-out directives by kind, over all pipelines)\n";
  for (const auto& [name, t] : totals) {
    std::cout << "  " << name << ": " << t.runs + t.failed << " pipelines, " << t.failed
              << " failed, " << t.correct << " correct, " << t.exact
              << " imported with the exact loop nest, geometric mean speedup "
              << FormatNumber("%.2fx", t.runs ? std::exp(t.log_speedup / t.runs) : 0.0) << "\n";
    for (const auto& [kind, count] : t.kinds) {
      std::cout << "    " << count << "  " << kind << "\n";
    }
  }
  return exit_code;
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  try {
    return schedfarm::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "farm-baselines: internal error: " << e.what() << "\n";
    return 1;
  }
}
