#include "learner/roofline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <set>

#include "learner/cost_model_adapter.h"
#include "learner/model_evaluation.h"
#include "pipeline/graph.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

HostPeaks TestPeaks() {
  HostPeaks p;
  p.cpu = "test cpu";
  p.cores = 2;
  p.isa = "avx2+fma";
  p.flops_per_second = 1e11;
  p.bytes_per_second = 1e10;
  return p;
}

int Column(const std::vector<std::string>& names, const std::string& name) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  ADD_FAILURE() << "no feature column '" << name << "'";
  return 0;
}

// One synthetic stage, in the quantities the roofline reads.
struct StageSpec {
  OpKind op = BINARY;
  int element_bytes = 4;
  double vector_flops = 0;  // float operations in vectorized loops
  double scalar_flops = 0;
  double utilization = 0.5;
  double bytes = 0;  // unique bytes read + bytes written
  bool inlined = false;
};

// Writes the stages into features of the current schema, by column name.
PipelineFeatures MakeFeatures(const std::vector<StageSpec>& stages) {
  const FeatureSchema& schema = CurrentFeatureSchema();
  const size_t ni = schema.invariant_names.size();
  const size_t nd = schema.dependent_names.size();
  PipelineFeatures f;
  f.num_stages = static_cast<int>(stages.size());
  f.invariant.assign(stages.size() * ni, 0.f);
  f.dependent.assign(stages.size() * nd, 0.f);
  f.scheduled.assign(stages.size(), 1);
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageSpec& st = stages[s];
    float* inv = &f.invariant[s * ni];
    float* dep = &f.dependent[s * nd];
    std::string op = OpKind_Name(st.op);
    for (char& c : op) c = static_cast<char>(std::tolower(c));
    inv[Column(schema.invariant_names, "op_" + op)] = 1;
    inv[Column(schema.invariant_names, "bytes_per_element")] = st.element_bytes;
    inv[Column(schema.invariant_names, "flops")] = st.vector_flops + st.scalar_flops;
    inv[Column(schema.invariant_names, "bytes_read")] = st.bytes / 2;
    inv[Column(schema.invariant_names, "bytes_written")] = st.bytes / 2;
    dep[Column(schema.dependent_names, "loc_inline")] = st.inlined;
    dep[Column(schema.dependent_names, "float_ops")] = st.vector_flops + st.scalar_flops;
    dep[Column(schema.dependent_names, "scalar_float_ops")] = st.scalar_flops;
    dep[Column(schema.dependent_names, "core_utilization")] = st.utilization;
    dep[Column(schema.dependent_names, "unique_bytes_read_total")] = st.bytes / 4;
    dep[Column(schema.dependent_names, "bytes_written_total")] = st.bytes * 3 / 4;
  }
  return f;
}

OpClass ClassOf(OpKind op) {
  switch (op) {
    case CONV:
      return OpClass::kConv;
    case MATMUL:
      return OpClass::kMatmul;
    case POOL:
      return OpClass::kPool;
    case REDUCE:
      return OpClass::kReduce;
    case UNARY:
    case BINARY:
      return OpClass::kElementwise;
    default:
      return OpClass::kMovement;
  }
}

// The documented formula, written out independently of the model:
//   compute = (vector_flops * 8 / lanes + scalar_flops * 8) / (peak * utilization)
//   memory  = bytes / bandwidth
//   seconds = sum over non-inlined stages of max(compute, memory) / efficiency[class]
double FormulaSeconds(const std::vector<StageSpec>& stages, const HostPeaks& peaks,
                      const double efficiency[kNumOpClasses]) {
  double seconds = 0;
  for (const StageSpec& s : stages) {
    if (s.inlined) continue;
    const double lanes = 32.0 / s.element_bytes;
    const double compute = (s.vector_flops * 8 / lanes + s.scalar_flops * 8) /
                           (peaks.flops_per_second * s.utilization);
    const double memory = s.bytes / peaks.bytes_per_second;
    seconds += std::max(compute, memory) / efficiency[static_cast<int>(ClassOf(s.op))];
  }
  return seconds;
}

