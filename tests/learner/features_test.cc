// Features of hand-built pipelines: the invariant counts of a matmul, a transpose, a
// broadcast add and transcendental functions; how the dependent part follows a split, a
// vectorize, a parallel loop, inlining and compute_at (with the recompute of a stencil);
// the iterations, operations and bytes of reductions computed inside their consumers,
// of guarded vector tails and parallel launches (guarded tails run only the iterations
// within their extents); partial schedules; illegal schedules; the schema; reuse of the
// output buffers and concurrent use. The loop nests themselves are checked against Halide in
// features_crosscheck_test.
#include "learner/features.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "learner/host_featurizers.h"
#include "learner/schedule_eval.h"
#include "learner/stage_model.h"
#include "pipeline/builder.h"
#include "pipeline/graph.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"
#include "scheduler/templates.h"

namespace schedfarm {
namespace {

PipelineGraph MustBuild(PipelineBuilder& builder) {
  StatusOr<PipelineSpec> spec = builder.Finish();
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec.value());
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  return std::move(graph).value();
}

int StageIndex(const PipelineGraph& graph, const std::string& name) {
  for (int s = 0; s < graph.num_stages(); ++s) {
    if (graph.stage(s).name() == name) return s;
  }
  ADD_FAILURE() << "no stage " << name;
  return 0;
}

int Column(const std::vector<std::string>& names, const std::string& name) {
  const auto it = std::find(names.begin(), names.end(), name);
  EXPECT_NE(it, names.end()) << "no column " << name;
  return it == names.end() ? 0 : static_cast<int>(it - names.begin());
}

// One stage's invariant and dependent values by column name (holds a copy).
class Row {
 public:
  Row(PipelineFeatures f, int stage) : f_(std::move(f)), stage_(stage) {}
  double Inv(const std::string& name) const {
    const std::vector<std::string>& names = CurrentFeatureSchema().invariant_names;
    return f_.invariant[stage_ * names.size() + Column(names, name)];
  }
  double Dep(const std::string& name) const {
    const std::vector<std::string>& names = CurrentFeatureSchema().dependent_names;
    return f_.dependent[stage_ * names.size() + Column(names, name)];
  }

 private:
  PipelineFeatures f_;
  int stage_;
};

PipelineFeatures MustFeaturize(const Featurizer& featurizer, const ScheduleSpec& spec) {
  PipelineFeatures out;
  const Status status = featurizer.Featurize(spec, &out);
  EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << spec.DebugString();
  return out;
}

LoopRef Ref(const std::string& stage, const std::string& dim, int level, bool update = false) {
  return MakeLoopRef(stage, dim, level, update);
}

// ---------------------------------------------------------------------------------
// Schema

TEST(FeatureSchema, VersionFourWithUniqueNamedColumns) {
  const FeatureSchema& schema = CurrentFeatureSchema();
  EXPECT_EQ(schema.version, 4) << "version 2 added the layout columns, version 3 the padded "
                                  "copy's column, version 4 the host's columns";
  EXPECT_GT(schema.invariant_names.size(), 100u);
  EXPECT_GT(schema.dependent_names.size(), 80u);
  std::set<std::string> seen;
  for (const auto* names : {&schema.invariant_names, &schema.dependent_names}) {
    for (const std::string& name : *names) {
      EXPECT_FALSE(name.empty());
      EXPECT_TRUE(seen.insert(name).second) << "duplicate column " << name;
    }
  }
  EXPECT_EQ(&schema, &CurrentFeatureSchema());
}

// ---------------------------------------------------------------------------------
// Invariant features

TEST(InvariantFeatures, MatMulCountsPerOutputPoint) {
  PipelineBuilder b("matmul");
  const std::string a = b.Input("a", {8, 16});
  const std::string w = b.Input("w", {16, 4});
  const std::string mm = b.MatMul(a, w);
  b.Output(mm);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  const PipelineFeatures f = MustFeaturize(featurizer, space.Empty());
  const Row r(f, StageIndex(graph, mm));
  EXPECT_EQ(r.Inv("op_matmul"), 1);
  EXPECT_EQ(r.Inv("op_conv"), 0);
  EXPECT_EQ(r.Inv("has_update"), 1);
  EXPECT_EQ(r.Inv("is_output"), 1);
  EXPECT_EQ(r.Inv("output_points"), 32);
  EXPECT_EQ(r.Inv("reduction_points"), 16);
  EXPECT_EQ(r.Inv("extent_d0"), 4);  // Halide order: the innermost output dim first
  EXPECT_EQ(r.Inv("extent_d1"), 8);
  EXPECT_EQ(r.Inv("reduction_extent_0"), 16);
  EXPECT_EQ(r.Inv("flops"), 2.0 * 8 * 4 * 16);
  // One multiply-add per reduction point, reading a and w each time.
  EXPECT_EQ(r.Inv("ops_f32_mul"), 16);
  EXPECT_EQ(r.Inv("ops_f32_add"), 16);
  EXPECT_EQ(r.Inv("ops_f64_mul"), 0);
  EXPECT_EQ(r.Inv("loads_input"), 32);
  EXPECT_EQ(r.Inv("loads_self"), 16);
  EXPECT_EQ(r.Inv("stores"), 17);
  EXPECT_EQ(r.Inv("access_reduction"), 2);
  EXPECT_EQ(r.Inv("inputs_from_pipeline_inputs"), 2);
  // a[m, k]: its dim 1 (m) follows output var 1 (m), its dim 0 follows the reduction.
  EXPECT_EQ(r.Inv("input0_a11"), 1);
  EXPECT_EQ(r.Inv("input0_a00"), 0);
  EXPECT_EQ(r.Inv("input0_a10"), 0);
  // w[k, n]: its dim 0 (n) follows output var 0 (n).
  EXPECT_EQ(r.Inv("input1_a00"), 1);
  EXPECT_EQ(r.Inv("input1_a11"), 0);
  EXPECT_EQ(r.Inv("input1_in_update"), 1);
  EXPECT_EQ(f.flops, 2.0 * 8 * 4 * 16);
  EXPECT_EQ(f.bytes, 4.0 * (8 * 16 + 16 * 4 + 8 * 4));
}

TEST(InvariantFeatures, TransposeIsAPermutedAccessMatrix) {
  PipelineBuilder b("transpose");
  const std::string x = b.Input("x", {2, 3, 4});
  const std::string t = b.Transpose(x, {2, 0, 1});  // out [4, 2, 3]
  b.Output(t);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  const Row r(MustFeaturize(featurizer, space.Empty()), 0);
  EXPECT_EQ(r.Inv("op_transpose"), 1);
  EXPECT_EQ(r.Inv("access_transposed"), 1);
  EXPECT_EQ(r.Inv("ops_f32_add") + r.Inv("ops_f32_mul"), 0);
  EXPECT_EQ(r.Inv("loads_input"), 1);
  // Output dim d reads input dim perm[d]; in Halide order (innermost first) output var
  // i = 2 - d reads input dim j = 2 - perm[d]: (2 -> 0), (1 -> 2), (0 -> 1).
  double ones = 0, diagonal = 0;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      const double v = r.Inv("input0_a" + std::to_string(i) + std::to_string(j));
      ones += v;
      if (i == j) diagonal += v;
    }
  }
  EXPECT_EQ(ones, 3);
  EXPECT_EQ(r.Inv("input0_a20"), 1);
  EXPECT_EQ(r.Inv("input0_a12"), 1);
  EXPECT_EQ(r.Inv("input0_a01"), 1);
  EXPECT_EQ(diagonal, 0);
}

