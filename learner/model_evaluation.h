// A performance model judged on samples: the sample of a measurement, a model's
// metrics against the samples' measured runtimes, and samples put on the two sides of
// a split by pipeline (evaluation/ holds the
// metrics and the split themselves, free of models).
#pragma once

#include <vector>

#include "common/status.h"
#include "evaluation/metrics.h"
#include "evaluation/split.h"
#include "learner/model.h"

namespace schedfarm {

// The sample of one measured schedule: its features (by `featurizer`, of the
// measurement's pipeline) and runtimes.
StatusOr<Sample> SampleOf(const Measurement& m, const Featurizer& featurizer);

// Runs `model` on the features of `samples` and computes the metrics of its mean
// predictions against the samples' runtimes.
StatusOr<EvalMetrics> EvaluateModel(const PerformanceModel& model,
                                    const std::vector<Sample>& samples);

// Copies each sample to `train` or `held_out` by its pipeline. A sample whose pipeline
// is on neither side is an error (the split was made for another dataset).
Status SplitSamples(const std::vector<Sample>& samples, const PipelineSplit& split,
                    std::vector<Sample>* train, std::vector<Sample>* held_out);

}  // namespace schedfarm
