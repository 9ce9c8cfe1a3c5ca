#include "learner_daemon/background_trainer.h"

#include "common/log.h"
#include "evaluation/metrics.h"
#include "learner/torch/torch_models.h"
#include "search/registry.h"

namespace schedfarm {

BackgroundTrainer::BackgroundTrainer(std::unique_ptr<LearnerDaemon::State> state)
    : state_(std::move(state)), thread_([this] { Loop(); }) {}

BackgroundTrainer::~BackgroundTrainer() {
  {
    MutexLock lock(mu_);
    stop_.store(true);
    added_.notify_all();
  }
  thread_.join();
}

void BackgroundTrainer::Add(const std::string& campaign, std::vector<std::string> kinds,
                            TrainingJob job) {
  MutexLock lock(mu_);
  for (auto it = rounds_.begin(); it != rounds_.end();) {
    it = it->campaign == campaign ? rounds_.erase(it) : it + 1;
  }
  rounds_.push_back({campaign, std::move(kinds), std::move(job)});
  added_.notify_all();
}

bool BackgroundTrainer::Superseded(const std::string& campaign) {
  MutexLock lock(mu_);
  for (const Round& round : rounds_) {
    if (round.campaign == campaign) return true;
  }
  return false;
}

void BackgroundTrainer::Loop() {
  SetTorchThreads(state_->options.train.threads);  // OpenMP's thread count is per thread
  while (true) {
    Round round;
    {
      MutexLock lock(mu_);
      while (!stop_.load() && rounds_.empty()) lock.Wait(added_);
      if (stop_.load()) return;
      round = std::move(rounds_.front());
      rounds_.pop_front();
    }
    TrainRound(round);
  }
}

void BackgroundTrainer::TrainRound(Round& round) {
  std::vector<NamedMetrics> table;
  round.job.yields_to = state_->gate.get();
  round.job.background = true;
  round.job.stop = &stop_;
  for (const std::string& kind : round.kinds) {
    if (stop_.load() || Superseded(round.campaign)) return;
    round.job.kind = kind;
    const auto newest = newest_.find({round.campaign, kind});
    round.job.start = newest != newest_.end() ? newest->second : nullptr;
    StatusOr<TrainedModel> trained = [&] {
      ComputeGate::Hold hold = state_->gate->Background();
      return state_->TrainAndStore(round.campaign, round.job, &table);
    }();
    if (!trained.ok()) {
      if (stop_.load()) return;  // stopped between epochs
      LogEvent(
          "warn", "training_failed",
          {{"campaign", round.campaign}, {"model", kind}, {"error", trained.status().message()}});
      continue;
    }
    const ModelKindInfo* info = FindModelKind(kind);
    if (info != nullptr && info->warm_starts) newest_[{round.campaign, kind}] = trained->model;
  }
  if (!table.empty()) {
    LogEvent("info", "models_evaluated",
             {{"campaign", round.campaign}, {"table", "\n" + FormatMetricsTable(table)}});
  }
}

}  // namespace schedfarm
