// farm-pipeline: list the model zoo, show a pipeline's stages and costs, run it
// under the reference schedule with Halide's JIT, or export it as YAML or protobuf.
//
// Exit codes: 0 success, 1 a bad input file or a failed run, 2 bad arguments.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/text.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/source/source.h"
#include "network/tasks.h"
#include "pipeline/spec.h"
#include "pipeline/yaml_io.h"
#include "pipeline/zoo.h"
#include "tools/text_table.h"

namespace schedfarm {
namespace {

constexpr int kExitInput = 1;
constexpr int kExitUsage = 2;

const char kUsage[] =
    "usage:\n"
    "  farm-pipeline list\n"
    "  farm-pipeline show SOURCE [SOURCE OPTIONS]\n"
    "  farm-pipeline tasks SOURCE [--fusion none|blocks] [SOURCE OPTIONS]\n"
    "  farm-pipeline run SOURCE [--samples N] [--min-sample-seconds S] [--threads T]\n"
    "                    [SOURCE OPTIONS]\n"
    "  farm-pipeline export SOURCE (--yaml FILE | --proto FILE) [SOURCE OPTIONS]\n"
    "\n"
    "SOURCE is one of:\n"
    "  zoo:NAME or NAME     a model zoo block (see 'farm-pipeline list')\n"
    "  random:SEED          a random pipeline of the generator\n"
    "  FILE.yaml, FILE.yml  a pipeline in YAML\n"
    "  FILE.onnx            an ONNX model\n"
    "  FILE.pb              a binary PipelineSpec\n"
    "\n"
    "SOURCE OPTIONS:\n"
    "  --math exact|pade    transcendental functions by Halide's math or Pade approximants\n"
    "  --dtype f32|f64      element type (zoo blocks)\n"
    "  --spatial-scale X    multiplies the default spatial size (zoo blocks)\n"
    "  --channel-scale X    multiplies the default channel counts (zoo blocks)\n"
    "  --batch N            batch size (zoo blocks)\n"
    "  --max-ops N, --max-elements N, --max-flops F   the generator's size limits\n"
    "                       (random pipelines; defaults 30, 262144, 2e8)\n"
    "\n"
    "tasks: the network's tasks, the unit whole-network tuning tunes (docs/NETWORKS.md);\n"
    "--fusion blocks fuses chains of layers into tasks as a campaign does (default none).\n"
    "run: one warm-up run, then N timed samples (default 5; 0 runs once, untimed), each\n"
    "repeated until it lasts S seconds (default 0); T Halide threads (default: Halide's).\n"
    "export: FILE '-' writes to standard output.\n";

// An error that ends the program with `code`.
struct Failure {
  int code;
  std::string message;
};

[[noreturn]] void Exit(const Failure& failure) {
  std::cerr << "farm-pipeline: " << failure.message << "\n";
  if (failure.code == kExitUsage) std::cerr << "\n" << kUsage;
  std::exit(failure.code);
}

[[noreturn]] void UsageError(const std::string& message) { Exit({kExitUsage, message}); }

// --- arguments -----------------------------------------------------------------

struct Args {
  std::string command;
  std::string source;
  std::map<std::string, std::string> options;  // "--flag" -> value
};

const std::map<std::string, std::set<std::string>>& OptionsByCommand() {
  static const std::set<std::string> kSource = {
      "--math",  "--dtype",   "--spatial-scale", "--channel-scale",
      "--batch", "--max-ops", "--max-elements",  "--max-flops"};
  static const std::map<std::string, std::set<std::string>> kOptions = [] {
    std::map<std::string, std::set<std::string>> m;
    m["list"] = {};
    m["show"] = kSource;
    m["tasks"] = kSource;
    m["tasks"].insert("--fusion");
    m["run"] = kSource;
    m["run"].insert({"--samples", "--min-sample-seconds", "--threads"});
    m["export"] = kSource;
    m["export"].insert({"--yaml", "--proto"});
    return m;
  }();
  return kOptions;
}

Args ParseArgs(int argc, char** argv) {
  Args args;
  if (argc < 2) UsageError("missing command");
  args.command = argv[1];
  const auto& by_command = OptionsByCommand();
  auto it = by_command.find(args.command);
  if (it == by_command.end()) UsageError("unknown command '" + args.command + "'");
  const std::set<std::string>& allowed = it->second;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.size() > 2 && arg.rfind("--", 0) == 0) {
      std::string flag = arg, value;
      const size_t eq = arg.find('=');
      bool has_value = false;
      if (eq != std::string::npos) {
        flag = arg.substr(0, eq);
        value = arg.substr(eq + 1);
        has_value = true;
      }
      if (!allowed.count(flag)) {
        bool known = false;
        for (const auto& [command, flags] : by_command) known = known || flags.count(flag);
        UsageError(known ? "option " + flag + " does not apply to '" + args.command + "'"
                         : "unknown option '" + flag + "'");
      }
      if (!has_value) {
        if (i + 1 >= argc) UsageError("option " + flag + " needs a value");
        value = argv[++i];
      }
      if (args.options.count(flag)) UsageError("option " + flag + " given twice");
      args.options[flag] = value;
    } else if (args.source.empty() && args.command != "list") {
      args.source = arg;
    } else {
      UsageError("unexpected argument '" + arg + "'");
    }
  }
  if (args.command != "list" && args.source.empty()) {
    UsageError("'" + args.command + "' needs a SOURCE");
  }
  return args;
}