const OpKind kOps[] = {CONV, MATMUL, POOL, REDUCE, UNARY, BINARY, PAD, TRANSPOSE, RESHAPE};
const double kEfficiency[kNumOpClasses] = {0.5, 0.7, 0.2, 0.3, 0.1, 0.4};

// Random pipelines of 1-6 stages; compute- and memory-bound stages both occur.
std::vector<std::vector<StageSpec>> RandomPipelines(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<std::vector<StageSpec>> out;
  for (int p = 0; p < n; ++p) {
    std::vector<StageSpec> stages(1 + rng() % 6);
    for (StageSpec& s : stages) {
      s.op = kOps[rng() % (sizeof(kOps) / sizeof(kOps[0]))];
      s.element_bytes = rng() % 4 == 0 ? 8 : 4;
      const double flops = std::pow(10, 5 + 3 * unit(rng));
      const double vector_share = unit(rng) < 0.5 ? 0 : unit(rng);
      s.vector_flops = flops * vector_share;
      s.scalar_flops = flops - s.vector_flops;
      s.utilization = unit(rng) < 0.5 ? 0.5 : 1.0;
      s.bytes = std::pow(10, 5 + 3 * unit(rng));
      s.inlined = unit(rng) < 0.15;
    }
    out.push_back(stages);
  }
  return out;
}

std::vector<Sample> SamplesOf(const std::vector<std::vector<StageSpec>>& pipelines, double noise,
                              uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0, noise);
  std::vector<Sample> samples;
  for (size_t p = 0; p < pipelines.size(); ++p) {
    Sample s;
    s.pipeline_id = "p" + std::to_string(p);
    s.features = MakeFeatures(pipelines[p]);
    s.seconds = FormulaSeconds(pipelines[p], TestPeaks(), kEfficiency);
    if (s.seconds <= 0) continue;  // every stage inlined
    if (noise > 0) s.seconds *= std::exp(normal(rng));
    samples.push_back(std::move(s));
  }
  return samples;
}

TEST(Roofline, StagesFollowTheDocumentedFormula) {
  RooflineModel model(TestPeaks());
  StageSpec compute;  // 1e9 scalar f32 flops on one of two cores: 8e9 / (1e11 * 0.5) s
  compute.op = CONV;
  compute.scalar_flops = 1e9;
  compute.bytes = 1e6;
  StageSpec vectorized = compute;  // the same, vectorized f64: 4 lanes
  vectorized.element_bytes = 8;
  vectorized.vector_flops = 1e9;
  vectorized.scalar_flops = 0;
  StageSpec memory;  // 1e9 bytes: 0.1 s
  memory.op = TRANSPOSE;
  memory.bytes = 1e9;
  StageSpec inlined = compute;
  inlined.inlined = true;
  auto stages = model.Stages(MakeFeatures({compute, vectorized, memory, inlined}));
  ASSERT_TRUE(stages.ok()) << stages.status().message();
  ASSERT_EQ(stages->size(), 3u);  // the inlined stage costs nothing of its own
  EXPECT_EQ((*stages)[0].op_class, OpClass::kConv);
  EXPECT_NEAR((*stages)[0].compute_seconds, 8e9 / 5e10, 1e-9);
  EXPECT_NEAR((*stages)[0].memory_seconds, 1e-4, 1e-12);
  EXPECT_NEAR((*stages)[1].compute_seconds, 2e9 / 5e10, 1e-9);
  EXPECT_EQ((*stages)[2].op_class, OpClass::kMovement);
  EXPECT_NEAR((*stages)[2].memory_seconds, 0.1, 1e-9);
  EXPECT_EQ((*stages)[2].compute_seconds, 0);

  // An undecided stage of a partial schedule uses the schedule-free counts at the peaks.
  PipelineFeatures partial = MakeFeatures({compute});
  partial.scheduled[0] = 0;
  auto undecided = model.Stages(partial);
  ASSERT_TRUE(undecided.ok());
  EXPECT_NEAR((*undecided)[0].compute_seconds, 1e9 / 1e11, 1e-12);
  EXPECT_NEAR((*undecided)[0].memory_seconds, 1e6 / 1e10, 1e-15);
}

