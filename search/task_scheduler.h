// Which task of a network the next round of proposals goes to: Ansor's gradient task
// scheduler (Zheng et al., OSDI 2020, section 6), for a farm whose results arrive
// after the round is handed out.
//
// The network's estimated runtime is f = sum_i w_i * g_i, with w_i the task's weight
// (its occurrences) and g_i its best measured runtime. The next round goes to the task
// whose round is expected to lower f the most, the most negative
//   dF/dt_i = w_i * (alpha * backward_i + (1 - alpha) * forward_i)
// where backward_i = (g_i now - g_i `window` rounds ago) / window is the recent gain
// per round and forward_i = min(g_i - g_i / t_i, beta * flops_i / r_group) - g_i the
// gain one more round may bring: what an average round brought so far, or the way
// down to `beta` times the runtime at the best FLOP rate r_group that a task of its
// group (tasks of one anchor kind) reached, whichever is larger. t_i counts the
// rounds handed out.
//
// Before that: every task gets one round, heaviest (weight x FLOPs) first; a task
// whose rounds have no measured result yet waits for them, unless no task has one.
// A task whose best did not improve over its last `patience` rounds has converged: it
// gets rounds again only once every task has (the group term alone would keep a task
// that cannot reach its group's FLOP rate, a 7x7 convolution beside 56x56 ones, first
// for ever). A dead task (its search has nothing left, or every candidate fails) gets
// no more.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace schedfarm {

struct TaskSchedulerOptions {
  double alpha = 0.2;       // weight of the backward (observed) gradient
  double beta = 2;          // the group's best FLOP rate a task may hope to reach / beta
  int backward_window = 3;  // rounds the backward gradient spans
  // A task whose best has not improved over its last this-many rounds has converged
  // (Ansor's early stopping of a task); 0: never.
  int patience = 8;
};

class TaskScheduler {
 public:
  struct Task {
    double weight = 1;  // occurrences in the network
    double flops = 0;   // work of one occurrence
    std::string group;  // tasks that may be compared by FLOP rate
  };

  explicit TaskScheduler(std::vector<Task> tasks, TaskSchedulerOptions options = {});

  // Task t's best measured runtime so far, in seconds (> 0); a slower one is ignored.
  void SetBest(int t, double seconds);
  // Task t gets no more rounds.
  void SetDead(int t);

  // The task the next round goes to, recorded as handed out; -1 when every task is dead.
  int NextRound();

  // dF/dt of task t as above (0 before it has a best). For tests and logs.
  double Gradient(int t) const;
  int rounds(int t) const { return tasks_[t].rounds; }
  bool dead(int t) const { return tasks_[t].dead; }
  // Whether the task's best did not improve over its last `patience` rounds.
  bool Converged(int t) const;
  const std::optional<double>& best(int t) const { return tasks_[t].best; }
  int size() const { return static_cast<int>(tasks_.size()); }

 private:
  struct State {
    Task task;
    std::optional<double> best;
    std::vector<double> history;  // best at each round handed out after it had one
    int rounds = 0;
    bool dead = false;
  };
  // Ties go to the heavier task, then the lower index.
  bool Heavier(int a, int b) const;

  std::vector<State> tasks_;
  TaskSchedulerOptions options_;
};

}  // namespace schedfarm
