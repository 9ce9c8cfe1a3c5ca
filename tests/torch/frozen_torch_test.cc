// The frozen libtorch run (pipeline/torch/frozen_torch.h) and its TorchScript generator
// (pipeline/torch/torch_script.h): the frozen and optimized module computes what the
// eager oracle computes on every zoo block (f32, and f64 on three), every op-coverage
// pipeline and random pipelines; a ResNet-18 block's optimized graph runs both
// convolutions on MKL-DNN with the batch norms folded into them; where the optimization
// changes the outputs the frozen module runs without it; an op the generator does not
// know is an error naming the stage and the op; bad inputs are errors naming them.
#include "pipeline/torch/frozen_torch.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/tensor.h"
#include "pipeline/torch/torch_eval.h"
#include "pipeline/torch/torch_script.h"
#include "pipeline/zoo.h"
#include "tests/torch/op_coverage.h"

namespace schedfarm {
namespace {

PipelineGraph MustBuild(const StatusOr<PipelineSpec>& spec) {
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec.ok() ? *spec : PipelineSpec());
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return std::move(*graph);
}

// Runs `spec` frozen and with the eager oracle on the same deterministic inputs and
// compares every output.
void ExpectFrozenMatchesEager(const StatusOr<PipelineSpec>& spec) {
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const PipelineGraph graph = MustBuild(spec);
  const std::vector<HostTensor> inputs = DeterministicInputs(graph.spec());
  StatusOr<std::vector<HostTensor>> eager = EvaluateWithTorch(graph, inputs);
  ASSERT_TRUE(eager.ok()) << eager.status().ToString();
  StatusOr<FrozenTorchProgram> frozen = FrozenTorchProgram::Prepare(graph, inputs);
  ASSERT_TRUE(frozen.ok()) << frozen.status().ToString();
  ASSERT_TRUE(frozen->Run().ok());
  const std::vector<HostTensor> outputs = frozen->Outputs();
  ASSERT_EQ(outputs.size(), eager->size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const HostTensor& expected = (*eager)[i];
    const Comparison c = CompareTensors(outputs[i], expected, DefaultTolerance(expected.dtype));
    EXPECT_TRUE(c.match) << "output '" << graph.spec().outputs(static_cast<int>(i)) << "' "
                         << ShapeToString(expected.shape) << ": " << c.message;
  }
}

class FrozenZooTest : public testing::TestWithParam<std::string> {};

TEST_P(FrozenZooTest, MatchesTheEagerOracle) { ExpectFrozenMatchesEager(MakeZooBlock(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Zoo, FrozenZooTest, testing::ValuesIn(ZooNames()));

class FrozenZooFloat64Test : public testing::TestWithParam<std::string> {};

TEST_P(FrozenZooFloat64Test, MatchesTheEagerOracle) {
  ZooOptions options;
  options.dtype = FLOAT64;
  ExpectFrozenMatchesEager(MakeZooBlock(GetParam(), options));
}

INSTANTIATE_TEST_SUITE_P(Zoo, FrozenZooFloat64Test,
                         testing::Values("resnet18_basic", "transformer_encoder",
                                         "inception_module"));

class FrozenOpCoverageTest : public testing::TestWithParam<OpCoverageCase> {};

TEST_P(FrozenOpCoverageTest, MatchesTheEagerOracle) {
  const OpCoverageCase& c = GetParam();
  PipelineBuilder b(c.name + "_coverage", c.dtype);
  b.set_math(c.math);
  OpCoverageBuilders().at(c.name)(b);
  ExpectFrozenMatchesEager(b.Finish());
}

INSTANTIATE_TEST_SUITE_P(Ops, FrozenOpCoverageTest, testing::ValuesIn(OpCoverageCases()),
                         OpCoverageCaseName);

class FrozenRandomTest : public testing::TestWithParam<int> {};

TEST_P(FrozenRandomTest, MatchesTheEagerOracle) {
  RandomPipelineOptions options;
  options.max_ops = 20;
  options.max_elements = 1 << 16;
  options.max_flops = 5e7;
  ExpectFrozenMatchesEager(RandomPipeline(static_cast<uint64_t>(GetParam()), options));
}

INSTANTIATE_TEST_SUITE_P(Random, FrozenRandomTest, testing::Range(1, 41),
                         [](const testing::TestParamInfo<int>& info) {
                           return "seed" + std::to_string(info.param);
                         });

// The batch norm's per-channel scale and shift ([C, 1, 1] parameters) are read with a
// leading 1, as [1, C, 1, 1]: the shape freezing folds into the convolution before.
TEST(TorchScriptGenerator, ReadsBroadcastParametersAtTheRankOfTheirResult) {
  const PipelineGraph graph = MustBuild(MakeZooBlock("resnet18_basic"));
  StatusOr<TorchScriptModule> module = GenerateTorchScript(graph);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  int lifted = 0;
  for (const ScriptAttribute& attribute : module->attributes) {
    ASSERT_GE(attribute.parameter, 0) << attribute.name;
    const Shape& own = graph.value(attribute.parameter).shape;
    if (attribute.shape == own) continue;
    ++lifted;
    EXPECT_EQ(attribute.name, "p" + std::to_string(attribute.parameter) + "_4d");
    Shape expected = {1};
    expected.insert(expected.end(), own.begin(), own.end());
    EXPECT_EQ(attribute.shape, expected);
    EXPECT_NE(module->source.find("self." + attribute.name), std::string::npos);
  }
  EXPECT_EQ(lifted, 4) << "two batch norms, each a scale and a shift:\n" << module->source;
  EXPECT_EQ(module->source.rfind("def forward(self, x0: Tensor) -> Tensor:\n", 0), 0u)
      << module->source;
}

// What optimize_for_inference makes of a ResNet-18 basic block (conv, BN, ReLU, conv,
// BN, residual add, ReLU): two MKL-DNN convolutions whose prepacked weights carry the
// batch norms, and no multiply or add by the batch norms' constants left.
TEST(FrozenTorchGraph, AResNetBlockRunsItsConvolutionsOnMklDnnWithTheBatchNormsFolded) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this libtorch has no MKL-DNN";
  const PipelineGraph graph = MustBuild(MakeZooBlock("resnet18_basic"));
  StatusOr<FrozenTorchProgram> frozen =
      FrozenTorchProgram::Prepare(graph, DeterministicInputs(graph.spec()));
  ASSERT_TRUE(frozen.ok()) << frozen.status().ToString();
  const std::string optimized = frozen->Graph();
  auto count = [&](const std::string& op) {
    int n = 0;
    for (size_t at = optimized.find(op); at != std::string::npos; at = optimized.find(op, at + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count("prim::mkldnn_convolution("), 2) << optimized;
  EXPECT_EQ(count("aten::conv2d("), 0) << optimized;
  EXPECT_EQ(count("aten::mul"), 0) << optimized;
  EXPECT_EQ(count("aten::add"), 1) << "the residual add alone:\n" << optimized;
  EXPECT_STREQ(frozen->Name(), "frozen");
}

// libtorch 1.13's MKL-DNN clamp after a convolution of 12 channels (not a multiple of
// 16) computes wrong values: the optimized module is dropped, and the frozen one runs.
TEST(FrozenTorchProgram, RunsUnoptimizedWhereTheOptimizationChangesTheOutputs) {
  for (int channels : {12, 16}) {
    SCOPED_TRACE(std::to_string(channels) + " channels");
    PipelineBuilder b("conv_clip");
    auto x = b.Input("x", {1, 22, 8, 8});
    auto w = b.RandomParameter("w", {channels, 22, 3, 3}, 0.5);
    auto bias = b.RandomParameter("b", {channels}, 0.5);
    b.Output(b.Clip(b.Conv(x, w, bias, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1), 0.0, 6.0));
    const PipelineGraph graph = MustBuild(b.Finish());
    ExpectFrozenMatchesEager(graph.spec());
    StatusOr<FrozenTorchProgram> frozen =
        FrozenTorchProgram::Prepare(graph, DeterministicInputs(graph.spec()));
    ASSERT_TRUE(frozen.ok()) << frozen.status().ToString();
    if (!at::hasMKLDNN()) continue;
    EXPECT_STREQ(frozen->Name(), channels == 12 ? "frozen_unoptimized" : "frozen")
        << "a libtorch without the clamp's fault (docs/MEASUREMENT.md says it has it):\n"
        << frozen->Graph();
  }
}

TEST(TorchScriptGenerator, AFunctionItDoesNotKnowIsAnErrorNamingTheStageAndOp) {
  PipelineBuilder b("newer_schema");
  auto x = b.Input("x", {2, 3});
  Attributes unknown;
  unknown.set_unary(static_cast<UnaryFn>(99));
  const std::string stage = b.AddStage(UNARY, {b.Relu(x)}, unknown);
  b.Output(stage);
  const PipelineGraph graph = MustBuild(b.Finish());
  StatusOr<TorchScriptModule> module = GenerateTorchScript(graph);
  ASSERT_FALSE(module.ok());
  const std::string& message = module.status().message();
  EXPECT_NE(message.find("pipeline 'newer_schema'"), std::string::npos) << message;
  EXPECT_NE(message.find("stage '" + stage + "' (unary"), std::string::npos) << message;
  EXPECT_NE(message.find("unary function 99"), std::string::npos) << message;
  StatusOr<FrozenTorchProgram> frozen =
      FrozenTorchProgram::Prepare(graph, DeterministicInputs(graph.spec()));
  ASSERT_FALSE(frozen.ok());
  EXPECT_EQ(frozen.status().message(), message);
}

TEST(FrozenTorchProgram, BadInputsAreErrorsNamingThem) {
  const PipelineGraph graph = MustBuild(MakeZooBlock("vgg_block"));
  StatusOr<FrozenTorchProgram> none = FrozenTorchProgram::Prepare(graph, {});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("0 input tensors given, the pipeline has 1"),
            std::string::npos)
      << none.status().message();
  std::vector<HostTensor> inputs = DeterministicInputs(graph.spec());
  inputs[0].shape.back() += 1;
  StatusOr<FrozenTorchProgram> wrong = FrozenTorchProgram::Prepare(graph, inputs);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("input '" + graph.spec().inputs(0).name() + "'"),
            std::string::npos)
      << wrong.status().message();
}

}  // namespace
}  // namespace schedfarm
