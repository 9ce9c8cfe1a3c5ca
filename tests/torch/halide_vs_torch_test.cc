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

Attributes PoolAttrs(PoolFn fn, const std::vector<int64_t>& kernel,
                     const std::vector<int64_t>& strides, const std::vector<int64_t>& pads,
                     const std::vector<int64_t>& dilations, bool ceil_mode,
                     bool count_include_pad) {
  Attributes a;
  a.set_pool(fn);
  for (int64_t v : kernel) a.add_kernel(v);
  for (int64_t v : strides) a.add_strides(v);
  for (int64_t v : pads) a.add_pads(v);
  for (int64_t v : dilations) a.add_dilations(v);
  a.set_ceil_mode(ceil_mode);
  a.set_count_include_pad(count_include_pad);
  return a;
}

// Pools in 1-3 dims with asymmetric pads, dilations, ceil mode (including windows that
// reach past the right padding) and both count_include_pad settings.
void PoolCoverage(PipelineBuilder& b) {
  auto x2 = b.Input("x2", {2, 3, 11, 10});
  auto x1 = b.Input("x1", {1, 2, 13});
  auto x3 = b.Input("x3", {1, 2, 5, 6, 7});
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(MAX_POOL, {3, 2}, {2, 1}, {2, 0, 1, 1}, {2, 3}, true, false)));
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(AVG_POOL, {3, 2}, {2, 1}, {2, 0, 1, 1}, {2, 3}, true, true)));
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(AVG_POOL, {3, 2}, {2, 1}, {2, 0, 1, 1}, {2, 3}, false, false)));
  b.Output(b.AddStage(POOL, {x2},
                      PoolAttrs(AVG_POOL, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true, true)));
  b.Output(b.AddStage(POOL, {x1}, PoolAttrs(MAX_POOL, {4}, {3}, {3, 1}, {1}, true, false)));
  b.Output(b.AddStage(POOL, {x1}, PoolAttrs(AVG_POOL, {4}, {3}, {3, 1}, {1}, true, false)));
  b.Output(b.AddStage(
      POOL, {x3},
      PoolAttrs(AVG_POOL, {2, 3, 2}, {2, 1, 3}, {1, 1, 0, 0, 1, 1}, {1, 1, 1}, true, true)));
}

// Convolutions in 1-3 dims with groups, strides, dilations and asymmetric pads.
void ConvCoverage(PipelineBuilder& b) {
  auto x1 = b.Input("x1", {2, 4, 17});
  auto x2 = b.Input("x2", {2, 6, 11, 10});
  auto x3 = b.Input("x3", {1, 4, 5, 6, 7});
  auto w1 = b.RandomParameter("w1", {6, 2, 3}, 0.5);
  auto b1 = b.RandomParameter("b1", {6}, 0.1);
  b.Output(b.Conv(x1, w1, b1, {2}, {3, 1}, {2}, 2));
  auto wd = b.RandomParameter("wd", {6, 1, 3, 3}, 0.5);
  b.Output(b.Conv(x2, wd, "", {2, 1}, {0, 2, 1, 0}, {1, 2}, 6));
  auto w2 = b.RandomParameter("w2", {5, 6, 2, 4}, 0.3);
  auto b2 = b.RandomParameter("b2", {5}, 0.1);
  b.Output(b.Conv(x2, w2, b2, {1, 3}, {1, 1, 2, 2}, {2, 1}, 1));
  auto w3 = b.RandomParameter("w3", {4, 2, 2, 3, 2}, 0.4);
  b.Output(b.Conv(x3, w3, "", {1, 2, 1}, {1, 0, 1, 0, 2, 0}, {2, 1, 3}, 2));
}

// MATMUL with transposes, batch broadcasting, alpha/beta and a broadcast c.
void MatMulCoverage(PipelineBuilder& b) {
  auto a4 = b.Input("a4", {3, 1, 7, 5});
  auto b3 = b.Input("b3", {4, 6, 7});
  b.Output(b.MatMul(a4, b3, /*trans_a=*/true, /*trans_b=*/true));
  auto a2 = b.Input("a2", {5, 7});
  auto w = b.RandomParameter("w", {7, 6}, 0.5);
  auto c = b.RandomParameter("c", {6}, 1.0);
  b.Output(b.Gemm(a2, w, c, 0.5, -2.0, false, false));
  auto c2 = b.RandomParameter("c2", {5, 1}, 1.0);
  b.Output(b.Gemm(a2, w, c2, 1.0, 1.0, false, false));
}

// PAD in every mode, strided and reversed SLICE, TRANSPOSE, RESHAPE, UPSAMPLE, CONCAT.
void DataMovementCoverage(PipelineBuilder& b) {
  auto x = b.Input("x", {3, 4, 5, 6});
  const std::vector<int64_t> pads = {1, 0, 2, 3, 0, 2, 1, 4};
  b.Output(b.Pad(x, pads, CONSTANT, 0.5));
  b.Output(b.Pad(x, pads, EDGE));
  b.Output(b.Pad(x, pads, REFLECT));
  Attributes slice;
  for (int64_t axis : {0, 2, 3}) slice.add_axes(axis);
  for (int64_t start : {2, 4, 1}) slice.add_starts(start);
  for (int64_t step : {-1, -2, 2}) slice.add_steps(step);
  b.Output(b.AddStageWithShape(SLICE, {x}, slice, {3, 4, 3, 3}));
  b.Output(b.Reshape(b.Transpose(x, {2, 0, 3, 1}), {15, 24}));
  b.Output(b.Upsample(x, {1, 2, 1, 3}));
  b.Output(b.Concat({x, b.Relu(x)}, 2));
}

