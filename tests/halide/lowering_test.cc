// Structure of the lowered pipeline (Func, Var and RVar names, definitions, bounds
// estimates usable by Halide's autoschedulers), buffer conversions and the runner.
#include "pipeline/halide/jit_target.h"
#include "pipeline/halide/lowering.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "pipeline/builder.h"
#include "tests/halide/test_util.h"

namespace schedfarm {
namespace {

// conv -> relu -> max pool -> mean over H, W; plus a matmul: every reduction kind.
StatusOr<PipelineSpec> ReductionPipeline() {
  PipelineBuilder b("reductions");
  const std::string x = b.Input("x", {1, 3, 12, 10});
  const std::string pooled = b.MaxPool2d(b.Relu(b.Conv2d(x, 4, 3, 1, 1)), 2, 2);
  b.Output(b.Reduce(MEAN, pooled, {2, 3}, false));
  b.Output(b.MatMul(b.Flatten(pooled, 1), b.RandomParameter("w", {4 * 6 * 5, 7}, 0.1)));
  return b.Finish();
}

std::vector<std::string> Names(const std::vector<Halide::Var>& vars) {
  std::vector<std::string> names;
  for (const Halide::Var& v : vars) names.push_back(v.name());
  return names;
}

TEST(HalideLowering, NamesAndDefinitionsFollowLoopNest) {
  const PipelineGraph graph = BuildGraph(ReductionPipeline());
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  ASSERT_EQ(lowered->stages.size(), static_cast<size_t>(graph.num_stages()));
  int reductions = 0;
  for (int s = 0; s < graph.num_stages(); ++s) {
    const Stage& stage = graph.stage(s);
    const StageLoops loops = graph.loops(s);
    const LoweredStage& ls = lowered->stages[s];
    SCOPED_TRACE(stage.name());
    EXPECT_EQ(ls.func.name(), stage.name());  // builder names are identifiers already
    std::vector<std::string> pure, reduction;
    for (const LoopDim& d : loops.pure) pure.push_back(d.name);
    for (const LoopDim& d : loops.reduction) reduction.push_back(d.name);
    EXPECT_EQ(Names(ls.func.args()), pure);
    EXPECT_EQ(Names(ls.pure_vars), pure);
    EXPECT_EQ(ls.has_update, !reduction.empty());
    EXPECT_EQ(ls.func.num_update_definitions(), reduction.empty() ? 0 : 1);
    if (reduction.empty()) continue;
    ++reductions;
    const std::vector<Halide::RVar> rvars = ls.func.rvars(0);
    // The update definition's reduction domain, with its extents.
    const std::vector<Halide::Internal::ReductionVariable>& domain =
        ls.func.function().update(0).schedule().rvars();
    ASSERT_EQ(rvars.size(), loops.reduction.size());
    ASSERT_EQ(domain.size(), loops.reduction.size());
    ASSERT_EQ(ls.reduction_vars.size(), loops.reduction.size());
    for (size_t i = 0; i < rvars.size(); ++i) {
      EXPECT_EQ(rvars[i].name(), reduction[i]);
      EXPECT_EQ(ls.reduction_vars[i].name(), reduction[i]);
      EXPECT_EQ(domain[i].var, reduction[i]);
      const int64_t* extent = Halide::Internal::as_const_int(domain[i].extent);
      ASSERT_NE(extent, nullptr);
      EXPECT_EQ(*extent, loops.reduction[i].extent);
    }
  }
  EXPECT_EQ(reductions, 4);  // conv, pool, reduce, matmul
  // Conv: rk1 (kernel width) innermost, then rk0, then rc.
  const int conv = 0;
  EXPECT_EQ(graph.stage(conv).op(), CONV);
  EXPECT_EQ(lowered->stages[conv].reduction_vars[0].name(), "rk1");
  EXPECT_EQ(lowered->stages[conv].reduction_vars[2].name(), "rc");
  ASSERT_EQ(lowered->outputs.size(), 2u);
  EXPECT_EQ(lowered->pipeline.outputs().size(), 2u);
  // Names do not depend on what was lowered before in the process.
  StatusOr<LoweredPipeline> again = LowerToHalide(graph);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  for (int s = 0; s < graph.num_stages(); ++s) {
    EXPECT_EQ(again->stages[s].func.name(), lowered->stages[s].func.name());
  }
}

TEST(HalideLowering, FuncNamesAreSanitizedAndUnique) {
  PipelineSpec spec;
  spec.set_name("names");
  TensorDecl* in = spec.add_inputs();
  in->set_name("in-put");
  in->set_dtype(FLOAT32);
  in->add_shape(4);
  const std::vector<std::string> names = {"conv-1", "conv_1", "1x", "d0", "rk0", "in_put"};
  std::string prev = "in-put";
  for (const std::string& name : names) {
    Stage* st = spec.add_stages();
    st->set_name(name);
    st->set_op(UNARY);
    st->add_inputs(prev);
    st->set_dtype(FLOAT32);
    st->add_shape(4);
    st->mutable_attrs()->set_unary(RELU);
    prev = name;
  }
  spec.add_outputs(prev);
  const PipelineGraph graph = BuildGraph(spec);
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  EXPECT_EQ(lowered->inputs[0].name(), "in_put");
  const std::vector<std::string> expected = {"conv_1", "conv_1_2", "t1x",
                                             "d0_",    "rk0_",     "in_put_2"};
  for (size_t s = 0; s < expected.size(); ++s) {
    EXPECT_EQ(lowered->stages[s].func.name(), expected[s]);
  }
  ExpectMatchesTorch(spec);
}

// A first output named like a libm function used by the pipeline (f64 exp calls
// libm's exp) must not become the JIT function of that name.
TEST(HalideLowering, StagesNamedLikeCFunctions) {
  PipelineBuilder b("c_names", FLOAT64);
  const std::string x = b.Input("x", {64});
  const std::string e = b.Exp(x);
  const std::string t = b.Tanh(e);
  const std::string f = b.Unary(FLOOR, t);
  b.Output(e);
  b.Output(t);
  b.Output(f);
  const StatusOr<PipelineSpec> spec = b.Finish();
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->stages(0).name(), "exp");
  const PipelineGraph graph = BuildGraph(spec);
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  EXPECT_EQ(lowered->stages[0].func.name(), "exp_");
  EXPECT_EQ(lowered->stages[1].func.name(), "tanh_");
  EXPECT_EQ(lowered->stages[2].func.name(), "floor_");
  ExpectMatchesTorch(spec);
}

// Realizes an (autoscheduled) lowered pipeline on the deterministic inputs.
std::vector<HostTensor> Realize(const PipelineGraph& graph, LoweredPipeline& lowered) {
  const std::vector<HostTensor> inputs = DeterministicInputs(graph.spec());
  for (size_t i = 0; i < inputs.size(); ++i) lowered.inputs[i].set(ToHalideBuffer(inputs[i]));
  std::vector<Halide::Buffer<>> buffers;
  for (int s : graph.output_stages()) {
    const Value& v = graph.value(graph.stage_value(s));
    buffers.push_back(
        ToHalideBuffer(HostTensor{v.dtype, v.shape, std::vector<double>(NumElements(v.shape))}));
  }
  Halide::Realization realization(buffers);
  lowered.pipeline.realize(realization, HostJitTarget());
  std::vector<HostTensor> outputs;
  for (const Halide::Buffer<>& b : buffers) outputs.push_back(FromHalideBuffer(b, FLOAT32));
  return outputs;
}

// The bounds estimates let each of Halide's autoschedulers schedule the lowered
// pipeline; the scheduled pipeline computes what the reference schedule computes.
TEST(HalideLowering, AutoschedulersRunOnLoweredPipeline) {
  const PipelineGraph graph = BuildGraph(ReductionPipeline());
  RunOptions options;
  options.timing_samples = 0;
  StatusOr<RunResult> reference = RunReference(graph, options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  const std::vector<std::pair<std::string, std::string>> autoschedulers = {
      {"Adams2019", SCHEDFARM_ADAMS2019_PLUGIN},
      {"Li2018", SCHEDFARM_LI2018_PLUGIN},
      {"Mullapudi2016", SCHEDFARM_MULLAPUDI2016_PLUGIN}};
  setenv("HL_BEAM_SIZE", "1", 0);  // Adams2019: greedy search keeps the test short
  for (const auto& [name, plugin] : autoschedulers) {
    SCOPED_TRACE(name);
    StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
    ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
    try {
      Halide::load_plugin(plugin);
      Halide::AutoSchedulerResults results = lowered->pipeline.auto_schedule(
          name, HostJitTarget(), Halide::MachineParams(2, 16 << 20, 40));
      EXPECT_FALSE(results.schedule_source.empty());
      const std::vector<HostTensor> outputs = Realize(graph, *lowered);
      ASSERT_EQ(outputs.size(), reference->outputs.size());
      for (size_t i = 0; i < outputs.size(); ++i) {
        Comparison c = CompareTensors(outputs[i], reference->outputs[i], DefaultTolerance(FLOAT32));
        EXPECT_TRUE(c.match) << c.message;
      }
    } catch (const Halide::Error& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(HalideLowering, EstimatesOnInputsAndOutputs) {
  const PipelineGraph graph = BuildGraph(ReductionPipeline());
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  // x is [1, 3, 12, 10]: Halide dim 0 is the last axis.
  const Halide::ImageParam& x = lowered->inputs[0];
  const std::vector<int64_t> extents = {10, 12, 3, 1};
  for (int j = 0; j < 4; ++j) {
    const int64_t* e = Halide::Internal::as_const_int(x.dim(j).extent_estimate());
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(*e, extents[j]);
  }
  for (size_t i = 0; i < lowered->outputs.size(); ++i) {
    Halide::Func out = lowered->outputs[i];
    const Shape& shape = graph.value(graph.stage_value(graph.output_stages()[i])).shape;
    const auto& estimates = out.function().schedule().estimates();
    ASSERT_EQ(estimates.size(), shape.size());
    for (size_t j = 0; j < estimates.size(); ++j) {
      EXPECT_EQ(estimates[j].var, "d" + std::to_string(shape.size() - 1 - j));
      const int64_t* e = Halide::Internal::as_const_int(estimates[j].extent);
      ASSERT_NE(e, nullptr);
      EXPECT_EQ(*e, shape[shape.size() - 1 - j]);
    }
  }
}

Halide::LoopLevel ComputeLevel(const Halide::Func& f) {
  Halide::LoopLevel level = f.function().schedule().compute_level();
  level.lock();
  return level;
}

TEST(HalideLowering, ReferenceScheduleComputesEveryStageAtRoot) {
  const PipelineGraph graph = BuildGraph(ReductionPipeline());
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  EXPECT_TRUE(ComputeLevel(lowered->stages[1].func).is_inlined());
  ApplyReferenceSchedule(graph, *lowered);
  for (const LoweredStage& s : lowered->stages) {
    EXPECT_TRUE(ComputeLevel(s.func).is_root()) << s.func.name();
  }
}

TEST(HalideBuffers, RoundTripAndStridedBuffers) {
  HostTensor t{FLOAT64, {2, 3, 4}, {}};
  for (int i = 0; i < 24; ++i) t.data.push_back(i * 0.5 - 3);
  Halide::Buffer<> b = ToHalideBuffer(t);
  ASSERT_EQ(b.dimensions(), 3);
  EXPECT_EQ(b.dim(0).extent(), 4);
  EXPECT_EQ(b.dim(2).extent(), 2);
  // Element [1, 2, 3] (row-major) is Halide (3, 2, 1).
  EXPECT_EQ(Halide::Buffer<double>(b)(3, 2, 1), t.data[1 * 12 + 2 * 4 + 3]);
  HostTensor back = FromHalideBuffer(b, FLOAT64);
  EXPECT_EQ(back.shape, t.shape);
  EXPECT_EQ(back.data, t.data);

  // A cropped view (non-contiguous) reads as its own row-major tensor.
  Halide::Buffer<> crop(b.get()->cropped(0, 1, 2).cropped(2, 1, 1));
  HostTensor c = FromHalideBuffer(crop, FLOAT64);
  EXPECT_EQ(c.shape, (Shape{1, 3, 2}));
  EXPECT_EQ(c.data, (std::vector<double>{13 * 0.5 - 3, 14 * 0.5 - 3, 17 * 0.5 - 3, 18 * 0.5 - 3,
                                         21 * 0.5 - 3, 22 * 0.5 - 3}));

  HostTensor scalar{FLOAT32, {}, {0.1}};
  HostTensor s = FromHalideBuffer(ToHalideBuffer(scalar), FLOAT32);
  EXPECT_TRUE(s.shape.empty());
  ASSERT_EQ(s.data.size(), 1u);
  EXPECT_EQ(s.data[0], static_cast<double>(0.1f));
}

TEST(HalideRunner, TimingSamplesAndThreads) {
  const PipelineGraph graph = BuildGraph(ReductionPipeline());
  RunOptions options;
  options.timing_samples = 3;
  options.min_sample_seconds = 0.002;
  options.threads = 1;
  StatusOr<RunResult> run = RunReference(graph, options);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_GT(run->compile_seconds, 0);
  ASSERT_EQ(run->sample_seconds.size(), 3u);
  EXPECT_GT(run->min_seconds, 0);
  EXPECT_LE(run->min_seconds, run->median_seconds);
  ASSERT_EQ(run->outputs.size(), 2u);
  EXPECT_EQ(run->outputs[0].shape, (Shape{1, 4}));
  EXPECT_EQ(run->outputs[1].shape, (Shape{1, 7}));

  options.threads = 2;
  options.timing_samples = 0;
  StatusOr<RunResult> again = RunReference(graph, options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->sample_seconds.empty());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(TensorChecksum(again->outputs[i]), TensorChecksum(run->outputs[i]));
  }
}

// Threads that ran tasks of parallel loops, recorded by a custom do_task handler that
// also sleeps a little so that every worker of the pool gets tasks.
std::mutex task_mutex;
std::set<std::thread::id> task_threads;
int RecordingDoTask(Halide::JITUserContext* context,
                    int (*f)(Halide::JITUserContext*, int, uint8_t*), int index, uint8_t* closure) {
  {
    std::lock_guard<std::mutex> lock(task_mutex);
    task_threads.insert(std::this_thread::get_id());
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return f(context, index, closure);
}

// RunOptions::threads sizes the JIT thread pool for every pipeline that runs after it,
// also when it shrinks the pool.
TEST(HalideRunner, ThreadsSizeTheThreadPool) {
  const PipelineGraph graph = BuildGraph(ReductionPipeline());
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok()) << lowered.status().ToString();
  ApplyReferenceSchedule(graph, *lowered);
  Halide::Func conv = lowered->stages[0].func;  // [1, 4, 12, 10]: 12 rows
  conv.parallel(lowered->stages[0].pure_vars[1]);
  lowered->pipeline.jit_handlers().custom_do_task = RecordingDoTask;
  for (int threads : {3, 1, 2, 1}) {
    SCOPED_TRACE("threads " + std::to_string(threads));
    RunOptions options;
    options.timing_samples = 0;
    options.threads = threads;
    ASSERT_TRUE(RunReference(graph, options).ok());
    task_threads.clear();
    Realize(graph, *lowered);
    EXPECT_EQ(task_threads.size(), static_cast<size_t>(threads));
  }
}

TEST(HalideRunner, RejectsMismatchedInputsAndOptions) {
  const PipelineGraph graph = BuildGraph(ReductionPipeline());
  HostTensor wrong{FLOAT32, {1, 3, 12, 11}, std::vector<double>(1 * 3 * 12 * 11)};
  StatusOr<RunResult> run = RunReference(graph, {}, {wrong});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("input 'x'"), std::string::npos) << run.status().message();
  EXPECT_NE(run.status().message().find("[1, 3, 12, 10]"), std::string::npos);

  HostTensor x = DeterministicInput(graph.spec().inputs(0), 0);
  run = RunReference(graph, {}, {x, x});
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("1 inputs, 2 given"), std::string::npos)
      << run.status().message();

  RunOptions bad;
  bad.timing_samples = -1;
  EXPECT_FALSE(RunReference(graph, bad).ok());
}

// relu(x) -> conv with bias -> relu, 2 channels each.
StatusOr<PipelineSpec> TwoChannelPipeline() {
  PipelineBuilder b("two_channels");
  b.Output(b.Relu(b.Conv2d(b.Relu(b.Input("x", {1, 2, 6, 5})), 2, 3, 1, 1)));
  return b.Finish();
}

// A schedule of TwoChannelPipeline as Halide 14's autoschedulers make them: stage `s`
// (0 the first relu, 1 the conv) at root, its channel loop split by 8 with a shifted tail, which
// computes channels -6..1: the relu reads the input there, the conv its bias.
LoweredPipeline ShiftedTailOfStage(const PipelineGraph& graph, int s) {
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  if (!lowered.ok()) return LoweredPipeline();
  ApplyReferenceSchedule(graph, *lowered);
  LoweredStage& stage = lowered->stages[s];
  const Halide::Var channel = stage.pure_vars[2];  // innermost first: d3, d2, d1, d0
  Halide::Var outer("outer"), inner("inner");
  stage.func.split(channel, outer, inner, 8, Halide::TailStrategy::ShiftInwards);
  return *lowered;
}

// The exact buffers refuse the shifted tails' reads (what the schedule-space checks
// rely on); buffers that cover them give the reference outputs.
TEST(HalideRunner, CoverScheduleReadsRunsShiftedTailsOnTheReferenceValues) {
  const PipelineGraph graph = BuildGraph(TwoChannelPipeline());
  ASSERT_EQ(graph.num_stages(), 3);
  RunOptions options;
  options.timing_samples = 0;
  StatusOr<RunResult> reference = RunReference(graph, options);
  ASSERT_TRUE(reference.ok()) << reference.status().ToString();
  const StatusOr<LoweredPipeline> plain = LowerToHalide(graph);
  ASSERT_TRUE(plain.ok());
  for (int s : {0, 1}) {
    SCOPED_TRACE(graph.stage(s).name());
    // The buffer the stage's shifted tail reads: the input, or the conv's bias.
    const std::string read = s == 0 ? plain->inputs[0].name() : plain->parameters[1].name();
    LoweredPipeline exact = ShiftedTailOfStage(graph, s);
    StatusOr<RunResult> refused = RunScheduled(graph, exact, options);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("Input buffer " + read + " is accessed at -6"),
              std::string::npos)
        << refused.status().message();

    RunOptions covering = options;
    covering.input_buffers = InputBuffers::kCoverScheduleReads;
    LoweredPipeline covered = ShiftedTailOfStage(graph, s);
    StatusOr<RunResult> run = RunScheduled(graph, covered, covering);
    ASSERT_TRUE(run.ok()) << run.status().ToString();
    ASSERT_EQ(run->outputs.size(), 1u);
    const Comparison c =
        CompareTensors(run->outputs[0], reference->outputs[0], DefaultTolerance(FLOAT32));
    EXPECT_TRUE(c.match) << c.message;
    EXPECT_GT(run->compile_seconds, 0);
  }
}

// A schedule that reads only inside the tensors runs on them unchanged.
TEST(HalideRunner, CoverScheduleReadsKeepsTheReferenceScheduleExact) {
  const PipelineGraph graph = BuildGraph(TwoChannelPipeline());
  RunOptions options;
  options.timing_samples = 0;
  StatusOr<RunResult> exact = RunReference(graph, options);
  ASSERT_TRUE(exact.ok()) << exact.status().ToString();
  options.input_buffers = InputBuffers::kCoverScheduleReads;
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  ASSERT_TRUE(lowered.ok());
  ApplyReferenceSchedule(graph, *lowered);
  StatusOr<RunResult> covered = RunScheduled(graph, *lowered, options);
  ASSERT_TRUE(covered.ok()) << covered.status().ToString();
  EXPECT_EQ(TensorChecksum(covered->outputs[0]), TensorChecksum(exact->outputs[0]));
  const Halide::Buffer<> input = lowered->inputs[0].get();
  for (int d = 0; d < input.dimensions(); ++d) EXPECT_EQ(input.dim(d).min(), 0);
  EXPECT_EQ(input.dim(2).extent(), 2);
}

TEST(HalideRunner, HostTargetString) {
  const std::string target = HalideHostTarget();
  EXPECT_TRUE(Halide::Target::validate_target_string(target)) << target;
  EXPECT_EQ(target.find("jit"), std::string::npos) << target;
  EXPECT_EQ(Halide::Target(target).os, Halide::get_host_target().os);
}

}  // namespace
}  // namespace schedfarm
