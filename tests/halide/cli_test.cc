// farm-pipeline, run as a process: exit codes and messages for bad arguments and bad
// files, and the output of list, show, run and export.
#include <sys/wait.h>

#include <cstdlib>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"

namespace schedfarm {
namespace {

struct CliResult {
  int code = -1;
  std::string out, err;
};

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Per process: ctest runs the cases of this file in parallel processes.
std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/cli_" + std::to_string(getpid()) + "_" + name;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

CliResult RunCli(const std::string& args) {
  const std::string out = TempPath("stdout"), err = TempPath("stderr");
  const std::string command =
      std::string(FARM_PIPELINE_BIN) + " " + args + " >" + out + " 2>" + err + " </dev/null";
  const int status = std::system(command.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadAll(out);
  r.err = ReadAll(err);
  return r;
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string ZooId(const std::string& name) {
  StatusOr<PipelineSpec> spec = MakeZooBlock(name);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return graph.ok() ? PipelineId(*graph) : "";
}

// Bad arguments: exit 2, the argument named on stderr, then the usage.
void ExpectUsageError(const std::string& args, const std::string& message) {
  SCOPED_TRACE(args);
  const CliResult r = RunCli(args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_TRUE(Contains(r.err, message)) << r.err;
  EXPECT_TRUE(Contains(r.err, "usage:")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// Bad input files: exit 1, an error naming the file, no usage.
void ExpectFileError(const std::string& args, const std::string& file) {
  SCOPED_TRACE(args);
  const CliResult r = RunCli(args);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_TRUE(Contains(r.err, file)) << r.err;
  EXPECT_FALSE(Contains(r.err, "usage:")) << r.err;
}

TEST(FarmPipelineCli, BadArguments) {
  ExpectUsageError("", "missing command");
  ExpectUsageError("frobnicate", "unknown command 'frobnicate'");
  ExpectUsageError("show", "'show' needs a SOURCE");
  ExpectUsageError("show vgg_block --frob 1", "unknown option '--frob'");
  ExpectUsageError("show vgg_block --samples 3", "option --samples does not apply to 'show'");
  ExpectUsageError("run vgg_block --samples abc", "option --samples: 'abc'");
  ExpectUsageError("run vgg_block --samples -1", "option --samples: '-1'");
  ExpectUsageError("run vgg_block --threads", "option --threads needs a value");
  ExpectUsageError("run vgg_block --min-sample-seconds=nan", "option --min-sample-seconds");
  ExpectUsageError("show vgg_block --math fast", "option --math: 'fast'");
  ExpectUsageError("show vgg_block --dtype f16", "option --dtype: 'f16'");
  ExpectUsageError("show vgg_block extra", "unexpected argument 'extra'");
  ExpectUsageError("show random:1 --dtype f64", "--dtype applies to zoo blocks only");
  ExpectUsageError("show vgg_block --max-ops 12", "--max-ops applies to random pipelines only");
  ExpectUsageError("show random:1 --max-ops 0", "option --max-ops: '0'");
  ExpectUsageError("show random:1 --max-flops -5", "option --max-flops: '-5'");
  ExpectUsageError("export vgg_block", "--yaml FILE or --proto FILE");
  ExpectUsageError("show random:xyz", "random:xyz");
  ExpectUsageError("show random:-3", "random:-3");
}

TEST(FarmPipelineCli, UnknownSources) {
  ExpectUsageError("show zoo:no_such_block", "no_such_block");
  const CliResult r = RunCli("show zoo:no_such_block");
  EXPECT_TRUE(Contains(r.err, "resnet18_basic")) << "lists the known blocks: " << r.err;
  ExpectUsageError("show no_such_thing", "unknown SOURCE 'no_such_thing'");
}

TEST(FarmPipelineCli, BadFiles) {
  ExpectFileError("show missing_dir/none.yaml", "missing_dir/none.yaml");
  EXPECT_TRUE(Contains(RunCli("show missing_dir/none.pb").err, "No such file"));
  const std::string pb = TempPath("corrupt.pb");
  WriteFile(pb, "\xff\xff\xff\xff garbage");
  ExpectFileError("show " + pb, pb);
  const std::string yaml = TempPath("bad.yaml");
  WriteFile(yaml, "name: [unclosed\n");
  ExpectFileError("show " + yaml, yaml);
  const std::string onnx = TempPath("bad.onnx");
  WriteFile(onnx, "not an onnx model");
  ExpectFileError("run " + onnx, onnx);
}

TEST(FarmPipelineCli, HelpAndList) {
  CliResult r = RunCli("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(Contains(r.out, "usage:"));
  r = RunCli("list");
  EXPECT_EQ(r.code, 0) << r.err;
  for (const std::string& name : ZooNames()) {
    EXPECT_TRUE(Contains(r.out, name + " ")) << name;
    EXPECT_TRUE(Contains(r.out, ZooDescription(name))) << name;
  }
}

TEST(FarmPipelineCli, ShowAndExportRoundTrip) {
  const std::string id = ZooId("vgg_block");
  ASSERT_FALSE(id.empty());
  CliResult r = RunCli("show zoo:vgg_block");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "id        " + id)) << r.out;
  for (const char* part : {"conv", "stencil", "pool.max_pool", "FLOPs", "[1, 32, 24, 24]"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out;
  }
  // The same block through a YAML file and a binary spec.
  const std::string yaml = TempPath("vgg.yaml"), pb = TempPath("vgg.pb");
  ASSERT_EQ(RunCli("export vgg_block --yaml " + yaml).code, 0);
  ASSERT_EQ(RunCli("export vgg_block --proto=" + pb).code, 0);
  for (const std::string& file : {yaml, pb}) {
    r = RunCli("show " + file);
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(Contains(r.out, "id        " + id)) << file << "\n" << r.out;
  }
  r = RunCli("export random:5 --yaml -");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "name:")) << r.out;
}

// The generator's limits select the pipeline the schedule check names: the same seed
// under other limits is another pipeline, and that one is the library's.
TEST(FarmPipelineCli, GeneratorLimitsSelectTheRandomPipeline) {
  RandomPipelineOptions small;
  small.max_ops = 12;
  small.max_elements = int64_t{1} << 15;
  small.max_flops = 2e7;
  StatusOr<PipelineSpec> spec = RandomPipeline(231, small);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  const CliResult limited =
      RunCli("show random:231 --max-ops 12 --max-elements 32768 --max-flops 2e7");
  EXPECT_EQ(limited.code, 0) << limited.err;
  EXPECT_TRUE(Contains(limited.out, "id        " + PipelineId(*graph))) << limited.out;
  const CliResult plain = RunCli("show random:231");
  EXPECT_EQ(plain.code, 0) << plain.err;
  EXPECT_FALSE(Contains(plain.out, "id        " + PipelineId(*graph))) << plain.out;
}

// An ONNX model of the backend test data (Debian package libonnx-testdata).
TEST(FarmPipelineCli, RunsOnnxModel) {
  const std::string model =
      "/usr/share/libonnx-testdata/data/node/test_conv_with_strides_padding/model.onnx";
  ASSERT_TRUE(std::ifstream(model).good()) << model << " is missing: ops/setup.sh installs it";
  const CliResult r = RunCli("run " + model + " --samples 1");
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* part : {"onnx:", "compile", "[1, 1, 4, 3]", "checksum"}) {
    EXPECT_TRUE(Contains(r.out, part)) << part << "\n" << r.out;
  }
}

TEST(FarmPipelineCli, MathOptionChangesTranscendentalStages) {
  const CliResult exact = RunCli("show wavenet_residual");
  const CliResult pade = RunCli("show wavenet_residual --math pade");
  ASSERT_EQ(exact.code, 0) << exact.err;
  ASSERT_EQ(pade.code, 0) << pade.err;
  const std::string yaml = TempPath("wavenet.yaml");
  ASSERT_EQ(RunCli("export wavenet_residual --yaml " + yaml).code, 0);
  const CliResult yaml_pade = RunCli("show " + yaml + " --math pade");
  ASSERT_EQ(yaml_pade.code, 0) << yaml_pade.err;
  auto id_line = [](const std::string& out) { return out.substr(out.find("id  "), 43); };
  EXPECT_NE(id_line(exact.out), id_line(pade.out));
  EXPECT_EQ(id_line(pade.out), id_line(yaml_pade.out));
}

TEST(FarmPipelineCli, RunPrintsTimesAndChecksums) {
  const std::string args = "run vgg_block --spatial-scale 0.5";
  const CliResult one = RunCli(args + " --samples 2 --threads 1");
  ASSERT_EQ(one.code, 0) << one.err;
  for (const char* part : {"compile", "min ", "median ", "2 samples", "f32", "checksum"}) {
    EXPECT_TRUE(Contains(one.out, part)) << part << "\n" << one.out;
  }
  const CliResult two = RunCli(args + " --threads 2 --samples 0");
  ASSERT_EQ(two.code, 0) << two.err;
  EXPECT_TRUE(Contains(two.out, "once, untimed")) << two.out;
  // Same outputs: the table after "outputs" is identical.
  EXPECT_EQ(one.out.substr(one.out.find("\noutputs")), two.out.substr(two.out.find("\noutputs")));
  const CliResult f64 = RunCli("run vgg_block --spatial-scale 0.5 --samples 0 --dtype f64");
  ASSERT_EQ(f64.code, 0) << f64.err;
  EXPECT_TRUE(Contains(f64.out, "f64")) << f64.out;
}

}  // namespace
}  // namespace schedfarm
