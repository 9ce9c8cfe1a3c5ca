#include "common/status.h"

#include <gtest/gtest.h>

namespace schedfarm {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2) return Status::Error("odd number " + std::to_string(x));
  return x / 2;
}

Status Quarter(int x, int* out) {
  SCHEDFARM_ASSIGN_OR_RETURN(int half, Half(x));
  SCHEDFARM_ASSIGN_OR_RETURN(*out, Half(half));
  return Status::Ok();
}

TEST(StatusTest, OkAndError) {
  EXPECT_TRUE(Status::Ok().ok());
  Status e = Status::Error("bad");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.message(), "bad");
  EXPECT_EQ(e.WithContext("file.yaml").message(), "file.yaml: bad");
  EXPECT_TRUE(Status::Ok().WithContext("x").ok());
}

TEST(StatusTest, MacrosPropagateTheFirstError) {
  int out = 0;
  EXPECT_TRUE(Quarter(8, &out).ok());
  EXPECT_EQ(out, 2);
  Status s = Quarter(6, &out);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "odd number 3");
}

}  // namespace
}  // namespace schedfarm
