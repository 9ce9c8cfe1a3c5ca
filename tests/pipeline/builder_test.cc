#include "pipeline/builder.h"

#include <gtest/gtest.h>

#include "pipeline/graph.h"
#include "pipeline/tensor.h"

namespace schedfarm {
namespace {

std::vector<std::string> Labels(const PipelineSpec& spec) {
  std::vector<std::string> labels;
  for (const Stage& s : spec.stages()) labels.push_back(s.label());
  return labels;
}

TEST(PipelineBuilderTest, InfersShapesOfTheOperatorLibrary) {
  PipelineBuilder b("shapes");
  auto x = b.Input("x", {2, 16, 32, 32});
  EXPECT_EQ(b.ShapeOf(b.Conv2d(x, 32, 3, 2, 1)), (Shape{2, 32, 16, 16}));
  EXPECT_EQ(b.ShapeOf(b.DepthwiseConv2d(x, 3, 1, 2, 2)), (Shape{2, 16, 32, 32}));
  EXPECT_EQ(b.ShapeOf(b.Conv2d(x, 8, 1, 1, 0, 4)), (Shape{2, 8, 32, 32}));
  EXPECT_EQ(b.ShapeOf(b.MaxPool2d(x, 3, 2, 1)), (Shape{2, 16, 16, 16}));
  EXPECT_EQ(b.ShapeOf(b.AvgPool(x, {3, 3}, {2, 2}, {0, 0, 0, 0}, false, true)),
            (Shape{2, 16, 16, 16}));
  EXPECT_EQ(b.ShapeOf(b.GlobalAvgPool(x)), (Shape{2, 16, 1, 1}));
  EXPECT_EQ(b.ShapeOf(b.Flatten(x)), (Shape{2, 16 * 32 * 32}));
  EXPECT_EQ(b.ShapeOf(b.Transpose(x, {0, 2, 3, 1})), (Shape{2, 32, 32, 16}));
  EXPECT_EQ(b.ShapeOf(b.Slice(x, -1, 1, 100, 2)), (Shape{2, 16, 32, 16}));
  EXPECT_EQ(b.ShapeOf(b.Slice(x, 2, -1, -100, -3)), (Shape{2, 16, 11, 32}));
  EXPECT_EQ(b.ShapeOf(b.Upsample(x, {1, 1, 2, 2})), (Shape{2, 16, 64, 64}));
  EXPECT_EQ(b.ShapeOf(b.Pad(x, {0, 0, 1, 2, 0, 0, 3, 4})), (Shape{2, 16, 36, 38}));
  EXPECT_EQ(b.ShapeOf(b.Concat({x, x, x}, 1)), (Shape{2, 48, 32, 32}));
  EXPECT_EQ(b.ShapeOf(b.Reduce(SUM, x, {-1, 1}, false)), (Shape{2, 32}));
  EXPECT_EQ(b.ShapeOf(b.Reshape(x, {2, -1, 64})), (Shape{2, 256, 64}));
  auto parts = b.Split(x, 1, {4, 12});
  EXPECT_EQ(b.ShapeOf(parts[1]), (Shape{2, 12, 32, 32}));
  auto seq = b.Input("seq", {2, 10, 64});
  EXPECT_EQ(b.ShapeOf(b.Linear(seq, 128)), (Shape{2, 10, 128}));
  auto k = b.Input("k", {2, 10, 64});
  EXPECT_EQ(b.ShapeOf(b.MatMul(seq, k, false, true)), (Shape{2, 10, 10}));
  auto w = b.Input("w", {64, 3});
  EXPECT_EQ(b.ShapeOf(b.MatMul(seq, w)), (Shape{2, 10, 3}));
  auto wave = b.Input("wave", {1, 8, 100});
  EXPECT_EQ(b.ShapeOf(b.Conv1d(wave, 8, 2, 1, 4, 0, 4)), (Shape{1, 8, 100}));
  auto vol = b.Input("vol", {1, 4, 8, 8, 8});
  EXPECT_EQ(b.ShapeOf(b.Conv3d(vol, 4, 3, 1, 1)), (Shape{1, 4, 8, 8, 8}));
  ASSERT_TRUE(b.ok()) << b.error().message();
}

TEST(PipelineBuilderTest, SoftmaxExpandsToPrimitiveStages) {
  PipelineBuilder b("softmax");
  auto x = b.Input("x", {4, 10});
  b.Output(b.Softmax(x, 1));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(Labels(*spec),
            (std::vector<std::string>{"reduce_max", "sub", "exp", "reduce_sum", "div"}));
  EXPECT_EQ(spec->stages(4).shape_size(), 2);
}

TEST(PipelineBuilderTest, LayerNormUsesMeanAndVariance) {
  PipelineBuilder b("ln");
  auto x = b.Input("x", {2, 5, 16});
  b.Output(b.LayerNorm(x));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(Labels(*spec), (std::vector<std::string>{"reduce_mean", "sub", "reduce_sum_square",
                                                     "layer_norm", "rsqrt", "mul", "mul", "add"}));
  const Stage& var = spec->stages(3);
  EXPECT_DOUBLE_EQ(var.attrs().alpha(), 1.0 / 16);
  EXPECT_DOUBLE_EQ(var.attrs().beta(), 1e-5);
}

TEST(PipelineBuilderTest, BatchNormWithConstantsFoldsToScaleAndShift) {
  PipelineBuilder b("bn");
  auto x = b.Input("x", {1, 2, 3, 3});
  auto gamma = b.ConstantParameter("gamma", {2}, {2.0, 0.5});
  auto beta = b.ConstantParameter("beta", {2}, {1.0, -1.0});
  auto mean = b.ConstantParameter("mean", {2}, {0.5, 0.0});
  auto var = b.ConstantParameter("var", {2}, {4.0, 0.25});
  b.Output(b.BatchNorm(x, gamma, beta, mean, var, 0.0));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_EQ(spec->stages_size(), 2);
  // scale = gamma / sqrt(var) = {1, 1}; shift = beta - mean * scale = {0.5, -1}.
  const Parameter& scale = spec->parameters(4);
  const Parameter& shift = spec->parameters(5);
  EXPECT_EQ(MaterializeParameter(scale)->data, (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(MaterializeParameter(shift)->data, (std::vector<double>{0.5, -1.0}));
  EXPECT_EQ(scale.tensor().shape_size(), 3);  // [2, 1, 1] broadcasts over [N, C, H, W]
}

TEST(PipelineBuilderTest, BatchNormOfComputedStatisticsUsesStages) {
  PipelineBuilder b("bn_dynamic");
  auto x = b.Input("x", {1, 2, 3, 3});
  auto gamma = b.Input("gamma", {2});
  auto beta = b.Input("beta", {2});
  auto mean = b.Input("mean", {2});
  auto var = b.Input("var", {2});
  b.Output(b.BatchNorm(x, gamma, beta, mean, var, 1e-5));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_GT(spec->stages_size(), 6);
}

TEST(PipelineBuilderTest, FirstErrorIsReportedByFinish) {
  PipelineBuilder b("bad");
  auto x = b.Input("x", {1, 3, 8, 8});
  auto y = b.Conv2d(x, 8, 11);  // 11x11 kernel on an 8x8 input without padding
  b.Relu(y);
  b.Output(b.Add(x, b.Input("z", {1, 3, 4, 4})));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("pipeline 'bad': operator conv (conv): spatial dim 0"),
            std::string::npos)
      << spec.status().message();
}

TEST(PipelineBuilderTest, BroadcastMismatchIsAnError) {
  PipelineBuilder b("bad_broadcast");
  auto x = b.Input("x", {2, 3});
  auto y = b.Input("y", {4, 3});
  b.Output(b.Add(x, y));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("do not broadcast (dim 0: 2 vs 4)"), std::string::npos)
      << spec.status().message();
}

TEST(PipelineBuilderTest, UniqueNamesAndMathMode) {
  PipelineBuilder b("names");
  b.set_math(PADE);
  auto x = b.Input("x", {4});
  auto a = b.Tanh(x);
  auto c = b.Tanh(a);
  auto r = b.Relu(c);
  b.Output(r);
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok());
  EXPECT_NE(a, c);
  EXPECT_EQ(spec->stages(0).attrs().math(), PADE);
  EXPECT_EQ(spec->stages(2).attrs().math(), EXACT);  // relu has no approximation
}

}  // namespace
}  // namespace schedfarm
