// The names the Halide lowering gives a pipeline's tensors, computed without Halide:
// sanitized to C identifiers, clear of loop names and C library symbols, unique across
// inputs, parameters and stages (tests/halide/lowering_test.cc checks the lowered side).
#include "pipeline/lowered_names.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace schedfarm {
namespace {

TEST(LoweredNames, AreSanitizedUniqueAndClearOfLoopNamesAndCSymbols) {
  PipelineSpec spec;
  spec.set_name("names");
  TensorDecl* in = spec.add_inputs();
  in->set_name("in-put");
  in->set_dtype(FLOAT32);
  in->add_shape(4);
  Parameter* parameter = spec.add_parameters();
  parameter->mutable_tensor()->set_name("exp");
  parameter->mutable_tensor()->set_dtype(FLOAT32);
  parameter->mutable_tensor()->add_shape(4);
  parameter->mutable_random()->set_scale(1);
  Stage* sum = spec.add_stages();
  sum->set_name("conv-1");
  sum->set_op(BINARY);
  sum->add_inputs("in-put");
  sum->add_inputs("exp");
  sum->set_dtype(FLOAT32);
  sum->add_shape(4);
  sum->mutable_attrs()->set_binary(ADD);
  std::string prev = "conv-1";
  for (const char* name : {"conv_1", "1x", "d0", "rk0", "in_put", "free"}) {
    Stage* stage = spec.add_stages();
    stage->set_name(name);
    stage->set_op(UNARY);
    stage->add_inputs(prev);
    stage->set_dtype(FLOAT32);
    stage->add_shape(4);
    stage->mutable_attrs()->set_unary(RELU);
    prev = name;
  }
  spec.add_outputs(prev);
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  ASSERT_TRUE(graph.ok()) << graph.status().ToString();

  const LoweredNames names = LoweredNamesOf(*graph);
  EXPECT_EQ(names.inputs, std::vector<std::string>{"in_put"});
  EXPECT_EQ(names.parameters, std::vector<std::string>{"exp_"});
  EXPECT_EQ(names.stages, (std::vector<std::string>{"conv_1", "conv_1_2", "t1x", "d0_", "rk0_",
                                                    "in_put_2", "free_"}));
}

}  // namespace
}  // namespace schedfarm
