#include "tests/scheduler/autoschedule/test_blocks.h"

#include <gtest/gtest.h>

#include "pipeline/builder.h"
#include "pipeline/zoo.h"

namespace schedfarm {
namespace autoschedule_test {
namespace {

PipelineGraph Build(const StatusOr<PipelineSpec>& spec) {
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec.ok() ? *spec : PipelineSpec());
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return std::move(*graph);
}

}  // namespace

PipelineGraph Mlp() {
  PipelineBuilder b("mlp");
  const std::string x = b.Input("x", {32, 48});
  b.Output(b.Relu(b.Linear(x, 32)));
  return Build(b.Finish());
}

PipelineGraph ConvRelu() {
  PipelineBuilder b("conv_relu");
  const std::string x = b.Input("x", {1, 8, 10, 10});
  b.Output(b.Relu(b.Conv2d(x, 8, 3, /*stride=*/1, /*pad=*/1)));
  return Build(b.Finish());
}

PipelineGraph SmallZoo(const std::string& name) {
  ZooOptions options;
  options.spatial_scale = 0.25;
  options.channel_scale = 0.25;
  return Build(MakeZooBlock(name, options));
}

int StageWithOp(const PipelineGraph& graph, OpKind op) {
  for (int s = 0; s < graph.num_stages(); ++s) {
    if (graph.stage(s).op() == op) return s;
  }
  ADD_FAILURE() << "pipeline '" << graph.spec().name() << "' has no " << OpKind_Name(op)
                << " stage";
  return 0;
}

}  // namespace autoschedule_test
}  // namespace schedfarm