TEST(InvariantFeatures, BroadcastAddReadsOneOperandAlongOneDim) {
  PipelineBuilder b("broadcast");
  const std::string x = b.Input("x", {4, 8});
  const std::string bias = b.Input("bias", {1, 8});
  const std::string y = b.Add(x, bias);
  b.Output(y);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  const Row r(MustFeaturize(featurizer, space.Empty()), 0);
  EXPECT_EQ(r.Inv("op_binary"), 1);
  EXPECT_EQ(r.Inv("ops_f32_add"), 1);
  EXPECT_EQ(r.Inv("access_pointwise"), 1);
  EXPECT_EQ(r.Inv("access_broadcast"), 1);
  EXPECT_EQ(r.Inv("loads_input"), 2);
  EXPECT_EQ(r.Inv("input0_a00"), 1);
  EXPECT_EQ(r.Inv("input0_a11"), 1);
  EXPECT_EQ(r.Inv("input1_a00"), 1);
  EXPECT_EQ(r.Inv("input1_a11"), 0);  // the size-1 dim of bias is read at 0
}

TEST(InvariantFeatures, PadeMathBecomesArithmeticAndDtypeSelectsTheHistogram) {
  auto build = [](MathMode math, DataType dtype) {
    PipelineBuilder b("tanh", dtype);
    b.set_math(math);
    b.Output(b.Tanh(b.Input("x", {16})));
    return MustBuild(b);
  };
  const PipelineGraph exact = build(EXACT, FLOAT32);
  const PipelineGraph pade = build(PADE, FLOAT32);
  const PipelineGraph pade64 = build(PADE, FLOAT64);
  const ScheduleSpace s1(exact), s2(pade), s3(pade64);
  const Featurizer f1(s1), f2(s2), f3(s3);
  const PipelineFeatures e = MustFeaturize(f1, s1.Empty());
  const PipelineFeatures p = MustFeaturize(f2, s2.Empty());
  const PipelineFeatures p64 = MustFeaturize(f3, s3.Empty());
  const Row re(e, 0), rp(p, 0), rp64(p64, 0);
  EXPECT_EQ(re.Inv("ops_f32_tanh"), 1);
  EXPECT_EQ(re.Inv("ops_f32_mul"), 0);
  EXPECT_EQ(rp.Inv("ops_f32_tanh"), 0);
  EXPECT_GE(rp.Inv("ops_f32_mul"), 8);
  EXPECT_GE(rp.Inv("ops_f32_div"), 2);
  EXPECT_EQ(rp.Inv("ops_f32_min"), 1);  // the clamp
  EXPECT_EQ(rp64.Inv("ops_f32_mul"), 0);
  EXPECT_EQ(rp64.Inv("dtype_f64"), 1);
  // f64 takes more halvings of the argument: more multiplies than f32.
  EXPECT_GT(rp64.Inv("ops_f64_mul"), rp.Inv("ops_f32_mul"));
}

// ---------------------------------------------------------------------------------
// Dependent features

// x [64, 64] -> relu -> exp (output). Decision order: exp, then relu.
class TwoStages : public testing::Test {
 protected:
  TwoStages() : graph_(Build()), space_(graph_), featurizer_(space_) {
    relu_ = StageIndex(graph_, relu_name_);
    exp_ = StageIndex(graph_, exp_name_);
  }

  PipelineGraph Build() {
    PipelineBuilder b("two_stages");
    relu_name_ = b.Relu(b.Input("x", {64, 64}));
    exp_name_ = b.Exp(relu_name_);
    b.Output(exp_name_);
    return MustBuild(b);
  }

  // exp at root with the given pure schedule, relu at `relu`.
  ScheduleSpec Spec(const DefinitionSchedule& exp_pure, const StageSchedule& relu) const {
    ScheduleSpec spec = space_.Empty();
    StageSchedule* e = spec.add_stages();
    e->set_stage(exp_name_);
    e->set_compute(ROOT);
    *e->mutable_pure() = exp_pure;
    *spec.add_stages() = relu;
    spec.set_partial(false);
    return spec;
  }
  StageSchedule Relu(ComputeLocation location) const {
    StageSchedule s;
    s.set_stage(relu_name_);
    s.set_compute(location);
    return s;
  }

  std::string relu_name_, exp_name_;
  PipelineGraph graph_;
  ScheduleSpace space_;
  Featurizer featurizer_;
  int relu_ = 0, exp_ = 0;
};

