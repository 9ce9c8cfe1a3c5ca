// ImportHalideSchedule: schedules written by hand with Halide's API (one construct at
// a time, so that the expected import is known), schedules of the space applied to
// Halide and read back, and the three autoschedulers' schedules. Where nothing that
// changes the loop nest was left out, the imported spec applied to a fresh lowering
// must give the same Halide loop nest and the reference output.
#include "scheduler/autoschedule/import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/halide/lowering.h"
#include "pipeline/halide/runner.h"
#include "scheduler/autoschedule/canonical_loop_nest.h"
#include "scheduler/halide/apply.h"
#include "scheduler/schedule_space.h"
#include "tests/scheduler/autoschedule/test_blocks.h"

namespace schedfarm {
namespace {

using autoschedule_test::ConvRelu;
using autoschedule_test::Mlp;
using autoschedule_test::SmallZoo;
using autoschedule_test::StageWithOp;
using Halide::Func;
using Halide::RVar;
using Halide::Var;

LoweredPipeline MustLower(const PipelineGraph& graph) {
  StatusOr<LoweredPipeline> lowered = LowerToHalide(graph);
  EXPECT_TRUE(lowered.ok()) << lowered.status().ToString();
  return std::move(*lowered);
}

TargetParams Target() { return HalideTargetParams(2); }

ImportedSchedule MustImport(const PipelineGraph& graph, const LoweredPipeline& lowered) {
  StatusOr<ImportedSchedule> imported = ImportHalideSchedule(graph, lowered, Target());
  EXPECT_TRUE(imported.ok()) << imported.status().ToString();
  if (!imported.ok()) return {};
  const ScheduleSpace space(graph, Target());
  const Status check = space.Check(imported->spec);
  EXPECT_TRUE(check.ok()) << check.ToString();
  EXPECT_FALSE(imported->spec.partial());
  EXPECT_EQ(imported->spec.stages_size(), graph.num_stages());
  for (const LeftOut& l : imported->left_out) {
    EXPECT_FALSE(l.stage.empty());
    EXPECT_FALSE(l.directive.empty());
    EXPECT_FALSE(l.why.empty()) << l.stage << ": " << l.directive;
  }
  return std::move(*imported);
}

const StageSchedule& DecisionOf(const ScheduleSpec& spec, const std::string& stage) {
  for (const StageSchedule& s : spec.stages()) {
    if (s.stage() == stage) return s;
  }
  ADD_FAILURE() << "no decision for stage " << stage;
  static const StageSchedule kNone;
  return kNone;
}

// The left-out constructs of `stage` whose directive starts with `directive`.
std::vector<LeftOut> LeftOutOf(const ImportedSchedule& imported, const std::string& stage,
                               const std::string& directive) {
  std::vector<LeftOut> out;
  for (const LeftOut& l : imported.left_out) {
    if (l.stage == stage && l.directive.rfind(directive, 0) == 0) out.push_back(l);
  }
  return out;
}

std::string Ref(const LoopRef& r) {
  return r.stage() + "." + r.dim() + "_" + std::to_string(r.level()) + (r.update() ? "u" : "");
}

std::string Refs(const google::protobuf::RepeatedPtrField<LoopRef>& refs) {
  std::string out;
  for (const LoopRef& r : refs) out += (out.empty() ? "" : " ") + Ref(r);
  return out;
}

std::vector<int64_t> Factors(const DefinitionSchedule& def, const std::string& dim) {
  for (const DimSplit& s : def.splits()) {
    if (s.dim() == dim) return {s.factors().begin(), s.factors().end()};
  }
  return {};
}

std::vector<HostTensor> ReferenceOutputs(const PipelineGraph& graph) {
  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> run = RunReference(graph, once);
  EXPECT_TRUE(run.ok()) << run.status().ToString();
  return run.ok() ? run->outputs : std::vector<HostTensor>{};
}

void ExpectReferenceOutputs(const PipelineGraph& graph, const std::vector<HostTensor>& outputs,
                            const std::vector<HostTensor>& reference) {
  ASSERT_EQ(outputs.size(), reference.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Comparison c =
        CompareTensors(outputs[i], reference[i], DefaultTolerance(reference[i].dtype));
    EXPECT_TRUE(c.match) << graph.spec().outputs(static_cast<int>(i)) << ": " << c.message;
  }
}

// Runs `spec` (applied to a fresh lowering) and compares with the reference.
void ExpectRunsCorrectly(const PipelineGraph& graph, const ScheduleSpec& spec,
                         const std::vector<HostTensor>& reference) {
  RunOptions once;
  once.timing_samples = 0;
  StatusOr<RunResult> run = RunWithSchedule(graph, spec, once);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ExpectReferenceOutputs(graph, run->outputs, reference);
}

// The loop nest as the sorted list of the paths to its lines: each loop and each
// store/produce line with the loops and productions around it (consume lines left
// out). Independent Funcs may be realized in either order (Halide orders them partly
// by name, and helper Funcs get new names in each lowering); the paths do not depend
// on that order but do on every nesting.
std::vector<std::string> NestPaths(const std::string& nest) {
  std::vector<std::string> paths;
  std::vector<std::pair<size_t, std::string>> stack;  // (indent, line)
  std::istringstream in(nest);
  std::string line;
  while (std::getline(in, line)) {
    const size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    while (!stack.empty() && stack.back().first >= indent) stack.pop_back();
    const std::string body = line.substr(indent);
    std::string path;
    for (const auto& entry : stack) path += entry.second + " / ";
    paths.push_back(path + body);
    if (body.rfind("consume ", 0) != 0) stack.emplace_back(indent, body);
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Applies `spec` to a fresh lowering and expects the loop nest of `scheduled` (the
// pipeline it was imported from). If the applier bounds the outputs, `scheduled` gets
// the same bounds first.
void ExpectSameLoopNest(const PipelineGraph& graph, LoweredPipeline& scheduled,
                        const ScheduleSpec& spec) {
  LoweredPipeline applied = MustLower(graph);
  const Status status = ApplySchedule(graph, applied, spec);
  ASSERT_TRUE(status.ok()) << status.ToString();
  for (int s : graph.output_stages()) {
    for (const auto& b : applied.stages[s].func.function().schedule().bounds()) {
      scheduled.stages[s].func.bound(Var(b.var), b.min, b.extent);
    }
  }
  StatusOr<std::string> want = CanonicalLoopNest(graph, scheduled);
  StatusOr<std::string> got = CanonicalLoopNest(graph, applied);
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(NestPaths(*got), NestPaths(*want)) << "applied:\n"
                                               << *got << "imported from:\n"
                                               << *want;
}

// --- schedules written by hand -------------------------------------------------------

TEST(ImportTest, SchedulesInsideTheSpaceAreImportedExactly) {
  const PipelineGraph graph = Mlp();
  LoweredPipeline lowered = MustLower(graph);
  const int mm = StageWithOp(graph, MATMUL), out = StageWithOp(graph, UNARY);
  Func f = lowered.stages[out].func;
  const Var d1 = lowered.stages[out].pure_vars[0], d0 = lowered.stages[out].pure_vars[1];
  Var d1o("d1o"), d1i("d1i"), d0o("d0o"), d0i("d0i"), d0io("d0io"), d0ii("d0ii");
  // d0 (32) split by 16, its inner part by 4: levels 2, 4, 4 = DimSplit [4, 4].
  f.split(d1, d1o, d1i, 8)
      .split(d0, d0o, d0i, 16)
      .split(d0i, d0io, d0ii, 4)
      .reorder(d1i, d0ii, d1o, d0io, d0o)
      .vectorize(d1i)
      .parallel(d0o);
  Func g = lowered.stages[mm].func;
  Var e1o("e1o"), e1i("e1i");
  g.compute_at(f, d0o);
  g.update(0)
      .split(lowered.stages[mm].pure_vars[0], e1o, e1i, 8, Halide::TailStrategy::GuardWithIf)
      .vectorize(e1i);

  ImportedSchedule imported = MustImport(graph, lowered);
  EXPECT_TRUE(imported.left_out.empty()) << DescribeLeftOut(imported.left_out);
  EXPECT_TRUE(imported.exact_loop_nest());
  const std::string relu = graph.stage(out).name(), matmul = graph.stage(mm).name();
  const StageSchedule& r = DecisionOf(imported.spec, relu);
  EXPECT_EQ(r.compute(), ROOT);
  EXPECT_EQ(Factors(r.pure(), "d1"), (std::vector<int64_t>{8}));
  EXPECT_EQ(Factors(r.pure(), "d0"), (std::vector<int64_t>{4, 4}));
  const std::string p = relu + ".";
  EXPECT_EQ(Refs(r.pure().loop_order()),
            p + "d1_1 " + p + "d0_2 " + p + "d1_0 " + p + "d0_1 " + p + "d0_0");
  EXPECT_EQ(Ref(r.pure().vectorize()), p + "d1_1");
  EXPECT_EQ(r.pure().vector_width(), 8);
  EXPECT_EQ(Refs(r.pure().parallel()), p + "d0_0");
  EXPECT_EQ(r.pure().tail(), TAIL_AUTO);
  const StageSchedule& m = DecisionOf(imported.spec, matmul);
  EXPECT_EQ(m.compute(), AT);
  EXPECT_EQ(Ref(m.compute_at()), p + "d0_0");
  EXPECT_EQ(m.store(), COMPUTE_LOCATION_UNSPECIFIED);
  EXPECT_EQ(Factors(m.update(), "d1"), (std::vector<int64_t>{8}));
  EXPECT_EQ(m.update().tail(), TAIL_GUARD_WITH_IF);
  EXPECT_EQ(Refs(m.update().loop_order()),
            matmul + ".rk_0u " + matmul + ".d1_1u " + matmul + ".d1_0u " + matmul + ".d0_0u");
  EXPECT_EQ(Ref(m.update().vectorize()), matmul + ".d1_1u");

  ExpectSameLoopNest(graph, lowered, imported.spec);
  ExpectRunsCorrectly(graph, imported.spec, ReferenceOutputs(graph));
}

TEST(ImportTest, StorageOrdersAreReadAndOtherStorageDirectivesListed) {
  const PipelineGraph graph = Mlp();
  LoweredPipeline lowered = MustLower(graph);
  const int mm = StageWithOp(graph, MATMUL);
  Func g = lowered.stages[mm].func;
  g.compute_root()
      .reorder_storage(lowered.stages[mm].pure_vars[1], lowered.stages[mm].pure_vars[0])
      .store_in(Halide::MemoryType::Heap);
  ImportedSchedule imported = MustImport(graph, lowered);
  const std::string matmul = graph.stage(mm).name();
  // reorder_storage(d0, d1) stores d0 innermost: the space's storage_innermost.
  ASSERT_EQ(imported.left_out.size(), 1u) << DescribeLeftOut(imported.left_out);
  EXPECT_EQ(DecisionOf(imported.spec, matmul).storage_innermost(), "d0");
  const std::vector<LeftOut> memory = LeftOutOf(imported, matmul, "store_in(Heap)");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_FALSE(memory[0].changes_loop_nest);
  EXPECT_TRUE(imported.exact_loop_nest());
  EXPECT_EQ(DecisionOf(imported.spec, matmul).compute(), ROOT);
  ExpectSameLoopNest(graph, lowered, imported.spec);
}

TEST(ImportTest, FusedLoopsAreListedAndUnfused) {
  const PipelineGraph graph = Mlp();
  LoweredPipeline lowered = MustLower(graph);
  const int out = StageWithOp(graph, UNARY);
  Var fused("fused");
  lowered.stages[out]
      .func.fuse(lowered.stages[out].pure_vars[0], lowered.stages[out].pure_vars[1], fused)
      .parallel(fused);
  ImportedSchedule imported = MustImport(graph, lowered);
  const std::string relu = graph.stage(out).name();
  const std::vector<LeftOut> fuse = LeftOutOf(imported, relu, "fuse(d1, d0, ");
  ASSERT_EQ(fuse.size(), 1u) << DescribeLeftOut(imported.left_out);
  EXPECT_NE(fuse[0].why.find("no fused loops"), std::string::npos) << fuse[0].why;
  EXPECT_TRUE(fuse[0].changes_loop_nest);
  EXPECT_FALSE(imported.exact_loop_nest());
  // Imported as its two loops, the outer one (d0, extent 32) parallel.
  const StageSchedule& r = DecisionOf(imported.spec, relu);
  EXPECT_EQ(Refs(r.pure().loop_order()), relu + ".d1_0 " + relu + ".d0_0");
  EXPECT_EQ(Refs(r.pure().parallel()), relu + ".d0_0");
}

TEST(ImportTest, SplitsBeyondTheSpaceLeaveTheDimUnsplit) {
  const PipelineGraph graph = Mlp();
  LoweredPipeline lowered = MustLower(graph);
  const int out = StageWithOp(graph, UNARY);
  Var o("o"), i("i"), io("io"), ii("ii");
  // The inner part (16) split by 3: extents 6 and 3 do not multiply to 16.
  lowered.stages[out].func.split(lowered.stages[out].pure_vars[0], o, i, 16).split(i, io, ii, 3);
  ImportedSchedule imported = MustImport(graph, lowered);
  const std::string relu = graph.stage(out).name();
  const std::vector<LeftOut> split = LeftOutOf(imported, relu, "split(d1.i, d1.i.io, d1.i.ii, 3");
  ASSERT_EQ(split.size(), 1u) << DescribeLeftOut(imported.left_out);
  EXPECT_NE(split[0].why.find("does not divide"), std::string::npos) << split[0].why;
  EXPECT_NE(split[0].why.find("dim d1 is imported unsplit"), std::string::npos) << split[0].why;
  EXPECT_TRUE(Factors(DecisionOf(imported.spec, relu).pure(), "d1").empty());
}

TEST(ImportTest, HelperFuncsOutsideTheSpaceAreNamed) {
  const PipelineGraph graph = ConvRelu();
  LoweredPipeline lowered = MustLower(graph);
  const int conv = StageWithOp(graph, CONV);
  // The boundary-condition Func behind the conv's padded input (which, computed at
  // root, would be its padded_copy).
  const Halide::Internal::Function padded = lowered.stages[conv].padded_input.function();
  std::string helper;
  for (const auto& [name, f] : Halide::Internal::find_direct_calls(padded)) {
    if (name.find("repeat_edge") != std::string::npos) helper = name;
  }
  ASSERT_FALSE(helper.empty());
  Func(Halide::Internal::find_direct_calls(padded).at(helper)).compute_root();
  ImportedSchedule imported = MustImport(graph, lowered);
  const std::vector<LeftOut> listed = LeftOutOf(imported, helper, "compute_root()");
  ASSERT_EQ(listed.size(), 1u) << DescribeLeftOut(imported.left_out);
  EXPECT_NE(listed[0].why.find("helper Func"), std::string::npos) << listed[0].why;
  EXPECT_NE(listed[0].why.find("read by the padded input of stage " + graph.stage(conv).name()),
            std::string::npos)
      << listed[0].why;
  EXPECT_FALSE(imported.exact_loop_nest());
}

TEST(ImportTest, RfactorIsListed) {
  const PipelineGraph graph = Mlp();
  LoweredPipeline lowered = MustLower(graph);
  const int mm = StageWithOp(graph, MATMUL);
  Func g = lowered.stages[mm].func;
  g.compute_root();
  RVar rk = lowered.stages[mm].reduction_vars[0];
  RVar rko("rko"), rki("rki");
  Var u("u");
  g.update(0).split(rk, rko, rki, 4);
  Func intermediate = g.update(0).rfactor(rki, u);
  intermediate.compute_root();
  ImportedSchedule imported = MustImport(graph, lowered);
  const std::string matmul = graph.stage(mm).name();
  const std::vector<LeftOut> rfactor = LeftOutOf(imported, matmul, "update(0).rfactor");
  ASSERT_EQ(rfactor.size(), 1u) << DescribeLeftOut(imported.left_out);
  EXPECT_NE(rfactor[0].why.find("intermediate Func"), std::string::npos) << rfactor[0].why;
  EXPECT_FALSE(LeftOutOf(imported, intermediate.name(), "compute_root()").empty())
      << DescribeLeftOut(imported.left_out);
  EXPECT_EQ(DecisionOf(imported.spec, matmul).compute(), ROOT);
}

TEST(ImportTest, DirectivesTheSpaceRejectsAreDroppedWithCheckReason) {
  const PipelineGraph graph = Mlp();
  LoweredPipeline lowered = MustLower(graph);
  const int mm = StageWithOp(graph, MATMUL), out = StageWithOp(graph, UNARY);
  Var o("o"), i("i");
  lowered.stages[out].func.split(lowered.stages[out].pure_vars[0], o, i, 4).unroll(i);
  // Halide accepts a producer inside an unrolled loop; the space does not.
  lowered.stages[mm].func.compute_at(lowered.stages[out].func, i);
  ImportedSchedule imported = MustImport(graph, lowered);
  const std::string matmul = graph.stage(mm).name(), relu = graph.stage(out).name();
  const std::vector<LeftOut> rejected = LeftOutOf(imported, matmul, "compute_at(" + relu);
  ASSERT_EQ(rejected.size(), 1u) << DescribeLeftOut(imported.left_out);
  EXPECT_EQ(rejected[0].why.rfind("rejected by the schedule space: ", 0), 0u) << rejected[0].why;
  EXPECT_NE(rejected[0].why.find("unrolled"), std::string::npos) << rejected[0].why;
  EXPECT_EQ(DecisionOf(imported.spec, matmul).compute(), ROOT);
  EXPECT_EQ(Refs(DecisionOf(imported.spec, relu).pure().unroll()), relu + ".d1_1");
}

TEST(ImportTest, ReorderedReductionLoopsKeepTheirSlotsInNaturalOrder) {
  const PipelineGraph graph = ConvRelu();
  LoweredPipeline lowered = MustLower(graph);
  const int conv = StageWithOp(graph, CONV);
  const LoweredStage& c = lowered.stages[conv];
  // Reduction vars innermost first: rk1, rk0, rc. Halide accepts rc innermost (the
  // update is an associative sum); the space keeps RVars in their natural order.
  std::vector<Halide::VarOrRVar> order = {c.reduction_vars[2], c.pure_vars[0], c.reduction_vars[0],
                                          c.reduction_vars[1]};
  for (size_t i = 1; i < c.pure_vars.size(); ++i) order.push_back(c.pure_vars[i]);
  Func(c.func).compute_root().update(0).reorder(order);
  ImportedSchedule imported = MustImport(graph, lowered);
  const std::string name = graph.stage(conv).name();
  const std::vector<LeftOut> reorder = LeftOutOf(imported, name, "update(0).reorder(rc, d3, rk1");
  ASSERT_EQ(reorder.size(), 1u) << DescribeLeftOut(imported.left_out);
  EXPECT_EQ(reorder[0].why.rfind("rejected by the schedule space: ", 0), 0u) << reorder[0].why;
  EXPECT_NE(reorder[0].why.find("natural order, in the slots they occupied"), std::string::npos)
      << reorder[0].why;
  const std::string p = name + ".";
  EXPECT_EQ(Refs(DecisionOf(imported.spec, name).update().loop_order()),
            p + "rk1_0u " + p + "d3_0u " + p + "rk0_0u " + p + "rc_0u " + p + "d2_0u " + p +
                "d1_0u " + p + "d0_0u");
}

// --- the space's own schedules, through Halide and back ---------------------------

TEST(ImportTest, RandomSchedulesOfTheSpaceRoundTrip) {
  for (const PipelineGraph& graph :
       {Mlp(), ConvRelu(), SmallZoo("mobilenetv2_inverted_residual")}) {
    const ScheduleSpace space(graph, Target());
    for (uint64_t seed = 1; seed <= 40; ++seed) {
      SCOPED_TRACE(graph.spec().name() + " seed " + std::to_string(seed));
      const ScheduleSpec spec = space.RandomSchedule(seed);
      LoweredPipeline lowered = MustLower(graph);
      const Status applied = ApplySchedule(graph, lowered, spec);
      ASSERT_TRUE(applied.ok()) << applied.ToString();
      const ImportedSchedule imported = MustImport(graph, lowered);
      EXPECT_TRUE(imported.left_out.empty()) << DescribeLeftOut(imported.left_out);
      EXPECT_EQ(CanonicalScheduleText(space, imported.spec), CanonicalScheduleText(space, spec));
    }
  }
}

// --- the autoschedulers' schedules -------------------------------------------------

TEST(ImportTest, AutoschedulerSchedulesImportAndRun) {
  AutoscheduleOptions options;
  options.threads = 2;
  options.beam_size = 1;
  std::map<std::string, int> exact;
  std::map<std::string, std::map<std::string, int>> kinds;
  for (const PipelineGraph& graph :
       {Mlp(), ConvRelu(), SmallZoo("squeezenet_fire"), SmallZoo("wavenet_residual")}) {
    const std::vector<HostTensor> reference = ReferenceOutputs(graph);
    for (const std::string& name : AutoschedulerNames()) {
      SCOPED_TRACE(graph.spec().name() + ", " + name);
      LoweredPipeline lowered = MustLower(graph);
      StatusOr<HalideAutoscheduleResult> scheduled = ApplyAutoscheduler(lowered, name, options);
      ASSERT_TRUE(scheduled.ok()) << scheduled.status().ToString();
      const ImportedSchedule imported = MustImport(graph, lowered);
      for (const LeftOut& l : imported.left_out) {
        ++kinds[name][l.directive.substr(0, l.directive.find('('))];
      }
      if (imported.exact_loop_nest()) {
        ++exact[name];
        ExpectSameLoopNest(graph, lowered, imported.spec);
      }
      // Exact or not, the imported schedule is a valid schedule of the pipeline.
      ExpectRunsCorrectly(graph, imported.spec, reference);
    }
  }
  for (const std::string& name : AutoschedulerNames()) {
    std::cout << name << ": " << exact[name] << " of 4 imports with the exact loop nest\n";
  }
  // Li2018 fuses every pure loop nest of a stage computed at root.
  EXPECT_GT(kinds["li2018"]["fuse"], 0);
  // Mullapudi2016's tiles, vectorization and parallel loops fit the space on the
  // pipelines without boundary conditions.
  EXPECT_GT(exact["mullapudi2016"], 0);
}

}  // namespace
}  // namespace schedfarm
