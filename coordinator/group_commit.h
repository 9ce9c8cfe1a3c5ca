// Group commit: the coordinator's loop hands over records to write together with the
// replies that must wait until they are durable; one thread writes everything handed
// over since its previous write as a single synced RocksDB write, then hands the
// replies back. Under load the writes grow instead of queueing, so durable ingestion
// follows RocksDB's batched rate rather than its fsync rate.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "storage/store.h"

namespace schedfarm {

// A reply released once the records handed over with it (and everything before them)
// are durable: `to` is a worker id (an Ack) or a client's routing id.
struct DeferredReply {
  bool to_worker = false;
  std::string to;
  std::string frame;         // the encoded Envelope
  int64_t received_ms = 0;   // a result's acknowledgement: when the result arrived
};

// Threads: the coordinator's loop calls the public functions, the writer thread runs
// Run; what they share is guarded by mu_.
class GroupCommitter {
 public:
  // `on_write`, if set, is called on the writer thread with each synced write's seconds.
  explicit GroupCommitter(Store& store, std::function<void(double)> on_write = {});
  ~GroupCommitter();  // writes what was handed over, then stops
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Hands over `batch` (may be empty) and the replies that wait for it (thread-safe).
  void Add(Store::Batch batch, std::vector<DeferredReply> replies);
  // Readable (poll for POLLIN) while written replies wait in TakeWritten.
  int notify_fd() const { return notify_fd_; }
  // The replies whose records are durable, in hand-over order; clears notify_fd. After
  // a failed write, `error` is set and no reply is ever released again.
  std::vector<DeferredReply> TakeWritten(Status* error);
  // Whether records are handed over and not yet written.
  bool busy() const;

  // Synced writes made and the records they held, for the logs and the benchmark.
  int64_t writes() const;
  int64_t records() const;

 private:
  void Run();

  Store& store_;
  std::function<void(double)> on_write_;
  int notify_fd_ = -1;
  mutable Mutex mu_;
  std::condition_variable wake_;
  Store::Batch open_ SCHEDFARM_GUARDED_BY(mu_);
  std::vector<DeferredReply> open_replies_ SCHEDFARM_GUARDED_BY(mu_);
  bool writing_ SCHEDFARM_GUARDED_BY(mu_) = false;
  std::vector<DeferredReply> written_ SCHEDFARM_GUARDED_BY(mu_);
  Status error_ SCHEDFARM_GUARDED_BY(mu_);
  bool stop_ SCHEDFARM_GUARDED_BY(mu_) = false;
  int64_t writes_ SCHEDFARM_GUARDED_BY(mu_) = 0;
  int64_t records_ SCHEDFARM_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace schedfarm