TEST(Roofline, FitRecoversTheEfficienciesOfItsOwnFormula) {
  const std::vector<Sample> train = SamplesOf(RandomPipelines(80, 1), 0, 0);
  RooflineModel model(TestPeaks());
  ASSERT_TRUE(model.Train(train, {}).ok());
  for (int c = 0; c < kNumOpClasses; ++c) {
    EXPECT_NEAR(model.efficiency(static_cast<OpClass>(c)), kEfficiency[c], 1e-6 * kEfficiency[c])
        << OpClassName(static_cast<OpClass>(c));
  }
  const std::vector<Sample> test = SamplesOf(RandomPipelines(30, 2), 0, 0);
  auto m = EvaluateModel(model, test);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_LT(m->max_error, 1e-4);
}

TEST(Roofline, NoisyRuntimesPredictedWithinAFactor) {
  // 30% log-normal noise on the training runtimes; held-out runtimes noise-free.
  const std::vector<Sample> train = SamplesOf(RandomPipelines(200, 3), 0.3, 4);
  RooflineModel model(TestPeaks());
  ASSERT_TRUE(model.Train(train, {}).ok());
  for (int c = 0; c < kNumOpClasses; ++c) {
    const double e = model.efficiency(static_cast<OpClass>(c));
    EXPECT_GT(e, kEfficiency[c] / 1.5) << OpClassName(static_cast<OpClass>(c));
    EXPECT_LT(e, kEfficiency[c] * 1.5) << OpClassName(static_cast<OpClass>(c));
  }
  const std::vector<Sample> test = SamplesOf(RandomPipelines(50, 5), 0, 0);
  std::vector<const PipelineFeatures*> features;
  for (const Sample& s : test) features.push_back(&s.features);
  auto predictions = model.Predict(features);
  ASSERT_TRUE(predictions.ok());
  for (size_t i = 0; i < test.size(); ++i) {
    const double ratio = (*predictions)[i].mean_seconds / test[i].seconds;
    EXPECT_GT(ratio, 1 / 1.5) << i;
    EXPECT_LT(ratio, 1.5) << i;
    // The bootstrap members disagree a little on noisy runtimes: a spread, small
    // beside the prediction with 600 samples.
    EXPECT_EQ((*predictions)[i].member_seconds.size(), 5u) << i;
    EXPECT_GT((*predictions)[i].stddev_seconds, 0) << i;
    EXPECT_LT((*predictions)[i].stddev_seconds, 0.1 * (*predictions)[i].mean_seconds) << i;
  }
  // One member: the fit to every sample, no spread.
  TrainOptions one;
  one.ensemble = 1;
  ASSERT_TRUE(model.Train(train, one).ok());
  predictions = model.Predict(features);
  ASSERT_TRUE(predictions.ok());
  EXPECT_EQ((*predictions)[0].stddev_seconds, 0);
  EXPECT_TRUE((*predictions)[0].member_seconds.empty());
}

TEST(Roofline, ClassesAbsentFromTrainingGetTheSingleClassFit) {
  // Only elementwise stages at efficiency 0.1: every class is fitted to 0.1.
  std::vector<std::vector<StageSpec>> pipelines;
  for (int i = 1; i <= 5; ++i) {
    StageSpec s;
    s.op = BINARY;
    s.scalar_flops = 1e6 * i;
    s.bytes = 1e3;
    pipelines.push_back({s});
  }
  RooflineModel model(TestPeaks());
  ASSERT_TRUE(model.Train(SamplesOf(pipelines, 0, 0), {}).ok());
  EXPECT_NEAR(model.efficiency(OpClass::kElementwise), 0.1, 1e-9);
  EXPECT_NEAR(model.efficiency(OpClass::kConv), 0.1, 1e-9);
  EXPECT_NEAR(model.efficiency(OpClass::kMovement), 0.1, 1e-9);
}

