#include "worker/replay.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "pipeline/graph.h"
#include "pipeline/spec.h"
#include "scheduler/schedule_space.h"

namespace schedfarm {
StatusOr<std::unique_ptr<ReplayRunner>> ReplayRunner::Create(
    std::shared_ptr<const LoadedDataset> dataset) {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Status::Error(std::string("eventfd: ") + std::strerror(errno));
  return std::unique_ptr<ReplayRunner>(new ReplayRunner(std::move(dataset), fd));
}

ReplayRunner::ReplayRunner(std::shared_ptr<const LoadedDataset> dataset, int event_fd)
    : dataset_(std::move(dataset)),
      event_fd_(event_fd),
      records_(MeasurementsByKey(dataset_->data)) {}

ReplayRunner::~ReplayRunner() { close(event_fd_); }

Measurement ReplayRunner::Answer(const SandboxJob& job) {
  Measurement answer;
  answer.set_finished_unix_ms(UnixMillis());
  *answer.mutable_settings() = job.settings();
  StatusOr<PipelineGraph> graph = PipelineGraph::Build(job.pipeline());
  std::string key, what;
  if (graph.ok()) {
    const std::string pipeline_id = PipelineId(*graph);
    if (!job.autoscheduler().empty()) {
      key = DatasetKey(pipeline_id, job.autoscheduler());  // a baseline's schedule hash
      what = job.autoscheduler() + "'s schedule of pipeline " + pipeline_id;
    } else {
      const std::string hash = ScheduleHash(ScheduleSpace(*graph), job.schedule());
      key = DatasetKey(pipeline_id, hash);
      what = "schedule " + hash + " of pipeline " + pipeline_id;
    }
  }
  auto it = records_.find(key);
  if (it == records_.end()) {
    answer.set_status(NOT_IN_DATASET);
    answer.set_error((what.empty() ? "the job's pipeline" : what) + " is not in dataset " +
                     dataset_->id + " (" + dataset_->path + ")");
    return answer;
  }
  size_t& next = replayed_[job.campaign() + '\0' + key];
  const Measurement& recorded = dataset_->data.measurements(it->second[next % it->second.size()]);
  ++next;
  answer.set_status(recorded.status());
  answer.set_compile_seconds(recorded.compile_seconds());
  *answer.mutable_samples_seconds() = recorded.samples_seconds();
  *answer.mutable_stats() = recorded.stats();
  answer.set_output_checksum(recorded.output_checksum());
  answer.set_error(recorded.error());
  answer.set_repeats_per_sample(recorded.repeats_per_sample());
  answer.set_schedule_source(recorded.schedule_source());
  if (!job.autoscheduler().empty()) {
    *answer.mutable_candidate()->mutable_schedule() = recorded.candidate().schedule();
  }
  return answer;
}

void ReplayRunner::Submit(SandboxJob job) {
  SandboxOutcome outcome;
  outcome.job_id = job.job_id();
  outcome.measurement = Answer(job);
  finished_.push_back(std::move(outcome));
  const uint64_t one = 1;
  const ssize_t ignored = write(event_fd_, &one, sizeof(one));
  (void)ignored;
}

std::vector<SandboxOutcome> ReplayRunner::TakeFinished() {
  uint64_t count = 0;
  const ssize_t ignored = read(event_fd_, &count, sizeof(count));
  (void)ignored;
  return std::move(finished_);
}

}  // namespace schedfarm
