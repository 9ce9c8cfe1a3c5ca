// Helpers of the Halide tests: run a built pipeline with the reference schedule and
// compare every output against the libtorch evaluator (pipeline/torch/torch_eval.h).
#pragma once

#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"
#include "pipeline/tensor.h"
#include "pipeline/torch/torch_eval.h"

namespace schedfarm {

inline PipelineGraph BuildGraph(const StatusOr<PipelineSpec>& spec) {
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return PipelineGraph();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return graph.ok() ? *graph : PipelineGraph();
}

// Runs `spec` (untimed) and expects each output to match libtorch's evaluation within
// the dtype's default tolerance. Inputs are deterministic when `inputs` is empty.
inline void ExpectMatchesTorch(const StatusOr<PipelineSpec>& spec,
                               std::vector<HostTensor> inputs = {}) {
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const PipelineGraph graph = BuildGraph(spec);
  ASSERT_GT(graph.num_stages(), 0);
  if (inputs.empty()) inputs = DeterministicInputs(graph.spec());
  RunOptions options;
  options.timing_samples = 0;
  StatusOr<RunResult> run = RunReference(graph, options, inputs);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  StatusOr<std::vector<HostTensor>> expected = EvaluateWithTorch(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  ASSERT_EQ(run->outputs.size(), expected->size());
  for (size_t i = 0; i < expected->size(); ++i) {
    const int s = graph.output_stages()[i];
    const Stage& stage = graph.stage(s);
    Comparison c = CompareTensors(run->outputs[i], (*expected)[i], DefaultTolerance(stage.dtype()));
    EXPECT_TRUE(c.match) << "output '" << stage.name() << "' (" << OpDisplayName(stage) << ", "
                         << ShapeToString(run->outputs[i].shape) << "): " << c.message;
  }
}

}  // namespace schedfarm
