#include "pipeline/spec.h"

#include <gtest/gtest.h>

#include "test_pipelines.h"

namespace schedfarm {
namespace {

std::string IdOf(const PipelineSpec& spec) {
  StatusOr<PipelineGraph> g = PipelineGraph::Build(spec);
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? PipelineId(*g) : "";
}

// Two branches joined by an add: independent stages whose order can be swapped.
PipelineSpec TwoBranches() {
  PipelineBuilder b("branches");
  auto x = b.Input("x", {1, 4, 8, 8});
  auto left = b.Relu(x);
  auto right = b.Sigmoid(x);
  b.Output(b.Add(left, right));
  return b.Finish().value();
}

TEST(SpecTest, IdIsStableAcrossRunsAndMachines) {
  // A golden value: the canonical form is a persisted contract (pipeline ids are keys
  // in the store). If this changes, kCanonicalFormVersion must change too.
  StatusOr<PipelineGraph> g = PipelineGraph::Build(SmallConvPipeline());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(CanonicalForm(*g).rfind("schedfarm.pipeline.v1\ninput 0 f32[1,3,16,16]\n", 0), 0u);
  EXPECT_EQ(PipelineId(*g).size(), 32u);
  EXPECT_EQ(PipelineId(*g), IdOf(SmallConvPipeline()));
  EXPECT_EQ(PipelineId(*g), "15dde7cc8a9c2796819f76b513c71106") << CanonicalForm(*g);
}

TEST(SpecTest, AChannelsLastLayoutIsPartOfTheId) {
  PipelineSpec spec = SmallConvPipeline();
  spec.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  StatusOr<PipelineGraph> g = PipelineGraph::Build(spec);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(CanonicalForm(*g).rfind("schedfarm.pipeline.v1\nlayout LAYOUT_CHANNELS_LAST\n", 0), 0u);
  EXPECT_NE(IdOf(spec), IdOf(SmallConvPipeline()));
  EXPECT_TRUE(BoundaryChannelsLast(spec, 4));
  EXPECT_FALSE(BoundaryChannelsLast(spec, 2));
  EXPECT_FALSE(BoundaryChannelsLast(SmallConvPipeline(), 4));
}

TEST(SpecTest, NamesLabelsAndSourceDoNotChangeTheId) {
  PipelineSpec spec = SmallConvPipeline();
  std::string id = IdOf(spec);
  spec.set_name("renamed");
  spec.set_source("yaml:somewhere.yaml");
  spec.mutable_stages(1)->set_name("activation");
  spec.mutable_stages(2)->set_inputs(0, "activation");
  spec.mutable_stages(0)->set_label("something else");
  EXPECT_EQ(IdOf(spec), id);
}

TEST(SpecTest, DeclarationOrderOfIndependentStagesDoesNotChangeTheId) {
  PipelineSpec spec = TwoBranches();
  std::string id = IdOf(spec);
  std::swap(*spec.mutable_stages(0), *spec.mutable_stages(1));
  EXPECT_EQ(IdOf(spec), id);
  std::swap(*spec.mutable_stages(0), *spec.mutable_stages(2));  // the add first
  EXPECT_EQ(IdOf(spec), id);
}

TEST(SpecTest, ComputationChangesChangeTheId) {
  const std::string id = IdOf(SmallConvPipeline());
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_parameters(0)->mutable_random()->set_seed(12345);
  EXPECT_NE(IdOf(spec), id);
  spec = SmallConvPipeline();
  spec.mutable_stages(1)->mutable_attrs()->set_unary(SIGMOID);
  EXPECT_NE(IdOf(spec), id);
  spec = SmallConvPipeline();
  spec.mutable_stages(0)->mutable_attrs()->set_groups(1);  // same value as before
  EXPECT_EQ(IdOf(spec), id);
  // Swapping the operands of a non-commutative op changes the id.
  PipelineBuilder b("sub");
  auto x = b.Input("x", {4});
  auto y = b.Input("y", {4});
  b.Output(b.Sub(x, y));
  PipelineSpec sub = b.Finish().value();
  std::string sub_id = IdOf(sub);
  sub.mutable_stages(0)->set_inputs(0, "y");
  sub.mutable_stages(0)->set_inputs(1, "x");
  EXPECT_NE(IdOf(sub), sub_id);
}

TEST(SpecTest, DefaultsSpelledOutHashLikeDefaultsLeftOut) {
  PipelineBuilder b("leaky");
  auto x = b.Input("x", {4});
  b.Output(b.Unary(LEAKY_RELU, x));
  PipelineSpec implicit = b.Finish().value();
  PipelineSpec explicit_alpha = implicit;
  explicit_alpha.mutable_stages(0)->mutable_attrs()->set_alpha(0.01);
  EXPECT_EQ(IdOf(implicit), IdOf(explicit_alpha));
  explicit_alpha.mutable_stages(0)->mutable_attrs()->set_alpha(0.2);
  EXPECT_NE(IdOf(implicit), IdOf(explicit_alpha));
  // The math mode of a function that has no approximation does not matter.
  PipelineSpec relu = SmallConvPipeline();
  std::string id = IdOf(relu);
  relu.mutable_stages(1)->mutable_attrs()->set_math(PADE);
  EXPECT_EQ(IdOf(relu), id);
}

TEST(SpecTest, RawDataIsPartOfTheId) {
  PipelineBuilder b("constant");
  auto x = b.Input("x", {3});
  auto c = b.ConstantParameter("c", {3}, {1, 2, 3});
  b.Output(b.Mul(x, c));
  PipelineSpec spec = b.Finish().value();
  std::string id = IdOf(spec);
  std::string raw = spec.parameters(0).raw_data();
  raw[0] ^= 1;
  spec.mutable_parameters(0)->set_raw_data(raw);
  EXPECT_NE(IdOf(spec), id);
}

}  // namespace
}  // namespace schedfarm
