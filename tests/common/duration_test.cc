// Durations as campaign files and flags write them (common/duration.h).
#include "common/duration.h"

#include <gtest/gtest.h>

namespace schedfarm {
namespace {

TEST(DurationTest, ANumberThenItsUnit) {
  EXPECT_EQ(DurationSeconds("90s"), 90);
  EXPECT_EQ(DurationSeconds("7.5m"), 450);
  EXPECT_EQ(DurationSeconds("500ms"), 0.5);
  EXPECT_EQ(DurationSeconds("2h"), 7200);
  EXPECT_EQ(DurationSeconds("12"), 12) << "no unit: seconds";
  EXPECT_EQ(DurationSeconds("-3s"), -3) << "the caller refuses negatives";
}

TEST(DurationTest, AnythingElseIsNone) {
  for (const char* text :
       {"", "m", "ms", "5 m", " 5m", "5min", "five", "5mm", "inf", "nan", "1e999s"}) {
    EXPECT_FALSE(DurationSeconds(text).has_value()) << "'" << text << "'";
  }
}

}  // namespace
}  // namespace schedfarm
