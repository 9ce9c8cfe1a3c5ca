// Accuracy of a performance model on held-out pipelines (docs/EVALUATION.md): how far
// the predicted runtimes are from the measured ones, and how well the predictions rank
// the schedules of each pipeline. Also the text table that shows several models side by
// side on the same split. docs/EVALUATION.md gives every definition and convention.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace schedfarm {

// Every metric of one model on one set of samples. A metric that the data does not
// define (R^2 of constant truths, ranking without a pipeline of two distinct runtimes)
// is NaN.
struct EvalMetrics {
  static constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

  int64_t samples = 0;
  int64_t pipelines = 0;
  // Pipelines with at least two schedules of different measured runtimes: the ones
  // pairwise accuracy and Kendall tau are averaged over.
  int64_t ranked_pipelines = 0;
  // Predictions <= 0 (a regression model may produce them); clamped for r2_log only.
  int64_t nonpositive_predictions = 0;

  double mape = kUndefined;       // percent: 100 * mean |pred - true| / true
  double max_error = kUndefined;  // percent: 100 * max |pred - true| / true
  double r2 = kUndefined;         // 1 - SS_res / SS_tot of the runtimes
  double r2_log = kUndefined;     // the same of the natural logs of the runtimes
  // Within each pipeline, over pairs of schedules with different measured runtimes: the
  // fraction whose predictions order them the same way (a tie in the prediction counts
  // as wrong); averaged over the ranked pipelines. In [0, 1].
  double pairwise_accuracy = kUndefined;
  // Kendall's tau-b within each pipeline (0 for a pipeline whose predictions are all
  // equal), averaged over the ranked pipelines. In [-1, 1].
  double kendall_tau = kUndefined;
  // TenSet's top-k measure as a ratio >= 1: the best measured runtime among the k
  // schedules with the smallest predictions over the best measured runtime, per pipeline
  // with at least two schedules, averaged. Ties in the prediction at the k-th place are
  // broken uniformly at random and the ratio is its expectation. 1 is perfect; TenSet's
  // top-k score is the reciprocal.
  double top1_regret = kUndefined;
  double top5_regret = kUndefined;
};

// The metrics of predictions against measurements; the three vectors are parallel (one
// entry per sample). Errors: different lengths, no samples, an empty pipeline id, a
// measured runtime that is not finite and positive, a prediction that is not finite.
StatusOr<EvalMetrics> ComputeMetrics(const std::vector<std::string>& pipeline_ids,
                                     const std::vector<double>& true_seconds,
                                     const std::vector<double>& predicted_seconds);

// The metrics under stable keys ("mape", "max_error", "r2", "r2_log",
// "pairwise_accuracy", "kendall_tau", "top1_regret", "top5_regret", "samples",
// "pipelines", "ranked_pipelines", "nonpositive_predictions") for Model.metrics;
// undefined metrics are left out.
std::map<std::string, double> MetricsAsMap(const EvalMetrics& metrics);
// Back from those keys; keys absent stay undefined (counts 0).
EvalMetrics MetricsFromMap(const std::map<std::string, double>& metrics);

// One row of the comparison table.
struct NamedMetrics {
  std::string name;
  EvalMetrics metrics;
};

// A fixed-width text table, one model per row, in the order given, with a header line;
// undefined metrics print as "-".
std::string FormatMetricsTable(const std::vector<NamedMetrics>& rows);

}  // namespace schedfarm
