// The partition of a network into tasks (network/tasks.h): which stages form a task,
// which are materialized, which tasks are one distinct task, and the assembly pipeline.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "network/tasks.h"
#include "pipeline/builder.h"
#include "pipeline/spec.h"
#include "pipeline/zoo.h"
#include "tests/network/test_networks.h"

namespace schedfarm {
namespace {

PipelineGraph MustBuild(const StatusOr<PipelineSpec>& spec) {
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return std::move(*graph);
}

std::vector<std::string> StageNames(const PipelineGraph& graph, const NetworkTask& task) {
  std::vector<std::string> names;
  for (int s : task.stages) names.push_back(graph.stage(s).name());
  return names;
}

TEST(Partition, TinyResNetHasEightTasksSixDistinct) {
  const PipelineGraph network = MustBuild(test_networks::TinyResNet());
  StatusOr<NetworkPartition> partition = PartitionNetwork(network);
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  ASSERT_EQ(partition->tasks.size(), 8u);
  EXPECT_EQ(partition->distinct.size(), 6u);

  // Every stage is in exactly one task, and the task index agrees.
  std::vector<int> seen(network.num_stages(), 0);
  for (size_t t = 0; t < partition->tasks.size(); ++t) {
    for (int s : partition->tasks[t].stages) {
      ++seen[s];
      EXPECT_EQ(partition->task_of_stage[s], static_cast<int>(t));
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), network.num_stages());

  // The stem: conv + relu, anchored at the conv; its relu is materialized.
  const NetworkTask& stem = partition->tasks[0];
  EXPECT_EQ(StageNames(network, stem), (std::vector<std::string>{"conv", "relu"}));
  EXPECT_EQ(network.stage(stem.anchor).name(), "conv");
  EXPECT_EQ(stem.outputs, std::vector<std::string>{"relu"});
  // The second conv of each block takes the residual add and the relu.
  EXPECT_EQ(StageNames(network, partition->tasks[3]).size(), 3u);
  EXPECT_EQ(network.stage(partition->tasks[3].stages[1]).op(), BINARY);

  // The blocks' tasks are distinct tasks of weight 2.
  int weight_two = 0;
  for (const DistinctTask& d : partition->distinct) {
    weight_two += d.weight() == 2;
    StatusOr<PipelineGraph> task = PipelineGraph::Build(d.spec);
    ASSERT_TRUE(task.ok()) << task.status().ToString();
    EXPECT_EQ(PipelineId(*task), d.pipeline_id);
  }
  EXPECT_EQ(weight_two, 2);
  EXPECT_EQ(partition->tasks[2].distinct, partition->tasks[4].distinct);
  EXPECT_EQ(partition->tasks[3].distinct, partition->tasks[5].distinct);
  EXPECT_NE(partition->tasks[2].distinct, partition->tasks[3].distinct);
}

TEST(Partition, TaskPipelinesReadBoundariesAsInputsAndWeightsAsRandomParameters) {
  const PipelineGraph network = MustBuild(test_networks::TinyResNet());
  StatusOr<NetworkPartition> partition = PartitionNetwork(network);
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  // The first residual conv task: conv reads the block input, add reads it again.
  const DistinctTask& residual = partition->distinct[partition->tasks[3].distinct];
  ASSERT_EQ(residual.spec.inputs_size(), 2);
  EXPECT_EQ(residual.spec.inputs(0).name(), partition->tasks[2].outputs[0]);  // the first relu
  EXPECT_EQ(residual.spec.inputs(1).name(), partition->tasks[1].outputs[0]);  // the pool
  ASSERT_EQ(residual.spec.parameters_size(), 2);  // weights and bias
  for (const Parameter& p : residual.spec.parameters()) {
    EXPECT_EQ(p.init_case(), Parameter::kRandom) << p.tensor().name();
  }
  EXPECT_EQ(residual.summary, "conv [1, 8, 8, 8] + binary.add + unary.relu");
}

TEST(Partition, AssemblyMaterializesEveryTaskOutput) {
  const PipelineGraph network = MustBuild(test_networks::TinyResNet());
  StatusOr<NetworkPartition> partition = PartitionNetwork(network);
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  StatusOr<PipelineGraph> assembly = PipelineGraph::Build(partition->assembly);
  ASSERT_TRUE(assembly.ok()) << assembly.status().ToString();
  // The network's own output comes first.
  EXPECT_EQ(partition->assembly.outputs(0), network.spec().outputs(0));
  std::set<std::string> outputs(partition->assembly.outputs().begin(),
                                partition->assembly.outputs().end());
  size_t task_outputs = 0;
  for (const NetworkTask& task : partition->tasks) {
    task_outputs += task.outputs.size();
    for (const std::string& out : task.outputs) EXPECT_TRUE(outputs.count(out)) << out;
  }
  EXPECT_EQ(outputs.size(), task_outputs);
  EXPECT_EQ(outputs.size(), 8u);  // one per task here
  // Runs are checked on the network's outputs: its checked pipeline is the network.
  EXPECT_EQ(partition->assembly.checked_outputs(), network.spec().outputs_size());
  StatusOr<PipelineGraph> checked = PipelineGraph::Build(CheckedPipeline(*assembly));
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  EXPECT_EQ(PipelineId(*checked), PipelineId(network));
}

// A channels-last network's tasks and assembly exchange their 4-D tensors in its layout,
// and their ids differ from the natural network's.
TEST(Partition, TasksAndAssemblyTakeTheNetworksLayout) {
  StatusOr<PipelineSpec> spec = test_networks::TinyResNet();
  ASSERT_TRUE(spec.ok());
  spec->set_boundary_layout(LAYOUT_CHANNELS_LAST);
  const PipelineGraph network = MustBuild(*spec);
  const PipelineGraph natural = MustBuild(test_networks::TinyResNet());
  StatusOr<NetworkPartition> partition = PartitionNetwork(network);
  StatusOr<NetworkPartition> natural_partition = PartitionNetwork(natural);
  ASSERT_TRUE(partition.ok() && natural_partition.ok());
  EXPECT_EQ(partition->assembly.boundary_layout(), LAYOUT_CHANNELS_LAST);
  ASSERT_EQ(partition->distinct.size(), natural_partition->distinct.size());
  for (size_t d = 0; d < partition->distinct.size(); ++d) {
    EXPECT_EQ(partition->distinct[d].spec.boundary_layout(), LAYOUT_CHANNELS_LAST);
    EXPECT_NE(partition->distinct[d].pipeline_id, natural_partition->distinct[d].pipeline_id);
  }
}

TEST(Partition, WeightsDoNotSplitADistinctTask) {
  // Two networks that differ only in their weights have the same distinct tasks.
  const PipelineGraph a = MustBuild(test_networks::TinyResNet());
  PipelineSpec other = a.spec();
  for (Parameter& p : *other.mutable_parameters()) p.mutable_random()->set_seed(p.random().seed() + 7);
  const PipelineGraph b = MustBuild(other);
  ASSERT_NE(PipelineId(a), PipelineId(b));
  StatusOr<NetworkPartition> pa = PartitionNetwork(a);
  StatusOr<NetworkPartition> pb = PartitionNetwork(b);
  ASSERT_TRUE(pa.ok() && pb.ok());
  ASSERT_EQ(pa->distinct.size(), pb->distinct.size());
  for (size_t d = 0; d < pa->distinct.size(); ++d) {
    EXPECT_EQ(pa->distinct[d].pipeline_id, pb->distinct[d].pipeline_id);
  }
}

TEST(Partition, StagesReadingOnlyInputsStartATaskAndChainsFollowTheNewestProducer) {
  PipelineBuilder b("chains");
  const std::string x = b.Input("x", {4, 16});
  const std::string scaled = b.UnaryWithParams(SCALE, x, 2.0, 1.0);  // no anchor before it
  const std::string m = b.MatMul(scaled, b.RandomParameter("w", {16, 16}, 0.1));
  const std::string s = b.Reduce(SUM, scaled, {1}, true);
  b.Output(b.Add(m, s));  // reads the matmul's task and the reduction's: joins the newest
  const PipelineGraph network = MustBuild(b.Finish());
  StatusOr<NetworkPartition> partition = PartitionNetwork(network);
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  ASSERT_EQ(partition->tasks.size(), 3u);
  EXPECT_EQ(partition->tasks[0].anchor, -1);
  EXPECT_EQ(StageNames(network, partition->tasks[0]).size(), 1u);
  const NetworkTask& last = partition->tasks.back();
  EXPECT_EQ(network.stage(last.anchor).op(), REDUCE);
  ASSERT_EQ(last.stages.size(), 2u);
  EXPECT_EQ(network.stage(last.stages[1]).op(), BINARY);
  // The matmul's output is read by the last task: materialized.
  EXPECT_EQ(partition->tasks[1].outputs.size(), 1u);
}

TEST(Partition, ANetworksWeightsBecomeRandomValuesOfTheSameShapeMeanAndRms) {
  PipelineBuilder b("weighted");
  const std::string x = b.Input("x", {2, 4});
  std::vector<double> values;
  for (int i = 0; i < 16; ++i) values.push_back(0.5 + 0.25 * (i % 4));  // mean 0.875
  const std::string w = b.ConstantParameter("w", {4, 4}, values);
  b.Output(b.MatMul(x, w));
  StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->parameters(0).init_case(), Parameter::kRawData);
  StatusOr<PipelineSpec> random = NetworkWithRandomWeights(*spec);
  ASSERT_TRUE(random.ok()) << random.status().ToString();
  const Parameter& p = random->parameters(0);
  ASSERT_EQ(p.init_case(), Parameter::kRandom);
  EXPECT_EQ(p.tensor().SerializeAsString(), spec->parameters(0).tensor().SerializeAsString());
  EXPECT_DOUBLE_EQ(p.random().offset(), 0.875);
  // RMS deviation of 0.5, 0.75, 1, 1.25 about 0.875: sqrt(0.078125); times sqrt(3).
  EXPECT_NEAR(p.random().scale(), std::sqrt(3 * 0.078125), 1e-12);
  EXPECT_TRUE(PipelineGraph::Build(*random).ok());
  EXPECT_EQ(random->stages(0).SerializeAsString(), spec->stages(0).SerializeAsString());
}

TEST(Partition, EveryZooBlockPartitionsIntoValidTasks) {
  for (const std::string& name : ZooNames()) {
    SCOPED_TRACE(name);
    const PipelineGraph network = MustBuild(MakeZooBlock(name));
    StatusOr<NetworkPartition> partition = PartitionNetwork(network);
    ASSERT_TRUE(partition.ok()) << partition.status().ToString();
    EXPECT_GE(partition->tasks.size(), 1u);
    int stages = 0;
    for (const NetworkTask& task : partition->tasks) {
      stages += static_cast<int>(task.stages.size());
      EXPECT_FALSE(task.outputs.empty());
    }
    EXPECT_EQ(stages, network.num_stages());
    EXPECT_TRUE(PipelineGraph::Build(partition->assembly).ok());
  }
}

// Each task's operator kind (TaskKind), which the per-operator benchmark groups by, and
// the bytes it cannot avoid moving: a network of every kind the corpus has, one task
// each.
TEST(TaskKinds, EveryAnchorKindIsNamedAndATaskWritingAConcatenationSaysSo) {
  PipelineBuilder b("kinds");
  const std::string x = b.Input("x", {1, 32, 16, 16});
  const std::string dense = b.Relu(b.Conv2d(x, 32, 3, 1, 1));
  const std::string depthwise = b.DepthwiseConv2d(dense, 3, 1, 1);
  const std::string grouped = b.Conv2d(depthwise, 32, 3, 1, 1, /*groups=*/4);
  const std::string pooled = b.MaxPool2d(grouped, 2, 2);                      // [1,32,8,8]
  const std::string joined = b.Concat({pooled, b.Conv2d(pooled, 16, 1)}, 1);  // [1,48,8,8]
  const std::string squeezed = b.GlobalAvgPool(joined);                       // [1,48,1,1]
  const std::string rows = b.Reshape(joined, {1, 48, 64});
  const std::string normed = b.LayerNorm(rows);
  const std::string linear = b.Linear(normed, 64);
  const std::string scores = b.Softmax(b.BatchMatMul(linear, b.Transpose(linear, {0, 2, 1})), 2);
  b.Output(squeezed);
  b.Output(b.Relu(scores));
  const PipelineGraph network = MustBuild(b.Finish());
  StatusOr<NetworkPartition> partition = PartitionNetwork(network);
  ASSERT_TRUE(partition.ok()) << partition.status().ToString();
  std::vector<std::string> kinds;
  for (const NetworkTask& task : partition->tasks) {
    const PipelineGraph graph = MustBuild(partition->distinct[task.distinct].spec);
    kinds.push_back(TaskKind(graph));
  }
  EXPECT_EQ(kinds,
            (std::vector<std::string>{"conv", "depthwise conv", "grouped conv", "pool",
                                      "conv into concat", "global pool", "reduction", "reduction",
                                      "matmul", "batched matmul", "reduction", "reduction"}));

  // The pool's task reads [1,32,16,16] and writes [1,32,8,8] in f32; no weights.
  const NetworkTask& pool = partition->tasks[3];
  const PipelineGraph pool_graph = MustBuild(partition->distinct[pool.distinct].spec);
  EXPECT_EQ(pool_graph.compulsory_bytes(), 4.0 * (32 * 16 * 16 + 32 * 8 * 8));
  // The dense convolution's also reads its weights and bias: 32x32x3x3 and 32.
  const PipelineGraph conv_graph =
      MustBuild(partition->distinct[partition->tasks[0].distinct].spec);
  EXPECT_EQ(conv_graph.compulsory_bytes(), 4.0 * (2 * 32 * 16 * 16 + 32 * 32 * 9 + 32));
  // A task of elementwise stages only.
  PipelineBuilder e("elementwise");
  e.Output(e.Relu(e.Add(e.Input("a", {1, 8}), e.Input("c", {1, 8}))));
  EXPECT_EQ(TaskKind(MustBuild(e.Finish())), "elementwise");
}

TEST(TileCopies, EveryConvolutionMatmulOrPoolThatEndsItsTaskGetsACopyThatTakesOverItsReaders) {
  const PipelineSpec network = *test_networks::TinyResNet();
  const PipelineGraph original = MustBuild(network);
  StatusOr<NetworkPartition> before = PartitionNetwork(original);
  ASSERT_TRUE(before.ok());
  std::set<std::string> ending;  // anchors that are outputs of their task
  for (const NetworkTask& task : before->tasks) {
    if (task.anchor < 0) continue;
    const Stage& anchor = original.stage(task.anchor);
    if ((anchor.op() == CONV || anchor.op() == MATMUL || anchor.op() == POOL) &&
        std::count(task.outputs.begin(), task.outputs.end(), anchor.name())) {
      ending.insert(anchor.name());
    }
  }
  ASSERT_FALSE(ending.empty());
  StatusOr<PipelineSpec> copied = NetworkWithTileCopies(network);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  const PipelineGraph graph = MustBuild(*copied);
  EXPECT_EQ(graph.num_stages(), original.num_stages() + static_cast<int>(ending.size()));
  for (const std::string& name : ending) {
    const int v = graph.FindValue(name + "_out");
    ASSERT_GE(v, 0) << name;
    const int copy = graph.value(v).index;
    EXPECT_EQ(graph.stage(copy).op(), UNARY);
    EXPECT_EQ(graph.stage(copy).attrs().unary(), IDENTITY);
    EXPECT_EQ(graph.stage(copy).label(), "tile_copy");
    EXPECT_EQ(graph.consumers(graph.value(graph.FindValue(name)).index), std::vector<int>{copy})
        << name << ": the copy takes over every reader";
  }
  // No convolution, matmul or pool ends its task any more.
  StatusOr<NetworkPartition> after = PartitionNetwork(graph);
  ASSERT_TRUE(after.ok());
  for (const NetworkTask& task : after->tasks) {
    if (task.anchor < 0) continue;
    const OpKind op = graph.stage(task.anchor).op();
    if (op != CONV && op != MATMUL && op != POOL) continue;
    EXPECT_FALSE(std::count(task.outputs.begin(), task.outputs.end(),
                            graph.stage(task.anchor).name()))
        << graph.stage(task.anchor).name();
  }
  StatusOr<PipelineSpec> twice = NetworkWithTileCopies(*copied);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(twice->stages_size(), copied->stages_size()) << "applying it again adds nothing";
}

TEST(TileCopies, ANetworkOutputThatIsAMatmulIsCopied) {
  PipelineBuilder b("head");
  b.Output(b.Linear(b.Input("x", {2, 16}), 10));
  const PipelineSpec network = b.Finish().value();
  StatusOr<PipelineSpec> copied = NetworkWithTileCopies(network);
  ASSERT_TRUE(copied.ok());
  ASSERT_EQ(copied->outputs_size(), 1);
  EXPECT_EQ(copied->outputs(0), network.outputs(0) + "_out");
}

// A convolution read through a reshape (ViT-B/16's patch embedding, a stride-16
// convolution reshaped into tokens) is copied although its task ends elsewhere: the
// reshape's index arithmetic gives no tile to compute it in, and at root it accumulated in
// its own buffer (12% of peak).
TEST(TileCopies, AConvolutionReadThroughAReshapeIsCopied) {
  PipelineBuilder b("patches");
  const std::string patches = b.Conv2d(b.Input("x", {1, 3, 64, 64}), 32, 16, 16);
  b.Output(b.Transpose(b.Reshape(patches, {1, 32, 16}), {0, 2, 1}));
  StatusOr<PipelineSpec> copied = NetworkWithTileCopies(b.Finish().value());
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();
  const PipelineGraph graph = MustBuild(*copied);
  const int v = graph.FindValue(patches + "_out");
  ASSERT_GE(v, 0);
  EXPECT_EQ(graph.stage(graph.value(v).index).label(), "tile_copy");
  EXPECT_EQ(graph.stage(graph.consumers(graph.value(v).index)[0]).op(), RESHAPE);
  // A convolution read only by elementwise stages and a concatenation is not.
  PipelineBuilder c("branches");
  const std::string x = c.Input("x", {1, 16, 8, 8});
  c.Output(c.Concat({x, c.Relu(c.Conv2d(x, 16, 1))}, 1));
  StatusOr<PipelineSpec> same = NetworkWithTileCopies(c.Finish().value());
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->stages_size(), c.Finish().value().stages_size());
}

