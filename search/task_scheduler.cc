#include "search/task_scheduler.h"

#include <algorithm>
#include <limits>

namespace schedfarm {

TaskScheduler::TaskScheduler(std::vector<Task> tasks, TaskSchedulerOptions options)
    : options_(options) {
  for (Task& task : tasks) {
    State state;
    state.task = std::move(task);
    tasks_.push_back(std::move(state));
  }
}

void TaskScheduler::SetBest(int t, double seconds) {
  State& state = tasks_[t];
  if (seconds > 0 && (!state.best || seconds < *state.best)) state.best = seconds;
}

void TaskScheduler::SetDead(int t) { tasks_[t].dead = true; }

bool TaskScheduler::Heavier(int a, int b) const {
  const double wa = tasks_[a].task.weight * tasks_[a].task.flops;
  const double wb = tasks_[b].task.weight * tasks_[b].task.flops;
  return wa != wb ? wa > wb : a < b;
}

bool TaskScheduler::Converged(int t) const {
  const State& state = tasks_[t];
  const int past = static_cast<int>(state.history.size());
  const int patience = options_.patience;
  return patience > 0 && state.best && past >= patience && *state.best >= state.history[past - patience];
}

double TaskScheduler::Gradient(int t) const {
  const State& state = tasks_[t];
  if (!state.best || state.rounds == 0) return 0;
  const double best = *state.best;
  const int window = options_.backward_window;
  const int past = static_cast<int>(state.history.size());
  const double backward =
      window > 0 && past >= window ? (best - state.history[past - window]) / window : 0;

  double group_rate = 0;  // the best FLOP rate in the task's group, other tasks included
  int group_measured = 0;
  for (const State& other : tasks_) {
    if (other.task.group != state.task.group || !other.best || other.task.flops <= 0) continue;
    ++group_measured;
    group_rate = std::max(group_rate, other.task.flops / *other.best);
  }
  double next = best - best / state.rounds;
  if (group_measured > 1 && group_rate > 0 && state.task.flops > 0) {
    next = std::min(next, options_.beta * state.task.flops / group_rate);
  }
  const double forward = next - best;
  return state.task.weight * (options_.alpha * backward + (1 - options_.alpha) * forward);
}

int TaskScheduler::NextRound() {
  int chosen = -1;
  // Every task's first round, heaviest first.
  for (int t = 0; t < size(); ++t) {
    if (tasks_[t].dead || tasks_[t].rounds > 0) continue;
    if (chosen < 0 || Heavier(t, chosen)) chosen = t;
  }
  // The most negative gradient among the tasks with a result, converged ones only when
  // every such task has converged.
  bool all_converged = true;
  for (int t = 0; t < size(); ++t) {
    if (!tasks_[t].dead && tasks_[t].best && !Converged(t)) all_converged = false;
  }
  if (chosen < 0) {
    double lowest = std::numeric_limits<double>::infinity();
    for (int t = 0; t < size(); ++t) {
      if (tasks_[t].dead || !tasks_[t].best || (!all_converged && Converged(t))) continue;
      const double g = Gradient(t);
      if (chosen < 0 || g < lowest || (g == lowest && Heavier(t, chosen))) {
        chosen = t;
        lowest = g;
      }
    }
  }
  // No task has a result yet: the one with the fewest rounds.
  if (chosen < 0) {
    for (int t = 0; t < size(); ++t) {
      if (tasks_[t].dead) continue;
      if (chosen < 0 || tasks_[t].rounds < tasks_[chosen].rounds ||
          (tasks_[t].rounds == tasks_[chosen].rounds && Heavier(t, chosen))) {
        chosen = t;
      }
    }
  }
  if (chosen < 0) return -1;
  State& state = tasks_[chosen];
  if (state.best) state.history.push_back(*state.best);
  ++state.rounds;
  return chosen;
}

}  // namespace schedfarm
