// Tests of the Halide-free schedule space: legality of everything it produces,
// counting against enumeration, uniform sampling, determinism, canonical hashes,
// Check's error classes and the loops of scheduled definitions.
#include "scheduler/schedule_space.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "pipeline/builder.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/zoo.h"
#include "scheduler/templates.h"

namespace schedfarm {
namespace {

// A graph and its space (the space refers to the graph).
struct Fixture {
  std::unique_ptr<PipelineGraph> graph;
  std::unique_ptr<ScheduleSpace> space;
  const ScheduleSpace& operator*() const { return *space; }
  const ScheduleSpace* operator->() const { return space.get(); }
};

Fixture Make(const PipelineSpec& spec, const TargetParams& target = {}) {
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
  EXPECT_TRUE(graph.ok()) << graph.status().ToString();
  Fixture f;
  f.graph = std::make_unique<PipelineGraph>(std::move(graph).value());
  f.space = std::make_unique<ScheduleSpace>(*f.graph, target);
  return f;
}

int StageIndex(const ScheduleSpace& space, const std::string& name) {
  const int v = space.graph().FindValue(name);
  EXPECT_GE(v, 0) << name;
  return space.graph().value(v).index;
}

ScheduleSpec With(const ScheduleSpec& partial, const StageSchedule& option) {
  ScheduleSpec spec = partial;
  *spec.add_stages() = option;
  return spec;
}

LoopRef Ref(const std::string& stage, const std::string& dim, int level, bool update = false) {
  return MakeLoopRef(stage, dim, level, update);
}

// x [8, 12] -> a = relu(x) -> out = exp(a).
struct Chain {
  PipelineSpec spec;
  std::string a, out;
};
Chain ChainPipeline(int64_t rows = 8, int64_t cols = 12) {
  PipelineBuilder b("chain");
  Chain c;
  const std::string x = b.Input("x", {rows, cols});
  c.a = b.Relu(x);
  c.out = b.Exp(c.a);
  b.Output(c.out);
  c.spec = b.Finish().value();
  return c;
}

// x [1, 4, 10, 10] -> act = relu(x) -> conv 3x3, 8 channels, pad 1, bias -> out = relu.
struct ConvChain {
  PipelineSpec spec;
  std::string act, conv, out;
};
ConvChain ConvPipeline() {
  PipelineBuilder b("conv_chain");
  ConvChain c;
  const std::string x = b.Input("x", {1, 4, 10, 10});
  c.act = b.Relu(x);
  c.conv = b.Conv2d(c.act, 8, 3, 1, 1);
  c.out = b.Relu(c.conv);
  b.Output(c.out);
  c.spec = b.Finish().value();
  return c;
}

// x [6, 20] -> a = exp(x) -> (b = relu(a), c = neg(a)) -> out = b + c.
struct Diamond {
  PipelineSpec spec;
  std::string a, b, c, out;
};
Diamond DiamondPipeline() {
  PipelineBuilder bl("diamond");
  Diamond d;
  const std::string x = bl.Input("x", {6, 20});
  d.a = bl.Exp(x);
  d.b = bl.Relu(d.a);
  d.c = bl.Unary(NEG, d.a);
  d.out = bl.Add(d.b, d.c);
  bl.Output(d.out);
  d.spec = bl.Finish().value();
  return d;
}

// a [5, 24] x w [24, 16] + c, with c = relu(y [5, 16]) a stage read by the pure
// definition of the matmul; then a row sum.
struct Gemm {
  PipelineSpec spec;
  std::string c, mm, sum;
};
Gemm GemmPipeline() {
  PipelineBuilder b("gemm");
  Gemm g;
  const std::string a = b.Input("a", {5, 24});
  const std::string y = b.Input("y", {5, 16});
  const std::string w = b.RandomParameter("w", {24, 16}, 0.1);
  g.c = b.Relu(y);
  g.mm = b.Gemm(a, w, g.c, 1.0, 1.0, false, false);
  g.sum = b.Reduce(SUM, g.mm, {1}, true);
  b.Output(g.sum);
  g.spec = b.Finish().value();
  return g;
}

std::vector<std::string> ZooBlocks() { return ZooNames(); }

Fixture ZooSpace(const std::string& name) {
  StatusOr<PipelineSpec> spec = MakeZooBlock(name);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return Make(spec.value());
}

std::vector<PipelineSpec> RandomPipelines(int count, const RandomPipelineOptions& options) {
  std::vector<PipelineSpec> out;
  for (uint64_t seed = 1; static_cast<int>(out.size()) < count; ++seed) {
    StatusOr<PipelineSpec> spec = RandomPipeline(seed, options);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (spec.ok()) out.push_back(std::move(spec).value());
  }
  return out;
}

// Walks a random schedule: at every step, `visit(partial, count)` before the decision.
void Walk(const ScheduleSpace& space, uint64_t seed,
          const std::function<void(const ScheduleSpec&, int64_t)>& visit) {
  SpaceRng rng(seed);
  ScheduleSpec partial = space.Empty();
  while (space.NextStage(partial) >= 0) {
    visit(partial, space.CountOptions(partial));
    *partial.add_stages() = space.SampleOption(partial, rng);
  }
}

// ---------------------------------------------------------------------------------
// Legality of what the space produces

TEST(ScheduleSpaceTest, RandomSchedulesOfZooBlocksPassCheck) {
  for (const std::string& name : ZooBlocks()) {
    Fixture f = ZooSpace(name);
    for (uint64_t seed = 0; seed < 20; ++seed) {
      const ScheduleSpec spec = f->RandomSchedule(seed);
      ASSERT_FALSE(spec.partial());
      ASSERT_EQ(spec.stages_size(), f.graph->num_stages());
      const Status status = f->Check(spec);
      ASSERT_TRUE(status.ok()) << name << " seed " << seed << ": " << status.ToString();
    }
  }
}

TEST(ScheduleSpaceTest, RandomSchedulesOfRandomPipelinesPassCheck) {
  RandomPipelineOptions options;
  options.max_ops = 12;
  for (const PipelineSpec& spec : RandomPipelines(50, options)) {
    Fixture f = Make(spec);
    for (uint64_t seed = 0; seed < 10; ++seed) {
      const ScheduleSpec s = f->RandomSchedule(seed);
      const Status status = f->Check(s);
      ASSERT_TRUE(status.ok()) << spec.source() << " seed " << seed << ": " << status.ToString();
    }
  }
}

TEST(ScheduleSpaceTest, SampledOptionsAndPrefixesPassCheck) {
  std::vector<Fixture> spaces;
  for (const std::string& name : ZooBlocks()) spaces.push_back(ZooSpace(name));
  for (const Fixture& f : spaces) {
    SpaceRng rng(7);
    Walk(*f, 3, [&](const ScheduleSpec& partial, int64_t count) {
      ASSERT_GT(count, 0);
      ASSERT_TRUE(f->Check(partial).ok()) << f->Check(partial).ToString();
      for (int i = 0; i < 5; ++i) {
        const ScheduleSpec next = With(partial, f->SampleOption(partial, rng));
        const Status status = f->Check(next);
        ASSERT_TRUE(status.ok()) << status.ToString();
      }
    });
  }
}

// Enumerates every option of every step of random walks on small pipelines: the
// count matches CountOptions, every option passes Check and the options' schedule
// hashes are distinct.
void ExpectEnumerationMatchesCount(const ScheduleSpace& space, uint64_t seed, int64_t max_count,
                                   int* checked) {
  Walk(space, seed, [&](const ScheduleSpec& partial, int64_t count) {
    if (count > max_count) return;
    int64_t enumerated = 0;
    std::set<std::string> hashes;
    space.ForEachOption(partial, [&](const StageSchedule& option) {
      ++enumerated;
      const ScheduleSpec next = With(partial, option);
      const Status status = space.Check(next);
      EXPECT_TRUE(status.ok()) << status.ToString();
      hashes.insert(ScheduleHash(space, next));
      return status.ok();
    });
    const int stage = space.NextStage(partial);
    ASSERT_EQ(enumerated, count) << "stage " << space.graph().stage(stage).name();
    ASSERT_EQ(static_cast<int64_t>(hashes.size()), count)
        << "stage " << space.graph().stage(stage).name();
    ++*checked;
  });
}

TEST(ScheduleSpaceTest, EnumerationMatchesCountOnSmallPipelines) {
  int checked = 0;
  ExpectEnumerationMatchesCount(*Make(ChainPipeline().spec), 1, 50000, &checked);
  ExpectEnumerationMatchesCount(*Make(ConvPipeline().spec), 2, 50000, &checked);
  ExpectEnumerationMatchesCount(*Make(DiamondPipeline().spec), 3, 50000, &checked);
  ExpectEnumerationMatchesCount(*Make(GemmPipeline().spec), 4, 50000, &checked);
  RandomPipelineOptions options;
  options.max_ops = 5;
  options.max_elements = 400;
  options.max_rank = 3;
  int seed = 10;
  for (const PipelineSpec& spec : RandomPipelines(25, options)) {
    ExpectEnumerationMatchesCount(*Make(spec), seed++, 20000, &checked);
  }
  EXPECT_GT(checked, 60);
}

TEST(ScheduleSpaceTest, CountsOfEveryStageDecisionMatchEnumerationWithOtherTargets) {
  // AVX-512 and f64 change the lanes and with them the vectorize options.
  TargetParams avx512;
  avx512.vector_bytes = 64;
  int checked = 0;
  ExpectEnumerationMatchesCount(*Make(ConvPipeline().spec, avx512), 5, 50000, &checked);
  ExpectEnumerationMatchesCount(*Make(GemmPipeline().spec, avx512), 7, 50000, &checked);
  PipelineBuilder b("f64", FLOAT64);
  const std::string x = b.Input("x", {3, 16, 24});
  b.Output(b.Reduce(REDUCE_MAX, b.Relu(x), {2}, false));
  ExpectEnumerationMatchesCount(*Make(b.Finish().value()), 6, 50000, &checked);
  EXPECT_GE(checked, 6);
}

// The per-definition counts (computed without enumerating) against enumeration, stage
// by stage: the ROOT options, then all options (the AT loops with their windows). The
// pipelines cover no pure dim of extent > 1, one, several, and reduction
// blocks of one and several loops.
TEST(ScheduleSpaceTest, DefinitionCountsMatchEnumeration) {
  std::vector<PipelineSpec> specs;
  {
    PipelineBuilder b("rank1");
    const std::string x = b.Input("x", {100});
    b.Output(b.Unary(NEG, b.Relu(x)));
    specs.push_back(b.Finish().value());
  }
  {
    PipelineBuilder b("reduce_rows");
    const std::string x = b.Input("x", {50, 30});
    b.Output(b.Relu(b.Reduce(SUM, b.Exp(x), {0}, false)));
    specs.push_back(b.Finish().value());
  }
  {
    PipelineBuilder b("reduce_all");
    const std::string x = b.Input("x", {20, 70});
    b.Output(b.Reduce(SUM_SQUARE, b.Relu(x), {0, 1}, false));
    specs.push_back(b.Finish().value());
  }
  {
    PipelineBuilder b("matvec");
    const std::string a = b.Input("a", {1, 40});
    const std::string w = b.RandomParameter("w", {40, 1}, 0.1);
    b.Output(b.MatMul(b.Relu(a), w));
    specs.push_back(b.Finish().value());
  }
  {
    PipelineBuilder b("pool");
    const std::string x = b.Input("x", {1, 3, 9, 40});
    b.Output(b.Relu(b.MaxPool2d(b.Relu(x), 3, 1, 1)));
    specs.push_back(b.Finish().value());
  }
  specs.push_back(GemmPipeline().spec);
  int compared = 0;
  for (const PipelineSpec& spec : specs) {
    Fixture f = Make(spec);
    ScheduleSpec partial = f->Empty();
    for (int stage : f->decision_order()) {
      // Each AT loop has its own count (its window cuts splits): the enumeration of
      // all of them is compared with CountOptions.
      int64_t inlined = 0, root = 0, at = 0;
      f->ForEachOption(partial, [&](const StageSchedule& o) {
        if (o.compute() == INLINE) ++inlined;
        if (o.compute() == ROOT) ++root;
        if (o.compute() == AT) ++at;
        return at <= 400000;
      });
      EXPECT_EQ(root, f->DefinitionOptions(stage, true))
          << spec.name() << " " << f.graph->stage(stage).name();
      if (at > 0 && at <= 400000) {
        EXPECT_EQ(inlined + root + at, f->CountOptions(partial))
            << spec.name() << " " << f.graph->stage(stage).name();
        ++compared;
      }
      StageSchedule s;
      s.set_stage(f.graph->stage(stage).name());
      s.set_compute(f->InlineLegal(stage) ? INLINE : ROOT);
      *partial.add_stages() = s;
    }
  }
  EXPECT_GE(compared, 3);
}

// ---------------------------------------------------------------------------------
// Sampling

TEST(ScheduleSpaceTest, RandomScheduleIsDeterministicBySeed) {
  Fixture f = ZooSpace("resnet18_basic");
  for (uint64_t seed : {0u, 1u, 99u}) {
    const ScheduleSpec a = f->RandomSchedule(seed);
    const ScheduleSpec b = f->RandomSchedule(seed);
    EXPECT_EQ(a.SerializeAsString(), b.SerializeAsString());
    EXPECT_EQ(ScheduleHash(*f, a), ScheduleHash(*f, b));
  }
  std::set<std::string> hashes;
  for (uint64_t seed = 0; seed < 20; ++seed)
    hashes.insert(ScheduleHash(*f, f->RandomSchedule(seed)));
  EXPECT_EQ(hashes.size(), 20u);
  // A completion keeps the prefix it was given.
  const ScheduleSpec full = f->RandomSchedule(5);
  ScheduleSpec prefix = f->Empty();
  for (int i = 0; i < 3; ++i) *prefix.add_stages() = full.stages(i);
  const ScheduleSpec completed = f->RandomCompletion(prefix, 11);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(completed.stages(i).SerializeAsString(), full.stages(i).SerializeAsString());
  }
  EXPECT_TRUE(f->Check(completed).ok());
}

// Samples `per_option` times the number of options of the next stage of `partial` and
// compares the counts of each option with a chi-square statistic.
void ExpectUniform(const ScheduleSpace& space, const ScheduleSpec& partial, uint64_t seed) {
  std::map<std::string, int> index;
  space.ForEachOption(partial, [&](const StageSchedule& option) {
    index.emplace(option.SerializeAsString(), static_cast<int>(index.size()));
    return true;
  });
  const int n = static_cast<int>(index.size());
  ASSERT_EQ(n, space.CountOptions(partial));
  ASSERT_GT(n, 50);
  const int per_option = 60;
  std::vector<int> counts(n, 0);
  SpaceRng rng(seed);
  for (int i = 0; i < n * per_option; ++i) {
    auto it = index.find(space.SampleOption(partial, rng).SerializeAsString());
    ASSERT_NE(it, index.end());
    ++counts[it->second];
  }
  double chi2 = 0;
  for (int k : counts) {
    chi2 += (k - per_option) * (k - per_option) / static_cast<double>(per_option);
  }
  const double dof = n - 1;
  std::printf("uniformity: %d options, %d samples, chi2 %.1f (dof %.0f)\n", n, n * per_option, chi2,
              dof);
  // Far in the tails of chi-square(dof) (mean dof, sd sqrt(2 dof)).
  EXPECT_LT(chi2, dof + 6 * std::sqrt(2 * dof));
  EXPECT_GT(chi2, dof - 6 * std::sqrt(2 * dof));
}

TEST(ScheduleSpaceTest, SampleOptionIsUniform) {
  const Chain c = ChainPipeline();
  Fixture f = Make(c.spec);
  // The second decision (stage a) has INLINE, ROOT and AT options of different weights.
  SpaceRng walk(3);
  ScheduleSpec partial = f->Empty();
  *partial.add_stages() = f->SampleOption(partial, walk);
  ASSERT_EQ(f->NextStage(partial), StageIndex(*f, c.a));
  ExpectUniform(*f, partial, 42);
  // A reduction: restricted pure definition, update with a reduction block.
  PipelineBuilder b("row_sum");
  const std::string x = b.Input("x", {6, 40});
  b.Output(b.Reduce(SUM, b.Exp(x), {1}, true));
  Fixture r = Make(b.Finish().value());
  ExpectUniform(*r, r->Empty(), 43);
}

// ---------------------------------------------------------------------------------
// The options themselves

TEST(ScheduleSpaceTest, LocationOptionsFollowTheHostRules) {
  const ConvChain c = ConvPipeline();
  Fixture f = Make(c.spec);
  // Decision order: out, conv, act.
  ASSERT_EQ(f->decision_order()[0], StageIndex(*f, c.out));
  ASSERT_EQ(f->decision_order()[1], StageIndex(*f, c.conv));
  ASSERT_EQ(f->decision_order()[2], StageIndex(*f, c.act));
  ScheduleSpec partial = f->Empty();
  // out: an output, ROOT only.
  f->ForEachOption(partial, [&](const StageSchedule& o) {
    EXPECT_EQ(o.compute(), ROOT);
    return true;
  });
  // conv: has an update, so never INLINE; AT loops of out's pure definition.
  partial = With(partial, [&] {
    StageSchedule s;
    s.set_stage(c.out);
    s.set_compute(ROOT);
    return s;
  }());
  std::set<std::string> at_loops;
  f->ForEachOption(partial, [&](const StageSchedule& o) {
    EXPECT_NE(o.compute(), INLINE);
    if (o.compute() == AT) {
      EXPECT_EQ(o.compute_at().stage(), c.out);
      EXPECT_FALSE(o.compute_at().update());
      at_loops.insert(o.compute_at().dim());
    }
    // The pure definition of conv is restricted: at most a split by the lanes.
    EXPECT_LE(o.pure().splits_size(), 1);
    EXPECT_EQ(o.pure().unroll_size(), 0);
    if (o.compute() != ROOT) {
      EXPECT_EQ(o.update().parallel_size(), 0);
    }
    return true;
  });
  // out [1, 8, 10, 10] unsplit: d3, d2, d1 have extent > 1; d0 (batch) does not.
  EXPECT_EQ(at_loops, (std::set<std::string>{"d1", "d2", "d3"}));

  // act is read by conv's update: AT options are loops of conv's update, none inside
  // its output channels' loop (d1: each reads every input channel, rule 10), which by
  // default encloses every loop of extent > 1.
  for (bool channels_inner : {false, true}) {
    StageSchedule conv;
    conv.set_stage(c.conv);
    conv.set_compute(ROOT);
    if (channels_inner) {
      for (const char* dim : {"d1", "rk1", "rk0", "rc", "d3", "d2", "d0"}) {
        *conv.mutable_update()->add_loop_order() = Ref(c.conv, dim, 0, /*update=*/true);
      }
    }
    const ScheduleSpec decided = With(partial, conv);
    ASSERT_TRUE(f->Check(decided).ok()) << f->Check(decided).ToString();
    bool saw_at = false, saw_inline = false;
    f->ForEachOption(decided, [&](const StageSchedule& o) {
      if (o.compute() == INLINE) saw_inline = true;
      if (o.compute() == AT) {
        saw_at = true;
        EXPECT_EQ(o.compute_at().stage(), c.conv);
        EXPECT_TRUE(o.compute_at().update());
        EXPECT_NE(o.compute_at().dim(), "d1");
      }
      return true;
    });
    EXPECT_EQ(saw_at, channels_inner);
    EXPECT_TRUE(saw_inline);
  }
}

TEST(ScheduleSpaceTest, StageReadBySeveralHostsHasNoAtOption) {
  const Diamond d = DiamondPipeline();
  Fixture f = Make(d.spec);
  // Decisions: out, then b and c (some order), then a.
  ScheduleSpec roots = f->Empty();
  ScheduleSpec inlined = f->Empty();
  for (int i = 0; i < 3; ++i) {
    const std::string name = f.graph->stage(f->decision_order()[i]).name();
    StageSchedule s;
    s.set_stage(name);
    s.set_compute(ROOT);
    *roots.add_stages() = s;
    s.set_compute(name == d.out ? ROOT : INLINE);
    *inlined.add_stages() = s;
  }
  ASSERT_EQ(f->NextStage(roots), StageIndex(*f, d.a));
  // b and c ROOT: two hosts, no AT.
  EXPECT_EQ(f->CountOptions(roots), 1 + f->DefinitionOptions(StageIndex(*f, d.a), true));
  // b and c inlined into out: one host, AT options on out's loops.
  EXPECT_GT(f->CountOptions(inlined), f->CountOptions(roots));
  bool saw_at = false;
  f->ForEachOption(inlined, [&](const StageSchedule& o) {
    if (o.compute() == AT) {
      saw_at = true;
      EXPECT_EQ(o.compute_at().stage(), d.out);
    }
    return true;
  });
  EXPECT_TRUE(saw_at);
}

TEST(ScheduleSpaceTest, StorageIsTheComputeLocation) {
  const Chain c = ChainPipeline(16, 32);
  Fixture f = Make(c.spec);
  StageSchedule out;
  out.set_stage(c.out);
  out.set_compute(ROOT);
  // out: d1 (32) split by 8 -> d1_1 (8), d1_0 (4); order d1_1, d1_0, d0.
  DimSplit* split = out.mutable_pure()->add_splits();
  split->set_dim("d1");
  split->add_factors(8);
  ScheduleSpec partial = With(f->Empty(), out);
  ASSERT_TRUE(f->Check(partial).ok()) << f->Check(partial).ToString();
  std::set<std::string> compute_loops;
  StageSchedule at_option;
  f->ForEachOption(partial, [&](const StageSchedule& o) {
    if (o.compute() != AT) return true;
    EXPECT_EQ(o.store(), COMPUTE_LOCATION_UNSPECIFIED);
    compute_loops.insert(o.compute_at().dim() + "_" + std::to_string(o.compute_at().level()));
    at_option = o;
    return true;
  });
  EXPECT_EQ(compute_loops, (std::set<std::string>{"d1_1", "d1_0", "d0_0"}));

  // Storing at the compute loop is the same schedule; storing outside it is refused.
  ScheduleSpec at_compute = With(partial, at_option);
  at_compute.mutable_stages(1)->set_store(AT);
  *at_compute.mutable_stages(1)->mutable_store_at() = at_option.compute_at();
  EXPECT_TRUE(f->Check(at_compute).ok()) << f->Check(at_compute).ToString();
  EXPECT_EQ(ScheduleHash(*f, at_compute), ScheduleHash(*f, With(partial, at_option)));
  ScheduleSpec at_root = With(partial, at_option);
  at_root.mutable_stages(1)->set_store(ROOT);
  const Status refused = f->Check(at_root);
  EXPECT_NE(refused.message().find("store: storage outside the compute loop is not part of the "
                                   "space"),
            std::string::npos)
      << refused.ToString();
}

// At a consumer loop, a stage's level-0 pure loops span a region whose extent Halide
// may not know as a constant: only inner split levels are vectorized or unrolled.
TEST(ScheduleSpaceTest, AtAConsumerLoopOnlyInnerLevelsAreVectorizedOrUnrolled) {
  const Chain c = ChainPipeline(16, 32);
  Fixture f = Make(c.spec);
  StageSchedule out;
  out.set_stage(c.out);
  out.set_compute(ROOT);
  const ScheduleSpec partial = With(f->Empty(), out);
  int at_options = 0;
  f->ForEachOption(partial, [&](const StageSchedule& o) {
    if (o.compute() != AT) return true;
    ++at_options;
    for (const LoopRef& r : o.pure().unroll()) EXPECT_GT(r.level(), 0) << o.DebugString();
    if (o.pure().has_vectorize()) {
      EXPECT_GT(o.pure().vectorize().level(), 0) << o.DebugString();
    }
    return true;
  });
  EXPECT_GT(at_options, 0);

  StageSchedule a;
  a.set_stage(c.a);
  a.set_compute(AT);
  // At out's d0 loop, inside which out's d1 loop spans all 32 points of d1.
  *a.mutable_compute_at() = Ref(c.out, "d0", 0);
  auto check = [&](const std::function<void(DefinitionSchedule&)>& edit) {
    StageSchedule d = a;
    edit(*d.mutable_pure());
    return f->Check(With(partial, d));
  };
  const Status whole = check([&](DefinitionSchedule& p) {
    *p.mutable_vectorize() = Ref(c.a, "d1", 0);
    p.set_vector_width(32);
  });
  EXPECT_NE(whole.message().find("pure.vectorize: loop 'd1' of a stage computed at a consumer "
                                 "loop"),
            std::string::npos)
      << whole.ToString();
  const Status unrolled =
      check([&](DefinitionSchedule& p) { *p.add_unroll() = Ref(c.a, "d0", 0); });
  EXPECT_NE(unrolled.message().find("pure.unroll: loop 'd0'"), std::string::npos)
      << unrolled.ToString();
  const Status inner = check([&](DefinitionSchedule& p) {
    DimSplit* split = p.add_splits();
    split->set_dim("d1");
    split->add_factors(8);
    *p.mutable_vectorize() = Ref(c.a, "d1", 1);
    p.set_vector_width(8);
  });
  EXPECT_TRUE(inner.ok()) << inner.ToString();
}

// x [1, 4, 10, 10] -> p = exp(x) -> g = relu(p) -> h = neg(g) -> conv 3x3 (pad `pad`)
// -> out = relu. Decision order: out, conv, h, g, p.
struct PaddedChain {
  PipelineSpec spec;
  std::string p, g, h, conv, out;
};
PaddedChain PaddedChainPipeline(int64_t pad) {
  PipelineBuilder b("padded_chain");
  PaddedChain c;
  const std::string x = b.Input("x", {1, 4, 10, 10});
  c.p = b.Exp(x);
  c.g = b.Relu(c.p);
  c.h = b.Unary(NEG, c.g);
  c.conv = b.Conv2d(c.h, 8, 3, 1, pad);
  c.out = b.Relu(c.conv);
  b.Output(c.out);
  c.spec = b.Finish().value();
  return c;
}

// Rule 5 of docs/SCHEDULES.md: a stage its host reads pointwise (or through a pad, a
// broadcast...) computes, at a loop of the host, at most the span of the host's loops
// inside that loop; none of its splits is larger than that window.
TEST(ScheduleSpaceTest, SplitsFitTheWindowOfTheComputeLocation) {
  PipelineBuilder b("windows");
  const std::string x = b.Input("x", {16, 64});
  const std::string a = b.Relu(x);
  const std::string m = b.Unary(NEG, a);
  const std::string out = b.Exp(m);
  b.Output(out);
  Fixture f = Make(b.Finish().value());
  auto stage = [](const std::string& name, const std::string& split_d1,
                  std::vector<int64_t> factors) {
    StageSchedule s;
    s.set_stage(name);
    s.set_compute(ROOT);
    if (!factors.empty()) {
      DimSplit* split = s.mutable_pure()->add_splits();
      split->set_dim(split_d1);
      for (int64_t factor : factors) split->add_factors(factor);
    }
    return s;
  };
  auto at = [&](const std::string& name, const std::string& host, const std::string& dim, int level,
                std::vector<int64_t> d1_factors) {
    StageSchedule s = stage(name, "d1", std::move(d1_factors));
    s.set_compute(AT);
    *s.mutable_compute_at() = Ref(host, dim, level);
    return s;
  };
  // out splits d1 by 4: its loops, innermost first, d1_1 (4), d1_0 (16), d0 (16).
  const ScheduleSpec decided = With(f->Empty(), stage(out, "d1", {4}));

  // m at out's d1_1 covers 1 point, at d1_0 4 points of d1, at d0 the whole d1 (and
  // always 1 point of d0): its options split d1 by at most 1, 4 and 32 (the space's
  // largest split of 64), and never d0.
  std::map<std::string, int64_t> largest_split;  // by compute loop
  f->ForEachOption(decided, [&](const StageSchedule& o) {
    if (o.compute() != AT) return true;
    const std::string loop = o.compute_at().dim() + "_" + std::to_string(o.compute_at().level());
    int64_t& largest = largest_split[loop];
    largest = std::max<int64_t>(largest, 1);
    for (const DimSplit& split : o.pure().splits()) {
      EXPECT_EQ(split.dim(), "d1") << o.DebugString();
      int64_t product = 1;
      for (int64_t factor : split.factors()) product *= factor;
      largest = std::max(largest, product);
    }
    return true;
  });
  EXPECT_EQ(largest_split,
            (std::map<std::string, int64_t>{{"d1_1", 1}, {"d1_0", 4}, {"d0_0", 32}}));
  EXPECT_EQ(f->Check(With(decided, at(m, out, "d1", 0, {2, 2}))).ToString(), "OK");
  const ScheduleSpec too_large = With(decided, at(m, out, "d1", 0, {8}));
  const Status refused = f->Check(too_large);
  EXPECT_EQ(refused.message(),
            "stage '" + m + "': pure.splits: dim 'd1' split by 8 at " + out +
                ".d1_0, which gives this stage a window of 4 along it: a split larger than "
                "the window only makes a loop of extent 1 and a partly false guard, and "
                "Halide 14 mislowers some of them; split 'd1' by at most 4");
  // Measured before the rule, such a schedule is featurized.
  EXPECT_TRUE(f->CheckMeasured(too_large).ok());

  // Nested: m at out's d1_0 with d1 split by [2, 2] (loops d1_2, d1_1, d1_0, d0); a at
  // m's d0 has m's d1_0 inside, so its window along d1 is m's own window, 4.
  const ScheduleSpec nested = With(decided, at(m, out, "d1", 0, {2, 2}));
  EXPECT_TRUE(f->Check(With(nested, at(a, m, "d0", 0, {4}))).ok());
  EXPECT_NE(f->Check(With(nested, at(a, m, "d0", 0, {8}))).message().find("window of 4"),
            std::string::npos);
  // At m's d1_1, a covers m's d1_2 only: 2 points.
  EXPECT_NE(f->Check(With(nested, at(a, m, "d1", 1, {4}))).message().find("window of 2"),
            std::string::npos);

  // Through a pad (inlined) the window is the same: a pad reads at most w points of
  // its input for w points of its own.
  PipelineBuilder pb("padded");
  const std::string px = pb.Input("x", {16, 64});
  const std::string pa = pb.Relu(px);
  const std::string pp = pb.Pad(pa, {0, 2, 0, 2});
  const std::string pout = pb.Exp(pp);
  pb.Output(pout);
  Fixture pf = Make(pb.Finish().value());
  StageSchedule inlined;
  inlined.set_stage(pp);
  inlined.set_compute(INLINE);
  const ScheduleSpec padded = With(With(pf->Empty(), stage(pout, "d1", {4})), inlined);
  EXPECT_TRUE(pf->Check(With(padded, at(pa, pout, "d1", 0, {4}))).ok());
  EXPECT_NE(pf->Check(With(padded, at(pa, pout, "d1", 0, {8}))).message().find("window of 4"),
            std::string::npos);

  // A host that reads the stage through a transpose leaves its window unbounded: the
  // stage at the host's innermost loop may split by up to its extent.
  PipelineBuilder tb("transposed");
  const std::string tx = tb.Input("x", {16, 64});
  const std::string ta = tb.Relu(tx);
  const std::string tout = tb.Transpose(ta, {1, 0});
  tb.Output(tout);
  Fixture tf = Make(tb.Finish().value());
  EXPECT_TRUE(
      tf->Check(With(With(tf->Empty(), stage(tout, "d1", {})), at(ta, tout, "d1", 0, {32}))).ok());
}

// Rule 6 of docs/SCHEDULES.md: at most 3 splits along a dim, counting those of the
// hosts whose tiles the stage's region lies in, where one of them has a tail.
TEST(ScheduleSpaceTest, NoMoreThanThreeNestedSplitsWithATail) {
  auto split_d0 = [](StageSchedule* s) {
    DimSplit* split = s->mutable_pure()->add_splits();
    split->set_dim("d0");
    split->add_factors(2);
    split->add_factors(2);
  };
  for (const int64_t rows : {9, 8}) {
    SCOPED_TRACE(rows);
    PipelineBuilder b("nested");
    const std::string x = b.Input("x", {rows, 64});
    const std::string a = b.Relu(x);
    const std::string out = b.Exp(a);
    b.Output(out);
    Fixture f = Make(b.Finish().value());
    // out splits its rows by [2, 2]: at its d0_0 loop (d1, d0_2 and d0_1 inside), a
    // computes 4 rows inside tiles of 2 splits, with a tail when there are 9 rows.
    StageSchedule o;
    o.set_stage(out);
    o.set_compute(ROOT);
    split_d0(&o);
    const ScheduleSpec decided = With(f->Empty(), o);
    std::set<int> splits_of_d0;
    f->ForEachOption(decided, [&](const StageSchedule& s) {
      if (s.compute() != AT || s.compute_at().dim() != "d0" || s.compute_at().level() != 0) {
        return true;
      }
      int splits = 0;
      for (const DimSplit& split : s.pure().splits()) {
        if (split.dim() == "d0") splits = split.factors_size();
      }
      splits_of_d0.insert(splits);
      return true;
    });
    StageSchedule at;
    at.set_stage(a);
    at.set_compute(AT);
    *at.mutable_compute_at() = Ref(out, "d0", 0);
    split_d0(&at);
    const Status twice = f->Check(With(decided, at));
    if (rows == 9) {
      EXPECT_EQ(splits_of_d0, (std::set<int>{0, 1}));
      EXPECT_EQ(twice.message(),
                "stage '" + a + "': pure.splits: dim 'd0' split twice at " + out +
                    ".d0_0, inside tiles of 2 splits of its hosts along it, one with a tail: "
                    "Halide 14 bounds regions inside more than 3 nested splits with tails "
                    "beyond the pipeline's inputs; split 'd0' at most once here");
      EXPECT_TRUE(f->CheckMeasured(With(decided, at)).ok());
    } else {
      EXPECT_EQ(splits_of_d0, (std::set<int>{0, 1, 2}));
      EXPECT_TRUE(twice.ok()) << twice.ToString();
    }
  }
}

// Rule 7 of docs/SCHEDULES.md: a stage that is not an output and loads with a stride
// (here a step-2 slice) unrolls nothing when it vectorizes a split level.
TEST(ScheduleSpaceTest, NoUnrollWithAVectorizedStridedTail) {
  PipelineBuilder b("strided");
  const std::string x = b.Input("x", {8, 256});
  const std::string a = b.Relu(x);
  const std::string s = b.Slice(a, 1, 0, 256, 2);
  const std::string out = b.Exp(s);
  b.Output(out);
  Fixture f = Make(b.Finish().value());
  // Root options that vectorize a split level, and those of them that also unroll.
  auto count = [&](const ScheduleSpec& partial) {
    std::pair<int, int> n{0, 0};
    f->ForEachOption(partial, [&](const StageSchedule& o) {
      if (o.compute() != ROOT || !o.pure().has_vectorize() || o.pure().vectorize().level() == 0) {
        return true;
      }
      ++n.first;
      if (o.pure().unroll_size() > 0) ++n.second;
      return true;
    });
    return n;
  };
  // The output (shifted tails, no predicated loads) may unroll with it; s may not.
  const std::pair<int, int> of_out = count(f->Empty());
  EXPECT_GT(of_out.second, 0);
  StageSchedule o;
  o.set_stage(out);
  o.set_compute(ROOT);
  const ScheduleSpec decided = With(f->Empty(), o);
  const std::pair<int, int> of_s = count(decided);
  EXPECT_GT(of_s.first, 0);
  EXPECT_EQ(of_s.second, 0);

  StageSchedule unrolled;
  unrolled.set_stage(s);
  unrolled.set_compute(ROOT);
  DefinitionSchedule* pure = unrolled.mutable_pure();
  DimSplit* split = pure->add_splits();
  split->set_dim("d1");
  split->add_factors(8);
  *pure->mutable_vectorize() = Ref(s, "d1", 1);
  pure->set_vector_width(8);
  *pure->add_unroll() = Ref(s, "d1", 0);
  const Status refused = f->Check(With(decided, unrolled));
  EXPECT_EQ(refused.message(),
            "stage '" + s +
                "': pure.unroll: loop 'd1_0' is unrolled with the vectorized "
                "split level 'd1_1' of a stage that loads with a stride or a gather and has "
                "guarded tails: Halide 14's code for the tail (predicated strided loads) can crash "
                "when unrolled; unroll nothing or vectorize no split level");
  EXPECT_TRUE(f->CheckMeasured(With(decided, unrolled)).ok());
  pure->clear_unroll();
  EXPECT_TRUE(f->Check(With(decided, unrolled)).ok());
}

// Rule 8 of docs/SCHEDULES.md: in an update, a vectorized loop and an unrolled pure
// loop inside the reduction loops are a register tile of accumulators; the space
// offers only tiles that fit the target's vector registers beside a row of operands,
// and Check refuses a larger one, naming the stage, the loops and the registers.
TEST(ScheduleSpaceTest, RegisterTilesFitTheVectorRegisters) {
  PipelineBuilder b("conv_out");
  const std::string conv = b.Conv2d(b.Input("x", {1, 16, 12, 12}), 32, 3, 1, 1);
  b.Output(conv);
  const PipelineSpec spec = b.Finish().value();
  for (int vector_bytes : {32, 64}) {
    TargetParams target;
    target.vector_bytes = vector_bytes;
    Fixture f = Make(spec, target);
    const int lanes = vector_bytes / 4;
    int tiles = 0, too_large = 0;
    f->ForEachOption(f->Empty(), [&](const StageSchedule& o) {
      const std::vector<ScheduledLoop> loops = f->DefinitionLoops(0, true, o);
      int64_t vectors = 0, rows = 0;
      bool reduction_outside = false;
      for (const ScheduledLoop& loop : loops) {
        if (loop.vectorized) vectors = loop.extent / lanes;
        if (loop.unrolled && !loop.reduction) rows = loop.extent;
        if (loop.reduction && loop.extent > 1 && rows > 0) reduction_outside = true;
      }
      if (vectors > 0 && rows > 0 && reduction_outside) {
        ++tiles;
        if (vectors * rows + vectors + 1 > target.vector_registers()) ++too_large;
      }
      return true;
    });
    EXPECT_GT(tiles, 0) << vector_bytes;
    EXPECT_EQ(too_large, 0) << vector_bytes;
  }

  // The template's tile (AVX2: 2 vectors x 4 columns) with 8 columns unrolled instead.
  Fixture f = Make(spec);
  StatusOr<ScheduleSpec> tiled = TemplateSchedule(*f);
  ASSERT_TRUE(tiled.ok()) << tiled.status().ToString();
  DefinitionSchedule* update = tiled->mutable_stages(0)->mutable_update();
  ASSERT_EQ(update->vector_width(), 16);
  ASSERT_EQ(update->unroll(0).dim(), "d3");
  for (DimSplit& split : *update->mutable_splits()) {
    if (split.dim() == "d3") split.set_factors(0, 8);
  }
  EXPECT_EQ(f->Check(*tiled).message(),
            "stage '" + conv +
                "': update: the register tile of loop 'd1_1' vectorized (2 vectors) x loop "
                "'d3_1' unrolled (8) is 16 accumulators of the stage, which with a row of 2 "
                "operand vectors and a broadcast need 19 vector registers; the target has 16 "
                "(rule 8, register tiles): vectorize fewer lanes or unroll less");
  EXPECT_TRUE(f->CheckMeasured(*tiled).ok());
  // With 64-byte vectors the same loops are 1 vector x 8: 10 registers of 32.
  TargetParams avx512;
  avx512.vector_bytes = 64;
  Fixture g = Make(spec, avx512);
  EXPECT_TRUE(g->Check(*tiled).ok()) << g->Check(*tiled).ToString();
}

// Rule 9: an update's innermost pure loop directly inside a level of a reduction dim
// split with a tail is vectorized; the space offers no such option (each one checked),
// and Check refuses one, naming both loops (CheckMeasured does not).
TEST(ScheduleSpaceTest, PureLoopsInsideReductionTailsAreVectorized) {
  PipelineBuilder b("pool_out");
  const std::string pool = b.MaxPool2d(b.Input("x", {1, 32, 3, 3}), 3, 1);
  b.Output(pool);
  const PipelineSpec spec = b.Finish().value();
  Fixture f = Make(spec);
  int inside_tails = 0, options = 0;
  f->ForEachOption(f->Empty(), [&](const StageSchedule& o) {
    ++options;
    const std::vector<ScheduledLoop> loops = f->DefinitionLoops(0, true, o);
    std::vector<const ScheduledLoop*> effective;
    for (const ScheduledLoop& loop : loops) {
      if (loop.extent > 1) effective.push_back(&loop);
    }
    if (effective.size() >= 2 && !effective[0]->reduction && effective[1]->reduction &&
        !effective[0]->vectorized) {
      // A reduction dim of extent 3 split at all leaves a tail.
      for (const DimSplit& split : o.update().splits()) {
        if (split.dim() == effective[1]->ref.dim()) ++inside_tails;
      }
    }
    return true;
  });
  EXPECT_GT(options, 0);
  EXPECT_EQ(inside_tails, 0);

  // The channels split by 2 (not vectorized) innermost, directly inside rk1 split by 2.
  ScheduleSpec refused = f->WithDefaults(f->Empty());
  DefinitionSchedule* update = refused.mutable_stages(0)->mutable_update();
  DimSplit* d1 = update->add_splits();
  d1->set_dim("d1");
  d1->add_factors(2);
  DimSplit* rk1 = update->add_splits();
  rk1->set_dim("rk1");
  rk1->add_factors(2);
  for (const auto& [dim, level] : std::vector<std::pair<std::string, int>>{
           {"d1", 1}, {"d3", 0}, {"d2", 0}, {"d0", 0}, {"rk1", 1}, {"rk1", 0}, {"rk0", 0},
           {"d1", 0}}) {
    LoopRef* ref = update->add_loop_order();
    ref->set_stage(pool);
    ref->set_dim(dim);
    ref->set_level(level);
    ref->set_update(true);
  }
  EXPECT_EQ(f->Check(refused).message(),
            "stage '" + pool +
                "': update: loop 'd1_1' is innermost and not vectorized, directly inside loop "
                "'rk1_1' of a reduction split with a tail (rule 9, LLVM 14 misorders the "
                "grouped loads and stores it vectorizes such a loop with): vectorize the inner "
                "loop, split the reduction by a factor that divides it, or move the reduction "
                "loops");
  EXPECT_TRUE(f->CheckMeasured(refused).ok()) << f->CheckMeasured(refused).ToString();
}

// Rule 10 of docs/SCHEDULES.md: a producer computed inside a loop of its consumer along
// which the consumer reads none of it (a dense convolution's output channels) would be
// computed over in every iteration of that loop: the space offers no such loop and Check
// refuses it naming both stages; loops outside it, and a consumer that reads the
// producer along that dim (a depthwise convolution), keep their options.
TEST(ScheduleSpaceTest, NothingIsComputedOverInEveryIterationOfALoopThatDoesNotReadIt) {
  auto chain = [](bool depthwise) {
    PipelineBuilder b("fused_chain");
    const std::string expand = b.Conv2d(b.Input("x", {1, 8, 8, 8}), 16, 1);
    const std::string consumer = depthwise ? b.DepthwiseConv2d(expand, 1) : b.Conv2d(expand, 4, 1);
    b.Output(consumer);
    return std::make_pair(b.Finish().value(), std::make_pair(expand, consumer));
  };
  // The consumer decided with its update's loops in `order` (innermost first; d1 is its
  // output channels), or by default (rk1, rk0, rc, d3, d2, d1, d0).
  auto consumer_decided = [](const Fixture& f, const std::string& consumer,
                             const std::vector<std::string>& order) {
    ScheduleSpec partial = f->Empty();
    StageSchedule decision = f->WithDefaults(f->Empty()).stages(0);
    EXPECT_EQ(decision.stage(), consumer);
    if (!order.empty()) {
      decision.mutable_update()->clear_loop_order();
      for (const std::string& dim : order) {
        *decision.mutable_update()->add_loop_order() = Ref(consumer, dim, 0, /*update=*/true);
      }
    }
    *partial.add_stages() = decision;
    EXPECT_TRUE(f->Check(partial).ok()) << f->Check(partial).ToString();
    return partial;
  };
  auto at_dims = [](const Fixture& f, const ScheduleSpec& partial) {
    std::set<std::string> dims;
    f->ForEachOption(partial, [&](const StageSchedule& o) {
      if (o.compute() == AT) dims.insert(o.compute_at().dim());
      return true;
    });
    return dims;
  };
  auto expand_at = [](const ScheduleSpec& partial, const std::string& expand,
                      const std::string& consumer, const std::string& dim) {
    StageSchedule s;
    s.set_stage(expand);
    s.set_compute(AT);
    *s.mutable_compute_at() = Ref(consumer, dim, 0, /*update=*/true);
    ScheduleSpec spec = With(partial, s);
    spec.set_partial(false);
    return spec;
  };
  auto refusal = [](const std::string& expand, const std::string& project, const std::string& dim) {
    return "stage '" + expand + "': compute_at " + project + "." + dim + " level 0 (update): '" +
           project + "' reads none of '" + expand +
           "' along 'd1' (a dense convolution's output channels each read every input "
           "channel, a matmul's columns all of a and its rows all of b), and this loop lies "
           "inside its loops of those dims, so '" +
           expand + "' would be computed 4 times over: compute it outside them, or at root";
  };

  const auto [dense_spec, dense] = chain(false);
  const auto& [expand, project] = dense;
  Fixture f = Make(dense_spec);
  // By default every loop of extent above 1 lies inside the output channels' loop.
  const ScheduleSpec natural = consumer_decided(f, project, {});
  EXPECT_TRUE(at_dims(f, natural).empty());
  const ScheduleSpec inside = expand_at(natural, expand, project, "d2");
  EXPECT_EQ(f->Check(inside).message(), refusal(expand, project, "d2"));
  EXPECT_TRUE(f->CheckMeasured(inside).ok()) << f->CheckMeasured(inside).ToString();
  // With the output channels innermost, the loops outside them are the options.
  const ScheduleSpec channels_inner =
      consumer_decided(f, project, {"d1", "rk1", "rk0", "rc", "d3", "d2", "d0"});
  EXPECT_EQ(at_dims(f, channels_inner), (std::set<std::string>{"rc", "d3", "d2"}));
  EXPECT_TRUE(f->Check(expand_at(channels_inner, expand, project, "rc")).ok());
  EXPECT_EQ(f->Check(expand_at(channels_inner, expand, project, "d1")).message(),
            refusal(expand, project, "d1"));

  // A depthwise convolution reads each channel of its input along its own channels.
  const auto [depthwise_spec, depthwise] = chain(true);
  Fixture g = Make(depthwise_spec);
  const ScheduleSpec g_natural = consumer_decided(g, depthwise.second, {});
  EXPECT_TRUE(at_dims(g, g_natural).count("d1"));
  const ScheduleSpec kept = expand_at(g_natural, depthwise.first, depthwise.second, "d1");
  EXPECT_TRUE(g->Check(kept).ok()) << g->Check(kept).ToString();
}

// Rule 4 of docs/SCHEDULES.md: a stage read through clamped indices (padding) and
// computed at a loop of its consumer with pure loops inside covers a region whose
// bounds Halide 14 overestimates; no stage is computed at one of its loops with a pure
// loop inside, and only that.
TEST(ScheduleSpaceTest, NothingIsComputedInsideTheSpanOfAClampedWindow) {
  // `g_at`: g's compute loop in conv's update (innermost first: rk1, rk0, rc, d3, d2,
  // d1, d0), or "" for ROOT. h is inlined, so conv reads g through its padding.
  auto decided = [](const PaddedChain& c, const Fixture& f, const std::string& g_at) {
    ScheduleSpec spec = f->Empty();
    for (const std::string& name : {c.out, c.conv, c.h, c.g}) {
      StageSchedule s;
      s.set_stage(name);
      s.set_compute(name == c.h ? INLINE : ROOT);
      if (name == c.g && !g_at.empty()) {
        s.set_compute(AT);
        *s.mutable_compute_at() = Ref(c.conv, g_at, 0, /*update=*/true);
      }
      *spec.add_stages() = s;
    }
    EXPECT_TRUE(f->Check(spec).ok()) << f->Check(spec).ToString();
    return spec;
  };
  // The AT options of p (loops of g), and Check of p at g's d2 (d3 is inside it).
  auto p_at_loops = [](const Fixture& f, const ScheduleSpec& partial) {
    std::set<std::string> loops;
    f->ForEachOption(partial, [&](const StageSchedule& o) {
      if (o.compute() == AT) loops.insert(o.compute_at().dim());
      return true;
    });
    return loops;
  };
  auto with_p_at_d2 = [](const PaddedChain& c, const ScheduleSpec& partial) {
    StageSchedule p;
    p.set_stage(c.p);
    p.set_compute(AT);
    *p.mutable_compute_at() = Ref(c.g, "d2", 0);
    ScheduleSpec spec = With(partial, p);
    spec.set_partial(false);
    return spec;
  };
  auto p_at_d2 = [&](const PaddedChain& c, const Fixture& f, const ScheduleSpec& partial) {
    return f->Check(with_p_at_d2(c, partial));
  };

  const PaddedChain padded = PaddedChainPipeline(1);
  Fixture f = Make(padded.spec);
  // g at conv's d2: its region spans d3 and is clamped by the padding. p only at g's
  // innermost pure loop.
  const ScheduleSpec window = decided(padded, f, "d2");
  EXPECT_EQ(p_at_loops(f, window), (std::set<std::string>{"d3"}));
  const Status refused = p_at_d2(padded, f, window);
  EXPECT_NE(refused.message().find("stage '" + padded.p + "': compute_at " + padded.g +
                                   ".d2 level 0: '" + padded.g +
                                   "' is computed at a loop of its consumer with pure loops "
                                   "inside and read through clamped indices (padding)"),
            std::string::npos)
      << refused.ToString();
  // Measured before the rule, the same schedule is featurized: CheckMeasured leaves rule
  // 4 out, and only rule 4.
  EXPECT_TRUE(f->CheckMeasured(with_p_at_d2(padded, window)).ok());
  ScheduleSpec misplaced = with_p_at_d2(padded, window);
  misplaced.mutable_stages(misplaced.stages_size() - 1)->mutable_compute_at()->set_dim("d9");
  EXPECT_FALSE(f->CheckMeasured(misplaced).ok());

  // Neighbours: g at conv's innermost pure loop (one point per iteration), g at root,
  // and the same schedule without padding allow p at every loop of g.
  const std::set<std::string> all = {"d1", "d2", "d3"};
  for (const std::string& g_at : {std::string("d3"), std::string()}) {
    const ScheduleSpec spec = decided(padded, f, g_at);
    EXPECT_EQ(p_at_loops(f, spec), all) << "g at '" << g_at << "'";
    EXPECT_TRUE(p_at_d2(padded, f, spec).ok()) << p_at_d2(padded, f, spec).ToString();
  }
  const PaddedChain unpadded = PaddedChainPipeline(0);
  Fixture u = Make(unpadded.spec);
  const ScheduleSpec spec = decided(unpadded, u, "d2");
  EXPECT_EQ(p_at_loops(u, spec), all);
  EXPECT_TRUE(p_at_d2(unpadded, u, spec).ok()) << p_at_d2(unpadded, u, spec).ToString();

  // g at a loop of its consumer's consumer (`out`, with conv at the same loop), outside
  // every reduction: a fused task's strip. p may be computed at g's d2, d3 inside it
  // (RandomSchedules.AClampedWindowOutsideTheReductionTakesProducersInItsLoops runs it).
  ScheduleSpec strip = f->Empty();
  for (const std::string& name : {padded.out, padded.conv, padded.h, padded.g, padded.p}) {
    StageSchedule s;
    s.set_stage(name);
    s.set_compute(name == padded.out ? ROOT : name == padded.h ? INLINE : AT);
    if (name == padded.conv || name == padded.g) *s.mutable_compute_at() = Ref(padded.out, "d2", 0);
    if (name == padded.p) *s.mutable_compute_at() = Ref(padded.g, "d2", 0);
    *strip.add_stages() = s;
  }
  strip.set_partial(false);
  EXPECT_TRUE(f->Check(strip).ok()) << f->Check(strip).ToString();
}

TEST(ScheduleSpaceTest, ZooBranchingFactorsAreReported) {
  // Knuth's estimator over 100 random paths per block (tools/space_report does 1,000).
  std::printf("%-32s %9s %12s %12s %12s %14s\n", "block", "decisions", "avg branch", "min branch",
              "max branch", "log10(size)");
  for (const std::string& name : ZooBlocks()) {
    Fixture f = ZooSpace(name);
    double sum = 0, lmax = -1;
    int64_t steps = 0, bmin = INT64_MAX, bmax = 0;
    std::vector<double> logs;
    for (uint64_t seed = 0; seed < 100; ++seed) {
      double log_product = 0;
      Walk(*f, seed, [&](const ScheduleSpec&, int64_t count) {
        sum += static_cast<double>(count);
        ++steps;
        bmin = std::min(bmin, count);
        bmax = std::max(bmax, count);
        log_product += std::log10(static_cast<double>(count));
      });
      logs.push_back(log_product);
      lmax = std::max(lmax, log_product);
    }
    double acc = 0;
    for (double l : logs) acc += std::pow(10.0, l - lmax);
    const double log_size = lmax + std::log10(acc / logs.size());
    std::printf("%-32s %9d %12.4g %12lld %12lld %14.1f\n", name.c_str(), f.graph->num_stages(),
                sum / steps, static_cast<long long>(bmin), static_cast<long long>(bmax), log_size);
    EXPECT_GE(bmin, 1);
    EXPECT_GT(sum / steps, 10.0) << name;
    EXPECT_GT(log_size, f.graph->num_stages()) << name;
  }
}

// ---------------------------------------------------------------------------------
// Loops of scheduled definitions

TEST(ScheduleSpaceTest, DefinitionLoopsAfterSplitsAndReorder) {
  const ConvChain c = ConvPipeline();
  Fixture f = Make(c.spec);
  const int conv = StageIndex(*f, c.conv);
  StageSchedule d;
  d.set_stage(c.conv);
  d.set_compute(ROOT);
  DefinitionSchedule* u = d.mutable_update();
  DimSplit* s = u->add_splits();
  s->set_dim("d3");
  s->add_factors(4);
  s = u->add_splits();
  s->set_dim("rc");
  s->add_factors(2);
  // Natural: rk1, rk0, rc_1, rc_0, d3_1, d3_0, d2, d1, d0. Move d3_1 innermost.
  *u->add_loop_order() = Ref(c.conv, "d3", 1, true);
  *u->add_loop_order() = Ref(c.conv, "rk1", 0, true);
  *u->add_loop_order() = Ref(c.conv, "rk0", 0, true);
  *u->add_loop_order() = Ref(c.conv, "rc", 1, true);
  *u->add_loop_order() = Ref(c.conv, "rc", 0, true);
  *u->mutable_vectorize() = Ref(c.conv, "d3", 1, true);
  u->set_vector_width(4);
  *u->add_unroll() = Ref(c.conv, "rk1", 0, true);
  *u->add_parallel() = Ref(c.conv, "d1", 0, true);
  const std::vector<ScheduledLoop> loops = f->LoopsOf(conv, d);
  std::vector<std::string> names;
  for (const ScheduledLoop& l : loops) {
    names.push_back(l.ref.dim() + "_" + std::to_string(l.ref.level()) + ":" +
                    std::to_string(l.extent));
    EXPECT_TRUE(l.ref.update());
    EXPECT_EQ(l.ref.stage(), c.conv);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"d3_1:4", "rk1_0:3", "rk0_0:3", "rc_1:2", "rc_0:2",
                                             "d3_0:3", "d2_0:10", "d1_0:8", "d0_0:1"}));
  EXPECT_TRUE(loops[0].vectorized);
  EXPECT_TRUE(loops[1].unrolled);
  EXPECT_TRUE(loops[1].reduction);
  EXPECT_FALSE(loops[5].reduction);
  EXPECT_TRUE(loops[7].parallel);
  // The pure definition is untouched: natural order.
  const std::vector<ScheduledLoop> pure = f->DefinitionLoops(conv, false, d);
  ASSERT_EQ(pure.size(), 4u);
  EXPECT_EQ(pure[0].ref.dim(), "d3");
  EXPECT_EQ(pure[3].ref.dim(), "d0");
  EXPECT_FALSE(pure[0].ref.update());
  EXPECT_EQ(LoopVarName("d3", 1, 2), "d3_1");
  EXPECT_EQ(LoopVarName("d3", 0, 1), "d3");
  // And the decision is legal (act undecided: a partial spec).
  ScheduleSpec spec = f->Empty();
  StageSchedule out;
  out.set_stage(c.out);
  out.set_compute(ROOT);
  *spec.add_stages() = out;
  *spec.add_stages() = d;
  EXPECT_TRUE(f->Check(spec).ok()) << f->Check(spec).ToString();
}

