// Layouts and templates in Halide: a storage order, packed weights and a padded copy
// compute the reference's values, make Halide's loads and stores whole vectors (and
// the copy's loads free of bounds checks), and print as
// schedule source; the template of every zoo block and of ResNet-like tasks runs
// correctly, and its loop nest is the one the space describes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "Halide.h"
#include "pipeline/builder.h"
#include "pipeline/halide/lowering.h"
#include "pipeline/lowered_names.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"
#include "scheduler/halide/apply.h"
#include "scheduler/schedule_source.h"
#include "scheduler/templates.h"
#include "tests/scheduler/halide/schedule_checks.h"

namespace schedfarm {
namespace {

using schedule_checks::CheckLoopNest;
using schedule_checks::RunAndCompare;

struct Case {
  std::unique_ptr<PipelineGraph> graph;
  std::unique_ptr<ScheduleSpace> space;
  std::vector<HostTensor> reference;
};

Case Make(const PipelineSpec& spec, int vector_bytes = 32) {
  Case c;
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  c.graph = std::make_unique<PipelineGraph>(std::move(graph).value());
  TargetParams target;
  target.vector_bytes = vector_bytes;
  c.space = std::make_unique<ScheduleSpace>(*c.graph, target);
  StatusOr<RunResult> reference = RunReference(*c.graph, RunOptions{0});
  EXPECT_TRUE(reference.ok()) << reference.status().ToString();
  if (reference.ok()) c.reference = reference->outputs;
  return c;
}

PipelineSpec ConvRelu(int64_t in_channels, int64_t out_channels, int64_t size) {
  PipelineBuilder b("conv_relu_" + std::to_string(out_channels));
  const std::string x = b.Input("x", {1, in_channels, size, size});
  b.Output(b.Relu(b.Conv2d(x, out_channels, 3, 1, 1)));
  return b.Finish().value();
}

// ONNX's Gemm as a fully connected layer exports it: x [4, 48] by w [40, 48]
// transposed, plus bias.
PipelineSpec FullyConnected() {
  PipelineBuilder b("fully_connected");
  const std::string w = b.RandomParameter("w", {40, 48}, 0.2);
  const std::string bias = b.RandomParameter("bias", {40}, 0.1);
  b.Output(b.Gemm(b.Input("x", {4, 48}), w, bias, 1.0, 1.0, false, true));
  return b.Finish().value();
}

// The lowered statement of `graph` scheduled by `spec`, as Halide prints it.
std::string LoweredStmt(const PipelineGraph& graph, const ScheduleSpec& spec) {
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  EXPECT_TRUE(lowered.ok());
  EXPECT_TRUE(ApplySchedule(graph, *lowered, spec).ok());
  const std::string stmt = (std::filesystem::temp_directory_path() /
                            ("schedfarm_layouts_" + std::to_string(getpid()) + ".stmt"))
                               .string();
  lowered->pipeline.compile_to_lowered_stmt(stmt, lowered->pipeline.infer_arguments());
  std::ifstream in(stmt);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(stmt.c_str());
  return text;
}

// The stride of every vector index in a lowered statement: ramp(base, stride, lanes).
std::vector<std::string> RampStrides(const std::string& stmt) {
  std::vector<std::string> strides;
  for (size_t at = stmt.find("ramp("); at != std::string::npos; at = stmt.find("ramp(", at + 1)) {
    int depth = 0;
    std::vector<size_t> commas;
    for (size_t i = at + 4; i < stmt.size(); ++i) {
      if (stmt[i] == '(') ++depth;
      if (stmt[i] == ')' && --depth == 0) break;
      if (stmt[i] == ',' && depth == 1) commas.push_back(i);
    }
    if (commas.size() == 2) strides.push_back(stmt.substr(commas[0] + 2, commas[1] - commas[0] - 2));
  }
  return strides;
}

const StageSchedule* AnchorOf(const Case& c, const ScheduleSpec& spec) {
  for (const StageSchedule& s : spec.stages()) {
    const OpKind op = c.graph->stage(c.graph->value(c.graph->FindValue(s.stage())).index).op();
    if (op == CONV || op == MATMUL || op == POOL) return &s;
  }
  return nullptr;
}

TEST(LayoutsHalideTest, StorageOrderAndPackedWeightsComputeTheReference) {
  Case c = Make(ConvRelu(8, 32, 10));
  ScheduleSpec spec = c.space->WithDefaults(c.space->Empty());
  for (StageSchedule& s : *spec.mutable_stages()) {
    if (s.compute() == INLINE) continue;
    if (s.stage() != spec.stages(0).stage()) {  // the conv
      s.set_compute(ROOT);
      s.set_storage_innermost("d1");
      s.set_pack_weights(true);
      DefinitionSchedule& update = *s.mutable_update();
      DimSplit* split = update.add_splits();
      split->set_dim("d1");
      split->add_factors(8);
      *update.mutable_vectorize() = [&] {
        LoopRef ref;
        ref.set_stage(s.stage());
        ref.set_dim("d1");
        ref.set_level(1);
        ref.set_update(true);
        return ref;
      }();
      update.set_vector_width(8);
    }
  }
  // The conv is decided second (outputs first); make it ROOT explicitly.
  ASSERT_TRUE(c.space->Check(spec).ok()) << c.space->Check(spec).ToString();
  const schedule_checks::RunOutcome run = RunAndCompare(*c.space, spec, c.reference, RunOptions{1});
  EXPECT_TRUE(run.pass) << run.message;

  // The weights' buffer is stored output channels innermost; Halide's code reads it
  // with the strides it had when compiled.
  StatusOr<LoweredPipeline> lowered = LowerToHalide(*c.graph);
  ASSERT_TRUE(lowered.ok());
  ASSERT_TRUE(ApplySchedule(*c.graph, *lowered, spec).ok());
  bool packed = false;
  for (const Halide::Buffer<>& p : lowered->parameters) {
    if (p.dimensions() == 4) {
      EXPECT_EQ(p.dim(3).stride(), 1) << p.name();
      packed = true;
    }
  }
  EXPECT_TRUE(packed);

  StatusOr<std::string> source = ScheduleSource(*c.graph, spec);
  ASSERT_TRUE(source.ok());
  EXPECT_NE(source->find(".reorder_storage({d1, d3, d2, d0})"), std::string::npos) << *source;
  EXPECT_NE(source->find("are packed before compiling: stored with Halide dims {3, 0, 1, 2}"),
            std::string::npos)
      << *source;
}

TEST(LayoutsHalideTest, PackedWeightsMakeVectorLoadsWhole) {
  // The conv vectorized across output channels: with OIHW weights each lane's weight
  // is Cin * 9 floats from the next (a gather); packed, one load.
  Case c = Make(ConvRelu(16, 32, 8), /*vector_bytes=*/32);
  StatusOr<ScheduleSpec> spec = TemplateSchedule(*c.space);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  // Strided vector loads of the weights: ramps with a stride of Cin * 9.
  auto gathers = [&](const ScheduleSpec& s) {
    const std::vector<std::string> strides = RampStrides(LoweredStmt(*c.graph, s));
    return std::count(strides.begin(), strides.end(), "144");
  };
  ScheduleSpec unpacked = *spec;
  for (StageSchedule& s : *unpacked.mutable_stages()) s.clear_pack_weights();
  EXPECT_GT(gathers(unpacked), 0) << "the unpacked weights load with a stride of Cin * 9";
  EXPECT_EQ(gathers(*spec), 0);
}

// A padded copy (padded_copy): the template of a channels-last convolution reads its
// padded input from a copy at root, stored channels innermost and vectorized across
// them, computes the reference's values, and leaves no bounds check in the
// convolution; without the copy, the convolution selects between a load and zero.
TEST(LayoutsHalideTest, PaddedCopyTakesTheBoundsCheckOutOfTheKernel) {
  PipelineSpec spec = ConvRelu(32, 32, 10);
  spec.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  Case c = Make(spec, 64);
  StatusOr<ScheduleSpec> t = TemplateSchedule(*c.space);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const StageSchedule* anchor = AnchorOf(c, *t);
  ASSERT_NE(anchor, nullptr);
  ASSERT_TRUE(anchor->padded_copy());
  const schedule_checks::RunOutcome run = RunAndCompare(*c.space, *t, c.reference, RunOptions{2});
  EXPECT_TRUE(run.pass) << run.message;
  EXPECT_TRUE(CheckLoopNest(*c.space, *t).empty());

  const int conv = c.graph->value(c.graph->FindValue(anchor->stage())).index;
  const std::string conv_func = LoweredNamesOf(*c.graph).stages[conv];
  const std::string copy_func = "constant_exterior";  // Halide's name, numbered
  // The statement of the convolution's production, and whether it selects.
  auto conv_selects = [&](const std::string& stmt) {
    const size_t at = stmt.find("produce " + conv_func);
    EXPECT_NE(at, std::string::npos) << stmt;
    return at != std::string::npos && stmt.find("select(", at) != std::string::npos;
  };
  const std::string copied = LoweredStmt(*c.graph, *t);
  EXPECT_NE(copied.find("produce " + copy_func), std::string::npos) << copied;
  EXPECT_FALSE(conv_selects(copied)) << copied;
  ScheduleSpec checked = *t;
  for (StageSchedule& s : *checked.mutable_stages()) s.clear_padded_copy();
  const std::string inline_padding = LoweredStmt(*c.graph, checked);
  EXPECT_EQ(inline_padding.find("produce " + copy_func), std::string::npos);
  EXPECT_TRUE(conv_selects(inline_padding)) << inline_padding;

  StatusOr<std::string> source = ScheduleSource(*c.graph, *t);
  ASSERT_TRUE(source.ok());
  const std::string copy_name = ScheduleSourcePaddedInputNames(*c.graph)[conv];
  EXPECT_EQ(copy_name, conv_func + "_padded");
  EXPECT_NE(source->find("through Func " + copy_name), std::string::npos) << *source;
  EXPECT_NE(source->find(".reorder_storage({_2, _0, _1, _3})"), std::string::npos) << *source;
}

// A channels-last pipeline (PipelineSpec.boundary_layout) computes what its natural twin
// does, with its 4-D input and output stored channels innermost; the template of a
// depthwise convolution then vectorizes across channels, and Halide loads its input and
// stores its output as whole vectors.
TEST(LayoutsHalideTest, ChannelsLastPipelinesComputeTheNaturalOnesValues) {
  PipelineBuilder b("depthwise");
  b.Output(b.Relu(b.DepthwiseConv2d(b.Input("x", {1, 32, 18, 18}), 3)));
  const PipelineSpec natural = b.Finish().value();
  PipelineSpec channels_last = natural;
  channels_last.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  Case n = Make(natural, 32);
  Case c = Make(channels_last, 32);
  EXPECT_NE(PipelineId(*n.graph), PipelineId(*c.graph));
  ASSERT_EQ(c.reference.size(), 1u);
  EXPECT_EQ(c.reference[0].data, n.reference[0].data);

  StatusOr<ScheduleSpec> t = TemplateSchedule(*c.space);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const StageSchedule* anchor = AnchorOf(c, *t);
  ASSERT_NE(anchor, nullptr);
  EXPECT_EQ(anchor->update().vectorize().dim(), "d1");  // channels
  const schedule_checks::RunOutcome run = RunAndCompare(*c.space, *t, n.reference, RunOptions{1});
  EXPECT_TRUE(run.pass) << run.message;
  EXPECT_TRUE(CheckLoopNest(*c.space, *t).empty());
  // Its natural twin vectorizes across columns.
  StatusOr<ScheduleSpec> columns = TemplateSchedule(*n.space);
  ASSERT_TRUE(columns.ok());
  EXPECT_EQ(AnchorOf(n, *columns)->update().vectorize().dim(), "d3");

  // Every load of x and store of the output is a dense vector: no ramp with a stride.
  const std::string text = LoweredStmt(*c.graph, *t);
  const std::vector<std::string> strides = RampStrides(text);
  const int64_t dense = std::count(strides.begin(), strides.end(), "1");
  const int64_t strided = static_cast<int64_t>(strides.size()) - dense;
  EXPECT_GT(dense, 0) << text;
  EXPECT_EQ(strided, 0) << text;

  // A random legal schedule of the channels-last pipeline computes the same values.
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const ScheduleSpec random = c.space->RandomSchedule(seed);
    const schedule_checks::RunOutcome r = RunAndCompare(*c.space, random, n.reference, RunOptions{1});
    EXPECT_TRUE(r.pass) << "seed " << seed << ": " << r.message;
  }
}

TEST(TemplatesHalideTest, TemplatesOfConvolutionsAndMatmulsComputeTheReference) {
  for (const PipelineSpec& spec :
       {ConvRelu(16, 64, 14), ConvRelu(32, 32, 7), ConvRelu(32, 16, 14), FullyConnected()}) {
    for (int vector_bytes : {32, 64}) {
      Case c = Make(spec, vector_bytes);
      StatusOr<ScheduleSpec> t = TemplateSchedule(*c.space);
      ASSERT_TRUE(t.ok()) << spec.name() << ": " << t.status().ToString();
      const StageSchedule* anchor = AnchorOf(c, *t);
      ASSERT_NE(anchor, nullptr);
      EXPECT_TRUE(anchor->pack_weights()) << spec.name();
      const schedule_checks::RunOutcome run =
          RunAndCompare(*c.space, *t, c.reference, RunOptions{1});
      EXPECT_TRUE(run.pass) << spec.name() << " at " << vector_bytes << " bytes: " << run.message;
      const std::vector<std::string> differences = CheckLoopNest(*c.space, *t);
      EXPECT_TRUE(differences.empty()) << spec.name() << ": " << differences[0];
    }
  }
}

// Pools of a network's shapes: a max pool of 3x3 with stride 2 and ceil_mode (its last
// windows leave the input), one with padding (ResNet's stem), and an average pool with
// padding that does not count; each in the natural layout (columns vectorized) and
// channels-last (channels vectorized), at 32 and 64 vector bytes. (A global pool is a
// REDUCE, not a POOL.)
TEST(TemplatesHalideTest, TemplatesOfPoolsComputeTheReference) {
  std::vector<PipelineSpec> specs;
  for (const bool channels_last : {false, true}) {
    auto pool = [&](const std::string& name, auto&& make) {
      PipelineBuilder b(name + (channels_last ? "_cl" : ""));
      b.Output(make(b, b.Input("x", {1, 32, 27, 27})));
      PipelineSpec spec = b.Finish().value();
      if (channels_last) spec.set_boundary_layout(LAYOUT_CHANNELS_LAST);
      specs.push_back(spec);
    };
    pool("max_pool_ceil", [](PipelineBuilder& b, const std::string& x) {
      return b.MaxPool(x, {3, 3}, {2, 2}, {0, 0, 0, 0}, /*ceil_mode=*/true);
    });
    pool("avg_pool_padded", [](PipelineBuilder& b, const std::string& x) {
      return b.AvgPool(x, {3, 3}, {1, 1}, {1, 1, 1, 1}, /*count_include_pad=*/false);
    });
    pool("max_pool_padded",
         [](PipelineBuilder& b, const std::string& x) { return b.MaxPool2d(x, 3, 2, 1); });
  }
  for (const PipelineSpec& spec : specs) {
    for (int vector_bytes : {32, 64}) {
      Case c = Make(spec, vector_bytes);
      StatusOr<ScheduleSpec> t = TemplateSchedule(*c.space);
      ASSERT_TRUE(t.ok()) << spec.name() << ": " << t.status().ToString();
      const StageSchedule* anchor = AnchorOf(c, *t);
      ASSERT_NE(anchor, nullptr) << spec.name();
      EXPECT_GT(anchor->update().vector_width(), 0) << spec.name() << ": vectorized";
      const schedule_checks::RunOutcome run =
          RunAndCompare(*c.space, *t, c.reference, RunOptions{1});
      EXPECT_TRUE(run.pass) << spec.name() << " at " << vector_bytes << " bytes: " << run.message;
      const std::vector<std::string> differences = CheckLoopNest(*c.space, *t);
      EXPECT_TRUE(differences.empty()) << spec.name() << ": " << differences[0];
    }
  }
}

TEST(TemplatesHalideTest, TemplatesOfZooBlocksComputeTheReference) {
  for (const std::string& name : ZooNames()) {
    StatusOr<PipelineSpec> spec = schedule_checks::ZooBlock(name);
    ASSERT_TRUE(spec.ok()) << name;
    Case c = Make(*spec, 64);
    StatusOr<ScheduleSpec> t = TemplateSchedule(*c.space);
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().message();
    const schedule_checks::RunOutcome run = RunAndCompare(*c.space, *t, c.reference, RunOptions{1});
    EXPECT_TRUE(run.pass) << name << ": " << run.message;
  }
}

// Tasks without a register tile, of the corpus' kinds: global pools (channels-last:
// channels vectorized; NCHW), a layer norm's and a softmax's reductions over the last
// axis, squeeze-and-excitation (a 1x1 convolution of the pooled channels scaling the
// map, a stage at root after it), a concatenation with the batch norm and ReLU after it,
// a convolution into a concatenation of three (its vectors unrolled; 40 channels straddle
// a vector of 16 lanes), a matmul whose register tile cannot be unrolled, and a large elementwise
// task (in parallel), at 32 and 64 vector bytes, each computing the reference with Halide's loop
// nest as the space says.
TEST(TemplatesHalideTest, TemplatesWithoutARegisterTileComputeTheReference) {
  std::vector<PipelineSpec> specs;
  auto add = [&](const std::string& name, bool channels_last, auto&& make) {
    PipelineBuilder b(name + (channels_last ? "_cl" : ""));
    make(b);
    PipelineSpec spec = b.Finish().value();
    if (channels_last) spec.set_boundary_layout(LAYOUT_CHANNELS_LAST);
    specs.push_back(spec);
  };
  for (const bool channels_last : {false, true}) {
    add("global_pool", channels_last, [](PipelineBuilder& b) {
      b.Output(b.GlobalAvgPool(b.Input("x", {1, 72, 7, 7})));
    });
    add("squeeze_excitation", channels_last, [](PipelineBuilder& b) {
      const std::string x = b.Input("x", {1, 48, 14, 14});
      const std::string scale = b.UnaryWithParams(
          HARD_SIGMOID, b.Conv2d(b.Relu(b.Conv2d(b.GlobalAvgPool(x), 16, 1)), 48, 1), 1.0 / 6, 0.5);
      b.Output(b.Mul(x, scale));
    });
    add("concat_bn_relu", channels_last, [](PipelineBuilder& b) {
      const std::string x = b.Input("x", {1, 40, 9, 9});
      b.Output(b.Relu(b.BatchNorm(b.Concat({x, b.Conv2d(x, 24, 3, 1, 1)}, 1))));
    });
    add("conv_into_concat", channels_last, [](PipelineBuilder& b) {
      const std::string x = b.Input("x", {1, 40, 9, 9});
      b.Output(b.Concat({x, b.Input("y", {1, 24, 9, 9}), b.Relu(b.Conv2d(x, 32, 1))}, 1));
    });
  }
  add("layer_norm", false, [](PipelineBuilder& b) {
    b.Output(b.LayerNorm(b.Input("x", {1, 49, 96})));
  });
  add("softmax", false, [](PipelineBuilder& b) {
    b.Output(b.Softmax(b.Input("x", {3, 20, 37}), 2));
  });
  add("projection_without_unroll", false, [](PipelineBuilder& b) {  // the vectors alone
    const std::string w = b.RandomParameter("w", {128, 128}, 0.05);
    const std::string bias = b.RandomParameter("bias", {128}, 0.1);
    const std::string y = b.Gemm(b.Input("x", {37, 128}), w, bias, 1.0, 1.0, false, true);
    const std::string back = b.Transpose(b.Reshape(y, {37, 1, 128}), {1, 0, 2});
    b.Output(b.Add(back, b.Input("residual", {1, 37, 128})));
  });
  add("elementwise", true, [](PipelineBuilder& b) {
    b.Output(b.Relu(b.Add(b.Input("x", {1, 64, 64, 64}), b.Input("y", {1, 64, 64, 64}))));
  });
  for (const PipelineSpec& spec : specs) {
    for (int vector_bytes : {32, 64}) {
      Case c = Make(spec, vector_bytes);
      StatusOr<ScheduleSpec> t = TemplateSchedule(*c.space);
      ASSERT_TRUE(t.ok()) << spec.name() << ": " << t.status().ToString();
      const schedule_checks::RunOutcome run =
          RunAndCompare(*c.space, *t, c.reference, RunOptions{2});
      EXPECT_TRUE(run.pass) << spec.name() << " at " << vector_bytes << " bytes: " << run.message;
      const std::vector<std::string> differences = CheckLoopNest(*c.space, *t);
      EXPECT_TRUE(differences.empty()) << spec.name() << ": " << differences[0];
    }
  }
}

}  // namespace
}  // namespace schedfarm
