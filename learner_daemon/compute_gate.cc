#include "learner_daemon/compute_gate.h"

namespace schedfarm {

ComputeGate::Hold ComputeGate::Foreground() {
  MutexLock lock(mu_);
  ++steps_waiting_;
  while (held_) lock.Wait(changed_);
  --steps_waiting_;
  held_ = true;
  return Hold(this);
}

ComputeGate::Hold ComputeGate::Background() {
  MutexLock lock(mu_);
  while (held_ || steps_waiting_ > 0 || trainings_waiting_ > 0) lock.Wait(changed_);
  held_ = true;
  return Hold(this);
}

void ComputeGate::YieldToSteps(bool background) {
  MutexLock lock(mu_);
  if (steps_waiting_ == 0) return;
  held_ = false;
  changed_.notify_all();
  if (!background) ++trainings_waiting_;
  while (held_ || steps_waiting_ > 0 || (background && trainings_waiting_ > 0)) {
    lock.Wait(changed_);
  }
  if (!background) --trainings_waiting_;
  held_ = true;
}

void ComputeGate::Release() {
  MutexLock lock(mu_);
  held_ = false;
  changed_.notify_all();
}

}  // namespace schedfarm
