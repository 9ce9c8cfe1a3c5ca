// The Torch performance models (GCN, gcn0, LANN, BiLSTM) trained for real on a small synthetic
// dataset: real features (the Featurizer on random schedules of the zoo blocks and of
// random pipelines), but a synthetic runtime, a known function of the features
// (KnownRuntime below), so that a model that learns beats predicting the training mean
// on held-out pipelines whatever the noise of this machine.
#include "learner/torch/torch_models.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/blas_threads.h"
#include "gtest/gtest.h"
#include "learner/cost_model_adapter.h"
#include "learner/features.h"
#include "learner/kinds/model_kinds.h"
#include "learner/model.h"
#include "learner/model_evaluation.h"
#include "learner/roofline.h"
#include "learner/torch/ensemble.h"
#include "pipeline/graph.h"
#include "pipeline/random_pipeline.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"
#include "search/registry.h"
#include "search/stage_options.h"

namespace schedfarm {
namespace {

// ---------------------------------------------------------------------------------
// The datasets
// ---------------------------------------------------------------------------------

double SignedLog1p(double x) { return std::copysign(std::log1p(std::fabs(x)), x); }

// The runtime of a schedule as a known function of its features. With zi and zd a
// stage's signed-log1p features z-scored over the whole dataset, u and v fixed random
// directions, a stage costs exp(0.8 tanh(u . zi) + 0.8 tanh(v . zd)) ms and 30% more
// or less as its producers' dependent features point along v (a term only message
// passing sees stage by stage); the pipeline's runtime is the sum over its stages, the
// form the GCN's sum-pooled readout assumes.
class KnownRuntime {
 public:
  KnownRuntime(const FeatureSchema& schema, const std::vector<const PipelineFeatures*>& all)
      : inv_(schema.invariant_names.size()), dep_(schema.dependent_names.size()) {
    std::mt19937_64 rng(1234);
    std::normal_distribution<double> normal(0, 1);
    for (int c = 0; c < inv_; ++c) u_.push_back(normal(rng) / std::sqrt(inv_));
    for (int c = 0; c < dep_; ++c) v_.push_back(normal(rng) / std::sqrt(dep_));
    Fit(all, &PipelineFeatures::invariant, inv_, false, &inv_mean_, &inv_std_);
    Fit(all, &PipelineFeatures::dependent, dep_, true, &dep_mean_, &dep_std_);
  }

  double operator()(const PipelineFeatures& f) const {
    std::vector<double> zi(f.num_stages), zd(f.num_stages), producers(f.num_stages);
    for (int s = 0; s < f.num_stages; ++s) {
      for (int c = 0; c < inv_; ++c) {
        zi[s] += u_[c] * (SignedLog1p(f.invariant[s * inv_ + c]) - inv_mean_[c]) / inv_std_[c];
      }
      for (int c = 0; c < dep_; ++c) {
        zd[s] += v_[c] * (SignedLog1p(f.dependent[s * dep_ + c]) - dep_mean_[c]) / dep_std_[c];
      }
    }
    for (const auto& [p, c] : f.edges) producers[c] += zd[p];
    double ms = 0;
    for (int s = 0; s < f.num_stages; ++s) {
      ms += std::exp(0.8 * std::tanh(zi[s]) + 0.8 * std::tanh(zd[s])) *
            (1 + 0.3 * std::tanh(producers[s]));
    }
    return ms * 1e-3;
  }

 private:
  static void Fit(const std::vector<const PipelineFeatures*>& all,
                  std::vector<float> PipelineFeatures::*values, int columns, bool scheduled_only,
                  std::vector<double>* mean, std::vector<double>* stddev) {
    std::vector<double> sum(columns), square(columns);
    double rows = 0;
    for (const PipelineFeatures* f : all) {
      for (int s = 0; s < f->num_stages; ++s) {
        if (scheduled_only && !f->scheduled[s]) continue;
        rows += 1;
        for (int c = 0; c < columns; ++c) {
          const double x = SignedLog1p((f->*values)[s * columns + c]);
          sum[c] += x;
          square[c] += x * x;
        }
      }
    }
    for (int c = 0; c < columns; ++c) {
      mean->push_back(sum[c] / rows);
      const double variance = square[c] / rows - mean->back() * mean->back();
      stddev->push_back(variance > 1e-12 ? std::sqrt(variance) : 1.0);
    }
  }