TEST(Roofline, SaveLoadGivesIdenticalPredictions) {
  RooflineModel model(TestPeaks());
  ASSERT_TRUE(model.Train(SamplesOf(RandomPipelines(40, 6), 0.2, 7), {}).ok());
  auto bytes = model.Save();
  ASSERT_TRUE(bytes.ok());
  RooflineModel loaded;  // no peaks of its own: they come with the model
  ASSERT_TRUE(loaded.Load(*bytes).ok()) << loaded.Load(*bytes).message();
  EXPECT_EQ(loaded.peaks().flops_per_second, 1e11);
  EXPECT_EQ(loaded.peaks().cpu, "test cpu");
  const std::vector<Sample> test = SamplesOf(RandomPipelines(10, 8), 0, 0);
  std::vector<const PipelineFeatures*> features;
  for (const Sample& s : test) features.push_back(&s.features);
  auto a = model.Predict(features);
  auto b = loaded.Predict(features);
  ASSERT_TRUE(a.ok() && b.ok());
  for (size_t i = 0; i < features.size(); ++i) {
    EXPECT_EQ((*a)[i].mean_seconds, (*b)[i].mean_seconds);
    EXPECT_EQ((*a)[i].member_seconds, (*b)[i].member_seconds);
  }
  auto again = loaded.Save();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *bytes);

  // The one-member format saved before the roofline was an ensemble still loads: member
  // 0's multipliers under the old header.
  std::string old = *bytes;
  old.replace(0, old.find('\n'), "schedfarm.roofline.v1");
  const size_t members = old.find("members ");
  old.erase(members, old.find('\n', members) + 1 - members);
  for (size_t at = old.find("multiplier "); at != std::string::npos;
       at = old.find("multiplier ", at + 1)) {
    const size_t first = old.find(' ', old.find(' ', at) + 1);  // after the class name
    const size_t second = old.find(' ', first + 1);
    const size_t end = old.find('\n', at);
    if (second < end) old.erase(second, end - second);
  }
  RooflineModel one_member;
  ASSERT_TRUE(one_member.Load(old).ok()) << one_member.Load(old).message() << "\n" << old;
  auto c = one_member.Predict(features);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[0].stddev_seconds, 0);
  EXPECT_EQ((*c)[0].mean_seconds, (*a)[0].member_seconds[0]);
}