TEST(ScheduleSpaceTest, OptionsRecordCompleteOrders) {
  Fixture f = ZooSpace("resnet18_basic");
  const ScheduleSpec spec = f->RandomSchedule(3);
  for (const StageSchedule& s : spec.stages()) {
    if (s.compute() == INLINE) continue;
    const int stage = StageIndex(*f, s.stage());
    const size_t pure_loops = f->DefinitionLoops(stage, false, s).size();
    EXPECT_EQ(static_cast<size_t>(s.pure().loop_order_size()), pure_loops) << s.stage();
    EXPECT_EQ(s.pure().tail(), TAIL_AUTO);
  }
}

// ---------------------------------------------------------------------------------
// Canonical form and hash

TEST(ScheduleSpaceTest, HashIgnoresNoOpsAndSeesRealChanges) {
  const Chain c = ChainPipeline(8, 12);
  Fixture f = Make(c.spec);
  // out ROOT: d1 (12) split by [4]; a AT out.d1_0.
  StageSchedule out;
  out.set_stage(c.out);
  out.set_compute(ROOT);
  DimSplit* split = out.mutable_pure()->add_splits();
  split->set_dim("d1");
  split->add_factors(4);
  StageSchedule a;
  a.set_stage(c.a);
  a.set_compute(AT);
  *a.mutable_compute_at() = Ref(c.out, "d1", 0);
  ScheduleSpec base = f->Empty();
  *base.add_stages() = out;
  *base.add_stages() = a;
  base.set_partial(false);
  ASSERT_TRUE(f->Check(base).ok()) << f->Check(base).ToString();
  const std::string h = ScheduleHash(*f, base);
  EXPECT_EQ(h.size(), 32u);

  auto same = [&](const ScheduleSpec& s, const char* what) {
    ASSERT_TRUE(f->Check(s).ok()) << what << ": " << f->Check(s).ToString();
    EXPECT_EQ(ScheduleHash(*f, s), h) << what << "\n"
                                      << CanonicalScheduleText(*f, s) << "vs\n"
                                      << CanonicalScheduleText(*f, base);
  };
  auto differs = [&](const ScheduleSpec& s, const char* what) {
    ASSERT_TRUE(f->Check(s).ok()) << what << ": " << f->Check(s).ToString();
    EXPECT_NE(ScheduleHash(*f, s), h) << what;
  };
  {
    ScheduleSpec s = base;  // a split into one level (no factors)
    s.mutable_stages(0)->mutable_pure()->add_splits()->set_dim("d0");
    same(s, "empty DimSplit");
  }
  {
    ScheduleSpec s = base;  // the natural order written out
    DefinitionSchedule* p = s.mutable_stages(0)->mutable_pure();
    *p->add_loop_order() = Ref(c.out, "d1", 1);
    *p->add_loop_order() = Ref(c.out, "d1", 0);
    *p->add_loop_order() = Ref(c.out, "d0", 0);
    same(s, "complete natural loop_order");
  }
  {
    ScheduleSpec s = base;  // store at the compute level
    s.mutable_stages(1)->set_store(AT);
    *s.mutable_stages(1)->mutable_store_at() = Ref(c.out, "d1", 0);
    same(s, "store_at == compute_at");
  }
  {
    ScheduleSpec s = base;  // ROOT stage stored at root, and the pipeline id unset
    s.mutable_stages(0)->set_store(ROOT);
    s.clear_pipeline_id();
    same(s, "store ROOT of a ROOT stage");
  }
  {
    ScheduleSpec s = base;  // tail: 12 % 4 == 0, the strategy does not matter
    s.mutable_stages(0)->mutable_pure()->set_tail(TAIL_GUARD_WITH_IF);
    same(s, "tail of a dividing split");
  }
  {
    ScheduleSpec s = base;  // UNSPECIFIED resolves to ROOT for the output
    s.mutable_stages(0)->set_compute(COMPUTE_LOCATION_UNSPECIFIED);
    same(s, "unspecified compute of an output");
  }
  // Loops of extent 1: x [1, 12] has d0 of extent 1.
  {
    const Chain c1 = ChainPipeline(1, 12);
    Fixture f1 = Make(c1.spec);
    ScheduleSpec s1 = f1->WithDefaults(f1->Empty());
    ScheduleSpec s2 = s1;
    DefinitionSchedule* p = s2.mutable_stages(0)->mutable_pure();
    *p->add_loop_order() = Ref(c1.out, "d0", 0);  // d0 innermost: only an extent-1 loop moves
    *p->add_loop_order() = Ref(c1.out, "d1", 0);
    *p->add_parallel() = Ref(c1.out, "d0", 0);
    ASSERT_TRUE(f1->Check(s2).ok()) << f1->Check(s2).ToString();
    EXPECT_EQ(ScheduleHash(*f1, s1), ScheduleHash(*f1, s2));
    ScheduleSpec s4 = s1;
    *s4.mutable_stages(0)->mutable_pure()->add_unroll() = Ref(c1.out, "d0", 0);
    ASSERT_TRUE(f1->Check(s4).ok()) << f1->Check(s4).ToString();
    EXPECT_EQ(ScheduleHash(*f1, s1), ScheduleHash(*f1, s4));
    // UNSPECIFIED resolves to INLINE for a: same as WithDefaults.
    ScheduleSpec s3 = s1;
    s3.mutable_stages(1)->set_compute(COMPUTE_LOCATION_UNSPECIFIED);
    EXPECT_EQ(ScheduleHash(*f1, s1), ScheduleHash(*f1, s3));
  }

  {
    ScheduleSpec s = base;
    s.mutable_stages(0)->mutable_pure()->mutable_splits(0)->set_factors(0, 2);
    differs(s, "another factor");
  }
  {
    ScheduleSpec s = base;
    *s.mutable_stages(0)->mutable_pure()->add_loop_order() = Ref(c.out, "d0", 0);
    *s.mutable_stages(0)->mutable_pure()->add_loop_order() = Ref(c.out, "d1", 1);
    differs(s, "d0 innermost");
  }
  {
    ScheduleSpec s = base;
    *s.mutable_stages(0)->mutable_pure()->mutable_vectorize() = Ref(c.out, "d1", 1);
    s.mutable_stages(0)->mutable_pure()->set_vector_width(4);
    differs(s, "vectorize");
  }
  {
    ScheduleSpec s = base;
    *s.mutable_stages(0)->mutable_pure()->add_parallel() = Ref(c.out, "d0", 0);
    differs(s, "parallel");
  }
  {
    ScheduleSpec s = base;
    *s.mutable_stages(0)->mutable_pure()->add_unroll() = Ref(c.out, "d1", 1);
    differs(s, "unroll");
  }
  {
    ScheduleSpec s = base;
    *s.mutable_stages(1)->mutable_compute_at() = Ref(c.out, "d0", 0);
    differs(s, "compute_at another loop");
  }
  {
    ScheduleSpec s = base;
    s.mutable_stages(1)->Clear();
    s.mutable_stages(1)->set_stage(c.a);
    s.mutable_stages(1)->set_compute(INLINE);
    differs(s, "inline");
  }
  {
    ScheduleSpec s = base;
    s.mutable_stages()->RemoveLast();
    s.set_partial(true);
    differs(s, "prefix");
  }
  {
    // A split that does not divide: TAIL_AUTO means ShiftInwards in a pure definition.
    ScheduleSpec s = base;
    s.mutable_stages(0)->mutable_pure()->mutable_splits(0)->set_factors(0, 8);
    ScheduleSpec t = s;
    t.mutable_stages(0)->mutable_pure()->set_tail(TAIL_SHIFT_INWARDS);
    ScheduleSpec g = s;
    g.mutable_stages(0)->mutable_pure()->set_tail(TAIL_GUARD_WITH_IF);
    ASSERT_TRUE(f->Check(s).ok());
    EXPECT_EQ(ScheduleHash(*f, s), ScheduleHash(*f, t));
    EXPECT_NE(ScheduleHash(*f, s), ScheduleHash(*f, g));
  }
}