TEST_F(TwoStages, SplitVectorizeAndParallelChangeTheLoops) {
  DefinitionSchedule pure;
  const PipelineFeatures base = MustFeaturize(featurizer_, Spec(pure, Relu(ROOT)));
  const Row b(base, exp_);
  EXPECT_EQ(b.Dep("loc_root"), 1);
  EXPECT_EQ(b.Dep("num_loops"), 2);
  EXPECT_EQ(b.Dep("loop0_extent"), 64);
  EXPECT_EQ(b.Dep("loop1_extent"), 64);
  EXPECT_EQ(b.Dep("loop2_extent"), 0);
  EXPECT_EQ(b.Dep("vector_width"), 0);
  EXPECT_EQ(b.Dep("num_scalars"), 4096);
  EXPECT_EQ(b.Dep("num_vectors"), 0);
  EXPECT_EQ(b.Dep("parallel_tasks"), 1);
  EXPECT_EQ(b.Dep("points_computed"), 4096);
  EXPECT_EQ(b.Dep("realizations"), 1);
  EXPECT_EQ(b.Dep("allocation_bytes"), 0);  // an output: the caller's buffer
  EXPECT_EQ(b.Dep("unique_bytes_read"), 64 * 64 * 4);
  EXPECT_EQ(b.Dep("loop0_footprint_bytes"), 64 * 4);  // one row of relu
  EXPECT_EQ(b.Dep("loop0_footprint_lines"), 4);
  const Row relu(base, relu_);
  EXPECT_EQ(relu.Dep("loc_root"), 1);
  EXPECT_EQ(relu.Dep("allocation_bytes"), 64 * 64 * 4);
  EXPECT_EQ(relu.Dep("allocations"), 1);

  // Split the innermost dim (d1) by 8.
  DimSplit* split = pure.add_splits();
  split->set_dim("d1");
  split->add_factors(8);
  const PipelineFeatures split_f = MustFeaturize(featurizer_, Spec(pure, Relu(ROOT)));
  const Row s(split_f, exp_);
  EXPECT_EQ(s.Dep("num_loops"), 3);
  EXPECT_EQ(s.Dep("loop0_extent"), 8);
  EXPECT_EQ(s.Dep("loop1_extent"), 8);
  EXPECT_EQ(s.Dep("loop2_extent"), 64);
  EXPECT_EQ(s.Dep("points_computed"), 4096);
  EXPECT_EQ(s.Dep("loop0_footprint_bytes"), 8 * 4);

  // Vectorize its inner level.
  *pure.mutable_vectorize() = Ref(exp_name_, "d1", 1);
  pure.set_vector_width(8);
  const PipelineFeatures vec_f = MustFeaturize(featurizer_, Spec(pure, Relu(ROOT)));
  const Row v(vec_f, exp_);
  EXPECT_EQ(v.Dep("vector_width"), 8);
  EXPECT_EQ(v.Dep("loop0_vectorized"), 1);
  EXPECT_EQ(v.Dep("num_vectors"), 512);
  EXPECT_EQ(v.Dep("num_scalars"), 0);
  EXPECT_EQ(v.Dep("scalar_float_ops"), 0);
  EXPECT_EQ(v.Dep("vector_float_ops") * 8, s.Dep("scalar_float_ops"));

  // Run the outer loop (d0) in parallel.
  *pure.add_parallel() = Ref(exp_name_, "d0", 0);
  const PipelineFeatures par_f = MustFeaturize(featurizer_, Spec(pure, Relu(ROOT)));
  const Row p(par_f, exp_);
  EXPECT_EQ(p.Dep("loop2_parallel"), 1);
  EXPECT_EQ(p.Dep("inner_parallel_tasks"), 64);
  EXPECT_EQ(p.Dep("parallel_tasks"), 64);
  EXPECT_EQ(p.Dep("core_utilization"), 1);
  EXPECT_EQ(p.Dep("parallel_launches"), 1);
  EXPECT_EQ(p.Dep("thread_wakeups"), 2);  // TargetParams default: 2 cores
  EXPECT_EQ(p.Dep("bytes_per_task"), 64 * 4);
  EXPECT_EQ(v.Dep("parallel_tasks"), 1);
}

TEST_F(TwoStages, InliningMovesTheWorkIntoTheConsumer) {
  const DefinitionSchedule pure;
  const PipelineFeatures root = MustFeaturize(featurizer_, Spec(pure, Relu(ROOT)));
  const PipelineFeatures inl = MustFeaturize(featurizer_, Spec(pure, Relu(INLINE)));
  const Row relu(inl, relu_), exp_root(root, exp_), exp_inl(inl, exp_);
  EXPECT_EQ(relu.Dep("loc_inline"), 1);
  EXPECT_EQ(relu.Dep("loc_root"), 0);
  EXPECT_EQ(relu.Dep("inline_evaluations"), 4096);
  EXPECT_EQ(relu.Dep("inline_sites"), 1);
  EXPECT_EQ(relu.Dep("recompute_ratio"), 1);
  EXPECT_EQ(relu.Dep("allocation_bytes"), 0);
  EXPECT_EQ(relu.Dep("num_loops"), 0);
  EXPECT_EQ(exp_root.Dep("inlined_float_ops"), 0);
  EXPECT_EQ(exp_inl.Dep("inlined_float_ops"), 1);  // relu's max
  EXPECT_EQ(exp_inl.Dep("float_ops"), exp_root.Dep("float_ops") + 4096);
  EXPECT_EQ(exp_inl.Dep("loads_per_iteration"), 1);  // x instead of relu
}

TEST_F(TwoStages, ComputeAtGivesOneRowPerRealization) {
  const DefinitionSchedule pure;
  StageSchedule at = Relu(AT);
  *at.mutable_compute_at() = Ref(exp_name_, "d0", 0);
  const PipelineFeatures f = MustFeaturize(featurizer_, Spec(pure, at));
  const Row relu(f, relu_);
  EXPECT_EQ(relu.Dep("loc_at"), 1);
  EXPECT_EQ(relu.Dep("compute_depth"), 1);
  EXPECT_EQ(relu.Dep("realizations"), 64);
  EXPECT_EQ(relu.Dep("region_d0"), 64);
  EXPECT_EQ(relu.Dep("region_d1"), 1);
  EXPECT_EQ(relu.Dep("allocation_bytes"), 64 * 4);
  EXPECT_EQ(relu.Dep("allocations"), 64);
  EXPECT_EQ(relu.Dep("allocation_bytes_total"), 64 * 64 * 4);
  EXPECT_EQ(relu.Dep("points_computed"), 4096);
  EXPECT_EQ(relu.Dep("recompute_ratio"), 1);
  EXPECT_EQ(relu.Dep("num_loops"), 2);
  EXPECT_EQ(relu.Dep("loop1_extent"), 1);
}

// A 3x3 convolution (pad 1) of relu(x): relu inlined is evaluated once per tap, and
// computed at a tile of the convolution it recomputes the tile's halo.
TEST(DependentFeatures, StencilProducersRecompute) {
  PipelineBuilder b("stencil");
  const std::string relu = b.Relu(b.Input("x", {1, 1, 32, 32}));
  const std::string conv = b.Conv2d(relu, 1, 3, 1, 1, 1, 1, /*bias=*/false);
  b.Output(conv);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  auto spec_with = [&](const StageSchedule& relu_decision) {
    ScheduleSpec spec = space.Empty();
    StageSchedule* c = spec.add_stages();
    c->set_stage(conv);
    c->set_compute(ROOT);
    DimSplit* split = c->mutable_update()->add_splits();  // d3 (width) by 8
    split->set_dim("d3");
    split->add_factors(8);
    *spec.add_stages() = relu_decision;
    spec.set_partial(false);
    return spec;
  };
  StageSchedule inlined;
  inlined.set_stage(relu);
  inlined.set_compute(INLINE);
  const Row in(MustFeaturize(featurizer, spec_with(inlined)), StageIndex(graph, relu));
  EXPECT_EQ(in.Dep("inline_evaluations"), 32 * 32 * 9);
  EXPECT_EQ(in.Dep("recompute_ratio"), 9);

  // At the conv update's d3_0 loop (a row of 8 outputs): 3 rows of 10 inputs, clamped at
  // the image border; the representative tile is interior.
  StageSchedule at;
  at.set_stage(relu);
  at.set_compute(AT);
  *at.mutable_compute_at() = Ref(conv, "d3", 0, /*update=*/true);
  const PipelineFeatures f = MustFeaturize(featurizer, spec_with(at));
  const Row r(f, StageIndex(graph, relu));
  EXPECT_EQ(r.Dep("region_d0"), 10);
  EXPECT_EQ(r.Dep("region_d1"), 3);
  EXPECT_EQ(r.Dep("realizations"), 32 * 4);
  EXPECT_GT(r.Dep("recompute_ratio"), 3);
  EXPECT_LT(r.Dep("recompute_ratio"), 4);
  EXPECT_GT(r.Dep("recompute_float_ops"), 0);
}

