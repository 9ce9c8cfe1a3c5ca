// NetworkChannelsFirst: a ConvNeXt block (convolution, then layer norm, linear, GELU and
// linear in NHWC between two transposes, then the residual add) rewritten in NCHW: no
// transpose left, the linears 1x1 convolutions, the layer norm over axis 1, and the
// same output on Halide's reference schedule; islands it cannot rewrite left as they are.
#include "network/channels_first.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/halide/runner.h"

namespace schedfarm {
namespace {

// x [1, 8, 6, 5] -> conv -> NHWC -> layer norm, linear 32, GELU, linear 8 -> NCHW -> + conv.
// `tail(b, y)` may change the island's last NHWC tensor before the closing transpose.
PipelineSpec ConvNextBlock(
    const std::function<std::string(PipelineBuilder&, const std::string&)>& tail = nullptr) {
  PipelineBuilder b("convnext_block");
  const std::string x = b.Input("x", {1, 8, 6, 5});
  const std::string conv = b.Conv2d(x, 8, 3, /*stride=*/1, /*pad=*/1);
  std::string y = b.Transpose(conv, {0, 2, 3, 1});
  y = b.Linear(b.Gelu(b.Linear(b.LayerNorm(y, 1e-6), 32)), 8);
  if (tail) y = tail(b, y);
  b.Output(b.Add(b.Transpose(y, {0, 3, 1, 2}), conv));
  StatusOr<PipelineSpec> spec = b.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : PipelineSpec();
}

int CountOps(const PipelineSpec& spec, OpKind op) {
  int count = 0;
  for (const Stage& stage : spec.stages()) count += stage.op() == op;
  return count;
}

std::vector<HostTensor> ReferenceOutputs(const PipelineSpec& spec) {
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  if (!graph.ok()) return {};
  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> run = RunReference(*graph, once);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? run->outputs : std::vector<HostTensor>{};
}

TEST(NetworkChannelsFirst, RewritesAConvNextBlockInNchwWithTheSameOutput) {
  const PipelineSpec block = ConvNextBlock();
  ASSERT_EQ(CountOps(block, TRANSPOSE), 2);
  ASSERT_EQ(CountOps(block, MATMUL), 2);
  StatusOr<PipelineSpec> rewritten = NetworkChannelsFirst(block);
  ASSERT_TRUE(rewritten.ok()) << rewritten.status().ToString();
  EXPECT_EQ(CountOps(*rewritten, TRANSPOSE), 0);
  EXPECT_EQ(CountOps(*rewritten, MATMUL), 0);
  EXPECT_EQ(CountOps(*rewritten, CONV), 3) << "the linears are 1x1 convolutions";
  for (const Stage& stage : rewritten->stages()) {
    if (stage.op() == REDUCE) {
      ASSERT_EQ(stage.attrs().axes_size(), 1);
      EXPECT_EQ(stage.attrs().axes(0), 1) << stage.name() << ": over the channels";
    }
    EXPECT_EQ(stage.shape(0), 1) << stage.name();
    if (stage.shape(1) > 1) {
      EXPECT_TRUE(stage.shape(1) == 8 || stage.shape(1) == 32) << stage.name();
    }
    if (stage.op() != REDUCE && stage.op() != UNARY) {
      EXPECT_EQ(stage.shape(2), 6) << stage.name() << ": NCHW";
    }
  }
  const std::vector<HostTensor> expected = ReferenceOutputs(block);
  const std::vector<HostTensor> got = ReferenceOutputs(*rewritten);
  ASSERT_EQ(expected.size(), 1u);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].shape, expected[0].shape);
  double largest = 0, worst = 0;
  for (int64_t i = 0; i < expected[0].size(); ++i) {
    largest = std::max(largest, std::abs(expected[0].data[i]));
    worst = std::max(worst, std::abs(got[0].data[i] - expected[0].data[i]));
  }
  EXPECT_GT(largest, 0);
  EXPECT_LE(worst, 1e-4 * largest) << "the same function";
}

// A reshape in the island, or a stage of it that is an output of the network: the
// island stays as it was.
TEST(NetworkChannelsFirst, LeavesAnIslandItCannotRewrite) {
  const PipelineSpec reshaped = ConvNextBlock([](PipelineBuilder& b, const std::string& y) {
    return b.Reshape(b.Reshape(y, {1, 30, 8}), {1, 6, 5, 8});
  });
  StatusOr<PipelineSpec> kept = NetworkChannelsFirst(reshaped);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->SerializeAsString(), reshaped.SerializeAsString());

  const PipelineSpec with_output = ConvNextBlock([](PipelineBuilder& b, const std::string& y) {
    b.Output(y);
    return y;
  });
  kept = NetworkChannelsFirst(with_output);
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(CountOps(*kept, TRANSPOSE), 2) << "an NHWC output of the network stays NHWC";
  EXPECT_EQ(CountOps(*kept, MATMUL), 2);
}

}  // namespace
}  // namespace schedfarm
