#include "pipeline/ops.h"

#include <gtest/gtest.h>

#include "pipeline/builder.h"
#include "pipeline/graph.h"

namespace schedfarm {
namespace {

std::vector<std::string> Names(const std::vector<LoopDim>& dims) {
  std::vector<std::string> names;
  for (const LoopDim& d : dims) names.push_back(d.name + "=" + std::to_string(d.extent));
  return names;
}

PipelineGraph Graph(PipelineBuilder& b) {
  StatusOr<PipelineSpec> spec = b.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return PipelineGraph::Build(*spec).value();
}

TEST(OpsTest, LoopNestNamesFollowTheDocumentedConvention) {
  PipelineBuilder b("loops");
  auto x = b.Input("x", {1, 4, 10, 12});
  auto conv = b.Conv2d(x, 6, 3, 1, 1, 2);
  auto pooled = b.MaxPool(conv, {2, 3}, {2, 3}, {0, 0, 0, 0});
  auto reduced = b.Reduce(SUM, pooled, {1, 3}, false);
  auto m = b.Input("m", {5, 7});
  auto n = b.Input("n", {7, 2});
  b.Output(reduced);
  b.Output(b.MatMul(m, n));
  PipelineGraph g = Graph(b);
  StageLoops c = g.loops(0);
  EXPECT_EQ(Names(c.pure), (std::vector<std::string>{"d3=12", "d2=10", "d1=6", "d0=1"}));
  EXPECT_EQ(Names(c.reduction), (std::vector<std::string>{"rk1=3", "rk0=3", "rc=2"}));
  EXPECT_EQ(Names(g.loops(1).reduction), (std::vector<std::string>{"rk1=3", "rk0=2"}));
  EXPECT_EQ(Names(g.loops(2).pure), (std::vector<std::string>{"d1=5", "d0=1"}));
  EXPECT_EQ(Names(g.loops(2).reduction), (std::vector<std::string>{"r3=4", "r1=6"}));
  EXPECT_EQ(Names(g.loops(3).reduction), (std::vector<std::string>{"rk=7"}));
}

TEST(OpsTest, CeilModeDropsAWindowStartingInThePadding) {
  // Input 5, kernel 2, stride 2, pad 1+1: span = 5 + 2 - 2 = 5; ceil(5/2)+1 = 4, but
  // window 3 would start at 6 >= 5 + 1, so 3 windows (PyTorch's rule).
  PipelineBuilder b("ceil");
  auto x = b.Input("x", {1, 1, 5});
  EXPECT_EQ(b.ShapeOf(b.MaxPool(x, {2}, {2}, {1, 1}, true)), (Shape{1, 1, 3}));
  EXPECT_EQ(b.ShapeOf(b.MaxPool(x, {2}, {2}, {1, 1}, false)), (Shape{1, 1, 3}));
  auto y = b.Input("y", {1, 1, 6});
  EXPECT_EQ(b.ShapeOf(b.MaxPool(y, {3}, {2}, {0, 0}, true)), (Shape{1, 1, 3}));
  EXPECT_EQ(b.ShapeOf(b.MaxPool(y, {3}, {2}, {0, 0}, false)), (Shape{1, 1, 2}));
  EXPECT_TRUE(b.ok()) << b.error().message();
}

TEST(OpsTest, PoolPaddingMustBeSmallerThanTheWindow) {
  PipelineBuilder b("pad");
  auto x = b.Input("x", {1, 1, 8, 8});
  b.MaxPool2d(x, 2, 2, 2);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("must be smaller than the (dilated) kernel"),
            std::string::npos);
}

TEST(OpsTest, CostsCountMultiplyAddsAsTwoFlops) {
  PipelineBuilder b("cost");
  auto m = b.Input("m", {5, 7});
  auto n = b.Input("n", {7, 2});
  b.Output(b.Relu(b.MatMul(m, n)));
  PipelineGraph g = Graph(b);
  EXPECT_DOUBLE_EQ(g.cost(0).flops, 2.0 * 5 * 2 * 7);
  EXPECT_DOUBLE_EQ(g.cost(0).bytes_read, (35 + 14) * 4.0);
  EXPECT_DOUBLE_EQ(g.cost(0).bytes_written, 10 * 4.0);
  EXPECT_DOUBLE_EQ(g.cost(1).flops, 10.0);
  EXPECT_DOUBLE_EQ(g.total_cost().flops, 150.0);
}

TEST(OpsTest, AccessPatterns) {
  PipelineBuilder b("access");
  auto x = b.Input("x", {2, 3, 4, 4});
  auto bias = b.Input("bias", {3, 1, 1});
  b.Output(b.Add(x, bias));
  b.Output(b.Transpose(x, {0, 1, 3, 2}));
  b.Output(b.Slice(x, 3, 0, 4, 2));
  b.Output(b.Conv2d(x, 3, 3));
  PipelineGraph g = Graph(b);
  EXPECT_EQ(AccessPatternOf(g.stage(0), 0, g.input_shapes(0)), AccessPattern::kPointwise);
  EXPECT_EQ(AccessPatternOf(g.stage(0), 1, g.input_shapes(0)), AccessPattern::kBroadcast);
  EXPECT_EQ(AccessPatternOf(g.stage(1), 0, g.input_shapes(1)), AccessPattern::kTransposed);
  EXPECT_EQ(AccessPatternOf(g.stage(2), 0, g.input_shapes(2)), AccessPattern::kStrided);
  EXPECT_EQ(AccessPatternOf(g.stage(3), 0, g.input_shapes(3)), AccessPattern::kStencil);
  EXPECT_STREQ(AccessPatternName(AccessPattern::kStencil), "stencil");
}

TEST(OpsTest, ClampedAxesAreTheAxesReadOutsideTheInputOrInPieces) {
  PipelineBuilder b("clamped");
  auto x = b.Input("x", {1, 2, 7, 7});
  b.Output(b.Conv2d(x, 3, 3, 1, 1));                              // 0: padded
  b.Output(b.Conv2d(x, 3, 3));                                    // 1: no padding
  b.Output(b.MaxPool(x, {2, 2}, {2, 2}, {0, 0, 0, 0}, true));     // 2: ceil_mode, 4 x 4
  b.Output(b.MaxPool(x, {3, 3}, {2, 2}, {1, 0, 1, 0}));           // 3: pads begin on H
  b.Output(b.Pad(x, {0, 0, 0, 2, 0, 0, 0, 0}));                   // 4: W padded
  b.Output(b.Concat({x, x}, 1));                                  // 5
  b.Output(b.Relu(x));                                            // 6
  PipelineGraph g = Graph(b);
  auto axes = [&](int s, int input) { return ClampedAxes(g.stage(s), input, g.input_shapes(s)); };
  EXPECT_EQ(axes(0, 0), (std::vector<int>{2, 3}));
  EXPECT_TRUE(axes(0, 1).empty());  // weights
  EXPECT_TRUE(axes(1, 0).empty());
  EXPECT_EQ(axes(2, 0), (std::vector<int>{2, 3}));
  EXPECT_EQ(axes(3, 0), (std::vector<int>{2}));
  EXPECT_EQ(axes(4, 0), (std::vector<int>{3}));
  EXPECT_EQ(axes(5, 0), (std::vector<int>{1}));
  EXPECT_EQ(axes(5, 1), (std::vector<int>{1}));
  EXPECT_TRUE(axes(6, 0).empty());
}

TEST(OpsTest, SliceBoundsAreChecked) {
  Stage s;
  s.set_op(SLICE);
  s.add_inputs("x");
  s.mutable_attrs()->add_axes(0);
  s.mutable_attrs()->add_starts(2);
  s.mutable_attrs()->add_steps(3);
  s.add_shape(3);  // 2, 5, 8 of an extent-8 input: the last is out of range
  StatusOr<Shape> shape = InferOutputShape(s, {{8}});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("leave the input extent 8"), std::string::npos);
  s.set_shape(0, 2);
  EXPECT_TRUE(InferOutputShape(s, {{8}}).ok());
  s.mutable_attrs()->set_steps(0, 0);
  EXPECT_NE(InferOutputShape(s, {{8}}).status().message().find("step must not be 0"),
            std::string::npos);
}

TEST(OpsTest, WrongInputCountsAndMissingFunctions) {
  Stage s;
  s.set_op(BINARY);
  s.add_inputs("a");
  s.mutable_attrs()->set_binary(ADD);
  EXPECT_NE(CheckAttributes(s).message().find("BINARY takes 2 inputs, got 1"), std::string::npos);
  s.add_inputs("b");
  s.mutable_attrs()->set_binary(BINARY_FN_UNSPECIFIED);
  EXPECT_NE(CheckAttributes(s).message().find("binary function missing"), std::string::npos);
  Stage u;
  u.set_op(UNARY);
  u.add_inputs("a");
  u.mutable_attrs()->set_unary(RELU);
  u.mutable_attrs()->set_alpha(2);
  EXPECT_NE(CheckAttributes(u).message().find("'alpha' is not used by RELU"), std::string::npos);
}

}  // namespace
}  // namespace schedfarm