  int inv_, dep_;
  std::vector<double> u_, v_;
  std::vector<double> inv_mean_, inv_std_, dep_mean_, dep_std_;
};

struct Dataset {
  std::vector<Sample> train, test;
};

// Every fourth pipeline is held out. Runtimes from KnownRuntime carry 2% noise, and
// their spread says so.
Dataset Label(const FeatureSchema& schema, std::vector<Sample> samples,
              const std::vector<int>& pipeline_of, uint64_t seed) {
  std::vector<const PipelineFeatures*> all;
  for (const Sample& s : samples) all.push_back(&s.features);
  const KnownRuntime runtime(schema, all);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.02);
  Dataset data;
  for (size_t i = 0; i < samples.size(); ++i) {
    const double seconds = runtime(samples[i].features);
    samples[i].seconds = seconds * (1 + noise(rng));
    samples[i].stddev_seconds = 0.02 * seconds;
    (pipeline_of[i] % 4 == 3 ? data.test : data.train).push_back(std::move(samples[i]));
  }
  return data;
}

// Real features: the zoo blocks (at two sizes), then random pipelines of up to 12
// operators, `schedules` random schedules of each, featurized by the Featurizer.
Dataset ZooDataset(int pipelines, int schedules, uint64_t seed) {
  std::vector<PipelineSpec> specs;
  for (double scale : {0.5, 1.0}) {
    for (const std::string& name : ZooNames()) {
      ZooOptions options;
      options.spatial_scale = scale;
      options.channel_scale = scale;
      StatusOr<PipelineSpec> spec = MakeZooBlock(name, options);
      EXPECT_TRUE(spec.ok()) << spec.status().ToString();
      if (spec.ok()) specs.push_back(*spec);
    }
  }
  RandomPipelineOptions random;
  random.max_ops = 12;
  for (uint64_t s = 1; static_cast<int>(specs.size()) < pipelines; ++s) {
    StatusOr<PipelineSpec> spec = RandomPipeline(seed * 1000 + s, random);
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (spec.ok()) specs.push_back(*spec);
  }
  specs.resize(pipelines);
  std::vector<Sample> samples;
  std::vector<int> pipeline_of;
  for (int p = 0; p < pipelines; ++p) {
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(specs[p]);
    EXPECT_TRUE(graph.ok()) << graph.status().ToString();
    if (!graph.ok()) continue;
    const ScheduleSpace space(*graph);
    const Featurizer featurizer(space);
    for (int k = 0; k < schedules; ++k) {
      Sample sample;
      sample.pipeline_id = space.pipeline_id();
      sample.schedule_hash = "schedule" + std::to_string(k);
      const Status status =
          featurizer.Featurize(space.RandomSchedule(seed * 7919 + p * 131 + k), &sample.features);
      EXPECT_TRUE(status.ok()) << status.ToString();
      if (!status.ok()) continue;
      samples.push_back(std::move(sample));
      pipeline_of.push_back(p);
    }
  }
  return Label(CurrentFeatureSchema(), std::move(samples), pipeline_of, seed);
}

// Synthetic features for any schema: random stage graphs (a chain plus skip edges) with
// random log-uniform feature values. Used where the schema itself is under test.
Dataset SyntheticDataset(const FeatureSchema& schema, int pipelines, int schedules, uint64_t seed) {
  const int inv = schema.invariant_names.size(), dep = schema.dependent_names.size();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> log_value(0, 8);
  std::bernoulli_distribution present(0.6);
  std::vector<Sample> samples;
  std::vector<int> pipeline_of;
  for (int p = 0; p < pipelines; ++p) {
    PipelineFeatures base;
    base.num_stages = std::uniform_int_distribution<int>(3, 10)(rng);
    for (int s = 0; s < base.num_stages; ++s) {
      for (int c = 0; c < inv; ++c) {
        base.invariant.push_back(present(rng) ? std::exp(log_value(rng)) : 0.0f);
      }
      base.flops += base.invariant[s * inv];
      if (s > 0) base.edges.emplace_back(s - 1, s);
      if (s > 1 && present(rng)) {
        base.edges.emplace_back(std::uniform_int_distribution<int>(0, s - 2)(rng), s);
      }
    }
    base.bytes = 4 * base.flops;
    base.scheduled.assign(base.num_stages, 1);
    for (int k = 0; k < schedules; ++k) {
      Sample sample;
      sample.pipeline_id = "synthetic" + std::to_string(p);
      sample.schedule_hash = "schedule" + std::to_string(k);
      sample.features = base;
      for (int i = 0; i < base.num_stages * dep; ++i) {
        sample.features.dependent.push_back(std::exp(log_value(rng)) - 1);
      }
      samples.push_back(std::move(sample));
      pipeline_of.push_back(p);
    }
  }
  return Label(schema, std::move(samples), pipeline_of, seed);
}

std::vector<const PipelineFeatures*> FeaturesOf(const std::vector<Sample>& samples) {
  std::vector<const PipelineFeatures*> result;
  for (const Sample& s : samples) result.push_back(&s.features);
  return result;
}

double Mape(const std::vector<Sample>& samples, const std::vector<double>& predicted) {
  double sum = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    sum += std::fabs(predicted[i] - samples[i].seconds) / samples[i].seconds;
  }
  return 100 * sum / samples.size();
}

std::vector<double> Means(const std::vector<RuntimePrediction>& predictions) {
  std::vector<double> result;
  for (const RuntimePrediction& p : predictions) result.push_back(p.mean_seconds);
  return result;
}

std::vector<RuntimePrediction> PredictOrDie(const PerformanceModel& model,
                                            const std::vector<Sample>& samples) {
  StatusOr<std::vector<RuntimePrediction>> predictions = model.Predict(FeaturesOf(samples));
  EXPECT_TRUE(predictions.ok()) << predictions.status().ToString();
  return predictions.ok() ? *predictions : std::vector<RuntimePrediction>();
}

// Trains `model` and compares its MAPE on the held-out pipelines with the MAPE of
// predicting the training mean; the model must be clearly better.
void ExpectBeatsTrainingMean(PerformanceModel& model, const TrainOptions& options) {
  const Dataset data = ZooDataset(96, 4, 7);
  const auto start = std::chrono::steady_clock::now();
  const Status trained = model.Train(data.train, options);
  ASSERT_TRUE(trained.ok()) << trained.ToString();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double mean = 0;
  for (const Sample& s : data.train) mean += s.seconds;
  mean /= data.train.size();
  const double baseline = Mape(data.test, std::vector<double>(data.test.size(), mean));
  const double mape = Mape(data.test, Means(PredictOrDie(model, data.test)));
  int64_t stages = 0;
  for (const Sample& s : data.train) stages += s.features.num_stages;
  std::printf(
      "%s: trained on %zu samples (%lld stages) in %.1f s; held-out MAPE %.1f%% vs "
      "%.1f%% for the training mean\n",
      model.kind().c_str(), data.train.size(), static_cast<long long>(stages), seconds, mape,
      baseline);
  EXPECT_LT(mape, 0.6 * baseline);
}

std::unique_ptr<PerformanceModel> Make(const std::string& kind) {
  StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
  EXPECT_TRUE(model.ok()) << model.status().ToString();
  return model.ok() ? std::move(*model) : MakeGcnModel();
}

TrainOptions Fast(int ensemble, int epochs = 0) {
  TrainOptions options;
  options.ensemble = ensemble;
  options.epochs = epochs;
  options.seed = 3;
  return options;
}

// ---------------------------------------------------------------------------------
// Accuracy
// ---------------------------------------------------------------------------------

TEST(TorchModelsTest, GcnBeatsTrainingMeanOnHeldOutPipelines) {
  std::unique_ptr<PerformanceModel> model = MakeGcnModel();
  EXPECT_EQ(model->kind(), "gcn");
  ExpectBeatsTrainingMean(*model, Fast(2));
}

// Runtimes spanning decades, as random schedules of random pipelines give: the known
// runtimes times (flops / 1e6)^0.3. The GCN must fit its own training set; with the
// paper's linear output and |predicted/measured - 1| loss it stayed above 100% MAPE
// (docs/MODELS.md, "Why the log output").
TEST(TorchModelsTest, GcnFitsRuntimesSpanningDecades) {
  Dataset data = ZooDataset(96, 4, 7);
  double fastest = 1e300, slowest = 0;
  for (Sample& s : data.train) {
    const double factor = std::pow(std::max(s.features.flops, 1.0) / 1e6, 0.3);
    s.seconds *= factor;
    s.stddev_seconds *= factor;
    fastest = std::min(fastest, s.seconds);
    slowest = std::max(slowest, s.seconds);
  }
  ASSERT_GT(slowest / fastest, 1e3) << "the runtimes must span decades";
  std::unique_ptr<PerformanceModel> model = MakeGcnModel();
  ASSERT_TRUE(model->Train(data.train, Fast(1, 40)).ok());
  const double mape = Mape(data.train, Means(PredictOrDie(*model, data.train)));
  std::printf("gcn: runtimes spanning %.0fx; training MAPE %.1f%%\n", slowest / fastest, mape);
  EXPECT_LT(mape, 50);
}