TEST(ScheduleSpaceTest, CanonicalTextIsStable) {
  const Chain c = ChainPipeline(8, 12);
  Fixture f = Make(c.spec);
  const ScheduleSpec s = f->WithDefaults(f->Empty());
  const std::string text = CanonicalScheduleText(*f, s);
  EXPECT_EQ(text.rfind("schedfarm.schedule.v2\npipeline " + f->pipeline_id() + "\npartial 0\n", 0),
            0u)
      << text;
  EXPECT_NE(text.find("stage " + c.a + " INLINE\n"), std::string::npos) << text;
  EXPECT_NE(text.find("stage " + c.out + " ROOT\n  pure splits order " + c.out + ":d1:0:p " +
                      c.out + ":d0:0:p unroll parallel tail TAIL_AUTO\n"),
            std::string::npos)
      << text;
  const ScheduleSpec canonical = CanonicalSchedule(*f, s);
  EXPECT_EQ(canonical.stages(0).pure().loop_order_size(), 2);
  EXPECT_FALSE(canonical.partial());
}

// ---------------------------------------------------------------------------------
// Check's errors

class CheckErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    chain_ = ChainPipeline(16, 32);
    f_ = Make(chain_.spec);
    StageSchedule out;
    out.set_stage(chain_.out);
    out.set_compute(ROOT);
    StageSchedule a;
    a.set_stage(chain_.a);
    a.set_compute(INLINE);
    *base_.add_stages() = out;
    *base_.add_stages() = a;
    base_.set_pipeline_id(f_->pipeline_id());
    ASSERT_TRUE(f_->Check(base_).ok());
  }
  void ExpectError(const ScheduleSpec& spec, const std::vector<std::string>& parts) {
    const Status status = f_->Check(spec);
    ASSERT_FALSE(status.ok()) << "expected an error with '" << parts[0] << "'";
    for (const std::string& part : parts) {
      EXPECT_NE(status.message().find(part), std::string::npos)
          << "'" << part << "' not in: " << status.message();
    }
  }
  StageSchedule& Out(ScheduleSpec& s) { return *s.mutable_stages(0); }
  StageSchedule& A(ScheduleSpec& s) { return *s.mutable_stages(1); }
  DefinitionSchedule& OutPure(ScheduleSpec& s) { return *s.mutable_stages(0)->mutable_pure(); }

  Chain chain_;
  Fixture f_;
  ScheduleSpec base_;
};

