#include "coordinator/group_commit.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <utility>

#include "common/log.h"

namespace schedfarm {

GroupCommitter::GroupCommitter(Store& store, std::function<void(double)> on_write)
    : store_(store),
      on_write_(std::move(on_write)),
      notify_fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  thread_ = std::thread([this] { Run(); });
}

GroupCommitter::~GroupCommitter() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  close(notify_fd_);
}

void GroupCommitter::Add(Store::Batch batch, std::vector<DeferredReply> replies) {
  {
    MutexLock lock(mu_);
    open_.Append(std::move(batch));
    for (DeferredReply& reply : replies) open_replies_.push_back(std::move(reply));
  }
  wake_.notify_one();
}

std::vector<DeferredReply> GroupCommitter::TakeWritten(Status* error) {
  uint64_t counter;
  while (read(notify_fd_, &counter, sizeof(counter)) > 0) {
  }
  MutexLock lock(mu_);
  *error = error_;
  return std::exchange(written_, {});
}

bool GroupCommitter::busy() const {
  MutexLock lock(mu_);
  return writing_ || !open_.empty() || !open_replies_.empty();
}

int64_t GroupCommitter::writes() const {
  MutexLock lock(mu_);
  return writes_;
}

int64_t GroupCommitter::records() const {
  MutexLock lock(mu_);
  return records_;
}

void GroupCommitter::Run() {
  MutexLock lock(mu_);
  while (true) {
    while (!stop_ && open_.empty() && open_replies_.empty()) lock.Wait(wake_);
    if (open_.empty() && open_replies_.empty()) return;  // stopping, nothing left
    if (!error_.ok()) return;
    Store::Batch batch = std::exchange(open_, Store::Batch());
    std::vector<DeferredReply> replies = std::exchange(open_replies_, {});
    writing_ = true;
    lock.Unlock();
    Status status;
    size_t records = batch.size();
    if (!batch.empty()) {
      const auto started = std::chrono::steady_clock::now();
      status = store_.Commit(batch).status();
      const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - started;
      if (on_write_ && status.ok()) on_write_(seconds.count());
    }
    lock.Lock();
    writing_ = false;
    if (!status.ok()) {
      error_ = status;
      LogEvent("error", "store_write_failed", {{"error", status.message()}});
    } else {
      if (records > 0) {
        ++writes_;
        records_ += static_cast<int64_t>(records);
      }
      for (DeferredReply& reply : replies) written_.push_back(std::move(reply));
    }
    const uint64_t one = 1;
    const ssize_t ignored =
        write(notify_fd_, &one, sizeof(one));  // cannot overflow: read each turn
    (void)ignored;
  }
}

}  // namespace schedfarm