// The rank-loss kinds order the schedules of held-out pipelines (pairwise accuracy
// within each pipeline), and their predictions stay runtimes: the regression share of
// the loss keeps them near the measured seconds of the training set.
TEST(TorchModelsTest, RankLossKindsOrderTheSchedulesOfHeldOutPipelines) {
  const Dataset data = ZooDataset(48, 12, 13);
  for (const char* kind : {"sage", "gcn-rank"}) {
    std::unique_ptr<PerformanceModel> model = Make(kind);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(model->Train(data.train, Fast(2, 20)).ok()) << kind;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    StatusOr<EvalMetrics> held_out = EvaluateModel(*model, data.test);
    ASSERT_TRUE(held_out.ok()) << held_out.status().ToString();
    std::vector<double> ratios;
    const std::vector<double> predicted = Means(PredictOrDie(*model, data.train));
    for (size_t i = 0; i < predicted.size(); ++i) {
      ratios.push_back(predicted[i] / data.train[i].seconds);
    }
    std::sort(ratios.begin(), ratios.end());
    const double median_ratio = ratios[ratios.size() / 2];
    std::printf(
        "%s: trained on %zu samples in %.1f s; held-out pairwise accuracy %.3f, "
        "tau %.3f, top-1 regret %.3f; median predicted/measured on training %.2f\n",
        kind, data.train.size(), seconds, held_out->pairwise_accuracy, held_out->kendall_tau,
        held_out->top1_regret, median_ratio);
    EXPECT_GT(held_out->pairwise_accuracy, 0.75) << kind;
    // Within a factor 4 of the runtimes (measured: sage 0.69 and gcn-rank 2.10 under
    // feature schema 3, 1.58 and 3.22 under schema 4, whose host columns change the
    // networks' shapes and so their random start); a rank loss alone would leave their
    // level free, by orders of magnitude.
    EXPECT_GT(median_ratio, 1.0 / 4) << kind;
    EXPECT_LT(median_ratio, 4.0) << kind;
  }
}

// With early stopping, a member stops a few epochs after its best validation epoch and
// keeps that epoch's weights: a larger epoch limit trains the same model, and it still
// ranks held-out pipelines.
TEST(TorchModelsTest, EarlyStoppingEndsTrainingBeforeTheEpochLimit) {
  const Dataset data = ZooDataset(48, 12, 13);
  for (const char* kind : {"sage", "gcn-rank"}) {
    std::vector<std::vector<RuntimePrediction>> predictions;
    for (int epochs : {60, 400}) {
      std::unique_ptr<PerformanceModel> model = Make(kind);
      TrainOptions options = Fast(1, epochs);
      options.early_stopping = true;
      ASSERT_TRUE(model->Train(data.train, options).ok()) << kind;
      predictions.push_back(PredictOrDie(*model, data.test));
      if (epochs == 60) {
        StatusOr<EvalMetrics> held_out = EvaluateModel(*model, data.test);
        ASSERT_TRUE(held_out.ok()) << held_out.status().ToString();
        EXPECT_GT(held_out->pairwise_accuracy, 0.7) << kind;
      }
    }
    for (size_t i = 0; i < data.test.size(); ++i) {
      EXPECT_EQ(predictions[0][i].mean_seconds, predictions[1][i].mean_seconds)
          << kind << " schedule " << i;
    }
  }
}

TEST(TorchModelsTest, Gcn0BeatsTrainingMeanOnHeldOutPipelines) {
  StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel("gcn0");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  EXPECT_EQ((*model)->kind(), "gcn0");
  ExpectBeatsTrainingMean(**model, Fast(2));
}

TEST(TorchModelsTest, LannBeatsTrainingMeanOnHeldOutPipelines) {
  std::unique_ptr<PerformanceModel> model = MakeLannModel();
  EXPECT_EQ(model->kind(), "lann");
  ExpectBeatsTrainingMean(*model, Fast(2));
}

TEST(TorchModelsTest, BilstmBeatsTrainingMeanOnHeldOutPipelines) {
  std::unique_ptr<PerformanceModel> model = MakeBilstmModel();
  EXPECT_EQ(model->kind(), "bilstm");
  ExpectBeatsTrainingMean(*model, Fast(1));
}

// A partial schedule (the features of its undecided stages zeroed, their flag 0) is
// scored, and differently from the complete schedule it comes from.
TEST(TorchModelsTest, BilstmScoresPartialSchedules) {
  const Dataset data = ZooDataset(12, 6, 13);
  std::unique_ptr<PerformanceModel> model = MakeBilstmModel();
  ASSERT_TRUE(model->Train(data.train, Fast(1, 10)).ok());
  const size_t dep = CurrentFeatureSchema().dependent_names.size();
  std::vector<Sample> partial = data.test;
  int differing = 0;
  for (Sample& s : partial) {
    const int undecided = s.features.num_stages / 2 + 1;
    for (int stage = s.features.num_stages - undecided; stage < s.features.num_stages; ++stage) {
      s.features.scheduled[stage] = 0;
      std::fill_n(s.features.dependent.begin() + stage * dep, dep, 0.0f);
    }
  }
  const std::vector<RuntimePrediction> complete = PredictOrDie(*model, data.test);
  const std::vector<RuntimePrediction> prefixes = PredictOrDie(*model, partial);
  ASSERT_EQ(prefixes.size(), complete.size());
  for (size_t i = 0; i < prefixes.size(); ++i) {
    EXPECT_TRUE(std::isfinite(prefixes[i].mean_seconds) && prefixes[i].mean_seconds > 0);
    if (prefixes[i].mean_seconds != complete[i].mean_seconds) ++differing;
  }
  EXPECT_EQ(differing, static_cast<int>(prefixes.size()));
}

