// Layouts in the schedule space (storage orders, packed weights, padded copies) and the template
// schedule: what the space offers, what Check refuses and why, the canonical form,
// and the template's shape and legality. Halide-free.
#include "scheduler/layouts.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <tuple>

#include "pipeline/builder.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"
#include "scheduler/templates.h"

namespace schedfarm {
namespace {

struct Fixture {
  std::unique_ptr<PipelineGraph> graph;
  std::unique_ptr<ScheduleSpace> space;
};

Fixture Make(const PipelineSpec& spec, int vector_bytes = 32) {
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  Fixture f;
  f.graph = std::make_unique<PipelineGraph>(std::move(graph).value());
  TargetParams target;
  target.vector_bytes = vector_bytes;
  f.space = std::make_unique<ScheduleSpace>(*f.graph, target);
  return f;
}

// conv (3x3, 16 -> 32 channels, 12x12) -> relu, the conv's weights a parameter.
PipelineSpec ConvRelu() {
  PipelineBuilder b("conv_relu");
  const std::string x = b.Input("x", {1, 16, 12, 12});
  b.Output(b.Relu(b.Conv2d(x, 32, 3, 1, 1)));
  return b.Finish().value();
}

// The same convolution with its weights a pipeline input.
PipelineSpec ConvWithInputWeights() {
  PipelineBuilder b("conv_input_weights");
  const std::string x = b.Input("x", {1, 16, 12, 12});
  const std::string w = b.Input("w", {32, 16, 3, 3});
  b.Output(b.Relu(b.Conv(x, w, "", {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)));
  return b.Finish().value();
}

int StageNamed(const PipelineGraph& graph, const std::string& op_label) {
  for (int s = 0; s < graph.num_stages(); ++s) {
    if (graph.stage(s).op() == CONV && op_label == "conv") return s;
  }
  return -1;
}

// The spec with every stage at its default and `conv` ROOT with `edit` applied.
template <typename Edit>
ScheduleSpec WithConv(const ScheduleSpace& space, Edit edit) {
  ScheduleSpec spec = space.WithDefaults(space.Empty());
  for (StageSchedule& s : *spec.mutable_stages()) {
    const int v = space.graph().FindValue(s.stage());
    if (space.graph().stage(space.graph().value(v).index).op() != CONV) continue;
    s.set_compute(ROOT);
    edit(s);
  }
  return spec;
}

TEST(LayoutsTest, PackableWeightsAreConstantsOfOneReader) {
  Fixture f = Make(ConvRelu());
  const int conv = StageNamed(*f.graph, "conv");
  StatusOr<PackedWeights> packed = PackableWeights(*f.graph, conv);
  ASSERT_TRUE(packed.ok()) << packed.status().ToString();
  // OIHW: output channels are row-major axis 0, Halide dim 3; stored innermost.
  EXPECT_EQ(packed->storage_order, (std::vector<int>{3, 0, 1, 2}));

  Fixture g = Make(ConvWithInputWeights());
  StatusOr<PackedWeights> refused = PackableWeights(*g.graph, StageNamed(*g.graph, "conv"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("'w' are a pipeline input, not a constant"),
            std::string::npos)
      << refused.status().message();
}

TEST(LayoutsTest, CheckRefusesLayoutsThatCannotHold) {
  Fixture f = Make(ConvRelu());
  const ScheduleSpace& space = *f.space;
  auto expect_error_in = [&](const ScheduleSpace& in, const ScheduleSpec& spec,
                             const std::string& part) {
    const Status status = in.Check(spec);
    ASSERT_FALSE(status.ok()) << "expected: " << part;
    EXPECT_NE(status.message().find(part), std::string::npos) << status.message();
  };
  auto expect_error = [&](const ScheduleSpec& spec, const std::string& part) {
    expect_error_in(space, spec, part);
  };
  EXPECT_TRUE(space
                  .Check(WithConv(space,
                                  [](StageSchedule& s) {
                                    s.set_storage_innermost("d1");
                                    s.set_pack_weights(true);
                                  }))
                  .ok());
  expect_error(WithConv(space, [](StageSchedule& s) { s.set_storage_innermost("d7"); }),
               "storage_innermost: no pure dim 'd7'");
  // The output's buffer is the caller's.
  ScheduleSpec spec = space.WithDefaults(space.Empty());
  spec.mutable_stages(0)->set_storage_innermost("d1");
  expect_error(spec, "on an output");
  // An inlined stage has no buffer: the relu of a pipeline with two outputs' chain.
  PipelineBuilder b("inline");
  const std::string x = b.Input("x", {1, 16, 12, 12});
  b.Output(b.Sigmoid(b.Relu(x)));
  Fixture chain = Make(b.Finish().value());
  ScheduleSpec inlined = chain.space->WithDefaults(chain.space->Empty());
  ASSERT_EQ(inlined.stages(1).compute(), INLINE);
  inlined.mutable_stages(1)->set_storage_innermost("d1");
  const Status status = chain.space->Check(inlined);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("set on an inlined stage"), std::string::npos);

  Fixture g = Make(ConvWithInputWeights());
  const Status input_weights =
      g.space->Check(WithConv(*g.space, [](StageSchedule& s) { s.set_pack_weights(true); }));
  ASSERT_FALSE(input_weights.ok());
  EXPECT_NE(input_weights.message().find("pack_weights"), std::string::npos);
  EXPECT_NE(input_weights.message().find("'w' are a pipeline input"), std::string::npos);

  // A padded copy: of a padded pipeline input only.
  EXPECT_TRUE(space.Check(WithConv(space, [](StageSchedule& s) { s.set_padded_copy(true); })).ok());
  PipelineBuilder unpadded("unpadded");
  unpadded.Output(unpadded.Relu(unpadded.Conv2d(unpadded.Input("x", {1, 16, 12, 12}), 32, 1, 1, 0)));
  Fixture u = Make(unpadded.Finish().value());
  expect_error_in(*u.space,
                  WithConv(*u.space, [](StageSchedule& s) { s.set_padded_copy(true); }),
                  "stage 'conv': padded_copy: its input 'x' is not padded");
  PipelineBuilder second("second");
  second.Output(second.Conv2d(second.Relu(second.Input("x", {1, 16, 12, 12})), 32, 3, 1, 1));
  Fixture v = Make(second.Finish().value());
  ScheduleSpec copy_of_stage =
      WithConv(*v.space, [](StageSchedule& s) { s.set_padded_copy(true); });
  expect_error_in(*v.space, copy_of_stage,
                  "its input 'relu' is a stage computed INLINE, not a pipeline input or a "
                  "stage at root");
  // A stage at root may be copied (an assembled network's task boundary).
  for (StageSchedule& s : *copy_of_stage.mutable_stages()) {
    if (s.stage() == "relu") s.set_compute(ROOT);
  }
  EXPECT_TRUE(v.space->Check(copy_of_stage).ok()) << v.space->Check(copy_of_stage).ToString();
}

TEST(LayoutsTest, SpaceOffersEveryLayoutOfAConvolution) {
  Fixture f = Make(ConvRelu());
  const ScheduleSpace& space = *f.space;
  // The output (relu) first, then the conv.
  ScheduleSpec partial = space.Empty();
  *partial.add_stages() = space.Options(partial)[0];
  std::set<std::tuple<std::string, bool, bool>> layouts;
  int64_t options = 0;
  space.ForEachOption(partial, [&](const StageSchedule& option) {
    ++options;
    EXPECT_TRUE(space
                    .Check([&] {
                      ScheduleSpec s = partial;
                      *s.add_stages() = option;
                      return s;
                    }())
                    .ok());
    if (option.compute() == ROOT)
      layouts.insert({option.storage_innermost(), option.pack_weights(), option.padded_copy()});
    return options < 200000;
  });
  EXPECT_EQ(options, std::min<int64_t>(space.CountOptions(partial), 200000));
  // Natural, channels (d1, 32 = 4 x 8 lanes) or rows (d2: 12 is no multiple of 8) innermost;
  // packed or not; its padded input x copied or not.
  std::set<std::tuple<std::string, bool, bool>> expected;
  for (const char* storage : {"", "d1"}) {
    for (bool packed : {false, true}) {
      for (bool copied : {false, true}) expected.insert({storage, packed, copied});
    }
  }
  EXPECT_EQ(layouts, expected);
}

TEST(LayoutsTest, CanonicalFormNamesLayoutsOnlyWhenChosen) {
  Fixture f = Make(ConvRelu());
  const ScheduleSpace& space = *f.space;
  const ScheduleSpec plain = WithConv(space, [](StageSchedule&) {});
  const ScheduleSpec natural =
      WithConv(space, [](StageSchedule& s) { s.set_storage_innermost("d3"); });
  const ScheduleSpec packed = WithConv(space, [](StageSchedule& s) {
    s.set_storage_innermost("d1");
    s.set_pack_weights(true);
    s.set_padded_copy(true);
  });
  // d3 is the natural innermost dim: the same schedule.
  EXPECT_EQ(ScheduleHash(space, plain), ScheduleHash(space, natural));
  EXPECT_NE(ScheduleHash(space, plain), ScheduleHash(space, packed));
  const std::string text = CanonicalScheduleText(space, packed);
  EXPECT_NE(text.find(" ROOT storage d1 packed padded-copy\n"), std::string::npos) << text;
  EXPECT_EQ(CanonicalScheduleText(space, plain).find("storage"), std::string::npos);
}

TEST(TemplatesTest, ConvolutionTileIsVectorizedAcrossChannelsWithPackedWeights) {
  PipelineBuilder b("conv_tile");
  const std::string x = b.Input("x", {1, 64, 28, 28});
  b.Output(b.Relu(b.Conv2d(x, 128, 3, 1, 1)));
  Fixture f = Make(b.Finish().value(), /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const StageSchedule* conv = nullptr;
  for (const StageSchedule& s : spec->stages()) {
    if (f.graph->stage(f.graph->value(f.graph->FindValue(s.stage())).index).op() == CONV) conv = &s;
  }
  ASSERT_NE(conv, nullptr);
  EXPECT_EQ(conv->compute(), AT);
  EXPECT_TRUE(conv->pack_weights());
  EXPECT_TRUE(conv->padded_copy());  // x is a padded pipeline input
  EXPECT_EQ(conv->storage_innermost(), "d1");  // channels innermost
  EXPECT_EQ(conv->update().vectorize().dim(), "d1");
  // 64 channels = 4 vectors of 16 lanes; 4 columns unrolled: 16 accumulators of 32.
  EXPECT_EQ(conv->update().vector_width(), 64);
  ASSERT_EQ(conv->update().unroll_size(), 1);
  EXPECT_EQ(conv->update().unroll(0).dim(), "d3");
  // The reduction runs outside the tile: right after the tile's loops and the rows
  // (extent 1 in the consumer's tile) and batch.
  EXPECT_EQ(conv->update().loop_order(4).dim()[0], 'r');
}

// Two vectors of output channels are vectorized whole where rows are left outside the
// tile (DenseNet's 32 channels); a squeeze-and-excitation's 1x1 map keeps one vector, so
// that its host has a loop outside the tile and a template at all.
TEST(TemplatesTest, TwoVectorsOfChannelsAreVectorizedWholeWhereRowsRemain) {
  for (int64_t size : {28, 1}) {
    PipelineBuilder b("conv_32");
    b.Output(b.Relu(b.Conv2d(b.Input("x", {1, 120, size, size}), 32, 1)));
    PipelineSpec pipeline = b.Finish().value();
    pipeline.set_boundary_layout(LAYOUT_CHANNELS_LAST);
    Fixture f = Make(pipeline, /*vector_bytes=*/64);
    StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
    ASSERT_TRUE(spec.ok()) << size << ": " << spec.status().ToString();
    EXPECT_EQ(spec->stages(1).update().vector_width(), size > 1 ? 32 : 16) << size;
  }
}

// A host with no loop outside the anchor's tile leaves the anchor at root rather than
// the pipeline without a template: ConvNeXt's last layer norm, of one pixel, whose
// statistics the normalization of every channel reads.
TEST(TemplatesTest, AHostWithNoLoopOutsideTheTileLeavesTheAnchorAtRoot) {
  PipelineBuilder b("head_norm");
  const std::string x = b.Input("x", {1, 768, 1, 1});
  const std::string scale = b.Unary(RSQRT, b.Reduce(SUM_SQUARE, x, {1}, true));
  b.Output(b.Reshape(b.Mul(x, scale), {1, 768}));
  Fixture f = Make(b.Finish().value(), /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (const StageSchedule& s : spec->stages()) {
    if (f.graph->stage(f.graph->value(f.graph->FindValue(s.stage())).index).op() == REDUCE) {
      EXPECT_EQ(s.compute(), ROOT);
    }
  }
}

// A convolution whose panel of weights (a block of output channels by the whole
// reduction) is larger than the L2 cache cuts its input channels into blocks whose panel
// fits, the outermost of its loops, and is computed in a block of the host's output
// channels, over every tile of it (ResNet's 3x3 layers at 7x7: 45% to 54% of peak).
TEST(TemplatesTest, AConvolutionWhoseWeightsPanelOverflowsL2CutsItsInputChannels) {
  auto conv = [](int64_t channels) {
    PipelineBuilder b("conv_7x7");
    b.Output(b.Relu(b.Conv2d(b.Input("x", {1, channels, 7, 7}), 512, 3, 1, 1)));
    PipelineSpec spec = b.Finish().value();
    spec.set_boundary_layout(LAYOUT_CHANNELS_LAST);
    return spec;
  };
  Fixture f = Make(conv(512), /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const StageSchedule& anchor = spec->stages(1);
  ASSERT_EQ(f.graph->stage(f.graph->value(f.graph->FindValue(anchor.stage())).index).op(), CONV);
  EXPECT_EQ(anchor.compute(), AT);
  EXPECT_EQ(anchor.compute_at().dim(), "d1");  // the host's blocks of output channels
  EXPECT_EQ(anchor.compute_at().level(), 0);
  const DefinitionSchedule& update = anchor.update();
  // 4 vectors by 9 taps by 512 channels: 1.2 MiB; by 32 channels, 72 KiB.
  ASSERT_EQ(update.splits_size(), 3);
  EXPECT_EQ(update.splits(2).dim(), "rc");
  EXPECT_EQ(update.splits(2).factors(0), 32);
  const LoopRef& outermost = update.loop_order(update.loop_order_size() - 1);
  EXPECT_EQ(outermost.dim(), "rc");
  EXPECT_EQ(outermost.level(), 0);
  // 64 input channels: a panel of 147 KiB fits, no blocks.
  Fixture g = Make(conv(64), /*vector_bytes=*/64);
  spec = TemplateSchedule(*g.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->stages(1).update().splits_size(), 2);
  EXPECT_EQ(spec->stages(1).compute_at().level(), 0);
  EXPECT_NE(spec->stages(1).compute_at().dim(), "d1");
}

// A depthwise convolution of a channels-last input is vectorized across its channels and
// reads its input where it is, bounds checked, with no padded copy: the copy is a pass
// over the input as large as the convolution's own (MobileNetV2's and V3's depthwise
// layers went from 0.88 to 1.74 of the fastest contender without it). Channels that no
// whole number of vectors divides take half vectors.
TEST(TemplatesTest, ADepthwiseConvolutionHasNoPaddedCopy) {
  PipelineBuilder b("depthwise");
  b.Output(b.Relu(b.DepthwiseConv2d(b.Input("x", {1, 64, 28, 28}), 3, 2, 1)));
  PipelineSpec pipeline = b.Finish().value();
  pipeline.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  Fixture f = Make(pipeline, /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  int convs = 0;
  for (const StageSchedule& s : spec->stages()) {
    if (f.graph->stage(f.graph->value(f.graph->FindValue(s.stage())).index).op() != CONV) continue;
    ++convs;
    EXPECT_FALSE(s.padded_copy());
    EXPECT_EQ(s.update().vectorize().dim(), "d1") << "across channels";
    EXPECT_EQ(s.update().vector_width(), 32) << "2 vectors of 16, a split of the 64";
  }
  EXPECT_EQ(convs, 1);

  // 72 channels, which no whole number of 16-lane vectors divides: half vectors, where a
  // tile of 64 left a tail of 8 done one channel at a time.
  PipelineBuilder odd("depthwise_72");
  odd.Output(odd.Relu(odd.DepthwiseConv2d(odd.Input("x", {1, 72, 28, 28}), 3, 1, 1)));
  pipeline = odd.Finish().value();
  pipeline.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  Fixture g = Make(pipeline, /*vector_bytes=*/64);
  spec = TemplateSchedule(*g.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (const StageSchedule& s : spec->stages()) {
    if (g.graph->stage(g.graph->value(g.graph->FindValue(s.stage())).index).op() == CONV) {
      EXPECT_EQ(s.update().vector_width(), 8);
    }
  }
}

// Output channels of one vector (16 channels in AVX-512's 16 lanes) are vectorized whole:
// split by their extent, so that the anchor, computed in its consumer's tile, vectorizes
// a loop of constant extent. Without it the tile was not vectorized at all (MobileNetV2's
// 16-channel projection at 112x112 ran 20 times slower than libtorch).
TEST(TemplatesTest, ChannelsOfOneVectorAreVectorizedWhole) {
  PipelineBuilder b("one_vector");
  const std::string x = b.Input("x", {1, 32, 28, 28});
  b.Output(b.Relu(b.Conv2d(x, 16, 1)));
  Fixture f = Make(b.Finish().value(), /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  int vectorized = 0;
  for (const StageSchedule& s : spec->stages()) {
    for (const DefinitionSchedule* d : {&s.pure(), &s.update()}) {
      if (!d->has_vectorize()) continue;
      ++vectorized;
      EXPECT_EQ(d->vectorize().dim(), "d1") << s.stage();
      EXPECT_EQ(d->vector_width(), 16) << s.stage();
      ASSERT_EQ(d->splits_size(), 2) << s.stage();  // the columns and the channels
      EXPECT_EQ(d->splits(1).dim(), "d1");
      EXPECT_EQ(d->splits(1).factors(0), 16);
    }
  }
  EXPECT_EQ(vectorized, 2);  // the host's tile and the convolution's update
}

// A register tile Halide 14 cannot unroll (rule 7: strided loads with guarded tails, here
// of a matmul of a prime number of rows reading its rows through a transpose) gives way
// to the vectors alone rather than to no template. Weights read transposed are no such
// loads once packed: ViT-B/16's attention output projection, 197 rows by weights
// [768, 768] read transposed, keeps its tile (22% of peak with the vectors alone, 81%).
TEST(TemplatesTest, ATileThatCannotBeUnrolledGivesWayToTheVectorsAlone) {
  auto projection = [](bool rows_transposed) {
    PipelineBuilder b("projection");
    std::string x = b.Input("x", rows_transposed ? Shape{128, 37} : Shape{37, 128});
    if (rows_transposed) x = b.Transpose(x, {1, 0});
    const std::string w = b.RandomParameter("w", {128, 128}, 0.05);
    const std::string bias = b.RandomParameter("bias", {128}, 0.1);
    const std::string y = b.Gemm(x, w, bias, 1.0, 1.0, /*trans_a=*/false, /*trans_b=*/true);
    const std::string back = b.Transpose(b.Reshape(y, {37, 1, 128}), {1, 0, 2});
    b.Output(b.Add(back, b.Input("residual", {1, 37, 128})));
    return b.Finish().value();
  };
  Fixture f = Make(projection(true), /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  bool vectorized = false;
  for (const StageSchedule& s : spec->stages()) {
    vectorized |= s.update().has_vectorize() || s.pure().has_vectorize();
    EXPECT_EQ(s.update().unroll_size() + s.pure().unroll_size(), 0) << s.stage();
  }
  EXPECT_TRUE(vectorized);
  Fixture g = Make(projection(false), /*vector_bytes=*/64);
  spec = TemplateSchedule(*g.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  int tiled = 0;
  for (const StageSchedule& s : spec->stages()) {
    if (!s.pack_weights()) continue;
    ++tiled;
    ASSERT_EQ(s.update().unroll_size(), 1) << s.stage();
    EXPECT_EQ(s.update().unroll(0).dim(), "d0") << "the rows";
  }
  EXPECT_EQ(tiled, 1);
  // Unpacked, the same tile reads the weights with a stride, and Check refuses it.
  ScheduleSpec unpacked = *spec;
  for (StageSchedule& s : *unpacked.mutable_stages()) s.set_pack_weights(false);
  EXPECT_NE(g.space->Check(unpacked).message().find("loads with a stride or a gather"),
            std::string::npos);
}

// A concatenation at root along the channels it stores innermost unrolls its vectors just
// outside the vector, so that each reads one input at a constant offset (a loop of them
// loaded every input for each vector: DenseNet's concatenations of 6 to 32 inputs), with
// its rows in parallel.
TEST(TemplatesTest, AConcatenationUnrollsItsVectors) {
  PipelineBuilder b("concat_output");
  const std::string x = b.Input("x", {1, 64, 56, 56});
  const std::string joined =
      b.Concat({x, b.Input("y", {1, 32, 56, 56}), b.Relu(b.Conv2d(x, 32, 1))}, 1);
  b.Output(joined);
  PipelineSpec spec = b.Finish().value();
  spec.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  Fixture f = Make(spec, /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> t = TemplateSchedule(*f.space);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const StageSchedule* concat = nullptr;
  for (const StageSchedule& s : t->stages()) {
    if (s.stage() == joined) concat = &s;
  }
  ASSERT_NE(concat, nullptr);
  const DefinitionSchedule& pure = concat->pure();
  EXPECT_EQ(pure.vectorize().dim(), "d1");  // the channels
  EXPECT_EQ(pure.vector_width(), 16);
  ASSERT_EQ(pure.unroll_size(), 1);
  EXPECT_EQ(pure.unroll(0).dim(), "d1");
  EXPECT_EQ(pure.unroll(0).level(), 0);  // 8 vectors of 128 channels
  EXPECT_EQ(pure.loop_order(1).dim(), "d1");
  EXPECT_EQ(pure.loop_order(1).level(), 0);
  ASSERT_EQ(pure.parallel_size(), 1);
  EXPECT_EQ(pure.parallel(0).dim(), "d2");  // the rows
  // The convolution is computed in each of its rows, its ReLU inlined into it, in a tile
  // of its two vectors of channels (from 64 input channels) by columns.
  for (const StageSchedule& s : t->stages()) {
    const OpKind op = f.graph->stage(f.graph->value(f.graph->FindValue(s.stage())).index).op();
    if (op == UNARY) {
      EXPECT_EQ(s.compute(), INLINE);
    }
    if (op != CONV) continue;
    EXPECT_EQ(s.compute(), AT);
    EXPECT_EQ(s.compute_at().stage(), joined);
    EXPECT_EQ(s.compute_at().dim(), "d2");
    EXPECT_EQ(s.update().vectorize().dim(), "d1");
    EXPECT_EQ(s.update().vector_width(), 32);
    EXPECT_EQ(s.storage_innermost(), "d1");
  }
}

// A stage a concatenation is inlined into (DenseNet's batch norm and ReLU after each
// concatenation) unrolls the concatenation's vectors too, and a convolution into the
// concatenation is computed in that stage's rows.
TEST(TemplatesTest, AStageAConcatenationIsInlinedIntoUnrollsItsVectorsAndHostsTheAnchor) {
  PipelineBuilder b("dense_layer");
  const std::string x = b.Input("x", {1, 64, 28, 28});
  const std::string joined = b.Concat({x, b.Conv2d(x, 32, 3, 1, 1)}, 1);
  const std::string scale = b.RandomParameter("scale", {1, 96, 1, 1}, 1.0);
  const std::string out = b.Relu(b.Mul(joined, scale));
  b.Output(out);
  PipelineSpec spec = b.Finish().value();
  spec.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  Fixture f = Make(spec, /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> t = TemplateSchedule(*f.space);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  for (const StageSchedule& s : t->stages()) {
    const OpKind op = f.graph->stage(f.graph->value(f.graph->FindValue(s.stage())).index).op();
    if (s.stage() == out) {
      EXPECT_EQ(s.compute(), ROOT);
      EXPECT_EQ(s.pure().vectorize().dim(), "d1");
      ASSERT_EQ(s.pure().unroll_size(), 1);
      EXPECT_EQ(s.pure().unroll(0).dim(), "d1");
      EXPECT_EQ(s.pure().unroll(0).level(), 0);  // 6 vectors of 96 channels
    } else if (op == CONV) {
      EXPECT_EQ(s.compute(), AT);
      EXPECT_EQ(s.compute_at().stage(), out);
      EXPECT_EQ(s.compute_at().dim(), "d2");
    } else {
      EXPECT_EQ(s.compute(), INLINE) << s.stage();
    }
  }
}

// The host is the first elementwise stage after the anchor that another stage reads,
// stored at root for it: the bias of a projection read through a reshape (ViT-B/16's
// query, key and value, read by three slices) hosts the matmul, whose register tile runs
// across the batch where each batch has one row ([197, 1, 768]: 22% of peak with no tile).
TEST(TemplatesTest, AnElementwiseHostReadByAReshapeIsStoredAtRootAndABatchOfOneRowIsTiled) {
  PipelineBuilder b("projection");
  const std::string w = b.RandomParameter("w", {128, 256}, 0.05);
  const std::string bias = b.RandomParameter("bias", {256}, 0.1);
  const std::string biased = b.Add(b.MatMul(b.Input("x", {36, 1, 128}), w), bias);
  b.Output(b.Reshape(biased, {36, 1, 4, 64}));
  Fixture f = Make(b.Finish().value(), /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (const StageSchedule& s : spec->stages()) {
    const OpKind op = f.graph->stage(f.graph->value(f.graph->FindValue(s.stage())).index).op();
    if (s.stage() == biased) {
      EXPECT_EQ(s.compute(), ROOT);
      EXPECT_EQ(s.pure().vectorize().dim(), "d2");
    } else if (op == MATMUL) {
      EXPECT_EQ(s.compute(), AT);
      EXPECT_EQ(s.compute_at().stage(), biased);
      ASSERT_EQ(s.update().unroll_size(), 1);
      EXPECT_EQ(s.update().unroll(0).dim(), "d0") << "the batch";
    }
  }
}

// The elementwise stages after an anchor are computed in its tile when they lead to one
// output, also when one of them is read twice: ConvNeXt's GELU, x * (erf(x / sqrt 2) + 1)
// / 2 after a 1x1 convolution and its bias, reads the biased output twice. The
// convolution is computed at the output's tile, the GELU inlined into it; at root, it
// accumulated in memory (10.1 ms for ConvNeXt's [1, 768, 28, 28], ONNX Runtime 1.6).
TEST(TemplatesTest, AnAnchorReadTwiceByItsEpilogueIsComputedInTheOutputsTile) {
  PipelineBuilder b("conv_gelu");
  const std::string x = b.Input("x", {1, 64, 14, 14});
  const std::string biased = b.Conv2d(x, 128, 1);
  const std::string half = b.ConstantParameter("half", {1}, {0.5});
  const std::string root_two = b.ConstantParameter("root_two", {1}, {1.4142135});
  const std::string one = b.ConstantParameter("one", {1}, {1.0});
  const std::string phi = b.Add(b.Unary(ERF, b.Div(biased, root_two)), one);
  b.Output(b.Mul(b.Mul(biased, phi), half));
  PipelineSpec pipeline = b.Finish().value();
  pipeline.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  Fixture f = Make(pipeline, /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*f.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  int inlined = 0, at_root = 0;
  for (const StageSchedule& s : spec->stages()) {
    const Stage& stage = f.graph->stage(f.graph->value(f.graph->FindValue(s.stage())).index);
    if (stage.op() == CONV) {
      EXPECT_EQ(s.compute(), AT) << "in the output's tile";
      EXPECT_EQ(s.compute_at().stage(), pipeline.outputs(0));
      EXPECT_EQ(s.update().vectorize().dim(), "d1");
    } else if (s.compute() == INLINE) {
      ++inlined;
    } else {
      EXPECT_EQ(s.stage(), pipeline.outputs(0));
      ++at_root;
    }
  }
  EXPECT_EQ(at_root, 1);
  EXPECT_EQ(inlined, 4) << "the division, erf, add and first product";
  // A second output among them leaves the convolution at root.
  PipelineBuilder two("conv_two_outputs");
  const std::string y = two.Conv2d(two.Input("x", {1, 64, 14, 14}), 128, 1);
  const std::string relu = two.Relu(y);
  two.Output(relu);
  two.Output(two.Add(y, relu));
  Fixture g = Make(two.Finish().value(), /*vector_bytes=*/64);
  spec = TemplateSchedule(*g.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  for (const StageSchedule& s : spec->stages()) {
    if (g.graph->stage(g.graph->value(g.graph->FindValue(s.stage())).index).op() == CONV) {
      EXPECT_EQ(s.compute(), ROOT) << "read by two outputs";
    }
  }
}

// Every zoo block has a template: the register tile of its convolution or matmul, or of
// its pool, or the vector tile of its reduction and of its stages at root.
TEST(TemplatesTest, EveryZooBlockHasALegalTemplate) {
  for (const std::string& name : ZooNames()) {
    ZooOptions options;
    options.spatial_scale = 0.5;
    StatusOr<PipelineSpec> spec = MakeZooBlock(name, options);
    ASSERT_TRUE(spec.ok()) << name;
    for (int vector_bytes : {32, 64}) {
      Fixture f = Make(*spec, vector_bytes);
      StatusOr<ScheduleSpec> t = TemplateSchedule(*f.space);
      EXPECT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    }
  }
}

// A pool is the anchor of a task without a convolution or matmul, and a reduction of one
// without a pool: each has its update vectorized. Elementwise stages at root are
// vectorized along what they store innermost (the channels of a channels-last output),
// in parallel only with the work to pay for it; a pipeline with nothing to vectorize has
// no template, and says why.
TEST(TemplatesTest, PoolsReductionsAndStagesAtRootAreVectorizedAndNothingToVectorizeIsAnError) {
  PipelineBuilder b("pool_only");
  b.Output(b.MaxPool2d(b.Input("x", {1, 16, 40, 40}), 2, 2));
  Fixture f = Make(b.Finish().value());
  StatusOr<ScheduleSpec> t = TemplateSchedule(*f.space);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_GT(t->stages(0).update().vector_width(), 0);

  PipelineBuilder p("global_pool");
  p.Output(p.GlobalAvgPool(p.Input("x", {1, 64, 7, 7})));
  PipelineSpec pool_spec = p.Finish().value();
  pool_spec.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  Fixture g = Make(pool_spec, /*vector_bytes=*/64);
  StatusOr<ScheduleSpec> pool = TemplateSchedule(*g.space);
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  EXPECT_EQ(pool->stages(0).update().vectorize().dim(), "d1");  // the channels
  EXPECT_EQ(pool->stages(0).update().vector_width(), 16);
  EXPECT_EQ(pool->stages(0).update().parallel_size(), 0);  // 3,136 points: serial

  for (const bool large : {false, true}) {
    PipelineBuilder r("relu_only");
    r.Output(r.Relu(r.Input("x", {1, 8, large ? 256 : 16, 128})));
    Fixture e = Make(r.Finish().value(), /*vector_bytes=*/64);
    StatusOr<ScheduleSpec> relu = TemplateSchedule(*e.space);
    ASSERT_TRUE(relu.ok()) << relu.status().ToString();
    EXPECT_EQ(relu->stages(0).pure().vectorize().dim(), "d3");  // the columns
    EXPECT_EQ(relu->stages(0).pure().vector_width(), 16);
    EXPECT_EQ(relu->stages(0).pure().parallel_size(), large ? 1 : 0);  // 262,144 points
  }

  PipelineBuilder n("nothing_to_vectorize");
  n.Output(n.Relu(n.Input("x", {3, 3})));
  Fixture h = Make(n.Finish().value());
  StatusOr<ScheduleSpec> none = TemplateSchedule(*h.space);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no stage at root with a dim of 4 elements"),
            std::string::npos)
      << none.status().message();
}

}  // namespace
}  // namespace schedfarm
