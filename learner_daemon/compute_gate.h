// The learner's cpus, shared by every campaign it follows: one computation at a time,
// each on --threads threads, so that the learner never runs more than it was given.
// A campaign's step (following its results, searching, proposing) goes first; a
// training gives the cpus to the steps that wait between two of its epochs and takes
// them back after them; background work (the model kinds no strategy searches under,
// trained for the evaluation table) takes the cpus only when nothing else wants them.
#pragma once

#include <condition_variable>

#include "common/mutex.h"

namespace schedfarm {

class ComputeGate {
 public:
  // The cpus, held until destroyed.
  class Hold {
   public:
    explicit Hold(ComputeGate* gate) : gate_(gate) {}
    Hold(Hold&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
    Hold& operator=(Hold&&) = delete;
    ~Hold() {
      if (gate_ != nullptr) gate_->Release();
    }

   private:
    ComputeGate* gate_;
  };

  // For a step: waits until nobody computes.
  [[nodiscard]] Hold Foreground();
  // For background work: waits until nobody computes or waits to.
  [[nodiscard]] Hold Background();
  // For the holder, between two epochs of a training: gives the cpus to the steps that
  // wait, if any, and takes them back once none does; a background training only once
  // no other training waits to take them back either.
  void YieldToSteps(bool background);

 private:
  void Release();

  Mutex mu_;
  std::condition_variable changed_;
  bool held_ SCHEDFARM_GUARDED_BY(mu_) = false;
  int steps_waiting_ SCHEDFARM_GUARDED_BY(mu_) = 0;
  int trainings_waiting_ SCHEDFARM_GUARDED_BY(mu_) = 0;  // foreground trainings that yielded
};

}  // namespace schedfarm