TEST(Roofline, ClearErrors) {
  RooflineModel model(TestPeaks());
  const std::vector<Sample> samples = SamplesOf(RandomPipelines(5, 9), 0, 0);
  std::vector<const PipelineFeatures*> features = {&samples[0].features};
  auto early = model.Predict(features);
  ASSERT_FALSE(early.ok());
  EXPECT_NE(early.status().message().find("before training"), std::string::npos);
  EXPECT_FALSE(model.Save().ok());
  EXPECT_FALSE(model.Train({}, {}).ok());

  std::vector<Sample> bad = samples;
  bad[2].seconds = -1;
  auto negative = model.Train(bad, {});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.message().find("training sample 2"), std::string::npos);

  bad = samples;
  bad[1].features.dependent.resize(3);
  auto shape = model.Train(bad, {});
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.message().find("another schema"), std::string::npos) << shape.message();

  bad = samples;
  std::fill(bad[0].features.invariant.begin(), bad[0].features.invariant.end(), 0.f);
  auto no_op = model.Train(bad, {});
  ASSERT_FALSE(no_op.ok());
  EXPECT_NE(no_op.message().find("op_<kind>"), std::string::npos) << no_op.message();

  // Nothing to fit: no flops and no bytes anywhere.
  StageSpec empty;
  std::vector<Sample> zero = SamplesOf({{empty}}, 0, 0);
  ASSERT_TRUE(zero.empty());  // the formula gives 0 s: build the sample by hand
  Sample z;
  z.pipeline_id = "z";
  z.features = MakeFeatures({empty});
  z.seconds = 1e-3;
  auto nothing = model.Train({z}, {});
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.message().find("zero flops and bytes"), std::string::npos);

  HostPeaks broken = TestPeaks();
  broken.bytes_per_second = 0;
  RooflineModel no_bandwidth(broken);
  EXPECT_FALSE(no_bandwidth.Train(samples, {}).ok());

  ASSERT_TRUE(model.Train(samples, {}).ok());
  auto bytes = model.Save();
  ASSERT_TRUE(bytes.ok());
  RooflineModel loaded;
  EXPECT_FALSE(loaded.Load("roofline?").ok());
  std::string other = *bytes;
  const size_t at = other.find("schema ") + 7;
  other.replace(at, other.find('\n', at) - at, "999");
  auto schema = loaded.Load(other);
  ASSERT_FALSE(schema.ok());
  EXPECT_NE(schema.message().find("feature schema v999"), std::string::npos) << schema.message();
  std::string negative_multiplier = *bytes;
  const size_t m = negative_multiplier.find("multiplier conv ") + 16;
  negative_multiplier.insert(m, "-");
  EXPECT_FALSE(loaded.Load(negative_multiplier).ok());
  std::string short_row = *bytes;
  const size_t row = short_row.find("multiplier pool ");
  short_row.erase(short_row.rfind(' ', short_row.find('\n', row)),
                  short_row.find('\n', row) - short_row.rfind(' ', short_row.find('\n', row)));
  auto missing = loaded.Load(short_row);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("multiplier of 'pool' (5 members)"), std::string::npos)
      << missing.message();
  EXPECT_FALSE(loaded.trained());
}

TEST(Roofline, ReadsRealFeaturesOfAZooBlock) {
  auto spec = MakeZooBlock("resnet18_basic", ZooOptions{0.25, 0.25});
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  auto graph = PipelineGraph::Build(*spec);
  ASSERT_TRUE(graph.ok()) << graph.status().message();
  ScheduleSpace space(*graph);
  Featurizer featurizer(space);
  std::vector<Sample> samples;
  // 60 schedules: the fit on the first 30 of them leaves most predictions tied.
  for (uint64_t seed = 0; seed < 60; ++seed) {
    Sample s;
    s.pipeline_id = space.pipeline_id();
    ASSERT_TRUE(featurizer.Featurize(space.RandomSchedule(seed), &s.features).ok());
    s.seconds = 1e-3 * (1 + seed % 7);
    samples.push_back(std::move(s));
  }
  RooflineModel model(TestPeaks());
  for (const Sample& s : samples) {
    auto stages = model.Stages(s.features);
    ASSERT_TRUE(stages.ok()) << stages.status().message();
    EXPECT_GT(stages->size(), 0u);
    EXPECT_LE(static_cast<int>(stages->size()), s.features.num_stages);
    for (const RooflineStage& st : *stages) {
      EXPECT_TRUE(std::isfinite(st.compute_seconds) && st.compute_seconds >= 0);
      EXPECT_TRUE(std::isfinite(st.memory_seconds) && st.memory_seconds >= 0);
    }
  }
  ASSERT_TRUE(model.Train(samples, {}).ok());
  std::vector<const PipelineFeatures*> features;
  for (const Sample& s : samples) features.push_back(&s.features);
  auto predictions = model.Predict(features);
  ASSERT_TRUE(predictions.ok());
  std::set<double> distinct;
  for (const RuntimePrediction& p : *predictions) {
    EXPECT_TRUE(std::isfinite(p.mean_seconds));
    EXPECT_GT(p.mean_seconds, 0);
    distinct.insert(p.mean_seconds);
  }
  // The schedule changes the prediction (parallelism, vectorization, inlining, traffic).
  EXPECT_GT(distinct.size(), 10u);

  // As the search's cost model: the same predictions, each with the schedule's dependent
  // features in signed log scale (what diversity compares); walks' options get none.
  PerformanceCostModel cost_model(std::make_shared<RooflineModel>(model), "v1", featurizer,
                                  PartialMeaning::kDefaultCompletion);
  const ScheduleSpec first = space.RandomSchedule(0), second = space.RandomSchedule(1);
  auto searched = cost_model.Predict({&first, &second, &first});
  ASSERT_TRUE(searched.ok()) << searched.status().message();
  const size_t width = samples[0].features.dependent.size();
  ASSERT_EQ((*searched)[0].features.size(), width);
  EXPECT_EQ((*searched)[0].mean_seconds, (*predictions)[0].mean_seconds);
  EXPECT_EQ((*searched)[0].features, (*searched)[2].features);
  EXPECT_NE((*searched)[0].features, (*searched)[1].features);
  for (size_t f = 0; f < width; ++f) {
    const float x = samples[0].features.dependent[f];
    EXPECT_FLOAT_EQ((*searched)[0].features[f], std::copysign(std::log1p(std::fabs(x)), x));
  }
}