// Fused tasks (FUSION_BLOCKS): each inverted residual block of a MobileNet-like network
// is one task of three anchors, its expansion and depthwise outputs its own to schedule,
// its add the one output; the stem, whose output the residual add reads too, stays
// alone, and so does the global pool, which reads a whole tensor. Without fusion the
// partition is the one of one task per anchor.
TEST(FusedPartition, InvertedResidualBlocksAreOneTaskEach) {
  const PipelineGraph network = MustBuild(test_networks::TinyMobileNet());
  StatusOr<NetworkPartition> fine = PartitionNetwork(network, FUSION_NONE);
  ASSERT_TRUE(fine.ok()) << fine.status().ToString();
  EXPECT_EQ(fine->tasks.size(), 9u);
  EXPECT_EQ(fine->distinct.size(), 6u);
  StatusOr<NetworkPartition> fused = PartitionNetwork(network, FUSION_BLOCKS);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  ASSERT_EQ(fused->tasks.size(), 5u);
  ASSERT_EQ(fused->distinct.size(), 4u);

  std::vector<int> seen(network.num_stages(), 0);
  for (size_t t = 0; t < fused->tasks.size(); ++t) {
    for (int s : fused->tasks[t].stages) {
      ++seen[s];
      EXPECT_EQ(fused->task_of_stage[s], static_cast<int>(t));
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), network.num_stages());

  EXPECT_EQ(fused->tasks[0].anchors.size(), 1u);  // the stem
  for (int t : {1, 2}) {
    const NetworkTask& block = fused->tasks[t];
    ASSERT_EQ(block.anchors.size(), 3u) << t;
    EXPECT_EQ(block.anchor, block.anchors[0]);
    EXPECT_EQ(block.stages.size(), 6u);  // conv, relu, depthwise, relu, conv, add
    ASSERT_EQ(block.outputs.size(), 1u);
    EXPECT_EQ(network.stage(network.value(network.FindValue(block.outputs[0])).index).op(), BINARY);
    EXPECT_EQ(block.distinct, fused->tasks[1].distinct);
  }
  const DistinctTask& block = fused->distinct[fused->tasks[1].distinct];
  EXPECT_EQ(block.weight(), 2);
  EXPECT_NE(block.summary.find(" > "), std::string::npos) << block.summary;
  const PipelineGraph task = MustBuild(block.spec);
  EXPECT_EQ(TaskKind(task), "fused conv > depthwise conv > conv");
  EXPECT_EQ(task.output_stages().size(), 1u);
  EXPECT_EQ(fused->tasks[3].anchors.size(), 1u);  // the global pool
  EXPECT_EQ(network.stage(fused->tasks[3].anchor).op(), REDUCE);
  // The assembly materializes the fused tasks' outputs only.
  EXPECT_EQ(fused->assembly.outputs_size(), 1 + 4);
  EXPECT_EQ(fine->assembly.outputs_size(), 1 + 8);
}