// A warm start continues from the trained weights: one more epoch keeps the fit of
// the trained model, where one epoch from scratch is far from it. The BiLSTM continues
// at its learning rate; the GCN and sage, whose optimizers restart, at a tenth of it
// (kWarmLearningRateScale; docs/MODELS.md, "Warm start"). What a fine-tuning of a
// pretrained model (model_from: pretrained) rests on.
TEST(TorchModelsTest, WarmStartContinuesFromTheTrainedModel) {
  const Dataset data = ZooDataset(48, 4, 9);
  for (const std::string kind : {"bilstm", "gcn", "sage"}) {
    std::unique_ptr<PerformanceModel> trained = Make(kind);
    ASSERT_TRUE(trained->Train(data.train, Fast(1, 30)).ok());
    const double trained_mape = Mape(data.train, Means(PredictOrDie(*trained, data.train)));
    std::unique_ptr<PerformanceModel> warm = Make(kind);
    ASSERT_TRUE(warm->Load(*trained->Save()).ok());
    TrainOptions options = Fast(1, 1);
    options.warm_start = true;
    ASSERT_TRUE(warm->Train(data.train, options).ok());
    const double warm_mape = Mape(data.train, Means(PredictOrDie(*warm, data.train)));
    std::unique_ptr<PerformanceModel> cold = Make(kind);
    ASSERT_TRUE(cold->Train(data.train, options).ok());  // untrained: from scratch
    const double cold_mape = Mape(data.train, Means(PredictOrDie(*cold, data.train)));
    std::printf(
        "%s: training MAPE %.1f%% after 30 epochs, %.1f%% after one more (warm), "
        "%.1f%% after one from scratch\n",
        kind.c_str(), trained_mape, warm_mape, cold_mape);
    EXPECT_LT(warm_mape, 1.5 * trained_mape + 5) << kind;
    EXPECT_LT(warm_mape, cold_mape) << kind;
  }
}

// ---------------------------------------------------------------------------------
// Save and load
// ---------------------------------------------------------------------------------

void ExpectRoundTrip(const std::string& kind) {
  const Dataset data = ZooDataset(12, 6, 11);
  StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE((*model)->Train(data.train, Fast(3, 5)).ok());
  StatusOr<std::string> bytes = (*model)->Save();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  StatusOr<std::unique_ptr<PerformanceModel>> loaded = MakePerformanceModel(kind);
  ASSERT_TRUE(loaded.ok());
  const Status status = (*loaded)->Load(*bytes);
  ASSERT_TRUE(status.ok()) << status.ToString();
  const std::vector<RuntimePrediction> before = PredictOrDie(**model, data.test);
  const std::vector<RuntimePrediction> after = PredictOrDie(**loaded, data.test);
  ASSERT_EQ(before.size(), data.test.size());
  ASSERT_EQ(after.size(), before.size());
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(before[i].mean_seconds, after[i].mean_seconds) << kind << " sample " << i;
    EXPECT_EQ(before[i].stddev_seconds, after[i].stddev_seconds) << kind << " sample " << i;
  }
  // Saving the loaded model gives a model that predicts the same again.
  StatusOr<std::string> again = (*loaded)->Save();
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*model)->Load(*again).ok());
  EXPECT_EQ(PredictOrDie(**model, data.test)[0].mean_seconds, before[0].mean_seconds);
}

TEST(TorchModelsTest, SaveLoadRoundTripGivesIdenticalPredictions) {
  for (const char* kind : {"gcn", "gcn-rank", "gcn0", "sage", "lann", "bilstm"}) {
    ExpectRoundTrip(kind);
  }
}

TEST(TorchModelsTest, LoadAdoptsSavedHyperparameters) {
  const Dataset data = ZooDataset(8, 4, 5);
  GcnOptions options;
  options.layers = 4;
  options.edges = GcnEdges::kProducers;
  std::unique_ptr<PerformanceModel> deep = MakeGcnModel(options);
  ASSERT_TRUE(deep->Train(data.train, Fast(1, 2)).ok());
  std::unique_ptr<PerformanceModel> plain = MakeGcnModel();
  ASSERT_TRUE(plain->Load(*deep->Save()).ok());
  EXPECT_EQ(PredictOrDie(*plain, data.test)[0].mean_seconds,
            PredictOrDie(*deep, data.test)[0].mean_seconds);
}

// ---------------------------------------------------------------------------------
// Ensembles, depth, options
// ---------------------------------------------------------------------------------

// Features far outside the training data: every raw value multiplied by 1e4.
PipelineFeatures FarAway(PipelineFeatures f) {
  for (float& v : f.invariant) v *= 1e4f;
  for (float& v : f.dependent) v *= 1e4f;
  f.flops *= 1e4;
  return f;
}

void ExpectEnsembleSpread(const std::string& kind) {
  const Dataset data = ZooDataset(24, 12, 21);
  StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
  ASSERT_TRUE(model.ok());
  ASSERT_TRUE((*model)->Train(data.train, Fast(5, kind == "lann" ? 0 : 20)).ok());
  std::vector<PipelineFeatures> far;
  for (const Sample& s : data.test) far.push_back(FarAway(s.features));
  std::vector<const PipelineFeatures*> far_pointers;
  for (const PipelineFeatures& f : far) far_pointers.push_back(&f);
  const std::vector<RuntimePrediction> near = PredictOrDie(**model, data.test);
  StatusOr<std::vector<RuntimePrediction>> away = (*model)->Predict(far_pointers);
  ASSERT_TRUE(away.ok()) << away.status().ToString();
  // The relative spread (std / mean), averaged, so that larger predictions alone do
  // not count as more uncertainty.
  auto relative_spread = [](const std::vector<RuntimePrediction>& predictions) {
    double sum = 0;
    for (const RuntimePrediction& p : predictions) {
      EXPECT_GT(p.stddev_seconds, 0);
      sum += p.stddev_seconds / p.mean_seconds;
    }
    return sum / predictions.size();
  };
  const double near_spread = relative_spread(near);
  const double far_spread = relative_spread(*away);
  std::printf("%s: relative ensemble spread %.3f on held-out pipelines, %.3f far away\n",
              kind.c_str(), near_spread, far_spread);
  // Far away, gcn0's, sage's and lann's spreads grow (4.2x, 1.9x and 9.8x on the zoo
  // schedules under feature schema 3; 3.3x, 1.22x and 7.3x under schema 4, whose host
  // columns change the networks' shapes and so their random start). The GCN's does not
  // reliably: 1.39x (0.42 against 0.30) on the schedules of the space before its rule 5,
  // 0.55x (0.24 against 0.44) after, 2.2x under schema 4, so for it only a positive
  // spread is asked.
  if (kind != "gcn") {
    EXPECT_GT(far_spread, 1.1 * near_spread) << kind;
  }
}

TEST(TorchModelsTest, EnsembleSpreadIsPositiveAndLargerFarFromTrainingData) {
  for (const char* kind : {"gcn", "gcn0", "sage", "lann"}) ExpectEnsembleSpread(kind);
}