TEST_F(CheckErrorTest, SpecLevelErrors) {
  ScheduleSpec s = base_;
  s.set_pipeline_id("0123");
  ExpectError(s, {"pipeline_id 0123", "not this pipeline"});
  s = base_;
  std::swap(*s.mutable_stages(0), *s.mutable_stages(1));
  ExpectError(s, {"decision 0", "'" + chain_.a + "'", "decision order puts '" + chain_.out});
  s = base_;
  Out(s).set_stage("nope");
  ExpectError(s, {"'nope'", "not a stage"});
  s = base_;
  s.mutable_stages()->RemoveLast();
  ExpectError(s, {"complete (partial = false)", "first missing is '" + chain_.a + "'"});
  s.set_partial(true);
  EXPECT_TRUE(f_->Check(s).ok());
  s = base_;
  *s.add_stages() = s.stages(1);
  ExpectError(s, {"lists 3 stages, the pipeline has 2"});
}

TEST_F(CheckErrorTest, LocationErrors) {
  ScheduleSpec s = base_;
  Out(s).set_compute(INLINE);
  ExpectError(s, {"stage '" + chain_.out + "'", "compute: INLINE", "outputs"});
  s = base_;
  Out(s).set_compute(AT);
  *Out(s).mutable_compute_at() = Ref(chain_.a, "d0", 0);
  ExpectError(s, {"stage '" + chain_.out + "'", "outputs are computed at root"});
  s = base_;
  A(s).set_store(ROOT);
  ExpectError(s, {"stage '" + chain_.a + "'", "store: set on an inlined stage"});
  s = base_;
  A(s).mutable_pure()->add_splits()->set_dim("d1");
  ExpectError(s, {"pure: directives on an inlined stage"});
  s = base_;
  *A(s).mutable_compute_at() = Ref(chain_.out, "d0", 0);
  ExpectError(s, {"compute_at: set but the stage is computed INLINE"});
  s = base_;
  A(s).set_compute(AT);
  ExpectError(s, {"compute_at: missing"});
  *A(s).mutable_compute_at() = Ref("x", "d0", 0);
  ExpectError(s, {"no stage named 'x'"});
  *A(s).mutable_compute_at() = Ref(chain_.out, "d7", 0);
  ExpectError(s, {"compute_at " + chain_.out + ".d7", "no dim 'd7'"});
  *A(s).mutable_compute_at() = Ref(chain_.out, "d1", 1);
  ExpectError(s, {"dim 'd1' has 1 level(s)", "no level 1"});
  *A(s).mutable_compute_at() = Ref(chain_.out, "d1", 0, true);
  ExpectError(s, {"has no update definition"});
  s = base_;
  Out(s).set_store(AT);
  *Out(s).mutable_store_at() = Ref(chain_.out, "d0", 0);
  ExpectError(s, {"stage '" + chain_.out + "'", "store: AT, but a stage computed at root"});
  s = base_;
  Out(s).mutable_update()->add_splits()->set_dim("d0");
  ExpectError(s, {"update: the stage has no update definition"});
  s = base_;
  Out(s).set_store(INLINE);
  ExpectError(s, {"store: INLINE is not a storage location"});
  s = base_;
  *OutPure(s).add_parallel() = Ref(chain_.out, "d0", 0);
  *OutPure(s).add_parallel() = Ref(chain_.out, "d0", 0);
  ExpectError(s, {"pure.parallel: loop 'd0' listed twice"});
}