// Fusion stops where a consumer needs more than a producer's tile: a residual's add
// reading a block's input (so a ResNet's stem and pool, and each block's two
// convolutions, are fused tasks, but not a block with the next one), and a global pool
// reading the whole of the last block's output.
TEST(FusedPartition, ResidualsAndWholeTensorReadsEndAFusedTask) {
  const PipelineGraph network = MustBuild(test_networks::TinyResNet());
  StatusOr<NetworkPartition> fused = PartitionNetwork(network, FUSION_BLOCKS);
  ASSERT_TRUE(fused.ok()) << fused.status().ToString();
  std::vector<std::vector<std::string>> names;
  for (const NetworkTask& task : fused->tasks) names.push_back(StageNames(network, task));
  ASSERT_EQ(fused->tasks.size(), 5u);
  EXPECT_EQ(names[0], (std::vector<std::string>{"conv", "relu", "max_pool"}));
  EXPECT_EQ(fused->tasks[1].anchors.size(), 2u);
  EXPECT_EQ(fused->tasks[2].anchors.size(), 2u);
  EXPECT_EQ(fused->tasks[1].distinct, fused->tasks[2].distinct);
  EXPECT_EQ(network.stage(fused->tasks[3].anchor).op(), REDUCE);
  EXPECT_EQ(fused->tasks[3].anchors.size(), 1u);
  EXPECT_EQ(TaskKind(MustBuild(fused->distinct[fused->tasks[0].distinct].spec)),
            "fused conv > pool");
}

}  // namespace
}  // namespace schedfarm
