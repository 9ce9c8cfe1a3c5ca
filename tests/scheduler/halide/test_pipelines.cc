#include "tests/scheduler/halide/test_pipelines.h"

#include <google/protobuf/text_format.h>

#include "gtest/gtest.h"
#include "pipeline/builder.h"

namespace schedfarm {
namespace testing_pipelines {

StatusOr<PipelineSpec> ConvReluPool() {
  PipelineBuilder b("conv_relu_pool");
  const std::string x = b.Input("x", {1, 4, 18, 18});
  b.Output(b.MaxPool2d(b.Relu(b.Conv2d(x, 8, 3, 1, 1)), 2, 2));
  return b.Finish();
}

StatusOr<PipelineSpec> MatMulTwoOutputs() {
  PipelineBuilder b("matmul_two_outputs");
  const std::string a = b.Input("a", {20, 36});
  const std::string mm = b.MatMul(a, b.RandomParameter("w", {36, 28}, 0.2));
  b.Output(b.Tanh(b.Add(mm, b.RandomParameter("bias", {28}, 0.5))));
  b.Output(b.Reduce(SUM, mm, {0}, false));
  return b.Finish();
}

PipelineSpec RenameStages(PipelineSpec spec, const std::map<std::string, std::string>& names) {
  const auto renamed = [&](const std::string& name) {
    const auto it = names.find(name);
    return it == names.end() ? name : it->second;
  };
  for (Stage& stage : *spec.mutable_stages()) {
    stage.set_name(renamed(stage.name()));
    for (std::string& input : *stage.mutable_inputs()) input = renamed(input);
  }
  for (std::string& output : *spec.mutable_outputs()) output = renamed(output);
  return spec;
}

PipelineGraph MustBuild(const StatusOr<PipelineSpec>& spec) {
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return PipelineGraph();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return graph.ok() ? *graph : PipelineGraph();
}

ScheduleSpec ParseSchedule(const std::string& text) {
  ScheduleSpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &spec)) << text;
  return spec;
}

std::vector<HalideLoop> DefinitionLoopsOf(const LoopNest& nest, const std::string& func,
                                          int definition) {
  std::vector<HalideLoop> loops;
  for (const HalideLoop& loop : nest.loops) {
    if (loop.func == func && loop.definition == definition) loops.push_back(loop);
  }
  return loops;
}

FuncPlacement PlacementOf(const LoopNest& nest, const std::string& func) {
  for (const FuncPlacement& p : nest.placements) {
    if (p.func == func) return p;
  }
  return FuncPlacement();
}

}  // namespace testing_pipelines
}  // namespace schedfarm
