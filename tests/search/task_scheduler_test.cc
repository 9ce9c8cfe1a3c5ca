// Ansor's gradient task scheduler (search/task_scheduler.h) on scripted results.
#include "search/task_scheduler.h"

#include <vector>

#include "gtest/gtest.h"

namespace schedfarm {
namespace {

TEST(TaskScheduler, EveryTaskGetsAFirstRoundHeaviestFirst) {
  TaskScheduler scheduler({{1, 10, "conv"}, {3, 10, "conv"}, {1, 50, "matmul"}});
  EXPECT_EQ(scheduler.NextRound(), 2);  // 50 FLOPs x 1
  EXPECT_EQ(scheduler.NextRound(), 1);  // 10 x 3
  EXPECT_EQ(scheduler.NextRound(), 0);
  for (int t = 0; t < 3; ++t) EXPECT_EQ(scheduler.rounds(t), 1);
}

TEST(TaskScheduler, TasksWithoutResultsWaitUnlessNoTaskHasOne) {
  TaskScheduler scheduler({{1, 10, "a"}, {1, 10, "b"}});
  scheduler.NextRound();
  scheduler.NextRound();
  // No results at all: the task with the fewest rounds, in turn.
  EXPECT_EQ(scheduler.NextRound(), 0);
  EXPECT_EQ(scheduler.NextRound(), 1);
  // Task 1 has a result, task 0 none: task 1 gets the rounds.
  scheduler.SetBest(1, 0.5);
  EXPECT_EQ(scheduler.NextRound(), 1);
  EXPECT_EQ(scheduler.NextRound(), 1);
  EXPECT_EQ(scheduler.rounds(0), 2);
}

TEST(TaskScheduler, TheWeightiestGainGoesFirst) {
  // Equal runtimes and rounds: the task that occurs three times weighs three times.
  TaskScheduler scheduler({{1, 100, "a"}, {3, 100, "b"}});
  scheduler.NextRound();
  scheduler.NextRound();
  scheduler.SetBest(0, 1.0);
  scheduler.SetBest(1, 1.0);
  EXPECT_LT(scheduler.Gradient(1), scheduler.Gradient(0));
  EXPECT_NEAR(scheduler.Gradient(1), 3 * scheduler.Gradient(0), 1e-12);
  EXPECT_EQ(scheduler.NextRound(), 1);
}

TEST(TaskScheduler, ForwardGradientShrinksWithRoundsSoTasksTakeTurns) {
  // Two equal tasks that never improve: g - g/t shrinks with t, so they alternate.
  TaskScheduler scheduler({{1, 100, "a"}, {1, 100, "b"}});
  scheduler.NextRound();
  scheduler.NextRound();
  scheduler.SetBest(0, 1.0);
  scheduler.SetBest(1, 1.0);
  std::vector<int> picks;
  for (int i = 0; i < 6; ++i) picks.push_back(scheduler.NextRound());
  EXPECT_EQ(picks, (std::vector<int>{0, 1, 0, 1, 0, 1}));
  // forward = -g / t with alpha's share: (1 - 0.2) * -1 / 4 after four rounds.
  EXPECT_NEAR(scheduler.Gradient(0), -0.8 / 4, 1e-12);
}

TEST(TaskScheduler, ObservedGainsAttractRounds) {
  // With the backward gradient alone, a task that keeps improving gets every round once
  // its window of history shows the gains, and a stagnant one none.
  TaskSchedulerOptions options;
  options.alpha = 1;
  options.backward_window = 2;
  TaskScheduler scheduler({{1, 100, "a"}, {1, 100, "b"}}, options);
  scheduler.NextRound();
  scheduler.NextRound();
  scheduler.SetBest(0, 1.0);
  scheduler.SetBest(1, 1.0);
  double best = 1.0;
  std::vector<int> picks;
  for (int i = 0; i < 10; ++i) {
    const int t = scheduler.NextRound();
    picks.push_back(t);
    if (t == 0) scheduler.SetBest(0, best -= 0.03);
  }
  // Ties (no history yet) go to the lower index; then task 0 shows gains.
  EXPECT_EQ(picks, std::vector<int>(10, 0));
  EXPECT_EQ(scheduler.Gradient(1), 0);
  EXPECT_LT(scheduler.Gradient(0), 0);
}

TEST(TaskScheduler, ASlowTaskOfAGroupIsPulledTowardsTheGroupsBestRate) {
  // Same FLOPs and group: task 1 runs 10x slower than task 0, so its forward gradient
  // aims at beta x task 0's runtime.
  TaskScheduler scheduler({{1, 100, "conv"}, {1, 100, "conv"}, {1, 100, "other"}});
  for (int i = 0; i < 3; ++i) scheduler.NextRound();
  scheduler.SetBest(0, 0.1);
  scheduler.SetBest(1, 1.0);
  scheduler.SetBest(2, 1.0);
  // Task 1: min(1 - 1/1, 2 x 0.1) - 1 = -1, times (1 - alpha); task 2 has no peer.
  EXPECT_NEAR(scheduler.Gradient(1), -0.8, 1e-12);
  EXPECT_NEAR(scheduler.Gradient(2), -0.8, 1e-12);
  scheduler.NextRound();
  scheduler.NextRound();  // both had a second round: now the group rule tells them apart
  EXPECT_NEAR(scheduler.Gradient(2), -0.8 * 0.5, 1e-12);
  EXPECT_NEAR(scheduler.Gradient(1), -0.8 * 0.8, 1e-12);
}

TEST(TaskScheduler, AConvergedTaskYieldsUntilEveryTaskHasConverged) {
  // Task 0 runs 10x slower than task 1 of its group for the same FLOPs: the group term
  // keeps its gradient at -0.8 however many rounds it gets, task 1's shrinks with its
  // rounds. Neither improves: after `patience` rounds task 0 has converged and task 1
  // gets the rounds, until it has converged too.
  TaskSchedulerOptions options;
  options.patience = 4;
  TaskScheduler scheduler({{1, 100, "conv"}, {1, 100, "conv"}}, options);
  scheduler.NextRound();
  scheduler.NextRound();
  scheduler.SetBest(0, 1.0);
  scheduler.SetBest(1, 0.1);
  std::vector<int> picks;
  for (int i = 0; i < 10; ++i) picks.push_back(scheduler.NextRound());
  EXPECT_EQ(picks, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1, 0, 0}));
  EXPECT_TRUE(scheduler.Converged(0));
  EXPECT_TRUE(scheduler.Converged(1));
  // An improvement ends the convergence.
  scheduler.SetBest(0, 0.5);
  EXPECT_FALSE(scheduler.Converged(0));
}