TEST(TorchModelsTest, SingleMemberHasNoSpread) {
  const Dataset data = ZooDataset(8, 4, 5);
  std::unique_ptr<PerformanceModel> model = MakeGcnModel();
  ASSERT_TRUE(model->Train(data.train, Fast(1, 2)).ok());
  for (const RuntimePrediction& p : PredictOrDie(*model, data.test)) {
    EXPECT_GT(p.mean_seconds, 0);
    EXPECT_EQ(p.stddev_seconds, 0);
    EXPECT_TRUE(p.member_seconds.empty());
  }
}

// Every ensemble gives each member's prediction, whose mean and population stddev are
// the prediction's.
TEST(TorchModelsTest, EnsemblesGiveEachMembersPrediction) {
  const Dataset data = ZooDataset(8, 4, 5);
  for (const char* kind : {"gcn", "gcn-rank", "gcn0", "sage", "lann", "bilstm"}) {
    std::unique_ptr<PerformanceModel> model = Make(kind);
    ASSERT_TRUE(model->Train(data.train, Fast(3, 2)).ok()) << kind;
    for (const RuntimePrediction& p : PredictOrDie(*model, data.test)) {
      ASSERT_EQ(p.member_seconds.size(), 3u) << kind;
      double mean = 0;
      for (double s : p.member_seconds) mean += s / 3;
      double variance = 0;
      for (double s : p.member_seconds) variance += (s - mean) * (s - mean) / 3;
      EXPECT_NEAR(p.mean_seconds, mean, 1e-12 * mean) << kind;
      EXPECT_NEAR(p.stddev_seconds, std::sqrt(variance), 1e-9 * mean) << kind;
      EXPECT_GT(p.stddev_seconds, 0) << kind << ": members of other seeds disagree";
    }
  }
}

TEST(TorchModelsTest, EveryDepthFromZeroToEightTrainsAndPredicts) {
  const Dataset data = ZooDataset(8, 4, 5);
  for (int layers = 0; layers <= 8; ++layers) {
    GcnOptions options;
    options.layers = layers;
    std::unique_ptr<PerformanceModel> model = MakeGcnModel(options);
    EXPECT_EQ(model->kind(), layers == 0 ? "gcn0" : "gcn");
    const Status status = model->Train(data.train, Fast(1, 2));
    ASSERT_TRUE(status.ok()) << "layers " << layers << ": " << status.ToString();
    for (const RuntimePrediction& p : PredictOrDie(*model, data.test)) {
      EXPECT_TRUE(std::isfinite(p.mean_seconds) && p.mean_seconds > 0) << "layers " << layers;
    }
  }
}

TEST(TorchModelsTest, EdgeDirectionsChangeWhatAStageSees) {
  const Dataset data = ZooDataset(8, 4, 5);
  std::vector<std::vector<double>> predictions;
  for (GcnEdges edges : {GcnEdges::kBoth, GcnEdges::kProducers, GcnEdges::kConsumers}) {
    GcnOptions options;
    options.edges = edges;
    std::unique_ptr<PerformanceModel> model = MakeGcnModel(options);
    ASSERT_TRUE(model->Train(data.train, Fast(1, 10)).ok());
    predictions.push_back(Means(PredictOrDie(*model, data.train)));
  }
  // Same seed, same initial weights, same batches: only the neighbourhoods differ.
  EXPECT_NE(predictions[0], predictions[1]);
  EXPECT_NE(predictions[0], predictions[2]);
  EXPECT_NE(predictions[1], predictions[2]);
}

TEST(TorchModelsTest, TrainingIsDeterministicForASeed) {
  const Dataset data = ZooDataset(8, 4, 5);
  for (const char* kind : {"gcn", "gcn-rank", "sage", "lann", "bilstm"}) {
    std::vector<double> runs[2];
    for (int run = 0; run < 2; ++run) {
      StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
      ASSERT_TRUE((*model)->Train(data.train, Fast(2, 3)).ok());
      runs[run] = Means(PredictOrDie(**model, data.test));
    }
    EXPECT_EQ(runs[0], runs[1]) << kind;
  }
}

TEST(TorchModelsTest, TimeLimitStopsTraining) {
  const Dataset data = ZooDataset(12, 8, 5);
  std::unique_ptr<PerformanceModel> model = MakeGcnModel();
  TrainOptions options = Fast(2, 100000);
  options.time_limit_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(model->Train(data.train, options).ok());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 5);
  EXPECT_EQ(PredictOrDie(*model, data.test).size(), data.test.size());
}

TEST(TorchModelsTest, TrainSetsThreadsAndRestoresThem) {
  const Dataset data = ZooDataset(8, 4, 5);
  SetTorchThreads(2);
  std::unique_ptr<PerformanceModel> model = MakeLannModel();
  TrainOptions options = Fast(1, 10);
  options.threads = 1;
  ASSERT_TRUE(model->Train(data.train, options).ok());
  EXPECT_EQ(TorchThreads(), 2);
}

// OpenBLAS's own pool is the process's (common/blas_threads.h): its owner sizes it once,
// and neither Torch's thread count nor a training on fewer threads changes it while
// another thread may be inside BLAS.
TEST(TorchModelsTest, TheBlasPoolIsSetOnceByItsOwner) {
  using GetThreads = int (*)();
  const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  if (get == nullptr) GTEST_SKIP() << "the BLAS library loaded is not OpenBLAS";
  SetBlasThreads(2);
  EXPECT_EQ(get(), 2);
  SetTorchThreads(1);
  EXPECT_EQ(get(), 2);
  const Dataset data = ZooDataset(8, 4, 5);
  std::unique_ptr<PerformanceModel> model = MakeLannModel();
  TrainOptions options = Fast(1, 10);
  options.threads = 1;
  ASSERT_TRUE(model->Train(data.train, options).ok());
  EXPECT_EQ(get(), 2);
  SetBlasThreads(1);
  EXPECT_EQ(get(), 1);
}

// A training stops between two epochs when TrainOptions.between_epochs says so, with
// an error, after calling it between every two epochs and never before the first.
TEST(TorchModelsTest, BetweenEpochsIsCalledBetweenEpochsAndCanStopTheTraining) {
  const Dataset data = ZooDataset(8, 4, 5);
  for (const std::string kind : {"gcn", "lann", "gbt"}) {
    StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
    ASSERT_TRUE(model.ok()) << model.status().message();
    TrainOptions options = Fast(1, 6);
    int calls = 0;
    options.between_epochs = [&calls] { return ++calls < 3; };
    const Status stopped = (*model)->Train(data.train, options);
    EXPECT_FALSE(stopped.ok()) << kind;
    EXPECT_NE(stopped.message().find("stopped between"), std::string::npos) << stopped.message();
    EXPECT_EQ(calls, 3) << kind;
    calls = -1000;
    EXPECT_TRUE((*model)->Train(data.train, options).ok()) << kind;
    EXPECT_GT(calls, -1000) << kind << ": called";
  }
}

