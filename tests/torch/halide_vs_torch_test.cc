// The correctness contract of the lowering: the Halide pipeline under the reference
// schedule computes what the libtorch oracle computes, within DefaultTolerance, on
// every zoo block (exact and Padé math), float64 blocks, op-coverage pipelines that
// reach the attribute corners the generator avoids (ceil-mode pools with padding,
// dilated pools, 1-d/3-d grouped convs, negative slice steps, every unary function
// over [-6, 6) in both math modes) and a sample of random pipelines. Each block or
// seed is its own test case.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/tensor.h"
#include "pipeline/torch/torch_eval.h"
#include "pipeline/zoo.h"
#include "tests/torch/op_coverage.h"

namespace schedfarm {
namespace {

// Runs `spec` under the reference schedule and with the oracle on the same
// deterministic inputs and compares every output.
void ExpectHalideMatchesTorch(const StatusOr<PipelineSpec>& spec) {
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();
  const std::vector<HostTensor> inputs = DeterministicInputs(*spec);

  RunOptions options;
  options.timing_samples = 0;
  StatusOr<RunResult> halide = RunReference(*graph, options, inputs);
  ASSERT_TRUE(halide.ok()) << halide.status().ToString();
  StatusOr<std::vector<HostTensor>> torch = EvaluateWithTorch(*graph, inputs);
  ASSERT_TRUE(torch.ok()) << torch.status().ToString();
  ASSERT_EQ(halide->outputs.size(), torch->size());

  double max_abs_error = 0;
  std::string worst = spec->outputs(0);
  for (size_t i = 0; i < torch->size(); ++i) {
    const HostTensor& expected = (*torch)[i];
    const std::string& name = spec->outputs(static_cast<int>(i));
    const Comparison c =
        CompareTensors(halide->outputs[i], expected, DefaultTolerance(expected.dtype));
    if (c.max_abs_error > max_abs_error) {
      max_abs_error = c.max_abs_error;
      worst = name;
    }
    EXPECT_TRUE(c.match) << "output '" << name << "' " << ShapeToString(expected.shape) << ": "
                         << c.message;
  }
  std::printf("%s: %d stages, %zu output(s), max abs error %.3g (output '%s'), compile %.2f s\n",
              testing::UnitTest::GetInstance()->current_test_info()->name(), spec->stages_size(),
              torch->size(), max_abs_error, worst.c_str(), halide->compile_seconds);
  testing::Test::RecordProperty("max_abs_error", std::to_string(max_abs_error));
}

// --- zoo blocks, exact and Padé --------------------------------------------------

class ZooBlockTest : public testing::TestWithParam<std::tuple<std::string, MathMode>> {};

// Zoo blocks with a transcendental stage: the ones whose Padé variant differs from
// the exact one.
std::vector<std::string> BlocksWithPadeStages() {
  std::vector<std::string> names;
  ZooOptions options;
  options.math = PADE;
  for (const std::string& name : ZooNames()) {
    StatusOr<PipelineSpec> spec = MakeZooBlock(name, options);
    if (!spec.ok()) continue;
    for (const Stage& stage : spec->stages()) {
      if (stage.op() == UNARY && stage.attrs().math() == PADE) {
        names.push_back(name);
        break;
      }
    }
  }
  return names;
}

TEST_P(ZooBlockTest, HalideMatchesTorch) {
  ZooOptions options;
  options.math = std::get<1>(GetParam());
  ExpectHalideMatchesTorch(MakeZooBlock(std::get<0>(GetParam()), options));
}

std::string ZooCaseName(const testing::TestParamInfo<ZooBlockTest::ParamType>& info) {
  return std::get<0>(info.param) + (std::get<1>(info.param) == EXACT ? "_exact" : "_pade");
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooBlockTest,
                         testing::Combine(testing::ValuesIn(ZooNames()), testing::Values(EXACT)),
                         ZooCaseName);
INSTANTIATE_TEST_SUITE_P(ZooPade, ZooBlockTest,
                         testing::Combine(testing::ValuesIn(BlocksWithPadeStages()),
                                          testing::Values(PADE)),
                         ZooCaseName);

// --- float64 blocks: the tight f64 tolerance checks the lowering's arithmetic ------

class ZooFloat64Test : public testing::TestWithParam<std::string> {};

TEST_P(ZooFloat64Test, HalideMatchesTorch) {
  ZooOptions options;
  options.dtype = FLOAT64;
  ExpectHalideMatchesTorch(MakeZooBlock(GetParam(), options));
}

INSTANTIATE_TEST_SUITE_P(Zoo, ZooFloat64Test,
                         testing::Values("resnet18_basic", "transformer_encoder",
                                         "inception_module"),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param + "_f64";
                         });

// --- op coverage -------------------------------------------------------------------

class OpCoverageTest : public testing::TestWithParam<OpCoverageCase> {};

TEST_P(OpCoverageTest, HalideMatchesTorch) {
  const OpCoverageCase& c = GetParam();
  PipelineBuilder b(c.name + "_coverage", c.dtype);
  b.set_math(c.math);
  OpCoverageBuilders().at(c.name)(b);
  ExpectHalideMatchesTorch(b.Finish());
}

INSTANTIATE_TEST_SUITE_P(Ops, OpCoverageTest, testing::ValuesIn(OpCoverageCases()),
                         OpCoverageCaseName);

// --- random pipelines, CI-sized ----------------------------------------------------

class RandomPipelineTest : public testing::TestWithParam<int> {};

TEST_P(RandomPipelineTest, HalideMatchesTorch) {
  RandomPipelineOptions options;
  options.max_ops = 12;
  options.max_elements = 1 << 15;
  options.max_flops = 2e7;
  options.math = GetParam() % 2 == 0 ? EXACT : PADE;
  ExpectHalideMatchesTorch(RandomPipeline(static_cast<uint64_t>(GetParam()), options));
}

INSTANTIATE_TEST_SUITE_P(Random, RandomPipelineTest, testing::Range(1, 31),
                         [](const testing::TestParamInfo<int>& info) {
                           return "seed" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace schedfarm
