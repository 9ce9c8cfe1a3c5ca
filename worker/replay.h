// ReplayRunner: a worker's jobs answered from a recorded dataset (dataset/dataset.h)
// instead of compiled and timed: `farm-worker --replay FILE`. A job of a schedule the
// dataset holds gets its recorded measurement back at once (status, compile time,
// samples, statistics, output checksum, error); a schedule measured more than once
// gets its records in the order they were taken, then again from the first, each
// campaign on its own (its first lease of a schedule gets the first record, a retry or
// a re-measurement the next), so that campaigns replayed side by side see the same
// history whatever their order. A baseline
// job gets the dataset's measurement of that autoscheduler on the pipeline (a
// baseline's schedule hash is the autoscheduler's name). Anything
// else gets NOT_IN_DATASET, naming the schedule and the dataset: nothing is measured.
// Everything else of the worker (the protocol, the lease checks, the acknowledgements)
// is the same as when it measures.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dataset/dataset.h"
#include "worker/job_runner.h"
#include "worker/sandbox.h"

namespace schedfarm {

class ReplayRunner : public JobRunner {
 public:
  static StatusOr<std::unique_ptr<ReplayRunner>> Create(std::shared_ptr<const LoadedDataset> dataset);
  ~ReplayRunner() override;

  void Submit(SandboxJob job) override;
  int notify_fd() const override { return event_fd_; }
  std::vector<SandboxOutcome> TakeFinished() override;

  ReplayRunner(const ReplayRunner&) = delete;
  ReplayRunner& operator=(const ReplayRunner&) = delete;

 private:
  ReplayRunner(std::shared_ptr<const LoadedDataset> dataset, int event_fd);
  // The measurement that answers `job`.
  Measurement Answer(const SandboxJob& job);

  std::shared_ptr<const LoadedDataset> dataset_;
  int event_fd_;
  // DatasetKey -> the indexes of its measurements; campaign\0DatasetKey -> how many of
  // them that campaign was answered.
  std::map<std::string, std::vector<int>> records_;
  std::map<std::string, size_t> replayed_;
  std::vector<SandboxOutcome> finished_;
};

}  // namespace schedfarm