void Split(DefinitionSchedule* def, const std::string& dim, const std::vector<int64_t>& factors) {
  DimSplit* split = def->add_splits();
  split->set_dim(dim);
  for (int64_t f : factors) split->add_factors(f);
}

// A matmul computed at the inner loop of a split of its consumer covers one point per
// realization; its update's pure dim split by 16 still has a loop of 16, but the
// guarded tail runs one iteration of it: the totals count realizations x region x K,
// not realizations x the loop extents. (Rule 5 of docs/SCHEDULES.md refuses such a
// split now; schedules measured before it keep their features: CheckMeasured.)
TEST(DependentFeatures, MatMulAtAnInnerConsumerLoopCountsTheIterationsThatRun) {
  PipelineBuilder b("matmul_at");
  const std::string mm = b.MatMul(b.Input("a", {30, 64}), b.Input("w", {64, 30}));
  const std::string out = b.Relu(mm);
  b.Output(out);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  ScheduleSpec spec = space.Empty();
  spec.set_partial(false);
  StageSchedule* o = spec.add_stages();
  o->set_stage(out);
  o->set_compute(ROOT);
  Split(o->mutable_pure(), "d1", {8});  // 30 columns: 4 x 8, the last 2 guarded out
  o->mutable_pure()->set_tail(TAIL_GUARD_WITH_IF);
  StageSchedule* m = spec.add_stages();
  m->set_stage(mm);
  m->set_compute(AT);
  *m->mutable_compute_at() = Ref(out, "d1", 1);
  Split(m->mutable_update(), "d1", {16});
  Split(m->mutable_update(), "rk", {16});
  ASSERT_TRUE(space.CheckMeasured(spec).ok()) << space.CheckMeasured(spec).ToString();
  const PipelineFeatures f = MustFeaturize(featurizer, spec);

  const Row r(f, StageIndex(graph, mm));
  const double realizations = 8 * 4 * 30;  // every iteration of the consumer's loops
  EXPECT_EQ(r.Dep("realizations"), realizations);
  EXPECT_EQ(r.Dep("region_points"), 1);
  EXPECT_EQ(r.Dep("num_loops"), 5);  // rk_1, rk_0, d1_1, d1_0, d0 (innermost first)
  EXPECT_EQ(r.Dep("loop2_extent"), 16);
  const double update = realizations * 64;  // not realizations * 16 * 64
  EXPECT_EQ(r.Dep("update_iterations"), update);
  EXPECT_EQ(r.Dep("float_ops"), 2 * update);  // a multiply-add per iteration
  EXPECT_EQ(r.Dep("scalar_float_ops"), 2 * update);
  EXPECT_EQ(r.Dep("num_scalars"), realizations + update);  // init, then the update
  EXPECT_EQ(r.Dep("bytes_written_total"), 4 * (realizations + update));
  EXPECT_EQ(r.Dep("bytes_read_total"), 4 * 3 * update);  // a, w and itself
  // Per loop level: the d1_1 loop runs once, so its level does the work of the one
  // inside it (one row of a and one column of w: 128 elements read 3 * 64 times).
  EXPECT_EQ(r.Dep("loop1_reuse"), 3.0 * 64 / 128);
  EXPECT_EQ(r.Dep("loop2_reuse"), r.Dep("loop1_reuse"));

  // The consumer, an output with a guarded tail, computes its 900 points once.
  const Row c(f, StageIndex(graph, out));
  EXPECT_EQ(c.Dep("num_scalars"), 900);
  EXPECT_EQ(c.Dep("float_ops"), 900);  // relu's max
  EXPECT_EQ(c.Dep("bytes_written_total"), 4 * 900);
}

// A convolution computed at the inner loop of its consumer's split: realizations x 1
// point x (channels x kernel) update iterations (a split rule 5 refuses now, as above).
TEST(DependentFeatures, ConvAtAnInnerConsumerLoopCountsTheIterationsThatRun) {
  PipelineBuilder b("conv_at");
  const std::string conv = b.Conv2d(b.Input("x", {1, 4, 12, 12}), 6, 3, 1, 1, 1, 1, /*bias=*/false);
  const std::string out = b.Tanh(conv);
  b.Output(out);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  ScheduleSpec spec = space.Empty();
  spec.set_partial(false);
  StageSchedule* o = spec.add_stages();
  o->set_stage(out);
  o->set_compute(ROOT);
  Split(o->mutable_pure(), "d3", {8});  // 12 columns: 2 x 8
  o->mutable_pure()->set_tail(TAIL_GUARD_WITH_IF);
  StageSchedule* c = spec.add_stages();
  c->set_stage(conv);
  c->set_compute(AT);
  *c->mutable_compute_at() = Ref(out, "d3", 1);
  Split(c->mutable_update(), "d3", {4});
  ASSERT_TRUE(space.CheckMeasured(spec).ok()) << space.CheckMeasured(spec).ToString();
  const PipelineFeatures f = MustFeaturize(featurizer, spec);
  const Row r(f, StageIndex(graph, conv));
  const double realizations = 8 * 2 * 12 * 6;
  EXPECT_EQ(r.Dep("realizations"), realizations);
  EXPECT_EQ(r.Dep("region_points"), 1);
  const double update = realizations * 4 * 3 * 3;
  EXPECT_EQ(r.Dep("update_iterations"), update);
  EXPECT_EQ(r.Dep("float_ops"), 2 * update);
  EXPECT_EQ(r.Dep("bytes_written_total"), 4 * (realizations + update));
}

