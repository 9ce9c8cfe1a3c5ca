#include "evaluation/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <unordered_map>

namespace schedfarm {
namespace {

// Floor of a prediction in r2_log: runtimes below a nanosecond are not measurable.
constexpr double kMinLogSeconds = 1e-9;

std::string Describe(const std::vector<std::string>& ids, size_t i) {
  return "sample " + std::to_string(i) + " (pipeline '" + ids[i] + "')";
}

// 1 - SS_res / SS_tot; NaN when the truths are constant or fewer than two.
double RSquared(const std::vector<double>& truth, const std::vector<double>& pred) {
  const size_t n = truth.size();
  if (n < 2) return EvalMetrics::kUndefined;
  const double mean = std::accumulate(truth.begin(), truth.end(), 0.0) / n;
  double ss_tot = 0;
  double ss_res = 0;
  for (size_t i = 0; i < n; ++i) {
    ss_tot += (truth[i] - mean) * (truth[i] - mean);
    ss_res += (truth[i] - pred[i]) * (truth[i] - pred[i]);
  }
  if (ss_tot <= 0) return EvalMetrics::kUndefined;
  return 1.0 - ss_res / ss_tot;
}

int Sign(double x) { return (x > 0) - (x < 0); }

struct RankStats {
  bool ranked = false;  // at least one pair of distinct truths
  double accuracy = 0;
  double tau = 0;
};

// Pairwise accuracy and Kendall tau-b of one pipeline's schedules.
RankStats RankWithin(const std::vector<double>& truth, const std::vector<double>& pred) {
  const size_t n = truth.size();
  int64_t concordant = 0;
  int64_t discordant = 0;
  int64_t truth_ties = 0;
  int64_t pred_ties = 0;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const int st = Sign(truth[i] - truth[j]);
      const int sp = Sign(pred[i] - pred[j]);
      if (st == 0) ++truth_ties;
      if (sp == 0) ++pred_ties;
      if (st != 0 && sp != 0) (st == sp ? concordant : discordant) += 1;
    }
  }
  const int64_t pairs = static_cast<int64_t>(n) * (static_cast<int64_t>(n) - 1) / 2;
  RankStats stats;
  const int64_t comparable = pairs - truth_ties;
  if (comparable <= 0) return stats;
  stats.ranked = true;
  stats.accuracy = static_cast<double>(concordant) / comparable;
  const int64_t pred_distinct = pairs - pred_ties;
  stats.tau = pred_distinct == 0 ? 0.0
                                 : (concordant - discordant) /
                                       std::sqrt(static_cast<double>(comparable) * pred_distinct);
  return stats;
}

// Expected best truth among the k smallest predictions over the best truth, ties in the
// prediction at the k-th place broken uniformly at random.
double TopKRatio(const std::vector<double>& truth, const std::vector<double>& pred, size_t k) {
  const size_t n = truth.size();
  k = std::min(k, n);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return pred[a] < pred[b]; });
  const double threshold = pred[order[k - 1]];
  double best_sure = std::numeric_limits<double>::infinity();  // predictions < threshold
  size_t sure = 0;
  std::vector<double> tied;  // truths of the predictions == threshold
  for (size_t i = 0; i < n; ++i) {
    if (pred[i] < threshold) {
      best_sure = std::min(best_sure, truth[i]);
      ++sure;
    } else if (pred[i] == threshold) {
      tied.push_back(truth[i]);
    }
  }
  std::sort(tied.begin(), tied.end());
  // r of the m tied schedules are drawn; the j-th smallest (1-based) is the smallest drawn
  // with probability C(m-j, r-1) / C(m, r).
  const size_t m = tied.size();
  const size_t r = k - sure;
  double expected = 0;
  double p = static_cast<double>(r) / m;
  for (size_t j = 1; j + r <= m + 1; ++j) {
    expected += p * std::min(best_sure, tied[j - 1]);
    if (m - j > 0) p *= static_cast<double>(m - j - r + 1) / (m - j);
  }
  const double best = *std::min_element(truth.begin(), truth.end());
  return expected / best;
}

std::string FormatValue(double v, const char* format) {
  if (std::isnan(v)) return "-";
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

}  // namespace

