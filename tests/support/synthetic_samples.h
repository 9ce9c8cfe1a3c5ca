// Synthetic training samples for tests of the models: random values in the shape of
// the current feature schema (not featurized pipelines) with a known runtime.
#pragma once

#include <random>
#include <string>
#include <vector>

#include "learner/features.h"
#include "learner/model.h"

namespace schedfarm {
namespace testing_support {

// Synthetic samples in the shape of the current feature schema (values are random, not
// featurized pipelines). Each pipeline has 2-6 stages with random invariant values; each
// of its schedules draws random dependent values. The runtime is a known function of
// invariant column 0 and dependent column 0 of every stage:
//   seconds = 1e-4 * sum_s (1 + 3 * inv[s][0]) * (1 + 4 * dep[s][0])
inline std::vector<Sample> SyntheticSamples(int pipelines, int schedules, uint64_t seed) {
  const FeatureSchema& schema = CurrentFeatureSchema();
  const size_t ni = schema.invariant_names.size();
  const size_t nd = schema.dependent_names.size();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(0.0f, 1.0f);
  std::vector<Sample> samples;
  for (int p = 0; p < pipelines; ++p) {
    const int stages = 2 + static_cast<int>(rng() % 5);
    PipelineFeatures base;
    base.num_stages = stages;
    base.invariant.resize(stages * ni);
    for (float& v : base.invariant) v = unit(rng);
    for (int s = 0; s + 1 < stages; ++s) base.edges.push_back({s, s + 1});
    base.scheduled.assign(stages, 1);
    base.flops = 1e6 * stages;
    base.bytes = 4e5 * stages;
    for (int k = 0; k < schedules; ++k) {
      Sample sample;
      sample.pipeline_id = "synthetic-" + std::to_string(seed) + "-" + std::to_string(p);
      sample.schedule_hash = std::to_string(k);
      sample.features = base;
      sample.features.dependent.resize(stages * nd);
      for (float& v : sample.features.dependent) v = unit(rng);
      double seconds = 0;
      for (int s = 0; s < stages; ++s) {
        seconds += (1 + 3 * base.invariant[s * ni]) * (1 + 4 * sample.features.dependent[s * nd]);
      }
      sample.seconds = 1e-4 * seconds;
      samples.push_back(std::move(sample));
    }
  }
  return samples;
}

}  // namespace testing_support
}  // namespace schedfarm