// ---------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------

void ExpectError(const Status& status, const std::string& fragment) {
  ASSERT_FALSE(status.ok()) << "expected an error containing '" << fragment << "'";
  EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
}

TEST(TorchModelsTest, BadInputsGiveClearErrors) {
  const Dataset data = ZooDataset(8, 4, 5);
  for (const char* kind : {"gcn", "gcn-rank", "gcn0", "sage", "lann", "bilstm"}) {
    std::unique_ptr<PerformanceModel> model = Make(kind);
    ExpectError(model->Train({}, Fast(1)), "the training set is empty");
    ExpectError(model->Predict(FeaturesOf(data.test)).status(), "not trained");
    ExpectError(model->Save().status(), "not trained");

    std::vector<Sample> bad = data.train;
    bad[3].seconds = -1;
    ExpectError(model->Train(bad, Fast(1)), "training sample 3");
    bad = data.train;
    bad[2].features.dependent.pop_back();
    ExpectError(model->Train(bad, Fast(1)), "another schema version");
    bad = data.train;
    bad[1].features.edges.emplace_back(0, 99);
    ExpectError(model->Train(bad, Fast(1)), "outside");
    bad = data.train;
    bad[1].features.invariant[0] = std::nanf("");
    ExpectError(model->Train(bad, Fast(1)), "not finite");

    ASSERT_TRUE(model->Train(data.train, Fast(1, 1)).ok());
    PipelineFeatures wrong = data.test[0].features;
    wrong.invariant.push_back(1);
    ExpectError(model->Predict({&data.test[0].features, &wrong}).status(), "features 1");
    ExpectError(model->Predict({nullptr}).status(), "null");
    ExpectError(model->Load("not a model"), "not a saved Torch model");
  }
  GcnOptions too_deep;
  too_deep.layers = 9;
  ExpectError(MakeGcnModel(too_deep)->Train(data.train, Fast(1)), "layers must be 0..8");
  BilstmOptions odd;
  odd.embedding = 63;
  ExpectError(MakeBilstmModel(odd)->Train(data.train, Fast(1)), "embedding must be even");
  SageOptions too_deep_sage;
  too_deep_sage.layers = 9;
  ExpectError(MakeSageModel(too_deep_sage)->Train(data.train, Fast(1)), "layers must be 0..8");
}

// ---------------------------------------------------------------------------------
// Scoring variants
// ---------------------------------------------------------------------------------

// A search step's options scored from one pass over the first (PredictVariants,
// through the search layer's PredictOptions) give the numbers of each state scored
// whole (Predict): random partial states of zoo blocks and random pipelines, up to 40
// options of the next stage each.
void ExpectVariantsScoreAsWholeStates(const std::string& kind, PartialMeaning meaning) {
  const Dataset data = ZooDataset(12, 6, 31);
  std::unique_ptr<PerformanceModel> trained = Make(kind);
  ASSERT_TRUE(trained->Train(data.train, Fast(2, 3)).ok());
  const std::shared_ptr<const PerformanceModel> model = std::move(trained);
  std::vector<PipelineSpec> specs;
  for (const std::string& name : ZooNames()) {
    StatusOr<PipelineSpec> spec = MakeZooBlock(name, ZooOptions());
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    specs.push_back(*spec);
  }
  RandomPipelineOptions random;
  random.max_ops = 16;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    StatusOr<PipelineSpec> spec = RandomPipeline(500 + seed, random);
    ASSERT_TRUE(spec.ok()) << spec.status().ToString();
    specs.push_back(*spec);
  }
  int compared = 0;
  double worst = 0;
  for (const PipelineSpec& spec : specs) {
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(spec);
    ASSERT_TRUE(graph.ok()) << graph.status().ToString();
    const ScheduleSpace space(*graph);
    const Featurizer featurizer(space);
    PerformanceCostModel scorer(model, "v", featurizer, meaning);
    const int stages = static_cast<int>(space.decision_order().size());
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      ScheduleSpec partial = space.RandomCompletion(space.Empty(), seed);
      const int decided = static_cast<int>((seed * 7) % stages);
      partial.mutable_stages()->DeleteSubrange(decided, stages - decided);
      partial.set_partial(true);
      SpaceRng rng(seed);
      bool sampled = false;
      const std::vector<StageSchedule> options = CappedOptions(space, partial, 40, rng, &sampled);
      StatusOr<std::vector<RuntimePrediction>> fast = scorer.PredictOptions(partial, options);
      ASSERT_TRUE(fast.ok()) << fast.status().ToString();
      std::vector<ScheduleSpec> states(options.size(), partial);
      std::vector<const ScheduleSpec*> pointers;
      for (size_t i = 0; i < options.size(); ++i) {
        *states[i].add_stages() = options[i];
        states[i].set_partial(decided + 1 < stages);
        pointers.push_back(&states[i]);
      }
      StatusOr<std::vector<RuntimePrediction>> whole = scorer.Predict(pointers);
      ASSERT_TRUE(whole.ok()) << whole.status().ToString();
      ASSERT_EQ(fast->size(), whole->size());
      for (size_t i = 0; i < fast->size(); ++i) {
        const RuntimePrediction& a = (*fast)[i];
        const RuntimePrediction& b = (*whole)[i];
        worst = std::max(worst, std::fabs(a.mean_seconds / b.mean_seconds - 1));
        ASSERT_EQ(a.member_seconds.size(), b.member_seconds.size());
        for (size_t k = 0; k < a.member_seconds.size(); ++k) {
          worst = std::max(worst, std::fabs(a.member_seconds[k] / b.member_seconds[k] - 1));
        }
      }
      compared += static_cast<int>(options.size());
    }
  }
  EXPECT_LT(worst, 1e-4) << kind << ": the largest relative difference";
  EXPECT_GT(compared, 200);
  // Scored incrementally: every batch went through the model's own variant scoring,
  // none fell back to scoring each variant in full.
  const auto* ensemble = dynamic_cast<const torch_models::TorchEnsembleModel*>(model.get());
  ASSERT_NE(ensemble, nullptr) << kind;
  EXPECT_GT(ensemble->variant_batches(), 0) << kind;
  EXPECT_EQ(ensemble->variant_batches_in_full(), 0) << kind << ": fell back to whole states";
  std::printf("%s: %d states, largest relative difference %.2g\n", kind.c_str(), compared, worst);
}

