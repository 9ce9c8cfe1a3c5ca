#include "pipeline/graph.h"

#include <gtest/gtest.h>

#include "pipeline/spec.h"
#include "test_pipelines.h"

namespace schedfarm {
namespace {

std::string BuildError(const PipelineSpec& spec, const PipelineLimits& limits = {}) {
  StatusOr<PipelineGraph> g = PipelineGraph::Build(spec, limits);
  return g.ok() ? "OK" : g.status().message();
}

Stage* FindStage(PipelineSpec& spec, const std::string& label) {
  for (Stage& s : *spec.mutable_stages()) {
    if (s.label() == label) return &s;
  }
  return nullptr;
}

TEST(PipelineGraphTest, ResolvesAValidPipeline) {
  StatusOr<PipelineGraph> g = PipelineGraph::Build(SmallConvPipeline());
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->num_stages(), 3);
  EXPECT_EQ(g->topological_order(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(g->consumers(0), (std::vector<int>{1}));
  EXPECT_EQ(g->output_stages(), (std::vector<int>{2}));
  EXPECT_EQ(g->value(g->stage_value(2)).shape, (Shape{1, 8, 8, 8}));
  EXPECT_EQ(g->input_shapes(0), (std::vector<Shape>{{1, 3, 16, 16}, {8, 3, 3, 3}, {8}}));
}

TEST(PipelineGraphTest, TopologicalOrderDoesNotNeedDeclarationOrder) {
  PipelineSpec spec = SmallConvPipeline();
  std::swap(*spec.mutable_stages(0), *spec.mutable_stages(2));
  StatusOr<PipelineGraph> g = PipelineGraph::Build(spec);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(g->topological_order(), (std::vector<int>{2, 1, 0}));
}

TEST(PipelineGraphTest, CycleIsNamed) {
  PipelineSpec spec = SmallConvPipeline();
  // conv reads the pool's output: conv -> relu -> pool -> conv.
  spec.mutable_stages(0)->set_inputs(0, spec.stages(2).name());
  std::string error = BuildError(spec);
  EXPECT_NE(error.find("cycle"), std::string::npos) << error;
  EXPECT_NE(error.find("'conv'"), std::string::npos) << error;
  EXPECT_NE(error.find("'max_pool'"), std::string::npos) << error;
}

TEST(PipelineGraphTest, SelfReferenceIsACycle) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_stages(1)->set_inputs(0, spec.stages(1).name());
  EXPECT_NE(BuildError(spec).find("reads its own output"), std::string::npos);
}

TEST(PipelineGraphTest, DanglingReference) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_stages(1)->set_inputs(0, "nowhere");
  std::string error = BuildError(spec);
  EXPECT_NE(error.find("stage 'relu': input 0 'nowhere' does not name"), std::string::npos) << error;
}

TEST(PipelineGraphTest, ShapeMismatchNamesStageAndShapes) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_stages(1)->set_shape(3, 15);
  std::string error = BuildError(spec);
  EXPECT_NE(error.find("stage 'relu' (unary.relu): declared shape [1, 8, 16, 15] but its inputs "
                       "give [1, 8, 16, 16]"),
            std::string::npos)
      << error;
}

TEST(PipelineGraphTest, IncompatibleWeightsAreRejected) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_parameters(0)->mutable_tensor()->set_shape(1, 4);  // w [8, 4, 3, 3] for 3 channels
  std::string error = BuildError(spec);
  EXPECT_NE(error.find("stage 'conv' (conv)"), std::string::npos) << error;
  EXPECT_NE(error.find("input channels / groups = 3"), std::string::npos) << error;
}

TEST(PipelineGraphTest, UnknownOperator) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_stages(1)->set_op(static_cast<OpKind>(99));
  EXPECT_NE(BuildError(spec).find("stage 'relu': op is missing or unknown"), std::string::npos);
  spec.mutable_stages(1)->set_op(OP_KIND_UNSPECIFIED);
  EXPECT_NE(BuildError(spec).find("op is missing"), std::string::npos);
}

TEST(PipelineGraphTest, UnknownBoundaryLayout) {
  PipelineSpec spec = SmallConvPipeline();
  spec.set_boundary_layout(static_cast<BoundaryLayout>(5));
  EXPECT_NE(BuildError(spec).find("boundary_layout 5 is not a layout"), std::string::npos)
      << BuildError(spec);
}