TEST_F(CheckErrorTest, HostLoopErrors) {
  ScheduleSpec s = base_;
  A(s).set_compute(AT);
  *A(s).mutable_compute_at() = Ref(chain_.out, "d1", 0);
  ASSERT_TRUE(f_->Check(s).ok()) << f_->Check(s).ToString();
  ScheduleSpec v = s;
  *OutPure(v).mutable_vectorize() = Ref(chain_.out, "d1", 0);
  OutPure(v).set_vector_width(32);
  ExpectError(v, {"stage '" + chain_.a + "'", "compute_at", "the loop is vectorized"});
  ScheduleSpec u = s;
  *OutPure(u).add_unroll() = Ref(chain_.out, "d1", 0);
  ExpectError(u, {"the loop is unrolled"});
  // Vectorized d0 (outer) makes d1 a loop inside the vectorized one.
  ScheduleSpec w = s;
  *OutPure(w).mutable_vectorize() = Ref(chain_.out, "d0", 0);
  OutPure(w).set_vector_width(16);
  ExpectError(w, {"inside the vectorized loop"});
  // Storage is the compute loop.
  ScheduleSpec e = base_;
  A(e).set_compute(AT);
  *A(e).mutable_compute_at() = Ref(chain_.out, "d0", 0);
  A(e).set_store(AT);
  *A(e).mutable_store_at() = Ref(chain_.out, "d1", 0);
  ExpectError(e, {"store: storage outside the compute loop"});
  A(e).clear_store_at();
  ExpectError(e, {"store_at: missing"});
}