const std::string* Option(const Args& args, const std::string& flag) {
  auto it = args.options.find(flag);
  return it == args.options.end() ? nullptr : &it->second;
}

int64_t IntOption(const Args& args, const std::string& flag, int64_t fallback, int64_t min,
                  int64_t max) {
  const std::string* text = Option(args, flag);
  if (text == nullptr) return fallback;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || errno != 0 || v < min || v > max) {
    UsageError("option " + flag + ": '" + *text + "' is not an integer in [" + std::to_string(min) +
               ", " + std::to_string(max) + "]");
  }
  return v;
}

double DoubleOption(const Args& args, const std::string& flag, double fallback, double min,
                    double max) {
  const std::string* text = Option(args, flag);
  if (text == nullptr) return fallback;
  char* end = nullptr;
  const double v = std::strtod(text->c_str(), &end);
  if (text->empty() || *end != '\0' || !std::isfinite(v) || v < min || v > max) {
    std::ostringstream range;
    range << "[" << min << ", " << max << "]";
    UsageError("option " + flag + ": '" + *text + "' is not a number in " + range.str());
  }
  return v;
}

// --- sources ---------------------------------------------------------------------

PipelineGraph LoadSource(const Args& args) {
  PipelineSourceOptions options;
  if (const std::string* math = Option(args, "--math")) {
    if (*math == "exact") {
      options.math = EXACT;
    } else if (*math == "pade") {
      options.math = PADE;
    } else {
      UsageError("option --math: '" + *math + "' is not 'exact' or 'pade'");
    }
  }
  if (const std::string* dtype = Option(args, "--dtype")) {
    if (*dtype == "f32") {
      options.dtype = FLOAT32;
    } else if (*dtype == "f64") {
      options.dtype = FLOAT64;
    } else {
      UsageError("option --dtype: '" + *dtype + "' is not 'f32' or 'f64'");
    }
  }
  if (Option(args, "--spatial-scale")) {
    options.spatial_scale = DoubleOption(args, "--spatial-scale", 1.0, 1e-3, 64);
  }
  if (Option(args, "--channel-scale")) {
    options.channel_scale = DoubleOption(args, "--channel-scale", 1.0, 1e-3, 64);
  }
  if (Option(args, "--batch")) options.batch = IntOption(args, "--batch", 1, 1, 4096);
  if (Option(args, "--max-ops")) {
    options.max_ops = static_cast<int>(IntOption(args, "--max-ops", 1, 1, 200));
  }
  if (Option(args, "--max-elements")) {
    options.max_elements = IntOption(args, "--max-elements", 1, 1, int64_t{1} << 32);
  }
  if (Option(args, "--max-flops")) {
    options.max_flops = DoubleOption(args, "--max-flops", 1, 1, 1e15);
  }
  const Status usage = CheckPipelineSource(args.source, options);
  if (!usage.ok()) UsageError(usage.message());
  StatusOr<PipelineGraph> graph = LoadPipelineSource(args.source, options);
  if (!graph.ok()) Exit({kExitInput, graph.status().message()});
  return std::move(*graph);
}

// --- output ----------------------------------------------------------------------

std::string HumanCount(double v) {
  const char* units[] = {"", "k", "M", "G", "T"};
  int u = 0;
  while (std::fabs(v) >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  return u == 0 ? FormatNumber("%.0f", v) : FormatNumber("%.2f", v) + units[u];
}

std::string HumanBytes(double v) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? FormatNumber("%.0f", v) + " B" : FormatNumber("%.1f", v) + " " + units[u];
}