StatusOr<EvalMetrics> ComputeMetrics(const std::vector<std::string>& pipeline_ids,
                                     const std::vector<double>& true_seconds,
                                     const std::vector<double>& predicted_seconds) {
  const size_t n = pipeline_ids.size();
  if (true_seconds.size() != n || predicted_seconds.size() != n) {
    return Status::Error("metrics: " + std::to_string(n) + " pipeline ids, " +
                         std::to_string(true_seconds.size()) + " measured runtimes and " +
                         std::to_string(predicted_seconds.size()) +
                         " predictions; they must be parallel");
  }
  if (n == 0) return Status::Error("metrics: no samples");
  for (size_t i = 0; i < n; ++i) {
    if (pipeline_ids[i].empty()) {
      return Status::Error("metrics: sample " + std::to_string(i) + " has no pipeline id");
    }
    if (!std::isfinite(true_seconds[i]) || true_seconds[i] <= 0) {
      return Status::Error("metrics: " + Describe(pipeline_ids, i) + ": measured runtime " +
                           std::to_string(true_seconds[i]) + " is not a positive number");
    }
    if (!std::isfinite(predicted_seconds[i])) {
      return Status::Error("metrics: " + Describe(pipeline_ids, i) +
                           ": the prediction is not finite");
    }
  }

  EvalMetrics m;
  m.samples = static_cast<int64_t>(n);
  double sum_ape = 0;
  double max_ape = 0;
  std::vector<double> log_truth(n);
  std::vector<double> log_pred(n);
  for (size_t i = 0; i < n; ++i) {
    const double ape = 100.0 * std::abs(predicted_seconds[i] - true_seconds[i]) / true_seconds[i];
    sum_ape += ape;
    max_ape = std::max(max_ape, ape);
    if (predicted_seconds[i] <= 0) ++m.nonpositive_predictions;
    log_truth[i] = std::log(true_seconds[i]);
    log_pred[i] = std::log(std::max(predicted_seconds[i], kMinLogSeconds));
  }
  m.mape = sum_ape / n;
  m.max_error = max_ape;
  m.r2 = RSquared(true_seconds, predicted_seconds);
  m.r2_log = RSquared(log_truth, log_pred);

  // Group the samples by pipeline, in order of first appearance.
  std::unordered_map<std::string, size_t> group_of;
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < n; ++i) {
    auto [it, inserted] = group_of.emplace(pipeline_ids[i], groups.size());
    if (inserted) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  m.pipelines = static_cast<int64_t>(groups.size());

  double sum_accuracy = 0;
  double sum_tau = 0;
  double sum_top1 = 0;
  double sum_top5 = 0;
  int64_t multi = 0;
  for (const std::vector<size_t>& group : groups) {
    if (group.size() < 2) continue;
    std::vector<double> truth;
    std::vector<double> pred;
    for (size_t i : group) {
      truth.push_back(true_seconds[i]);
      pred.push_back(predicted_seconds[i]);
    }
    ++multi;
    sum_top1 += TopKRatio(truth, pred, 1);
    sum_top5 += TopKRatio(truth, pred, 5);
    const RankStats rank = RankWithin(truth, pred);
    if (!rank.ranked) continue;
    ++m.ranked_pipelines;
    sum_accuracy += rank.accuracy;
    sum_tau += rank.tau;
  }
  if (m.ranked_pipelines > 0) {
    m.pairwise_accuracy = sum_accuracy / m.ranked_pipelines;
    m.kendall_tau = sum_tau / m.ranked_pipelines;
  }
  if (multi > 0) {
    m.top1_regret = sum_top1 / multi;
    m.top5_regret = sum_top5 / multi;
  }
  return m;
}

namespace {

// The keys of Model.metrics, for both directions.
struct RateKey {
  const char* key;
  double EvalMetrics::*field;
};
constexpr RateKey kRateKeys[] = {
    {"mape", &EvalMetrics::mape},
    {"max_error", &EvalMetrics::max_error},
    {"r2", &EvalMetrics::r2},
    {"r2_log", &EvalMetrics::r2_log},
    {"pairwise_accuracy", &EvalMetrics::pairwise_accuracy},
    {"kendall_tau", &EvalMetrics::kendall_tau},
    {"top1_regret", &EvalMetrics::top1_regret},
    {"top5_regret", &EvalMetrics::top5_regret},
};
struct CountKey {
  const char* key;
  int64_t EvalMetrics::*field;
};
constexpr CountKey kCountKeys[] = {
    {"samples", &EvalMetrics::samples},
    {"pipelines", &EvalMetrics::pipelines},
    {"ranked_pipelines", &EvalMetrics::ranked_pipelines},
    {"nonpositive_predictions", &EvalMetrics::nonpositive_predictions},
};

}  // namespace

std::map<std::string, double> MetricsAsMap(const EvalMetrics& m) {
  std::map<std::string, double> out;
  for (const CountKey& count : kCountKeys) out[count.key] = static_cast<double>(m.*count.field);
  for (const RateKey& rate : kRateKeys) {
    if (!std::isnan(m.*rate.field)) out[rate.key] = m.*rate.field;
  }
  return out;
}

EvalMetrics MetricsFromMap(const std::map<std::string, double>& map) {
  EvalMetrics m;
  for (const CountKey& count : kCountKeys) {
    if (auto it = map.find(count.key); it != map.end()) {
      m.*count.field = static_cast<int64_t>(it->second);
    }
  }
  for (const RateKey& rate : kRateKeys) {
    if (auto it = map.find(rate.key); it != map.end()) m.*rate.field = it->second;
  }
  return m;
}

std::string FormatMetricsTable(const std::vector<NamedMetrics>& rows) {
  size_t name_width = 5;  // "model"
  for (const NamedMetrics& row : rows) name_width = std::max(name_width, row.name.size());
  const int w = static_cast<int>(name_width);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-*s %8s %6s %9s %10s %7s %7s %8s %7s %7s %7s\n", w, "model",
                "samples", "pipes", "MAPE%", "max-err%", "R2", "R2-log", "pair-acc", "tau", "top1",
                "top5");
  out += line;
  for (const NamedMetrics& row : rows) {
    const EvalMetrics& m = row.metrics;
    std::snprintf(
        line, sizeof(line), "%-*s %8lld %6lld %9s %10s %7s %7s %8s %7s %7s %7s\n", w,
        row.name.c_str(), static_cast<long long>(m.samples), static_cast<long long>(m.pipelines),
        FormatValue(m.mape, "%.2f").c_str(), FormatValue(m.max_error, "%.1f").c_str(),
        FormatValue(m.r2, "%.3f").c_str(), FormatValue(m.r2_log, "%.3f").c_str(),
        FormatValue(m.pairwise_accuracy, "%.3f").c_str(),
        FormatValue(m.kendall_tau, "%.3f").c_str(), FormatValue(m.top1_regret, "%.3f").c_str(),
        FormatValue(m.top5_regret, "%.3f").c_str());
    out += line;
  }
  return out;
}

}  // namespace schedfarm