TEST(CheckErrors, UsesMustBeEnclosedAndHostsDecidedEarlier) {
  const Diamond d = DiamondPipeline();
  Fixture f = Make(d.spec);
  ScheduleSpec s = f->Empty();
  for (int i = 0; i < 3; ++i) {
    StageSchedule st;
    st.set_stage(f.graph->stage(f->decision_order()[i]).name());
    st.set_compute(ROOT);
    *s.add_stages() = st;
  }
  StageSchedule a;
  a.set_stage(d.a);
  a.set_compute(AT);
  *a.mutable_compute_at() = Ref(d.b, "d1", 0);
  ScheduleSpec bad = With(s, a);
  const Status status = f->Check(bad);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("does not enclose the use of this stage in '" + d.c + "'"),
            std::string::npos)
      << status.message();
  // With b and c computed inside out's d0 loop, a can be computed at that loop.
  for (int i = 1; i < 3; ++i) {
    s.mutable_stages(i)->set_compute(AT);
    *s.mutable_stages(i)->mutable_compute_at() = Ref(d.out, "d0", 0);
  }
  *a.mutable_compute_at() = Ref(d.out, "d0", 0);
  EXPECT_TRUE(f->Check(With(s, a)).ok()) << f->Check(With(s, a)).ToString();
  *a.mutable_compute_at() = Ref(d.out, "d1", 0);
  EXPECT_FALSE(f->Check(With(s, a)).ok());
  // An inlined stage has no loops to compute in.
  ScheduleSpec inlined = s;
  inlined.mutable_stages(1)->Clear();
  inlined.mutable_stages(1)->set_stage(s.stages(1).stage());
  inlined.mutable_stages(1)->set_compute(INLINE);
  *a.mutable_compute_at() = Ref(s.stages(1).stage(), "d0", 0);
  const Status at_inlined = f->Check(With(inlined, a));
  ASSERT_FALSE(at_inlined.ok());
  EXPECT_NE(at_inlined.message().find("'" + s.stages(1).stage() + "' is inlined and has no loops"),
            std::string::npos)
      << at_inlined.message();
  // A host decided later than the stage cannot consume it.
  ScheduleSpec order = s;
  StageSchedule b = order.stages(1);
  b.set_compute(AT);
  *b.mutable_compute_at() = Ref(d.a, "d0", 0);
  *order.mutable_stages(1) = b;
  const Status later = f->Check(order);
  ASSERT_FALSE(later.ok());
  EXPECT_NE(later.message().find("is decided after this stage"), std::string::npos)
      << later.message();
}

