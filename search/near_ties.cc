#include "search/near_ties.h"

#include <algorithm>
#include <cmath>

namespace schedfarm {
namespace {

double MeanLog(const std::vector<double>& medians) {
  double sum = 0;
  for (double m : medians) sum += std::log(m);
  return sum / static_cast<double>(medians.size());
}

bool MayRemeasure(const RepeatedSchedule& s) {
  return !s.pending && static_cast<int>(s.medians.size()) < kMaxMeasurements;
}

}  // namespace

double MeasurementNoise(const std::vector<const RepeatedSchedule*>& schedules) {
  double squares = 0;
  double degrees = 0;
  int repeated = 0;
  for (const RepeatedSchedule* s : schedules) {
    if (s->medians.size() < 2) continue;
    ++repeated;
    const double mean = MeanLog(s->medians);
    for (double m : s->medians) squares += (std::log(m) - mean) * (std::log(m) - mean);
    degrees += static_cast<double>(s->medians.size() - 1);
  }
  if (repeated < kNoiseSchedules) return kPriorNoise;
  return std::max(kLeastNoise, std::sqrt(squares / degrees));
}

std::optional<NearTie> FindNearTie(const std::vector<RepeatedSchedule>& schedules,
                                   double noise) {
  size_t best = schedules.size();
  for (size_t i = 0; i < schedules.size(); ++i) {
    if (schedules[i].medians.empty()) continue;
    if (best == schedules.size() ||
        MeanLog(schedules[i].medians) < MeanLog(schedules[best].medians)) {
      best = i;
    }
  }
  if (best == schedules.size()) return std::nullopt;
  const double best_log = MeanLog(schedules[best].medians);
  const double best_count = static_cast<double>(schedules[best].medians.size());
  std::optional<NearTie> tie;
  for (size_t i = 0; i < schedules.size(); ++i) {
    const RepeatedSchedule& challenger = schedules[i];
    if (i == best || challenger.medians.empty()) continue;
    const double count = static_cast<double>(challenger.medians.size());
    const double error = noise * std::sqrt(1 / count + 1 / best_count);
    const double gap_z = (MeanLog(challenger.medians) - best_log) / error;
    if (gap_z >= kTieZ || (tie && gap_z >= tie->gap_z)) continue;
    // The one measured fewer times, the best on equal counts, if it may be measured.
    size_t pick = count < best_count ? i : best;
    if (!MayRemeasure(schedules[pick])) pick = pick == best ? i : best;
    if (!MayRemeasure(schedules[pick])) continue;
    tie = NearTie{pick, gap_z};
  }
  return tie;
}

}  // namespace schedfarm