TEST(TorchModelsTest, GcnVariantsScoreAsWholeStates) {
  ExpectVariantsScoreAsWholeStates("gcn", PartialMeaning::kDefaultCompletion);
  ExpectVariantsScoreAsWholeStates("gcn0", PartialMeaning::kDefaultCompletion);
}

TEST(TorchModelsTest, SageVariantsScoreAsWholeStates) {
  ExpectVariantsScoreAsWholeStates("sage", PartialMeaning::kDefaultCompletion);
}

// The BiLSTM as a cost model (default completion) and as a value function (partial
// states as they are: an option changes its own stage's row only).
TEST(TorchModelsTest, BilstmVariantsScoreAsWholeStates) {
  ExpectVariantsScoreAsWholeStates("bilstm", PartialMeaning::kDefaultCompletion);
  ExpectVariantsScoreAsWholeStates("bilstm", PartialMeaning::kBestReachable);
}

// A step with one option: the only variant is the base, and no row changes.
TEST(TorchModelsTest, AVariantEqualToTheBaseScoresAsTheBase) {
  const Dataset data = ZooDataset(12, 6, 31);
  for (const char* kind : {"gcn", "sage", "bilstm"}) {
    std::unique_ptr<PerformanceModel> model = Make(kind);
    ASSERT_TRUE(model->Train(data.train, Fast(2, 2)).ok());
    const PipelineFeatures& base = data.train.front().features;
    StatusOr<std::vector<RuntimePrediction>> variant = model->PredictVariants(base, {&base});
    StatusOr<std::vector<RuntimePrediction>> whole = model->Predict({&base});
    ASSERT_TRUE(variant.ok()) << kind << ": " << variant.status().ToString();
    ASSERT_TRUE(whole.ok()) << whole.status().ToString();
    EXPECT_NEAR((*variant)[0].mean_seconds / (*whole)[0].mean_seconds, 1, 1e-5) << kind;
  }
}

TEST(TorchModelsTest, VariantsOfAnotherPipelineAreRefused) {
  const Dataset data = ZooDataset(12, 6, 31);
  std::unique_ptr<PerformanceModel> model = Make("gcn");
  ASSERT_TRUE(model->Train(data.train, Fast(1, 2)).ok());
  const PipelineFeatures& base = data.train.front().features;
  const PipelineFeatures* other = nullptr;
  for (const Sample& s : data.train) {
    if (s.features.num_stages != base.num_stages) other = &s.features;
  }
  ASSERT_NE(other, nullptr);
  ExpectError(model->PredictVariants(base, {&base, other}).status(),
              "variant 1 is of another pipeline than the base");
}

// The one table of makers covers the search registry's kinds, in its order, and each
// maker makes the kind it is named for; an unknown kind is refused naming the known.
TEST(ModelKindsTest, EveryKindOfTheRegistryIsMadeUnderItsName) {
  std::vector<std::string> makers;
  for (const ModelMaker& maker : ModelMakers()) makers.push_back(maker.name);
  EXPECT_EQ(makers, ModelKindNames());
  for (const std::string& kind : ModelKindNames()) {
    StatusOr<std::unique_ptr<PerformanceModel>> model = MakePerformanceModel(kind);
    ASSERT_TRUE(model.ok()) << kind << ": " << model.status().ToString();
    EXPECT_EQ((*model)->kind(), kind);
  }
  ExpectError(MakePerformanceModel("lstm").status(), "unknown model kind 'lstm'");
  ExpectError(MakePerformanceModel("lstm").status(), "gcn-rank");
}

TEST(TorchModelsTest, LoadRefusesAnotherKindAndAnotherFeatureSchema) {
  const Dataset data = ZooDataset(8, 4, 5);
  std::unique_ptr<PerformanceModel> gcn0 = Make("gcn0");
  ASSERT_TRUE(gcn0->Train(data.train, Fast(1, 1)).ok());
  ExpectError(MakeGcnModel()->Load(*gcn0->Save()), "hold a 'gcn0' model, not 'gcn'");
  std::unique_ptr<PerformanceModel> ranked = Make("gcn-rank");
  ASSERT_TRUE(ranked->Train(data.train, Fast(1, 1)).ok());
  ExpectError(MakeGcnModel()->Load(*ranked->Save()), "hold a 'gcn-rank' model, not 'gcn'");

  // A model of another schema version (one more dependent column).
  FeatureSchema other = CurrentFeatureSchema();
  other.version += 1;
  other.dependent_names.push_back("extra");
  const Dataset other_data = SyntheticDataset(other, 8, 4, 5);
  for (const char* kind : {"gcn", "lann"}) {
    std::unique_ptr<PerformanceModel> trained =
        std::string(kind) == "gcn" ? MakeGcnModel({}, other) : MakeLannModel({}, other);
    ASSERT_TRUE(trained->Train(other_data.train, Fast(1, 1)).ok());
    StatusOr<std::string> bytes = trained->Save();
    ASSERT_TRUE(bytes.ok());
    std::unique_ptr<PerformanceModel> current = Make(kind);
    ExpectError(current->Load(*bytes),
                "trained on feature schema version " + std::to_string(other.version));
    // Its features do not fit a model of the current schema either.
    ASSERT_TRUE(current->Train(data.train, Fast(1, 1)).ok());
    ExpectError(current->Predict({&other_data.test[0].features}).status(),
                "another schema version");
    // Same version number, different column names.
    FeatureSchema renamed = CurrentFeatureSchema();
    renamed.invariant_names[0] += "_renamed";
    std::unique_ptr<PerformanceModel> trained_renamed =
        std::string(kind) == "gcn" ? MakeGcnModel({}, renamed) : MakeLannModel({}, renamed);
    ASSERT_TRUE(trained_renamed->Train(data.train, Fast(1, 1)).ok());
    ExpectError(current->Load(*trained_renamed->Save()), "column names differ");
  }
}

// ---------------------------------------------------------------------------------
// TorchScript
// ---------------------------------------------------------------------------------

// Runs the exported module with Debian's python3-torch on the batched features of
// `samples` and returns (mean, std) per sample as Python computes them.
constexpr char kPythonCheck[] = R"py(
import sys
import torch

module = torch.jit.load(sys.argv[1])
with open(sys.argv[2]) as f:
    tokens = f.read().split()
pos = 0
def take(count, kind):
    global pos
    values = [kind(t) for t in tokens[pos:pos + count]]
    pos += count
    return values
