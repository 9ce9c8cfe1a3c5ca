// ONNX's backend tests (Debian's libonnx-testdata: the node tests of opsets 1-17,
// and the PyTorch-converted operator tests and simple models of opsets 6-12, which
// check the importer's handling of old opsets): every case is imported;
// a case the importer refuses with an "unsupported" error counts as unsupported, any
// other import error as a failure; imported cases are run with the reference Halide
// schedule on the case's inputs and compared with its expected outputs.
//
// The node cases are sharded by the first letter of their name, the other suites
// are a shard each, so that ctest runs (and times out) each shard on its own; each shard prints its
// passing, failing and unsupported cases with reasons, and asserts no failure and a minimum number
// of passing cases. ImportAll imports every case without running it (no Halide).
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/onnx/onnx_import.h"

namespace schedfarm {
namespace {

namespace fs = std::filesystem;

constexpr char kTestDataDir[] = "/usr/share/libonnx-testdata/data";
// The suites walked; "real" (whole networks to download) is not installed.
const char* const kSuites[] = {"node", "pytorch-converted", "pytorch-operator", "simple"};

// Tolerances of the comparison (CompareTensors: |a - e| <= atol * max(1, max|e|) +
// rtol * |e|): for f32 the values of ONNX's own backend runner (numpy assert_allclose
// with rtol 1e-3, atol 1e-7; some expected outputs come from a differently rounded
// formula than the graph, e.g. the *window_expanded cases differ by 6e-5).
constexpr Tolerance kFloatTolerance = {/*rtol=*/1e-3, /*atol=*/1e-7};
constexpr Tolerance kDoubleTolerance = {/*rtol=*/1e-9, /*atol=*/1e-10};

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Cases as "SUITE/test_NAME", sorted.
std::vector<std::string> CaseNames() {
  std::vector<std::string> names;
  for (const char* suite : kSuites) {
    const fs::path dir = fs::path(kTestDataDir) / suite;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir)) {
      if (fs::exists(entry.path() / "model.onnx")) {
        names.push_back(std::string(suite) + "/" + entry.path().filename().string());
      }
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// A case's model, read with its inputs: every graph input's value is given to the
// importer (integer inputs are folded, float inputs stay pipeline inputs).
struct LoadedCase {
  std::string model_bytes;
  OnnxImportOptions options;
  std::map<std::string, fs::path> input_files;  // graph input name -> input_k.pb
  std::vector<fs::path> output_files;           // graph output order
};

StatusOr<LoadedCase> LoadCase(const std::string& name) {
  const fs::path dir = fs::path(kTestDataDir) / name;
  const fs::path data = dir / "test_data_set_0";
  LoadedCase c;
  c.model_bytes = ReadBytes(dir / "model.onnx");
  onnx::ModelProto model;
  if (!model.ParseFromString(c.model_bytes)) return Status::Error("cannot parse model.onnx");
  std::set<std::string> initializers;
  for (const auto& init : model.graph().initializer()) initializers.insert(init.name());
  int k = 0;
  for (const auto& input : model.graph().input()) {
    if (initializers.count(input.name())) continue;
    const fs::path file = data / ("input_" + std::to_string(k++) + ".pb");
    if (!fs::exists(file)) continue;  // an omitted optional input
    c.input_files[input.name()] = file;
    c.options.input_values[input.name()] = ReadBytes(file);
  }
  for (int o = 0; o < model.graph().output_size(); ++o) {
    c.output_files.push_back(data / ("output_" + std::to_string(o) + ".pb"));
  }
  return c;
}

enum class Outcome { kPass, kFail, kUnsupported };

struct CaseResult {
  Outcome outcome;
  std::string detail;
};

bool IsUnsupported(const Status& status) {
  return status.message().find("unsupported") != std::string::npos;
}

// An import error for the report: without the "ONNX model 'NAME': " prefix and the
// list of supported operators.
std::string Reason(const Status& status) {
  std::string m = status.message();
  const size_t prefix = m.find("': ");
  if (m.rfind("ONNX model '", 0) == 0 && prefix != std::string::npos) m = m.substr(prefix + 3);
  const size_t list = m.find("; supported: ");
  if (list != std::string::npos) m = m.substr(0, list);
  return m;
}

// Imports a case: the spec, or the outcome of a refused import.
StatusOr<PipelineSpec> ImportCase(const std::string& name, LoadedCase* loaded) {
  SCHEDFARM_ASSIGN_OR_RETURN(*loaded, LoadCase(name));
  return ImportOnnxModel(loaded->model_bytes, name, loaded->options);
}

CaseResult RunCase(const std::string& name) {
  LoadedCase loaded;
  StatusOr<PipelineSpec> spec = ImportCase(name, &loaded);
  if (!spec.ok()) {
    return {IsUnsupported(spec.status()) ? Outcome::kUnsupported : Outcome::kFail,
            Reason(spec.status())};
  }
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  if (!graph.ok()) return {Outcome::kFail, graph.status().message()};
  std::vector<HostTensor> inputs;
  for (const TensorDecl& decl : spec->inputs()) {
    auto it = loaded.input_files.find(decl.name());
    if (it == loaded.input_files.end()) {
      return {Outcome::kFail, "pipeline input '" + decl.name() + "' has no input file"};
    }
    StatusOr<HostTensor> t = ReadOnnxTensorFile(it->second);
    if (!t.ok()) return {Outcome::kFail, t.status().message()};
    inputs.push_back(std::move(t).value());
  }
  RunOptions options;
  options.timing_samples = 0;
  StatusOr<RunResult> run = RunReference(*graph, options, inputs);
  if (!run.ok()) return {Outcome::kFail, run.status().message()};
  if (run->outputs.size() != loaded.output_files.size()) {
    return {Outcome::kFail, "ran " + std::to_string(run->outputs.size()) + " outputs, expected " +
                                std::to_string(loaded.output_files.size())};
  }
  for (size_t o = 0; o < run->outputs.size(); ++o) {
    StatusOr<HostTensor> expected = ReadOnnxTensorFile(loaded.output_files[o]);
    if (!expected.ok()) return {Outcome::kFail, expected.status().message()};
    const Tolerance tol = expected->dtype == FLOAT64 ? kDoubleTolerance : kFloatTolerance;
    Comparison c = CompareTensors(run->outputs[o], *expected, tol);
    if (!c.match) return {Outcome::kFail, "output " + std::to_string(o) + ": " + c.message};
  }
  std::ostringstream detail;
  detail.precision(2);
  detail << std::fixed << run->compile_seconds << " s compile";
  return {Outcome::kPass, detail.str()};
}

TEST(OnnxBackend, TestDataIsInstalled) {
  EXPECT_GT(CaseNames().size(), 1000u) << "libonnx-testdata missing at " << kTestDataDir;
}

// Imports every case (no Halide run): no import may fail with anything but an
// "unsupported" error, and at least this many cases must import.
constexpr int kMinImported = 494;

TEST(OnnxBackend, ImportAll) {
  int imported = 0;
  std::map<std::string, int> unsupported_ops;
  std::vector<std::string> failures;
  for (const std::string& name : CaseNames()) {
    LoadedCase loaded;
    StatusOr<PipelineSpec> spec = ImportCase(name, &loaded);
    if (spec.ok()) {
      ++imported;
    } else if (!IsUnsupported(spec.status())) {
      failures.push_back(name + ": " + spec.status().message());
    }
  }
  std::cout << imported << " of " << CaseNames().size() << " cases import\n";
  for (const std::string& f : failures) std::cout << "  FAILED " << f << "\n";
  EXPECT_TRUE(failures.empty());
  EXPECT_GE(imported, kMinImported);
}

// A shard: the cases of `suite` whose name (after "test_") starts with one of
// `letters` (any letter if empty), and the least number of them that must pass.
struct Shard {
  const char* name;
  const char* suite;
  const char* letters;
  int min_pass;
};

void PrintTo(const Shard& shard, std::ostream* os) { *os << shard.name; }

class OnnxBackendShard : public ::testing::TestWithParam<Shard> {};

TEST_P(OnnxBackendShard, RunMatchesExpectedOutputs) {
  const Shard& shard = GetParam();
  std::vector<std::string> pass, fail, unsupported;
  const auto start = std::chrono::steady_clock::now();
  const std::string prefix = std::string(shard.suite) + "/test_";
  const std::string letters = shard.letters;
  for (const std::string& name : CaseNames()) {
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) continue;
    if (!letters.empty() && letters.find(name[prefix.size()]) == std::string::npos) continue;
    CaseResult r = RunCase(name);
    const std::string line = name + ": " + r.detail;
    (r.outcome == Outcome::kPass   ? pass
     : r.outcome == Outcome::kFail ? fail
                                   : unsupported)
        .push_back(line);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "shard " << shard.name << ": " << pass.size() << " pass, " << fail.size()
            << " fail, " << unsupported.size() << " unsupported (" << seconds << " s)\n";
  for (const std::string& l : pass) std::cout << "  PASS " << l << "\n";
  for (const std::string& l : fail) std::cout << "  FAIL " << l << "\n";
  for (const std::string& l : unsupported) std::cout << "  UNSUPPORTED " << l << "\n";
  EXPECT_TRUE(fail.empty()) << fail.size() << " supported cases fail";
  EXPECT_GE(static_cast<int>(pass.size()), shard.min_pass);
}

INSTANTIATE_TEST_SUITE_P(
    Shards, OnnxBackendShard,
    ::testing::Values(Shard{"node_a_b", "node", "ab", 22}, Shard{"node_c", "node", "c", 32},
                      Shard{"node_d_g", "node", "defg", 49}, Shard{"node_h_l", "node", "hijkl", 69},
                      Shard{"node_m", "node", "m", 32}, Shard{"node_n_q", "node", "nopq", 13},
                      Shard{"node_r", "node", "r", 85}, Shard{"node_s", "node", "s", 51},
                      Shard{"node_t_z", "node", "tuvwxyz", 22},
                      Shard{"pytorch_converted", "pytorch-converted", "", 80},
                      Shard{"pytorch_operator", "pytorch-operator", "", 33},
                      Shard{"simple", "simple", "", 6}),
    [](const ::testing::TestParamInfo<Shard>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace schedfarm