TEST_F(CheckErrorTest, DefinitionErrors) {
  struct Case {
    std::function<void(DefinitionSchedule&)> edit;
    std::vector<std::string> parts;
  };
  const std::string o = chain_.out;
  const std::vector<Case> cases = {
      {[&](DefinitionSchedule& p) { p.add_splits()->set_dim("r0"); },
       {"stage '" + o + "': pure.splits: no dim 'r0'", "dims: d1, d0"}},
      {[&](DefinitionSchedule& p) {
         p.add_splits()->set_dim("d1");
         p.add_splits()->set_dim("d1");
       },
       {"pure.splits: dim 'd1' split twice"}},
      {[&](DefinitionSchedule& p) {
         DimSplit* s = p.add_splits();
         s->set_dim("d1");
         s->add_factors(1);
       },
       {"pure.splits: dim 'd1' factor 1 is below 2"}},
      {[&](DefinitionSchedule& p) {
         DimSplit* s = p.add_splits();
         s->set_dim("d0");
         s->add_factors(8);
         s->add_factors(4);
       },
       {"pure.splits: dim 'd0' split by [8, 4] (product 32) exceeds its extent 16",
        "TAIL_GUARD_WITH_IF"}},
      {[&](DefinitionSchedule& p) {
         DimSplit* s = p.add_splits();
         s->set_dim("d0");
         s->add_factors(5);
         p.set_tail(TAIL_ROUND_UP);
       },
       {"pure.tail: TAIL_ROUND_UP", "output's buffer"}},
      {[&](DefinitionSchedule& p) { *p.add_loop_order() = Ref(o, "d2", 0); },
       {"pure.loop_order: no dim 'd2'"}},
      {[&](DefinitionSchedule& p) { *p.add_loop_order() = Ref(chain_.a, "d1", 0); },
       {"pure.loop_order: names a loop of stage '" + chain_.a + "'"}},
      {[&](DefinitionSchedule& p) { *p.add_loop_order() = Ref(o, "d1", 0, true); },
       {"pure.loop_order: names a loop of the update definition"}},
      {[&](DefinitionSchedule& p) {
         *p.add_loop_order() = Ref(o, "d1", 0);
         *p.add_loop_order() = Ref(o, "d1", 0);
       },
       {"pure.loop_order: loop 'd1' listed twice"}},
      {[&](DefinitionSchedule& p) {
         *p.mutable_vectorize() = Ref(o, "d1", 0);
         p.set_vector_width(8);
       },
       {"pure.vector_width: 8 but the vectorized loop 'd1' has extent 32"}},
      {[&](DefinitionSchedule& p) { p.set_vector_width(8); },
       {"pure.vector_width: set to 8 without vectorize"}},
      {[&](DefinitionSchedule& p) {
         *p.add_unroll() = Ref(o, "d0", 0);
         *p.add_unroll() = Ref(o, "d0", 0);
       },
       {"pure.unroll: loop 'd0' listed twice"}},
      {[&](DefinitionSchedule& p) {
         *p.mutable_vectorize() = Ref(o, "d1", 0);
         p.set_vector_width(32);
         *p.add_unroll() = Ref(o, "d1", 0);
       },
       {"pure.unroll: loop 'd1' is vectorized"}},
      {[&](DefinitionSchedule& p) {
         *p.mutable_vectorize() = Ref(o, "d0", 0);
         p.set_vector_width(16);
         *p.add_parallel() = Ref(o, "d1", 0);
       },
       {"pure.parallel: loop 'd1' is inside the vectorized loop 'd0'"}},
      {[&](DefinitionSchedule& p) {
         *p.add_unroll() = Ref(o, "d0", 0);
         *p.add_parallel() = Ref(o, "d0", 0);
       },
       {"pure.parallel: loop 'd0' is unrolled"}},
      {[&](DefinitionSchedule& p) {
         *p.mutable_vectorize() = Ref(o, "d0", 0);
         p.set_vector_width(16);
         *p.add_parallel() = Ref(o, "d0", 0);
       },
       {"pure.parallel: loop 'd0' is vectorized"}},
  };
  for (const Case& c : cases) {
    ScheduleSpec s = base_;
    c.edit(OutPure(s));
    ExpectError(s, c.parts);
  }
  // The same product is fine with GuardWithIf.
  ScheduleSpec g = base_;
  DimSplit* split = OutPure(g).add_splits();
  split->set_dim("d0");
  split->add_factors(8);
  split->add_factors(4);
  OutPure(g).set_tail(TAIL_GUARD_WITH_IF);
  EXPECT_TRUE(f_->Check(g).ok()) << f_->Check(g).ToString();
}

