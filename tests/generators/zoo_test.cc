#include "pipeline/zoo.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "pipeline/graph.h"
#include "pipeline/ops.h"
#include "pipeline/spec.h"

namespace schedfarm {
namespace {

PipelineGraph Build(const std::string& name, const ZooOptions& options = {}) {
  StatusOr<PipelineSpec> spec = MakeZooBlock(name, options);
  EXPECT_TRUE(spec.ok()) << name << ": " << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  EXPECT_TRUE(graph.ok()) << name << ": " << graph.status().ToString();
  return *graph;
}

// Number of stages of `graph` for which `pred(stage index)` holds.
int Count(const PipelineGraph& graph, const std::function<bool(int)>& pred) {
  int n = 0;
  for (int s = 0; s < graph.num_stages(); ++s) n += pred(s) ? 1 : 0;
  return n;
}

Shape InputShape(const PipelineGraph& g, int s, int i) { return g.input_shapes(s)[i]; }

bool IsUnary(const PipelineGraph& g, int s, UnaryFn fn) {
  return g.stage(s).op() == UNARY && g.stage(s).attrs().unary() == fn;
}

TEST(ZooTest, NamesAreTheTwelveBlocks) {
  const std::vector<std::string> expected = {
      "resnet18_basic",      "resnet50_bottleneck", "mobilenetv2_inverted_residual",
      "shufflenet_unit",     "squeezenet_fire",     "mnasnet_block",
      "inception_module",    "vgg_block",           "alexnet_conv_stack",
      "transformer_encoder", "wavenet_residual",    "resnet3d_basic"};
  EXPECT_EQ(ZooNames(), expected);
}

TEST(ZooTest, EveryBlockValidatesWithinTheFlopBudget) {
  for (const std::string& name : ZooNames()) {
    SCOPED_TRACE(name);
    const PipelineGraph g = Build(name);
    EXPECT_EQ(g.spec().name(), name);
    EXPECT_EQ(g.spec().source(), "zoo:" + name);
    // Sized for 1-50 ms of the naive reference schedule: 5-40 MFLOP.
    const double flops = g.total_cost().flops;
    EXPECT_GE(flops, 5e6);
    EXPECT_LE(flops, 40e6);
    for (const Value& v : g.values()) {
      EXPECT_EQ(v.dtype, FLOAT32) << v.name;
    }
    const std::string description = ZooDescription(name);
    EXPECT_NE(description.find("default input " + ShapeToString(g.value(0).shape)),
              std::string::npos)
        << description;
  }
}

TEST(ZooTest, UnknownBlockListsTheKnownOnes) {
  StatusOr<PipelineSpec> spec = MakeZooBlock("resnet1000");
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("unknown zoo block 'resnet1000'"), std::string::npos);
  for (const std::string& name : ZooNames()) {
    EXPECT_NE(spec.status().message().find(name), std::string::npos) << name;
  }
  EXPECT_EQ(ZooDescription("resnet1000"), "");
}

TEST(ZooTest, BadOptionsAreErrors) {
  ZooOptions options;
  options.channel_scale = 0;
  EXPECT_FALSE(MakeZooBlock("vgg_block", options).ok());
  options = {};
  options.batch = 0;
  EXPECT_FALSE(MakeZooBlock("vgg_block", options).ok());
  options = {};
  options.dtype = DATA_TYPE_UNSPECIFIED;
  EXPECT_FALSE(MakeZooBlock("vgg_block", options).ok());
}

TEST(ZooTest, DeterministicAndSeededByWeightSeed) {
  for (const std::string& name : ZooNames()) {
    SCOPED_TRACE(name);
    const PipelineGraph a = Build(name), b = Build(name);
    EXPECT_EQ(a.spec().SerializeAsString(), b.spec().SerializeAsString());
    ZooOptions other;
    other.weight_seed = 7;
    const PipelineGraph c = Build(name, other);
    EXPECT_NE(PipelineId(a), PipelineId(c));  // other weights
    ASSERT_EQ(a.num_stages(), c.num_stages());
    for (int s = 0; s < a.num_stages(); ++s) {
      EXPECT_EQ(a.stage(s).op(), c.stage(s).op());
      EXPECT_EQ(a.stage(s).shape().size(), c.stage(s).shape().size());
    }
  }
}

TEST(ZooTest, OptionsScaleTheBlocks) {
  const PipelineGraph base = Build("resnet18_basic");
  ZooOptions wide;
  wide.channel_scale = 2;
  const PipelineGraph w = Build("resnet18_basic", wide);
  EXPECT_EQ(w.value(0).shape, (Shape{1, 64, 24, 24}));
  const double ratio = w.total_cost().flops / base.total_cost().flops;
  EXPECT_GT(ratio, 3.5);  // convolutions grow with channels squared
  EXPECT_LT(ratio, 4.5);

  ZooOptions small;
  small.spatial_scale = 0.5;
  small.batch = 3;
  const PipelineGraph s = Build("resnet18_basic", small);
  EXPECT_EQ(s.value(0).shape, (Shape{3, 32, 12, 12}));

  ZooOptions f64;
  f64.dtype = FLOAT64;
  f64.math = PADE;
  const PipelineGraph t = Build("transformer_encoder", f64);
  for (const Value& v : t.values()) EXPECT_EQ(v.dtype, FLOAT64) << v.name;
  int transcendental = 0;
  for (int i = 0; i < t.num_stages(); ++i) {
    const Stage& st = t.stage(i);
    if (st.op() == UNARY && IsTranscendental(st.attrs().unary())) {
      ++transcendental;
      EXPECT_EQ(st.attrs().math(), PADE) << st.name();
    }
  }
  EXPECT_GE(transcendental, 2);  // softmax's exp, GELU
}

TEST(ZooTest, TinyAndLargeScalesStayValid) {
  for (double scale : {0.05, 0.3, 1.7}) {
    ZooOptions options;
    options.spatial_scale = scale;
    options.channel_scale = scale;
    for (const std::string& name : ZooNames()) {
      SCOPED_TRACE(name + " at scale " + std::to_string(scale));
      Build(name, options);
    }
  }
}

TEST(ZooTest, ResNetBlocksAddTheirInput) {
  for (const std::string name : {"resnet18_basic", "resnet50_bottleneck", "resnet3d_basic",
                                 "mobilenetv2_inverted_residual", "mnasnet_block"}) {
    SCOPED_TRACE(name);
    const PipelineGraph g = Build(name);
    EXPECT_EQ(Count(g,
                    [&](int s) {
                      const Stage& st = g.stage(s);
                      return st.op() == BINARY && st.attrs().binary() == ADD &&
                             std::count(st.inputs().begin(), st.inputs().end(), "x") == 1;
                    }),
              1);
  }
  const PipelineGraph r50 = Build("resnet50_bottleneck");
  std::multiset<int64_t> kernels;
  for (int s = 0; s < r50.num_stages(); ++s) {
    if (r50.stage(s).op() == CONV) kernels.insert(InputShape(r50, s, 1)[2]);
  }
  EXPECT_EQ(kernels, (std::multiset<int64_t>{1, 1, 3}));
  const PipelineGraph r3d = Build("resnet3d_basic");
  EXPECT_EQ(
      Count(r3d,
            [&](int s) { return r3d.stage(s).op() == CONV && InputShape(r3d, s, 1).size() == 5; }),
      2);
}

TEST(ZooTest, MobileNetAndMnasNetUseDepthwiseConvs) {
  const PipelineGraph m = Build("mobilenetv2_inverted_residual");
  EXPECT_EQ(Count(m,
                  [&](int s) {
                    return m.stage(s).op() == CONV &&
                           m.stage(s).attrs().groups() == InputShape(m, s, 0)[1] &&
                           m.stage(s).attrs().groups() == 192;
                  }),
            1);
  EXPECT_EQ(Count(m,
                  [&](int s) {
                    const Attributes& a = m.stage(s).attrs();
                    return IsUnary(m, s, CLIP) && a.clip_min() == 0 && a.clip_max() == 6;
                  }),
            2);
  const PipelineGraph n = Build("mnasnet_block");
  EXPECT_EQ(Count(n,
                  [&](int s) {
                    return n.stage(s).op() == CONV && n.stage(s).attrs().groups() > 1 &&
                           InputShape(n, s, 1)[2] == 5;
                  }),
            1);
  // Squeeze-and-excitation: a global mean, a sigmoid gate, a channel-wise product.
  EXPECT_EQ(Count(n,
                  [&](int s) {
                    return n.stage(s).op() == REDUCE && n.stage(s).attrs().reduce() == MEAN;
                  }),
            1);
  EXPECT_EQ(Count(n, [&](int s) { return IsUnary(n, s, SIGMOID); }), 1);
  EXPECT_EQ(Count(n,
                  [&](int s) {
                    return n.stage(s).op() == BINARY && n.stage(s).attrs().binary() == MUL &&
                           InputShape(n, s, 1) == Shape{1, 120, 1, 1};
                  }),
            1);
}

TEST(ZooTest, ShuffleNetShufflesChannels) {
  const PipelineGraph g = Build("shufflenet_unit");
  EXPECT_EQ(Count(g,
                  [&](int s) {
                    const Stage& st = g.stage(s);
                    return st.op() == TRANSPOSE && st.attrs().perm_size() == 5 &&
                           st.attrs().perm(1) == 2 && st.attrs().perm(2) == 1;
                  }),
            1);
  EXPECT_EQ(Count(g, [&](int s) { return g.stage(s).op() == RESHAPE; }), 2);
  EXPECT_EQ(
      Count(g, [&](int s) { return g.stage(s).op() == CONV && g.stage(s).attrs().groups() == 3; }),
      2);
}

TEST(ZooTest, BranchingBlocksConcatenate) {
  const PipelineGraph inception = Build("inception_module");
  EXPECT_EQ(Count(inception,
                  [&](int s) {
                    return inception.stage(s).op() == CONCAT &&
                           inception.stage(s).inputs_size() == 4;
                  }),
            1);
  EXPECT_EQ(inception.value(inception.stage_value(inception.output_stages()[0])).shape,
            (Shape{1, 64, 28, 28}));
  const PipelineGraph fire = Build("squeezenet_fire");
  EXPECT_EQ(Count(fire,
                  [&](int s) {
                    return fire.stage(s).op() == CONCAT && fire.stage(s).inputs_size() == 2;
                  }),
            1);
}

TEST(ZooTest, ConvStacksHaveTheirShapes) {
  const PipelineGraph alex = Build("alexnet_conv_stack");
  EXPECT_EQ(Count(alex, [&](int s) { return alex.stage(s).op() == CONV; }), 5);
  EXPECT_EQ(Count(alex, [&](int s) { return alex.stage(s).op() == POOL; }), 3);
  EXPECT_EQ(Count(alex,
                  [&](int s) {
                    return alex.stage(s).op() == CONV && alex.stage(s).attrs().strides(0) == 4 &&
                           InputShape(alex, s, 1)[2] == 11;
                  }),
            1);
  const PipelineGraph vgg = Build("vgg_block");
  const Shape out = vgg.value(vgg.stage_value(vgg.output_stages()[0])).shape;
  EXPECT_EQ(out, (Shape{1, 32, 12, 12}));
}

TEST(ZooTest, TransformerHasMultiHeadAttention) {
  const PipelineGraph g = Build("transformer_encoder");
  // Scores [1, 4, 64, 64] = Q K^T per head, then softmax and attention-weighted V.
  EXPECT_EQ(Count(g,
                  [&](int s) {
                    return g.stage(s).op() == MATMUL && g.stage(s).attrs().trans_b() &&
                           Shape(g.stage(s).shape().begin(), g.stage(s).shape().end()) ==
                               Shape{1, 4, 64, 64};
                  }),
            1);
  EXPECT_EQ(Count(g, [&](int s) { return IsUnary(g, s, EXP); }), 1);
  EXPECT_EQ(Count(g, [&](int s) { return IsUnary(g, s, GELU); }), 1);
  EXPECT_EQ(Count(g, [&](int s) { return g.stage(s).op() == TRANSPOSE; }), 4);
  EXPECT_EQ(Count(g, [&](int s) { return IsUnary(g, s, RSQRT); }), 2);  // two layer norms
  EXPECT_EQ(g.value(g.stage_value(g.output_stages()[0])).shape, (Shape{1, 64, 128}));
}

TEST(ZooTest, WaveNetIsCausalAndGated) {
  const PipelineGraph g = Build("wavenet_residual");
  ASSERT_EQ(g.output_stages().size(), 2u);
  EXPECT_EQ(g.value(g.stage_value(g.output_stages()[0])).shape, (Shape{1, 32, 2048}));
  EXPECT_EQ(g.value(g.stage_value(g.output_stages()[1])).shape, (Shape{1, 64, 2048}));
  // Left padding of the time axis only, by dilation * (kernel - 1).
  EXPECT_EQ(Count(g,
                  [&](int s) {
                    const Attributes& a = g.stage(s).attrs();
                    return g.stage(s).op() == PAD && a.pads(2) == 4 && a.pads(5) == 0;
                  }),
            1);
  EXPECT_EQ(
      Count(g,
            [&](int s) { return g.stage(s).op() == CONV && g.stage(s).attrs().dilations(0) == 4; }),
      2);
  EXPECT_EQ(Count(g, [&](int s) { return IsUnary(g, s, TANH); }), 1);
  EXPECT_EQ(Count(g, [&](int s) { return IsUnary(g, s, SIGMOID); }), 1);
}

}  // namespace
}  // namespace schedfarm