// A conv at root, vectorized across its output channels (d1), stored channels
// innermost, reading packed weights and a copy of its padded input: the layout columns
// say so; the same loops in the natural layout without packing or copy do not.
TEST(DependentFeatures, LayoutsAreSeen) {
  PipelineBuilder b("conv_layout");
  const std::string conv = b.Conv2d(b.Input("x", {1, 4, 12, 12}), 16, 3, 1, 1);
  const std::string out = b.Relu(conv);
  b.Output(out);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  ScheduleSpec spec = space.WithDefaults(space.Empty());
  StageSchedule* c = spec.mutable_stages(1);
  ASSERT_EQ(c->stage(), conv);
  c->set_compute(ROOT);
  Split(c->mutable_update(), "d1", {8});
  *c->mutable_update()->mutable_vectorize() = Ref(conv, "d1", 1, true);
  c->mutable_update()->set_vector_width(8);
  ASSERT_TRUE(space.Check(spec).ok()) << space.Check(spec).ToString();
  const Row natural(MustFeaturize(featurizer, spec), StageIndex(graph, conv));
  EXPECT_EQ(natural.Dep("storage_innermost"), 0);
  EXPECT_EQ(natural.Dep("vector_store_contiguous"), 0);
  EXPECT_EQ(natural.Dep("weights_packed"), 0);
  EXPECT_EQ(natural.Dep("weight_vector_loads"), 0);
  EXPECT_EQ(natural.Dep("padded_copy"), 0);
  c->set_storage_innermost("d1");
  c->set_pack_weights(true);
  c->set_padded_copy(true);  // its padded input x is a pipeline input
  ASSERT_TRUE(space.Check(spec).ok()) << space.Check(spec).ToString();
  const Row packed(MustFeaturize(featurizer, spec), StageIndex(graph, conv));
  EXPECT_EQ(packed.Dep("padded_copy"), 1);
  EXPECT_EQ(packed.Dep("storage_innermost"), 2);  // d1 is the third pure dim, innermost first
  EXPECT_EQ(packed.Dep("vector_store_contiguous"), 1);
  EXPECT_EQ(packed.Dep("weights_packed"), 1);
  EXPECT_EQ(packed.Dep("weight_vector_loads"), 1);
  EXPECT_EQ(packed.Dep("float_ops"), natural.Dep("float_ops")) << "the same work";

  // The output of a channels-last pipeline is stored channels innermost.
  PipelineSpec channels_last = graph.spec();
  channels_last.set_boundary_layout(LAYOUT_CHANNELS_LAST);
  const PipelineGraph cl_graph = PipelineGraph::Build(channels_last).value();
  const ScheduleSpace cl_space(cl_graph);
  const Featurizer cl_featurizer(cl_space);
  ScheduleSpec relu = cl_space.WithDefaults(cl_space.Empty());
  ASSERT_EQ(relu.stages(0).stage(), out);
  Split(relu.mutable_stages(0)->mutable_pure(), "d1", {8});
  *relu.mutable_stages(0)->mutable_pure()->mutable_vectorize() = Ref(out, "d1", 1, false);
  relu.mutable_stages(0)->mutable_pure()->set_vector_width(8);
  ASSERT_TRUE(cl_space.Check(relu).ok()) << cl_space.Check(relu).ToString();
  const Row output(MustFeaturize(cl_featurizer, relu), StageIndex(cl_graph, out));
  EXPECT_EQ(output.Dep("storage_innermost"), 2);
  EXPECT_EQ(output.Dep("vector_store_contiguous"), 1);
}

// x [5, 20] -> exp: d1 split by 8 and vectorized. With a guarded tail each row runs 2
// vectors and 4 scalar lanes (Halide scalarizes a partial vector); with ShiftInwards 3
// vectors, the last overlapping the second.
TEST(DependentFeatures, GuardedVectorTailsRunAsScalars) {
  PipelineBuilder b("tail");
  const std::string out = b.Exp(b.Input("x", {5, 20}));
  b.Output(out);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  auto spec_with = [&](TailStrategy tail) {
    ScheduleSpec spec = space.Empty();
    spec.set_partial(false);
    StageSchedule* o = spec.add_stages();
    o->set_stage(out);
    o->set_compute(ROOT);
    Split(o->mutable_pure(), "d1", {8});
    *o->mutable_pure()->mutable_vectorize() = Ref(out, "d1", 1);
    o->mutable_pure()->set_vector_width(8);
    o->mutable_pure()->set_tail(tail);
    return spec;
  };
  const Row g(MustFeaturize(featurizer, spec_with(TAIL_GUARD_WITH_IF)), 0);
  const double ops = g.Dep("float_ops") / 100;  // per point
  EXPECT_GT(ops, 0);
  EXPECT_EQ(g.Dep("num_vectors"), 5 * 2);
  EXPECT_EQ(g.Dep("num_scalars"), 5 * 4);
  EXPECT_EQ(g.Dep("vector_float_ops"), 5 * 2 * ops);
  EXPECT_EQ(g.Dep("scalar_float_ops"), 5 * 4 * ops);
  EXPECT_EQ(g.Dep("bytes_written_total"), 4 * 100);

  const Row s(MustFeaturize(featurizer, spec_with(TAIL_SHIFT_INWARDS)), 0);
  EXPECT_EQ(s.Dep("num_vectors"), 5 * 3);
  EXPECT_EQ(s.Dep("num_scalars"), 0);
  EXPECT_EQ(s.Dep("float_ops"), 5 * 3 * 8 * ops);
  EXPECT_EQ(s.Dep("points_computed"), 100);
  EXPECT_EQ(s.Dep("bytes_written_total"), 4 * 5 * 3 * 8);
}

// A parallel loop inside the two levels of a guarded split starts once per iteration of
// them that passes the guard: 20, not 7 x 3.
TEST(DependentFeatures, ParallelLaunchesSkipGuardedIterations) {
  PipelineBuilder b("launches");
  const std::string out = b.Exp(b.Input("x", {5, 20}));
  b.Output(out);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  ScheduleSpec spec = space.Empty();
  spec.set_partial(false);
  StageSchedule* o = spec.add_stages();
  o->set_stage(out);
  o->set_compute(ROOT);
  DefinitionSchedule* pure = o->mutable_pure();
  Split(pure, "d1", {3});
  pure->set_tail(TAIL_GUARD_WITH_IF);
  *pure->add_loop_order() = Ref(out, "d0", 0);  // innermost
  *pure->add_loop_order() = Ref(out, "d1", 1);
  *pure->add_loop_order() = Ref(out, "d1", 0);
  *pure->add_parallel() = Ref(out, "d0", 0);
  ASSERT_TRUE(space.Check(spec).ok()) << space.Check(spec).ToString();
  const Row r(MustFeaturize(featurizer, spec), 0);
  EXPECT_EQ(r.Dep("loop0_parallel"), 1);
  EXPECT_EQ(r.Dep("parallel_launches"), 20);
  EXPECT_EQ(r.Dep("thread_wakeups"), 20 * 2);  // 5 tasks on 2 cores
  EXPECT_EQ(r.Dep("num_scalars"), 100);
}