// Every REDUCE function over several axis sets, every BINARY function with broadcasting.
void ReduceBinaryCoverage(PipelineBuilder& b) {
  auto x = b.Input("x", {3, 4, 5, 6});
  const std::vector<std::pair<std::vector<int64_t>, bool>> axes = {
      {{1, 3}, true}, {{0}, false}, {{0, 1, 2, 3}, false}, {{2}, true}, {{1, 2}, false}};
  int i = 0;
  for (ReduceFn fn : {SUM, MEAN, REDUCE_MAX, REDUCE_MIN, SUM_SQUARE}) {
    b.Output(b.Reduce(fn, x, axes[i].first, axes[i].second));
    ++i;
  }
  auto p = b.Input("p", {3, 1, 5, 1});
  auto q = b.Input("q", {4, 1, 6});
  auto q_positive = b.UnaryWithParams(SCALE, b.Unary(ABS, q), 1.0, 0.5);
  auto p_positive = b.UnaryWithParams(SCALE, b.Unary(ABS, p), 1.0, 0.5);
  for (BinaryFn fn : {ADD, SUB, MUL, MAX, MIN}) b.Output(b.Binary(fn, p, q));
  b.Output(b.Div(p, q_positive));
  b.Output(b.Binary(POW, p_positive, q));
}

// Every UNARY function over [-6, 6) (positive-domain ones over [0.05, 6.05)).
void UnaryCoverage(PipelineBuilder& b) {
  auto x = b.UnaryWithParams(SCALE, b.Input("x", {4, 64}), 6.0, 0.0);
  auto positive = b.UnaryWithParams(SCALE, b.Unary(ABS, x), 1.0, 0.05);
  for (int fn = RELU; fn <= SCALE; ++fn) {
    const UnaryFn f = static_cast<UnaryFn>(fn);
    if (f == CLIP) continue;
    const bool positive_only = f == LOG || f == SQRT || f == RSQRT || f == RECIPROCAL;
    b.Output(b.Unary(f, positive_only ? positive : x));
  }
  b.Output(b.Clip(x, -1.5, 4.0));
  b.Output(b.UnaryWithParams(LEAKY_RELU, x, 0.2, 0.0));
  b.Output(b.UnaryWithParams(ELU, x, 0.7, 0.0));
  b.Output(b.UnaryWithParams(HARD_SIGMOID, x, 0.1, 0.6));
}

struct CoverageCase {
  std::string name;
  DataType dtype;
  MathMode math;
};

const std::map<std::string, std::function<void(PipelineBuilder&)>>& CoverageBuilders() {
  static const std::map<std::string, std::function<void(PipelineBuilder&)>> builders = {
      {"pool", PoolCoverage},
      {"conv", ConvCoverage},
      {"matmul", MatMulCoverage},
      {"data_movement", DataMovementCoverage},
      {"reduce_binary", ReduceBinaryCoverage},
      {"unary", UnaryCoverage},
  };
  return builders;
}

class OpCoverageTest : public testing::TestWithParam<CoverageCase> {};

TEST_P(OpCoverageTest, HalideMatchesTorch) {
  const CoverageCase& c = GetParam();
  PipelineBuilder b(c.name + "_coverage", c.dtype);
  b.set_math(c.math);
  CoverageBuilders().at(c.name)(b);
  ExpectHalideMatchesTorch(b.Finish());
}

INSTANTIATE_TEST_SUITE_P(
    Ops, OpCoverageTest,
    testing::Values(CoverageCase{"pool", FLOAT32, EXACT}, CoverageCase{"pool", FLOAT64, EXACT},
                    CoverageCase{"conv", FLOAT32, EXACT}, CoverageCase{"conv", FLOAT64, EXACT},
                    CoverageCase{"matmul", FLOAT32, EXACT}, CoverageCase{"matmul", FLOAT64, EXACT},
                    CoverageCase{"data_movement", FLOAT32, EXACT},
                    CoverageCase{"reduce_binary", FLOAT32, EXACT},
                    CoverageCase{"reduce_binary", FLOAT64, EXACT},
                    CoverageCase{"unary", FLOAT32, EXACT}, CoverageCase{"unary", FLOAT32, PADE},
                    CoverageCase{"unary", FLOAT64, EXACT}, CoverageCase{"unary", FLOAT64, PADE}),
    [](const testing::TestParamInfo<CoverageCase>& info) {
      return info.param.name + (info.param.dtype == FLOAT64 ? "_f64" : "_f32") +
             (info.param.math == PADE ? "_pade" : "_exact");
    });

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