n, inv, dep, edges = take(4, int)
invariant = torch.tensor(take(n * inv, float), dtype=torch.float32).reshape(n, inv)
dependent = torch.tensor(take(n * dep, float), dtype=torch.float32).reshape(n, dep)
scheduled = torch.tensor(take(n, float), dtype=torch.float32)
edge_index = torch.tensor(take(2 * edges, int), dtype=torch.int64).reshape(2, edges)
graph_index = torch.tensor(take(n, int), dtype=torch.int64)
graphs = int(graph_index.max()) + 1
flops = torch.tensor(take(graphs, float), dtype=torch.float64)
assert module.kind == sys.argv[3], module.kind
assert (len(module.invariant_names), len(module.dependent_names)) == (inv, dep)
print(module.feature_schema_version)
mean, std = module(invariant, dependent, scheduled, edge_index, graph_index, flops)
for m, s in zip(mean.tolist(), std.tolist()):
    print(repr(m), repr(s))
)py";

std::string WriteBatch(const std::vector<Sample>& samples, const std::string& path) {
  std::ofstream out(path);
  out.precision(9);
  int64_t n = 0, edges = 0;
  for (const Sample& s : samples) {
    n += s.features.num_stages;
    edges += s.features.edges.size();
  }
  const FeatureSchema& schema = CurrentFeatureSchema();
  out << n << " " << schema.invariant_names.size() << " " << schema.dependent_names.size() << " "
      << edges << "\n";
  for (const Sample& s : samples) {
    for (float v : s.features.invariant) out << v << " ";
  }
  out << "\n";
  for (const Sample& s : samples) {
    for (float v : s.features.dependent) out << v << " ";
  }
  out << "\n";
  for (const Sample& s : samples) {
    for (uint8_t v : s.features.scheduled) out << int(v) << " ";
  }
  out << "\n";
  for (int row = 0; row < 2; ++row) {
    int64_t offset = 0;
    for (const Sample& s : samples) {
      for (const auto& e : s.features.edges) out << offset + (row == 0 ? e.first : e.second) << " ";
      offset += s.features.num_stages;
    }
    out << "\n";
  }
  for (size_t g = 0; g < samples.size(); ++g) {
    for (int s = 0; s < samples[g].features.num_stages; ++s) out << g << " ";
  }
  out << "\n";
  out.precision(17);
  for (const Sample& s : samples) out << s.features.flops << " ";
  out << "\n";
  return path;
}

class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("schedfarm_torch_models_test_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

void ExpectPythonAgrees(std::unique_ptr<PerformanceModel> model) {
  const Dataset data = ZooDataset(12, 6, 17);
  ASSERT_TRUE(model->Train(data.train, Fast(3, 5)).ok());
  std::vector<Sample> samples(data.test.begin(), data.test.begin() + 8);
  // A partial schedule: its last stage is not decided yet.
  samples[1].features.scheduled.back() = 0;
  std::fill(samples[1].features.dependent.end() - CurrentFeatureSchema().dependent_names.size(),
            samples[1].features.dependent.end(), 0.0f);
  const std::vector<RuntimePrediction> cpp = PredictOrDie(*model, samples);

  TempDir dir;
  const Status exported = ExportTorchScript(*model, dir / "model.pt");
  ASSERT_TRUE(exported.ok()) << exported.ToString();
  std::ofstream(dir / "check.py") << kPythonCheck;
  WriteBatch(samples, dir / "batch.txt");
  const std::string command = "/usr/bin/python3 " + dir / "check.py" + " " + dir / "model.pt" +
                              " " + dir / "batch.txt" + " " + model->kind() + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string output;
  char buffer[4096];
  while (size_t got = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, got);
  ASSERT_EQ(pclose(pipe), 0) << output;
  std::istringstream lines(output);
  int schema_version = 0;
  ASSERT_TRUE(lines >> schema_version) << output;
  EXPECT_EQ(schema_version, CurrentFeatureSchema().version);
  for (size_t i = 0; i < samples.size(); ++i) {
    double mean = 0, stddev = 0;
    ASSERT_TRUE(lines >> mean >> stddev) << output;
    EXPECT_NEAR(mean, cpp[i].mean_seconds, 1e-4 * cpp[i].mean_seconds)
        << model->kind() << " sample " << i;
    EXPECT_NEAR(stddev, cpp[i].stddev_seconds, 1e-4 * cpp[i].mean_seconds)
        << model->kind() << " sample " << i;
  }
}

std::unique_ptr<PerformanceModel> Gcn(int layers, GcnEdges edges) {
  GcnOptions options;
  options.layers = layers;
  options.edges = edges;
  return MakeGcnModel(options);
}

TEST(TorchModelsTest, TorchScriptExportMatchesCppInPython) {
  ExpectPythonAgrees(Gcn(2, GcnEdges::kBoth));
}

TEST(TorchModelsTest, TorchScriptExportOfGcn0AndOneDirectionMatchesCppInPython) {
  ExpectPythonAgrees(Gcn(0, GcnEdges::kBoth));
  ExpectPythonAgrees(Gcn(3, GcnEdges::kConsumers));
}

TEST(TorchModelsTest, TorchScriptExportOfBilstmMatchesCppInPython) {
  ExpectPythonAgrees(MakeBilstmModel());
}

TEST(TorchModelsTest, TorchScriptExportOfSageAndLannMatchesCppInPython) {
  SageOptions sage;
  sage.hidden = 16;
  sage.layers = 2;
  ExpectPythonAgrees(MakeSageModel(sage));
  ExpectPythonAgrees(MakeLannModel());
}

TEST(TorchModelsTest, TorchScriptExportRefusesOtherKindsUntrainedModelsAndUnwritablePaths) {
  TempDir dir;
  ExpectError(ExportTorchScript(RooflineModel(), dir / "x.pt"), "no TorchScript export");
  ExpectError(ExportTorchScript(*MakeGcnModel(), dir / "x.pt"), "not trained");
  ExpectError(ExportTorchScript(*MakeBilstmModel(), dir / "x.pt"), "not trained");
  ExpectError(ExportTorchScript(*MakeLannModel(), dir / "x.pt"), "not trained");
  std::unique_ptr<PerformanceModel> lann = MakeLannModel();
  ASSERT_TRUE(lann->Train(ZooDataset(6, 2, 3).train, Fast(2, 5)).ok());
  ExpectError(ExportTorchScript(*lann, dir / "missing/x.pt"), dir / "missing/x.pt");
}

}  // namespace
}  // namespace schedfarm