// An output's region is its shape, so its tails may shift inwards or round up, within
// the rules of Halide's updates.
TEST(CheckErrors, OutputTails) {
  PipelineBuilder b("conv_out");
  const std::string conv = b.Conv2d(b.Input("x", {1, 4, 10, 10}), 8, 3, 1, 1);
  b.Output(conv);
  const PipelineSpec spec = b.Finish().value();
  Fixture f = Make(spec);
  auto check = [&](bool update, int64_t factor, TailStrategy tail) {
    ScheduleSpec s = f->Empty();
    StageSchedule* st = s.add_stages();
    st->set_stage(conv);
    st->set_compute(ROOT);
    DefinitionSchedule& d = update ? *st->mutable_update() : *st->mutable_pure();
    DimSplit* split = d.add_splits();
    split->set_dim("d3");
    split->add_factors(factor);
    d.set_tail(tail);
    return f->Check(s);
  };
  EXPECT_TRUE(check(false, 4, TAIL_SHIFT_INWARDS).ok());
  EXPECT_TRUE(check(false, 5, TAIL_ROUND_UP).ok());
  EXPECT_TRUE(check(true, 5, TAIL_ROUND_UP).ok());
  const Status shift = check(true, 4, TAIL_SHIFT_INWARDS);
  EXPECT_NE(shift.message().find("update.tail: TAIL_SHIFT_INWARDS is not legal in an update"),
            std::string::npos)
      << shift.ToString();
  const Status round = check(false, 4, TAIL_ROUND_UP);
  EXPECT_NE(round.message().find("pure.tail: TAIL_ROUND_UP with a split that does not divide"),
            std::string::npos)
      << round.ToString();
}

TEST(CheckErrors, ReductionDefinitionErrors) {
  const ConvChain c = ConvPipeline();
  Fixture f = Make(c.spec);
  StageSchedule out;
  out.set_stage(c.out);
  out.set_compute(ROOT);
  auto check = [&](const std::function<void(DefinitionSchedule&)>& edit) {
    StageSchedule conv;
    conv.set_stage(c.conv);
    conv.set_compute(ROOT);
    edit(*conv.mutable_update());
    ScheduleSpec s = f->Empty();
    *s.add_stages() = out;
    *s.add_stages() = conv;
    return f->Check(s);
  };
  auto expect = [&](const Status& status, const std::string& part) {
    ASSERT_FALSE(status.ok()) << part;
    EXPECT_NE(status.message().find(part), std::string::npos) << status.message();
  };
  expect(check([&](DefinitionSchedule& u) {
           *u.mutable_vectorize() = Ref(c.conv, "rc", 0, true);
           u.set_vector_width(4);
         }),
         "stage '" + c.conv +
             "': update.vectorize: 'rc' is a reduction loop (vectorizing it "
             "needs rfactor)");
  expect(check([&](DefinitionSchedule& u) { *u.add_parallel() = Ref(c.conv, "rk0", 0, true); }),
         "update.parallel: loop 'rk0' is a reduction loop");
  expect(check([&](DefinitionSchedule& u) {
           *u.add_loop_order() = Ref(c.conv, "rc", 0, true);
           *u.add_loop_order() = Ref(c.conv, "rk1", 0, true);
         }),
         "update.loop_order: puts reduction loop 'rc' inside reduction loop 'rk0'");
  expect(check([&](DefinitionSchedule& u) {
           DimSplit* s = u.add_splits();
           s->set_dim("d3");
           s->add_factors(4);
           u.set_tail(TAIL_SHIFT_INWARDS);
         }),
         "update.tail: TAIL_SHIFT_INWARDS is legal on outputs only");
  expect(check([&](DefinitionSchedule& u) {
           DimSplit* s = u.add_splits();
           s->set_dim("d3");
           s->add_factors(4);
           u.set_tail(TAIL_ROUND_UP);
         }),
         "update.tail: TAIL_ROUND_UP is legal on outputs only");
  expect(check([&](DefinitionSchedule& u) {
           *u.mutable_vectorize() = Ref(c.conv, "d0", 0, true);
           u.set_vector_width(1);
         }),
         "update.vectorize: 'd0' has extent 1");
  // Splitting and reordering pure loops around the reduction is fine.
  EXPECT_TRUE(check([&](DefinitionSchedule& u) {
                DimSplit* s = u.add_splits();
                s->set_dim("rc");
                s->add_factors(2);
                for (const LoopRef& r : {Ref(c.conv, "d3", 0, true), Ref(c.conv, "rk1", 0, true),
                                         Ref(c.conv, "rk0", 0, true), Ref(c.conv, "rc", 1, true),
                                         Ref(c.conv, "rc", 0, true)}) {
                  *u.add_loop_order() = r;
                }
              }).ok());
  // Listing only d3 and rc_1 would swap rc_1 with rc_0.
  expect(check([&](DefinitionSchedule& u) {
           DimSplit* s = u.add_splits();
           s->set_dim("rc");
           s->add_factors(2);
           *u.add_loop_order() = Ref(c.conv, "d3", 0, true);
           *u.add_loop_order() = Ref(c.conv, "rc", 1, true);
         }),
         "update.loop_order: puts reduction loop 'rc_0' inside reduction loop 'rc_1'");
  // INLINE for a stage with an update.
  StageSchedule conv;
  conv.set_stage(c.conv);
  conv.set_compute(INLINE);
  ScheduleSpec s = f->Empty();
  *s.add_stages() = out;
  *s.add_stages() = conv;
  expect(f->Check(s), "compute: INLINE, but a stage with an update definition cannot be inlined");
}

}  // namespace
}  // namespace schedfarm
