// Value iteration's targets: a prefix's target is the fastest OK measurement of the
// complete schedules that extend it; schedules that diverge from the prefix, and
// failed completions (never among the OK measurements), give it nothing.
#include <gtest/gtest.h>

#include "learner/value_targets.h"
#include "pipeline/graph.h"
#include "pipeline/zoo.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
namespace {

class ValueTargetsTest : public testing::Test {
 protected:
  void SetUp() override {
    ZooOptions options;
    options.spatial_scale = 0.25;
    options.channel_scale = 0.25;
    StatusOr<PipelineSpec> spec = MakeZooBlock("resnet18_basic", options);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    StatusOr<PipelineGraph> graph = PipelineGraph::Build(*spec);
    ASSERT_TRUE(graph.ok()) << graph.status().message();
    graph_ = std::make_unique<PipelineGraph>(std::move(*graph));
    space_ = std::make_unique<ScheduleSpace>(*graph_);
  }

  // The first `stages` decisions of `schedule` as a prefix.
  ValuePrefix PrefixOf(const ScheduleSpec& schedule, int stages) const {
    ValuePrefix prefix;
    prefix.set_stages(stages);
    ScheduleSpec head = space_->Empty();
    for (int i = 0; i < stages; ++i) *head.add_stages() = schedule.stages(i);
    head.set_partial(stages < schedule.stages_size());
    *prefix.mutable_prefix() = head;
    return prefix;
  }

  MeasuredSchedule Measured(const ScheduleSpec& schedule, double seconds) const {
    return {ScheduleHash(*space_, schedule), schedule, seconds, seconds / 10};
  }

  std::unique_ptr<PipelineGraph> graph_;
  std::unique_ptr<ScheduleSpace> space_;
};

TEST_F(ValueTargetsTest, APrefixTakesTheFastestMeasuredScheduleThatExtendsIt) {
  const ScheduleSpec a = space_->RandomSchedule(1);
  const std::string a_head = ScheduleHash(*space_, PrefixOf(a, 2).prefix());
  // b shares a's first two decisions and differs after them.
  const ScheduleSpec b = space_->RandomCompletion(PrefixOf(a, 2).prefix(), 7);
  ASSERT_TRUE(space_->Check(b).ok());
  ASSERT_NE(ScheduleHash(*space_, a), ScheduleHash(*space_, b));
  // c differs from a within the first two decisions.
  ScheduleSpec c;
  for (uint64_t seed = 100; seed < 200; ++seed) {
    c = space_->RandomSchedule(seed);
    if (ScheduleHash(*space_, PrefixOf(c, 2).prefix()) != a_head) break;
  }
  ASSERT_NE(ScheduleHash(*space_, PrefixOf(c, 2).prefix()), a_head);

  const std::vector<MeasuredSchedule> measured = {Measured(a, 3e-3), Measured(b, 2e-3),
                                                  Measured(c, 1e-4)};
  ValuePrefix two = PrefixOf(a, 2);
  SetPrefixTarget(*space_, measured, &two);
  EXPECT_EQ(two.target_seconds(), 2e-3) << "b extends the prefix and beats a; c does not extend it";
  EXPECT_EQ(two.target_hash(), ScheduleHash(*space_, b));
  EXPECT_DOUBLE_EQ(two.target_stddev_seconds(), 2e-4);

  ValuePrefix whole = PrefixOf(a, a.stages_size());
  SetPrefixTarget(*space_, measured, &whole);
  EXPECT_EQ(whole.target_seconds(), 3e-3) << "a complete prefix is its own measurement";
  EXPECT_EQ(whole.target_hash(), ScheduleHash(*space_, a));

  ValuePrefix empty = PrefixOf(a, 0);
  SetPrefixTarget(*space_, measured, &empty);
  EXPECT_EQ(empty.target_seconds(), 1e-4) << "every schedule extends the empty prefix";
  EXPECT_EQ(empty.target_hash(), ScheduleHash(*space_, c));
}

TEST_F(ValueTargetsTest, APrefixWhoseCompletionsFailedHasNoTarget) {
  const ScheduleSpec a = space_->RandomSchedule(3);
  // The OK measurements hold no schedule extending a's full prefix: a failed.
  const std::vector<MeasuredSchedule> measured = {Measured(space_->RandomSchedule(4), 1e-3)};
  ValuePrefix whole = PrefixOf(a, a.stages_size());
  whole.set_target_seconds(5);  // a stale target is cleared
  whole.set_target_hash("stale");
  SetPrefixTarget(*space_, measured, &whole);
  EXPECT_EQ(whole.target_seconds(), 0);
  EXPECT_TRUE(whole.target_hash().empty());
  EXPECT_EQ(whole.target_stddev_seconds(), 0);
}

}  // namespace
}  // namespace schedfarm
