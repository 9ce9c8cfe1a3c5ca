// Near-ties (Ogilvie et al.'s re-measurement): which measured schedule of a pipeline to
// measure again because its ranking against the pipeline's best is uncertain given the
// noise of one measurement. A schedule's runtime is the mean of the logs of its
// measurements' medians; one measurement's run-to-run noise (a relative stddev) comes
// from the schedules already measured more than once. A challenger ties the best while
// their log gap is under kTieZ standard errors; the tie with the smallest gap in
// standard errors is the most uncertain, and of its two schedules the one measured
// fewer times (the best on equal counts) is measured again, each at most
// kMaxMeasurements times in all, so that schedules that really are equal stop.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedfarm.pb.h"

namespace schedfarm {

inline constexpr double kTieZ = 2.0;
inline constexpr int kMaxMeasurements = 3;
// One measurement's relative noise until kNoiseSchedules schedules were measured again;
// never taken below kLeastNoise.
inline constexpr double kPriorNoise = 0.05;
inline constexpr int kNoiseSchedules = 5;
inline constexpr double kLeastNoise = 0.005;

// One schedule of a pipeline and its measurements so far, for the near-tie rule.
struct RepeatedSchedule {
  std::string hash;
  ScheduleSpec schedule;
  std::vector<double> medians;  // of its OK measurements, seconds
  int next_repeat = 1;          // Candidate.repeat of its next measurement
  bool pending = false;         // a re-measurement was proposed and is not final yet
};

// The relative stddev of one measurement: the pooled stddev of the log medians of the
// schedules measured more than once (of all pipelines), kPriorNoise while fewer than
// kNoiseSchedules are, and at least kLeastNoise.
double MeasurementNoise(const std::vector<const RepeatedSchedule*>& schedules);

struct NearTie {
  size_t remeasure;  // index of the schedule to measure again
  double gap_z;      // the pair's log gap over its standard error: lower, less certain
};

// The most uncertain near-tie of one pipeline's schedules, if any has a schedule that
// may still be measured (not pending, under kMaxMeasurements).
std::optional<NearTie> FindNearTie(const std::vector<RepeatedSchedule>& schedules,
                                   double noise);

}  // namespace schedfarm
