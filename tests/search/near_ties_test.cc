// Tests of the near-tie rule: the measurement noise pooled from repeated schedules,
// which schedule of a pipeline ties its best, which of the pair is measured again, and
// the cap that stops schedules that really are equal.
#include "search/near_ties.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace schedfarm {
namespace {

RepeatedSchedule Measured(const std::string& hash, std::vector<double> medians) {
  RepeatedSchedule s;
  s.hash = hash;
  s.medians = std::move(medians);
  return s;
}

TEST(NearTiesTest, NoiseIsPooledFromRepeatedSchedulesAfterAPrior) {
  std::vector<RepeatedSchedule> schedules;
  for (int i = 0; i < kNoiseSchedules - 1; ++i) {
    schedules.push_back(Measured("r" + std::to_string(i), {1.0, std::exp(0.2)}));
  }
  schedules.push_back(Measured("once", {3.0}));
  std::vector<const RepeatedSchedule*> all;
  for (const RepeatedSchedule& s : schedules) all.push_back(&s);
  EXPECT_EQ(MeasurementNoise(all), kPriorNoise) << "too few repeated schedules";
  schedules.push_back(Measured("last", {2.0, 2.0 * std::exp(0.2)}));
  all.clear();
  for (const RepeatedSchedule& s : schedules) all.push_back(&s);
  // Each pair of logs 0.2 apart: a sample stddev of 0.2 / sqrt(2).
  EXPECT_NEAR(MeasurementNoise(all), 0.2 / std::sqrt(2.0), 1e-12);
  std::vector<RepeatedSchedule> equal(kNoiseSchedules, Measured("same", {1.0, 1.0}));
  all.clear();
  for (const RepeatedSchedule& s : equal) all.push_back(&s);
  EXPECT_EQ(MeasurementNoise(all), kLeastNoise);
}

TEST(NearTiesTest, TheMostUncertainChallengerTiesAndTheLessMeasuredIsTakenAgain) {
  // Noise 5%: one measurement each, a tie is a log gap under 2 x 0.05 x sqrt(2) = 0.141.
  std::vector<RepeatedSchedule> schedules = {
      Measured("best", {1.00}), Measured("close", {1.05}), Measured("closer", {1.02}),
      Measured("far", {1.50}), Measured("failed", {})};
  std::optional<NearTie> tie = FindNearTie(schedules, 0.05);
  ASSERT_TRUE(tie.has_value());
  EXPECT_EQ(tie->remeasure, 0u) << "equal counts: the best is measured again";
  EXPECT_NEAR(tie->gap_z, std::log(1.02) / (0.05 * std::sqrt(2.0)), 1e-12);
  // Measured twice, the best is the better known: the challenger is taken.
  schedules[0].medians.push_back(1.00);
  tie = FindNearTie(schedules, 0.05);
  ASSERT_TRUE(tie.has_value());
  EXPECT_EQ(tie->remeasure, 2u);
  // A pending re-measurement is not proposed again: the other of the pair is.
  schedules[2].pending = true;
  tie = FindNearTie(schedules, 0.05);
  ASSERT_TRUE(tie.has_value());
  EXPECT_EQ(tie->remeasure, 0u);
  // No challenger within the noise: nothing ties.
  EXPECT_FALSE(FindNearTie({Measured("best", {1.0}), Measured("far", {1.5})}, 0.05));
  EXPECT_FALSE(FindNearTie({Measured("alone", {1.0})}, 0.05));
  EXPECT_FALSE(FindNearTie({}, 0.05));
}

TEST(NearTiesTest, SchedulesThatAreEqualStopAtTheCap) {
  std::vector<RepeatedSchedule> schedules = {Measured("a", {1.0}), Measured("b", {1.0})};
  int proposed = 0;
  while (std::optional<NearTie> tie = FindNearTie(schedules, 0.05)) {
    schedules[tie->remeasure].medians.push_back(1.0);
    ASSERT_LT(++proposed, 10);
  }
  EXPECT_EQ(proposed, 2 * (kMaxMeasurements - 1));
  EXPECT_EQ(schedules[0].medians.size(), static_cast<size_t>(kMaxMeasurements));
  EXPECT_EQ(schedules[1].medians.size(), static_cast<size_t>(kMaxMeasurements));
}

}  // namespace
}  // namespace schedfarm