// On random schedules of every zoo block, every definition runs once per point of its
// realization's region (times the reduction points for updates), per realization:
// guarded tails never add iterations, whatever the splits and compute locations.
TEST(DependentFeatures, IterationsAreRegionPointsTimesRealizations) {
  int checked = 0, clipped = 0;
  for (const std::string& name : ZooNames()) {
    SCOPED_TRACE(name);
    StatusOr<PipelineSpec> spec = MakeZooBlock(name);
    ASSERT_TRUE(spec.ok());
    const PipelineGraph graph = PipelineGraph::Build(spec.value()).value();
    const ScheduleSpace space(graph);
    const Featurizer featurizer(space);
    const std::vector<std::string>& names = CurrentFeatureSchema().dependent_names;
    const size_t width = names.size();
    const int updates = Column(names, "update_iterations");
    const int realizations = Column(names, "realizations");
    const int region = Column(names, "region_points");
    const int written = Column(names, "bytes_written_total");
    const int inlined = Column(names, "loc_inline");
    const int loops_beyond = Column(names, "loops_beyond_slots");
    const int num_loops = Column(names, "num_loops");
    PipelineFeatures f;
    for (int k = 0; k < 10; ++k) {
      const ScheduleSpec schedule = space.RandomSchedule(700 + k);
      ASSERT_TRUE(featurizer.Featurize(schedule, &f).ok());
      for (int pos = 0; pos < schedule.stages_size(); ++pos) {
        const int s = space.decision_order()[pos];
        const float* row = &f.dependent[s * width];
        if (row[inlined] == 1) continue;
        const bool output = std::find(graph.output_stages().begin(), graph.output_stages().end(),
                                      s) != graph.output_stages().end();
        const double points = static_cast<double>(row[realizations]) * row[region];
        double reduction = 0;
        if (!graph.loops(s).reduction.empty()) {
          reduction = 1;
          for (const LoopDim& d : graph.loops(s).reduction) reduction *= d.extent;
        }
        EXPECT_NEAR(row[updates], points * reduction, 1e-6 * points * reduction)
            << graph.stage(s).name();
        if (!output) {  // guarded pure definitions too (outputs shift their tails)
          const double stores = points * (1 + reduction);
          EXPECT_NEAR(row[written], stores * BytesPerElement(graph.stage(s).dtype()),
                      1e-6 * stores * 8)
              << graph.stage(s).name();
        }
        // Schedules where the loops hold more iterations than run.
        double loop_product = row[loops_beyond];
        for (int q = 0; q < 8 && q < row[num_loops]; ++q) {
          loop_product *= row[Column(names, "loop" + std::to_string(q) + "_extent")];
        }
        clipped += loop_product > row[region] * std::max(1.0, reduction);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 1000);
  EXPECT_GT(clipped, 100);
}

TEST(DependentFeatures, PartialSchedulesLeaveUndecidedStagesAtZero) {
  StatusOr<PipelineSpec> spec = MakeZooBlock("resnet18_basic");
  ASSERT_TRUE(spec.ok());
  const PipelineGraph graph = PipelineGraph::Build(spec.value()).value();
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  const ScheduleSpec full = space.RandomSchedule(3);
  const size_t width = CurrentFeatureSchema().dependent_names.size();
  for (int decided : {0, 1, 4, graph.num_stages()}) {
    SCOPED_TRACE(decided);
    ScheduleSpec partial = full;
    partial.mutable_stages()->DeleteSubrange(decided, partial.stages_size() - decided);
    partial.set_partial(decided < graph.num_stages());
    const PipelineFeatures f = MustFeaturize(featurizer, partial);
    ASSERT_EQ(f.num_stages, graph.num_stages());
    ASSERT_EQ(f.dependent.size(), graph.num_stages() * width);
    ASSERT_EQ(f.scheduled.size(), static_cast<size_t>(graph.num_stages()));
    for (int pos = 0; pos < graph.num_stages(); ++pos) {
      const int s = space.decision_order()[pos];
      const float* row = &f.dependent[s * width];
      const bool any = std::any_of(row, row + width, [](float v) { return v != 0; });
      EXPECT_EQ(f.scheduled[s], pos < decided ? 1 : 0);
      EXPECT_EQ(any, pos < decided) << graph.stage(s).name();
      if (pos < decided) {
        const Row r(f, s);
        EXPECT_EQ(r.Dep("loc_inline") + r.Dep("loc_root") + r.Dep("loc_at"), 1);
      }
    }
    // The invariant part and the graph do not depend on the schedule.
    EXPECT_EQ(f.invariant, MustFeaturize(featurizer, space.Empty()).invariant);
  }
}

TEST(DependentFeatures, DecisionsKeepTheirFeaturesAsLaterStagesAreDecided) {
  // Consumers are decided first; a later decision (a producer) may change how they read
  // their inputs (inlining), but never their loops or regions.
  StatusOr<PipelineSpec> spec = MakeZooBlock("mobilenetv2_inverted_residual");
  ASSERT_TRUE(spec.ok());
  const PipelineGraph graph = PipelineGraph::Build(spec.value()).value();
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  const ScheduleSpec full = space.RandomSchedule(11);
  ScheduleSpec half = full;
  const int decided = graph.num_stages() / 2;
  half.mutable_stages()->DeleteSubrange(decided, half.stages_size() - decided);
  half.set_partial(true);
  const PipelineFeatures a = MustFeaturize(featurizer, half);
  const PipelineFeatures b = MustFeaturize(featurizer, full);
  for (int pos = 0; pos < decided; ++pos) {
    const int s = space.decision_order()[pos];
    const Row ra(a, s), rb(b, s);
    for (const char* name :
         {"num_loops", "loop0_extent", "loop1_extent", "region_d0", "region_d1", "realizations",
          "allocation_bytes", "vector_width", "parallel_tasks"}) {
      EXPECT_EQ(ra.Dep(name), rb.Dep(name)) << graph.stage(s).name() << " " << name;
    }
  }
}

// The evaluator resolves decisions itself (it runs for every candidate); its loops are
// the space's: for every definition of every non-inlined stage, the same loops
// (dim, level) in the same order with the same vectorized / parallel / unrolled flags as
// ScheduleSpace::DefinitionLoops, and the same extents where the stage covers its whole
// shape (the space's extents are nominal).
TEST(DependentFeatures, LoopsAreTheSpacesLoops) {
  int compared = 0;
  for (const std::string& name : ZooNames()) {
    SCOPED_TRACE(name);
    StatusOr<PipelineSpec> spec = MakeZooBlock(name);
    ASSERT_TRUE(spec.ok());
    const PipelineGraph graph = PipelineGraph::Build(spec.value()).value();
    const ScheduleSpace space(graph);
    const features_internal::PipelineModel model =
        features_internal::BuildPipelineModel(graph, space.target().vector_bytes);
    features_internal::ScheduleEvaluator evaluator;
    for (int k = 0; k < 20; ++k) {
      const ScheduleSpec schedule = space.RandomSchedule(500 + k);
      evaluator.Evaluate(space, model, schedule);
      for (int pos = 0; pos < schedule.stages_size(); ++pos) {
        const int s = space.decision_order()[pos];
        const features_internal::StageState& st = evaluator.stage(s);
        if (st.inlined) continue;
        bool whole = true;
        for (int j = 0; j < graph.stage(s).shape_size(); ++j) {
          whole = whole && st.region[j].extent() == model.stages[s].shape[j];
        }
        for (int def = 0; def < (model.stages[s].has_update ? 2 : 1); ++def) {
          const std::vector<ScheduledLoop> expected =
              space.DefinitionLoops(s, def == 1, schedule.stages(pos));
          const features_internal::DefState& d = st.defs[def];
          ASSERT_EQ(d.num_loops, static_cast<int>(expected.size())) << graph.stage(s).name();
          for (int q = 0; q < d.num_loops; ++q) {
            const features_internal::LoopState& loop = d.loops[q];
            const ScheduledLoop& e = expected[q];
            EXPECT_EQ(model.stages[s].defs[def][loop.dim].name, e.ref.dim());
            EXPECT_EQ(loop.level, e.ref.level());
            EXPECT_EQ(loop.vectorized, e.vectorized);
            EXPECT_EQ(loop.parallel, e.parallel);
            EXPECT_EQ(loop.unrolled, e.unrolled);
            EXPECT_EQ(loop.reduction, e.reduction);
            if (whole) {
              EXPECT_EQ(loop.extent, e.extent) << graph.stage(s).name() << " " << q;
            }
            ++compared;
          }
        }
      }
    }
  }
  EXPECT_GT(compared, 5000);
}

TEST(DependentFeatures, ValuesAreFiniteAndNonNegative) {
  for (const std::string& name : ZooNames()) {
    StatusOr<PipelineSpec> spec = MakeZooBlock(name);
    ASSERT_TRUE(spec.ok());
    const PipelineGraph graph = PipelineGraph::Build(spec.value()).value();
    const ScheduleSpace space(graph);
    const Featurizer featurizer(space);
    PipelineFeatures f;
    for (int k = 0; k < 10; ++k) {
      ASSERT_TRUE(featurizer.Featurize(space.RandomSchedule(900 + k), &f).ok());
      for (const std::vector<float>* values : {&f.invariant, &f.dependent}) {
        for (size_t i = 0; i < values->size(); ++i) {
          const float v = (*values)[i];
          ASSERT_TRUE(std::isfinite(v) && v >= 0) << name << " value " << i << " = " << v;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------
// Errors, graph, reuse, threads

TEST(Featurize, RefusesIllegalSchedulesNamingTheProblem) {
  PipelineBuilder b("two");
  const std::string relu = b.Relu(b.Input("x", {64, 64}));
  const std::string out = b.Exp(relu);
  b.Output(out);
  const PipelineGraph graph = MustBuild(b);
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  PipelineFeatures f;

  ScheduleSpec bad_width = space.Empty();
  StageSchedule* s = bad_width.add_stages();
  s->set_stage(out);
  s->set_compute(ROOT);
  *s->mutable_pure()->mutable_vectorize() = Ref(out, "d1", 0);
  s->mutable_pure()->set_vector_width(8);  // the loop has extent 64
  const Status width = featurizer.Featurize(bad_width, &f);
  ASSERT_FALSE(width.ok());
  EXPECT_NE(width.message().find("illegal schedule"), std::string::npos) << width.message();
  EXPECT_NE(width.message().find("vector_width"), std::string::npos) << width.message();
  EXPECT_NE(width.message().find("'" + out + "'"), std::string::npos) << width.message();

  ScheduleSpec inline_output = space.Empty();
  StageSchedule* o = inline_output.add_stages();
  o->set_stage(out);
  o->set_compute(INLINE);
  const Status inlined = featurizer.Featurize(inline_output, &f);
  ASSERT_FALSE(inlined.ok());
  EXPECT_NE(inlined.message().find("outputs"), std::string::npos) << inlined.message();

  ScheduleSpec other = space.Empty();
  other.set_pipeline_id("0123456789abcdef0123456789abcdef");
  EXPECT_FALSE(featurizer.Featurize(other, &f).ok());
}

TEST(Featurize, EdgesFollowTheStageGraph) {
  StatusOr<PipelineSpec> spec = MakeZooBlock("squeezenet_fire");
  ASSERT_TRUE(spec.ok());
  const PipelineGraph graph = PipelineGraph::Build(spec.value()).value();
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  const PipelineFeatures f = MustFeaturize(featurizer, space.Empty());
  std::set<std::pair<int, int>> expected;
  for (int s = 0; s < graph.num_stages(); ++s) {
    for (int c : graph.consumers(s)) expected.insert({s, c});
  }
  const std::set<std::pair<int, int>> edges(f.edges.begin(), f.edges.end());
  EXPECT_EQ(edges, expected);
  EXPECT_EQ(f.edges.size(), expected.size());
  double flops = 0;
  for (int s = 0; s < graph.num_stages(); ++s) flops += graph.cost(s).flops;
  EXPECT_EQ(f.flops, flops);
  EXPECT_GT(f.bytes, 0);
}

TEST(Featurize, ReusedOutputEqualsAFreshOneAndThreadsAgree) {
  StatusOr<PipelineSpec> spec = MakeZooBlock("inception_module");
  ASSERT_TRUE(spec.ok());
  const PipelineGraph graph = PipelineGraph::Build(spec.value()).value();
  const ScheduleSpace space(graph);
  const Featurizer featurizer(space);
  std::vector<ScheduleSpec> specs;
  for (int k = 0; k < 8; ++k) specs.push_back(space.RandomSchedule(100 + k));
  std::vector<PipelineFeatures> fresh;
  for (const ScheduleSpec& s : specs) fresh.push_back(MustFeaturize(featurizer, s));

  PipelineFeatures reused;
  for (size_t k = 0; k < specs.size(); ++k) {
    ASSERT_TRUE(featurizer.Featurize(specs[k], &reused).ok());
    EXPECT_EQ(reused.dependent, fresh[k].dependent);
    EXPECT_EQ(reused.scheduled, fresh[k].scheduled);
  }
  // Featurize is const and keeps its scratch space per thread.
  std::vector<int> mismatches(2, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      PipelineFeatures out;
      for (int round = 0; round < 20; ++round) {
        for (size_t k = 0; k < specs.size(); ++k) {
          if (!featurizer.Featurize(specs[k], &out).ok() || out.dependent != fresh[k].dependent) {
            ++mismatches[t];
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(mismatches, std::vector<int>(2, 0));
  // Different schedules give different features.
  EXPECT_NE(fresh[0].dependent, fresh[1].dependent);
}

// A fused task's producers computed in strips of its output's rows (its first template,
// scheduler/templates.h) are featurized as such: the expansion's host computed at a loop
// (once per strip, its halo rows twice), where the cut of separate tasks computes it
// once at root.
TEST(FusedTaskFeatures, ProducersInStripsAreRealizedPerStripAndRecomputeTheirHalos) {
  PipelineBuilder b("inverted_residual");
  const std::string x = b.Input("x", {1, 16, 32, 32});
  const std::string expanded = b.Relu(b.Conv2d(x, 64, 1));
  const std::string filtered = b.Relu(b.DepthwiseConv2d(expanded, 3, 1, 1));
  b.Output(b.Add(b.Conv2d(filtered, 16, 1), x));
  const PipelineGraph graph = MustBuild(b);
  TargetParams avx512;
  avx512.vector_bytes = 64;
  const ScheduleSpace space(graph, avx512);
  const std::vector<ScheduleSpec> cuts = TemplateSchedules(space);
  ASSERT_EQ(cuts.size(), 3u);
  const Featurizer featurizer(space);
  const int host = StageIndex(graph, expanded);
  const Row strips(MustFeaturize(featurizer, cuts.front()), host);
  const Row apart(MustFeaturize(featurizer, cuts.back()), host);
  EXPECT_EQ(strips.Dep("loc_at"), 1);
  EXPECT_GT(strips.Dep("realizations"), 1);
  EXPECT_GT(strips.Dep("recompute_ratio"), 1);
  EXPECT_EQ(apart.Dep("loc_root"), 1);
  EXPECT_EQ(apart.Dep("realizations"), 1);
  EXPECT_EQ(apart.Dep("recompute_ratio"), 1);
  EXPECT_GT(strips.Dep("points_computed"), apart.Dep("points_computed"));
}

// ---------------------------------------------------------------------------------
// Features taken on the host that measured (learner/host_featurizers.h): a measurement
// is featurized with its own host's vector width, caches, peak and bandwidth at the
// threads it ran with, so the same schedule measured at 1, 2 and 8 threads, or on an
// AVX2 and an AVX-512 host, gets the features of each; and hosts of one kind whose
// peaks differ by noise share a space.

// x [4, 64] -> exp (output).
PipelineGraph Exp(std::string* stage) {
  PipelineBuilder b("exp");
  *stage = b.Exp(b.Input("x", {4, 64}));
  b.Output(*stage);
  return MustBuild(b);
}

// An 8-core host: AVX-512 or AVX2, peaks and bandwidths measured at 1, 2 and 8 threads.
HostFingerprint Host(bool avx512) {
  HostFingerprint host;
  host.set_cpu_model("Test CPU");
  host.set_cores(8);
  host.set_halide_target(avx512 ? "x86-64-linux-avx-avx2-avx512-f16c-fma-sse41"
                                : "x86-64-linux-avx-avx2-f16c-fma-sse41");
  host.set_l1d_bytes(48 << 10);
  host.set_l2_bytes(2 << 20);
  host.set_l3_bytes(32 << 20);
  for (int threads : {1, 2, 8}) {
    (*host.mutable_peak_gflops())[threads] = 128.0 * threads;
    (*host.mutable_bandwidth_gbps())[threads] = 16.0 * std::min(threads, 4);
  }
  return host;
}

// exp's outer loop (d0, extent 4) parallel: 4 tasks.
Measurement Measured(const ScheduleSpace& space, const std::string& stage,
                     const HostFingerprint& host, int threads) {
  Measurement m;
  ScheduleSpec* spec = m.mutable_candidate()->mutable_schedule();
  *spec = space.Empty();
  StageSchedule* s = spec->add_stages();
  s->set_stage(stage);
  s->set_compute(ROOT);
  *s->mutable_pure()->add_parallel() = MakeLoopRef(stage, "d0", 0, false);
  spec->set_partial(false);
  m.mutable_candidate()->set_pipeline_id(space.pipeline_id());
  m.mutable_candidate()->set_schedule_hash("h");
  *m.mutable_host() = host;
  m.mutable_settings()->set_threads(threads);
  m.mutable_stats()->set_median_seconds(1e-3);
  return m;
}

TEST(HostFeaturizers, AMeasurementIsFeaturizedAtTheThreadsItRanWith) {
  std::string stage;
  const PipelineGraph graph = Exp(&stage);
  const ScheduleSpace space(graph);
  HostFeaturizers featurizers;
  for (int threads : {1, 2, 8}) {
    StatusOr<Sample> sample =
        featurizers.SampleOf(graph, Measured(space, stage, Host(true), threads));
    ASSERT_TRUE(sample.ok()) << sample.status().ToString();
    EXPECT_EQ(Row(sample->features, 0).Inv("host_threads"), threads);
    EXPECT_EQ(Row(sample->features, 0).Inv("host_peak_gflops"), 128.0 * threads);
    EXPECT_EQ(Row(sample->features, 0).Inv("host_bandwidth_gbps"), 16.0 * std::min(threads, 4));
    EXPECT_EQ(Row(sample->features, 0).Inv("host_l2_bytes"), 2 << 20);
    // 4 parallel tasks: every thread busy at 1 and 2 threads, half of them at 8.
    EXPECT_EQ(Row(sample->features, 0).Dep("parallel_tasks"), 4);
    EXPECT_EQ(Row(sample->features, 0).Dep("core_utilization"), threads == 8 ? 0.5 : 1)
        << threads << " threads";
    EXPECT_EQ(Row(sample->features, 0).Dep("thread_wakeups"), std::min(threads, 4));
    // The roofline time of exp's flops at the host's peak at these threads.
    EXPECT_NEAR(Row(sample->features, 0).Inv("host_compute_seconds") * 128.0e9 * threads,
                graph.cost(0).flops, 1e-6 * graph.cost(0).flops);
  }
}

TEST(HostFeaturizers, TheVectorWidthAndRegistersAreTheMeasuringHosts) {
  std::string stage;
  const PipelineGraph graph = Exp(&stage);
  const ScheduleSpace space(graph);
  HostFeaturizers featurizers;
  StatusOr<Sample> avx2 = featurizers.SampleOf(graph, Measured(space, stage, Host(false), 2));
  StatusOr<Sample> avx512 = featurizers.SampleOf(graph, Measured(space, stage, Host(true), 2));
  ASSERT_TRUE(avx2.ok() && avx512.ok());
  EXPECT_EQ(Row(avx2->features, 0).Inv("host_vector_bytes"), 32);
  EXPECT_EQ(Row(avx2->features, 0).Inv("host_vector_registers"), 16);
  EXPECT_EQ(Row(avx512->features, 0).Inv("host_vector_bytes"), 64);
  EXPECT_EQ(Row(avx512->features, 0).Inv("host_vector_registers"), 32);
}

TEST(HostFeaturizers, HostsOfOneKindShareADescriptionDespiteTheirPeaksNoise) {
  HostFingerprint a = Host(true), b = Host(true);
  (*b.mutable_peak_gflops())[2] = 256.0 * 1.04;  // 4% above a's: noise
  (*b.mutable_bandwidth_gbps())[2] = 32.0 * 0.97;
  const TargetParams ta = TargetOf(a, 2), tb = TargetOf(b, 2);
  EXPECT_EQ(ta.peak_gflops, tb.peak_gflops);
  EXPECT_EQ(ta.bandwidth_gbps, tb.bandwidth_gbps);
  (*b.mutable_peak_gflops())[2] = 256.0 * 1.5;  // another kind of host
  EXPECT_NE(TargetOf(b, 2).peak_gflops, ta.peak_gflops);
  // A thread count the host did not measure takes the largest one below it.
  EXPECT_EQ(TargetOf(a, 4).peak_gflops, 256.0);
  EXPECT_EQ(TargetOf(a, 4).cores, 4);
  EXPECT_EQ(TargetOf(a, 0).cores, 8) << "0 threads: the host's cores";
  EXPECT_EQ(VectorBytesOfHalideTarget("x86-64-linux-sse41"), 16);
}

}  // namespace
}  // namespace schedfarm