TEST(HostPeaks, MeasuredAndCached) {
  auto measured = MeasureHostPeaks();
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  // Loose bounds that any machine running these tests meets.
  EXPECT_GT(measured->flops_per_second, 1e8);
  EXPECT_LT(measured->flops_per_second, 1e14);
  EXPECT_GT(measured->bytes_per_second, 1e7);
  EXPECT_LT(measured->bytes_per_second, 1e13);
  EXPECT_GE(measured->cores, 1);
  EXPECT_FALSE(measured->cpu.empty());
  std::printf("host peaks: %s, %d cores, %s: %.3g FLOP/s, %.3g B/s\n", measured->cpu.c_str(),
              measured->cores, measured->isa.c_str(), measured->flops_per_second,
              measured->bytes_per_second);

  const std::string dir = testing::TempDir() + "/roofline_peaks_test";
  const std::string path = dir + "/sub/host_peaks.txt";
  std::remove(path.c_str());
  auto first = CachedHostPeaks(path);  // measures and writes, creating the directory
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = CachedHostPeaks(path);  // reads: identical to the last digit
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->flops_per_second, first->flops_per_second);
  EXPECT_EQ(second->bytes_per_second, first->bytes_per_second);

  // A cache written on this CPU is used as it is, whatever it says.
  {
    std::ofstream out(path, std::ios::trunc);
    out << "schedfarm.host_peaks.v1\ncpu " << first->cpu << "\ncores " << first->cores
        << "\nisa sse2\nflops_per_second 12345\nbytes_per_second 678\n";
  }
  auto cached = CachedHostPeaks(path);
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(cached->flops_per_second, 12345);
  EXPECT_EQ(cached->bytes_per_second, 678);
  EXPECT_EQ(cached->isa, "sse2");

  // Another CPU's cache, or a corrupt one, is measured over and rewritten.
  {
    std::ofstream out(path, std::ios::trunc);
    out << "schedfarm.host_peaks.v1\ncpu another cpu\ncores " << first->cores
        << "\nisa sse2\nflops_per_second 12345\nbytes_per_second 678\n";
  }
  auto remeasured = CachedHostPeaks(path);
  ASSERT_TRUE(remeasured.ok());
  EXPECT_GT(remeasured->flops_per_second, 1e8);
  EXPECT_EQ(remeasured->cpu, first->cpu);
  {
    std::ofstream out(path, std::ios::trunc);
    out << "garbage\n";
  }
  auto repaired = CachedHostPeaks(path);
  ASSERT_TRUE(repaired.ok());
  EXPECT_GT(repaired->bytes_per_second, 1e7);
  auto reread = CachedHostPeaks(path);
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(reread->bytes_per_second, repaired->bytes_per_second);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace schedfarm