TEST(TaskScheduler, DeadTasksGetNoMoreRounds) {
  TaskScheduler scheduler({{1, 100, "a"}, {1, 10, "b"}});
  scheduler.SetDead(0);
  EXPECT_EQ(scheduler.NextRound(), 1);
  EXPECT_EQ(scheduler.NextRound(), 1);
  scheduler.SetDead(1);
  EXPECT_EQ(scheduler.NextRound(), -1);
}

TEST(TaskScheduler, BackwardGradientRewardsRecentGains) {
  TaskScheduler::Task task{1, 100, "a"};
  TaskSchedulerOptions options;
  options.alpha = 1;  // backward only
  options.backward_window = 2;
  TaskScheduler scheduler({task}, options);
  scheduler.NextRound();
  scheduler.SetBest(0, 1.0);
  scheduler.NextRound();  // history: 1.0
  scheduler.SetBest(0, 0.8);
  EXPECT_EQ(scheduler.Gradient(0), 0);  // one round of history: no window yet
  scheduler.NextRound();  // history: 1.0, 0.8
  scheduler.SetBest(0, 0.6);
  EXPECT_NEAR(scheduler.Gradient(0), (0.6 - 1.0) / 2, 1e-12);
  scheduler.SetBest(0, 0.9);  // slower: ignored
  EXPECT_DOUBLE_EQ(*scheduler.best(0), 0.6);
}

}  // namespace
}  // namespace schedfarm