std::string Seconds(double s) {
  if (s >= 1) return FormatNumber("%.3f s", s);
  if (s >= 1e-3) return FormatNumber("%.3f ms", s * 1e3);
  return FormatNumber("%.3f us", s * 1e6);
}

void PrintHeader(const PipelineGraph& graph) {
  const PipelineSpec& spec = graph.spec();
  std::cout << "pipeline  " << spec.name() << "\n";
  if (!spec.source().empty()) std::cout << "source    " << spec.source() << "\n";
  std::cout << "id        " << PipelineId(graph) << "\n";
}

int List() {
  TextTable table({"block", "description"}, {false, false});
  for (const std::string& name : ZooNames()) table.Add({name, ZooDescription(name)});
  table.Print(std::cout);
  return 0;
}

int Show(const PipelineGraph& graph) {
  const PipelineSpec& spec = graph.spec();
  PrintHeader(graph);
  std::cout << "\ninputs\n";
  TextTable inputs({"name", "dtype", "shape"}, {false, false, false});
  for (const TensorDecl& t : spec.inputs()) {
    inputs.Add({t.name(), DataTypeName(t.dtype()),
                ShapeToString(Shape(t.shape().begin(), t.shape().end()))});
  }
  inputs.Print(std::cout);
  double param_bytes = 0;
  for (const Parameter& p : spec.parameters()) {
    param_bytes += static_cast<double>(
                       NumElements(Shape(p.tensor().shape().begin(), p.tensor().shape().end()))) *
                   BytesPerElement(p.tensor().dtype());
  }
  std::cout << "\nparameters  " << spec.parameters_size() << " (" << HumanBytes(param_bytes)
            << ")\n\nstages (topological order)\n";
  TextTable stages({"#", "stage", "op", "inputs", "shape", "FLOPs", "bytes", "access"},
                   {true, false, false, false, false, true, true, false});
  for (int s : graph.topological_order()) {
    const Stage& st = graph.stage(s);
    const std::vector<Shape> shapes = graph.input_shapes(s);
    std::vector<std::string> access;
    for (size_t i = 0; i < shapes.size(); ++i) {
      access.push_back(AccessPatternName(AccessPatternOf(st, static_cast<int>(i), shapes)));
    }
    const StageCost cost = graph.cost(s);
    stages.Add({std::to_string(s), st.name(), OpDisplayName(st),
                Join(std::vector<std::string>(st.inputs().begin(), st.inputs().end()), ", "),
                ShapeToString(Shape(st.shape().begin(), st.shape().end())), HumanCount(cost.flops),
                HumanBytes(cost.bytes_read + cost.bytes_written), Join(access, ", ")});
  }
  stages.Print(std::cout);
  const StageCost total = graph.total_cost();
  std::cout << "\ntotal     " << graph.num_stages() << " stages, " << HumanCount(total.flops)
            << " FLOPs, " << HumanBytes(total.bytes_read) << " read, "
            << HumanBytes(total.bytes_written) << " written\n";
  std::cout << "outputs   "
            << Join(std::vector<std::string>(spec.outputs().begin(), spec.outputs().end()), ", ")
            << "\n";
  return 0;
}

int Tasks(const PipelineGraph& given, const Args& args) {
  NetworkFusion fusion = FUSION_NONE;
  if (const std::string* value = Option(args, "--fusion")) {
    if (*value != "none" && *value != "blocks") {
      UsageError("--fusion '" + *value + "' is not none or blocks");
    }
    fusion = *value == "blocks" ? FUSION_BLOCKS : FUSION_NONE;
  }
  // The tasks a network campaign tunes: channels-first, with its tile copies.
  StatusOr<PipelineSpec> tuned = TunedNetwork(given.spec());
  if (!tuned.ok()) Exit({kExitInput, tuned.status().message()});
  StatusOr<PipelineGraph> built = PipelineGraph::Build(*tuned);
  if (!built.ok()) Exit({kExitInput, built.status().message()});
  const PipelineGraph& graph = *built;
  StatusOr<NetworkPartition> partition = PartitionNetwork(graph, fusion);
  if (!partition.ok()) Exit({kExitInput, partition.status().message()});
  PrintHeader(graph);
  std::cout << "\ntasks (distinct tasks, heaviest first)\n";
  std::vector<int> order(partition->distinct.size());
  std::vector<double> flops(order.size(), 0);
  for (size_t d = 0; d < order.size(); ++d) {
    order[d] = static_cast<int>(d);
    const NetworkTask& first = partition->tasks[partition->distinct[d].occurrences.front()];
    for (int s : first.stages) flops[d] += graph.cost(s).flops;
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return flops[a] * partition->distinct[a].weight() > flops[b] * partition->distinct[b].weight();
  });
  TextTable table({"task", "weight", "stages", "FLOPs each", "id", "stages of the first"},
                  {true, true, true, true, false, false});
  for (int d : order) {
    const DistinctTask& task = partition->distinct[d];
    table.Add({std::to_string(d), std::to_string(task.weight()),
               std::to_string(task.spec.stages_size()), HumanCount(flops[d]), task.pipeline_id,
               task.summary});
  }
  table.Print(std::cout);
  std::cout << "\ntotal     " << partition->tasks.size() << " tasks, " << partition->distinct.size()
            << " distinct, " << partition->assembly.outputs_size() << " materialized outputs\n";
  return 0;
}