TEST(PipelineGraphTest, AttributeTheOpDoesNotReadIsRejected) {
  PipelineSpec spec = SmallConvPipeline();
  FindStage(spec, "relu")->mutable_attrs()->add_perm(0);
  EXPECT_NE(BuildError(spec).find("attribute 'perm' is not used by UNARY"), std::string::npos);
}

TEST(PipelineGraphTest, ZeroAndNegativeExtents) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_inputs(0)->set_shape(2, 0);
  EXPECT_NE(BuildError(spec).find("input 'x': shape [1, 3, 0, 16] has an extent < 1"),
            std::string::npos);
  spec = SmallConvPipeline();
  spec.mutable_stages(0)->set_shape(1, -8);
  EXPECT_NE(BuildError(spec).find("stage 'conv': shape [1, -8, 16, 16] has an extent < 1"),
            std::string::npos);
}

TEST(PipelineGraphTest, AbsurdSizes) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_inputs(0)->set_shape(0, 1ll << 40);
  std::string error = BuildError(spec);
  EXPECT_NE(error.find("input 'x'"), std::string::npos) << error;
  EXPECT_NE(error.find("over the limit"), std::string::npos) << error;

  PipelineLimits small;
  small.max_total_bytes = 1000;
  EXPECT_NE(BuildError(SmallConvPipeline(), small).find("bytes, over the limit of 1000"),
            std::string::npos);
  small = PipelineLimits();
  small.max_rank = 3;
  EXPECT_NE(BuildError(SmallConvPipeline(), small).find("rank 4 exceeds the limit of 3"),
            std::string::npos);
}

TEST(PipelineGraphTest, DuplicateNamesAndMissingNames) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_stages(1)->set_name(spec.stages(0).name());
  EXPECT_NE(BuildError(spec).find("name 'conv' is defined twice"), std::string::npos);
  spec = SmallConvPipeline();
  spec.mutable_stages(1)->set_name("");
  EXPECT_NE(BuildError(spec).find("stage has no name"), std::string::npos);
}

TEST(PipelineGraphTest, OutputsMustBeStages) {
  PipelineSpec spec = SmallConvPipeline();
  spec.clear_outputs();
  EXPECT_NE(BuildError(spec).find("has no outputs"), std::string::npos);
  spec.add_outputs("x");
  EXPECT_NE(BuildError(spec).find("output 'x' does not name a stage"), std::string::npos);
  spec = SmallConvPipeline();
  spec.set_checked_outputs(spec.outputs_size() + 1);
  EXPECT_NE(BuildError(spec).find("checked_outputs is 2, outside 0..1 (its outputs)"),
            std::string::npos)
      << BuildError(spec);
}

TEST(PipelineGraphTest, DtypesMustAgree) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_stages(1)->set_dtype(FLOAT64);
  EXPECT_NE(BuildError(spec).find("input 'conv' is f32 but the stage is f64"), std::string::npos);
  spec = SmallConvPipeline();
  spec.mutable_inputs(0)->set_dtype(DATA_TYPE_UNSPECIFIED);
  EXPECT_NE(BuildError(spec).find("dtype must be f32 or f64"), std::string::npos);
}

TEST(PipelineGraphTest, RawDataLengthIsChecked) {
  PipelineSpec spec = SmallConvPipeline();
  spec.mutable_parameters(1)->set_raw_data(std::string(12, '\0'));  // bias [8] of f32 needs 32
  EXPECT_NE(BuildError(spec).find("parameter 'b': raw_data has 12 bytes"), std::string::npos);
  spec.mutable_parameters(1)->clear_init();
  EXPECT_NE(BuildError(spec).find("has neither random init nor raw_data"), std::string::npos);
}

TEST(PipelineGraphTest, TruncatedProtobufIsAnError) {
  std::string bytes = SmallConvPipeline().SerializeAsString();
  ASSERT_TRUE(ParsePipelineSpec(bytes, "lease 7").ok());
  for (size_t cut : {bytes.size() / 3, bytes.size() / 2, bytes.size() - 3}) {
    StatusOr<PipelineGraph> g = ParsePipelineSpec(bytes.substr(0, cut), "lease 7");
    ASSERT_FALSE(g.ok()) << "cut at " << cut;
    EXPECT_EQ(g.status().message().rfind("lease 7: ", 0), 0u) << g.status().message();
  }
  EXPECT_FALSE(ParsePipelineSpec("\xff\xff\xff garbage", "file.pb").ok());
}

}  // namespace
}  // namespace schedfarm
