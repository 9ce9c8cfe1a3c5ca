// Internal to learner_daemon/: the model kinds a campaign trains beside the one its
// strategy searches under, for the evaluation table. They train on a thread of their
// own at the compute gate's background priority (compute_gate.h), so that no proposal
// waits for them: one campaign's round at a time, in the order the rounds came. A
// campaign's newer round replaces its round not yet started, and ends the one under way
// after its current kind.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "learner_daemon/daemon_state.h"

namespace schedfarm {

class BackgroundTrainer {
 public:
  // `state`: the trainer's own connection to the coordinator, and the learner's gate
  // (LearnerDaemon::State::Fork).
  explicit BackgroundTrainer(std::unique_ptr<LearnerDaemon::State> state);
  // Stops the training under way between two epochs and joins the thread.
  ~BackgroundTrainer();

  // Trains `kinds` on `job`'s samples (its kind and start ignored) for `campaign`.
  void Add(const std::string& campaign, std::vector<std::string> kinds, TrainingJob job);

 private:
  struct Round {
    std::string campaign;
    std::vector<std::string> kinds;
    TrainingJob job;
  };
  void Loop();
  void TrainRound(Round& round);
  bool Superseded(const std::string& campaign);

  std::unique_ptr<LearnerDaemon::State> state_;
  std::atomic<bool> stop_{false};
  Mutex mu_;
  std::condition_variable added_;
  std::deque<Round> rounds_ SCHEDFARM_GUARDED_BY(mu_);
  // Each campaign's newest model of each kind that warm-starts (ModelKindInfo), the
  // start of its next training.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<const PerformanceModel>> newest_;
  std::thread thread_;
};

}  // namespace schedfarm