RunOptions ParseRunOptions(const Args& args) {
  RunOptions options;
  options.timing_samples = static_cast<int>(IntOption(args, "--samples", 5, 0, 100000));
  options.min_sample_seconds = DoubleOption(args, "--min-sample-seconds", 0, 0, 3600);
  options.threads = static_cast<int>(IntOption(args, "--threads", 0, 0, 4096));
  return options;
}

int Run(const PipelineGraph& graph, const RunOptions& options) {
  PrintHeader(graph);
  std::cout << "target    " << HalideHostTarget() << "\n" << std::flush;
  StatusOr<RunResult> run = RunReference(graph, options);
  if (!run.ok()) Exit({kExitInput, run.status().message()});
  std::cout << "compile   " << Seconds(run->compile_seconds) << " (reference schedule)\n";
  if (run->sample_seconds.empty()) {
    std::cout << "run       once, untimed\n";
  } else {
    std::cout << "run       min " << Seconds(run->min_seconds) << ", median "
              << Seconds(run->median_seconds) << " (" << run->sample_seconds.size()
              << " samples, threads "
              << (options.threads > 0 ? std::to_string(options.threads) : "default") << ")\n";
  }
  std::cout << "\noutputs\n";
  TextTable outputs({"name", "dtype", "shape", "checksum"}, {false, false, false, false});
  for (size_t i = 0; i < run->outputs.size(); ++i) {
    const HostTensor& t = run->outputs[i];
    outputs.Add({graph.spec().outputs(static_cast<int>(i)), DataTypeName(t.dtype),
                 ShapeToString(t.shape), TensorChecksum(t)});
  }
  outputs.Print(std::cout);
  return 0;
}

int Export(const PipelineGraph& graph, const Args& args) {
  const std::string* yaml = Option(args, "--yaml");
  const std::string* proto = Option(args, "--proto");
  std::string bytes;
  if (yaml != nullptr) {
    bytes = PipelineToYaml(graph.spec());
  } else if (!graph.spec().SerializeToString(&bytes)) {
    Exit({kExitInput, "cannot serialize pipeline '" + graph.spec().name() + "'"});
  }
  const std::string& path = yaml != nullptr ? *yaml : *proto;
  if (path == "-") {
    std::cout << bytes << std::flush;
    return 0;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) Exit({kExitInput, "cannot write file '" + path + "': " + std::strerror(errno)});
  out << bytes;
  out.close();
  if (!out) Exit({kExitInput, "cannot write file '" + path + "': write error"});
  std::cerr << "wrote " << path << " (" << bytes.size() << " bytes)\n";
  return 0;
}

int Main(int argc, char** argv) {
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
                    std::string(argv[1]) == "help")) {
    std::cout << kUsage;
    return 0;
  }
  const Args args = ParseArgs(argc, argv);
  if (args.command == "list") return List();
  // The command's own options are checked before the (possibly slow) source is built.
  RunOptions run_options;
  if (args.command == "run") run_options = ParseRunOptions(args);
  if (args.command == "export" &&
      (Option(args, "--yaml") == nullptr) == (Option(args, "--proto") == nullptr)) {
    UsageError("export needs exactly one of --yaml FILE or --proto FILE");
  }
  const PipelineGraph graph = LoadSource(args);
  if (args.command == "show") return Show(graph);
  if (args.command == "tasks") return Tasks(graph, args);
  if (args.command == "run") return Run(graph, run_options);
  return Export(graph, args);
}

}  // namespace
}  // namespace schedfarm

int main(int argc, char** argv) {
  try {
    return schedfarm::Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "farm-pipeline: internal error: " << e.what() << "\n";
    return 1;
  }
}
