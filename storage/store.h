// Store: the coordinator's RocksDB database behind a small typed interface. One
// process opens it for writing (Open); offline readers follow it live as a secondary
// instance (OpenSecondary + CatchUp). Writes go through a Batch, committed as one
// atomic, synced RocksDB write across column families.
//
// Layout version 1 (persisted; Open refuses another version). "id\0" is an id followed
// by a 0 byte, seq an 8-byte big-endian integer, median an 8-byte order-preserving
// double (storage/keys.h):
//   default           layout_version, next_measurement_seq, next_event_seq
//   pipelines         pipeline_id                          -> PipelineSpec
//   campaigns         campaign                             -> Campaign
//   candidates        campaign\0 pipeline_id\0 slot          -> CandidateRecord
//   measurements      campaign\0 seq                       -> Measurement
//   models            kind\0 version                       -> Model
//   workers           worker_id                            -> WorkerRecord
//   events            seq                                  -> Event
//   best_by_pipeline  pipeline_id\0 median seq             -> campaign   (status OK only)
//   best_by_campaign  campaign\0 pipeline_id\0 median seq  -> ""         (status OK only)
//   value_rounds      campaign\0 round                     -> ValueRound
// A column family added later is created when the writer opens an older store.
// Measurement and event sequence numbers are global, start at 1 and are assigned at
// commit under the store's write lock, so seq order is commit order.
// Threads: the coordinator's loop reads while its writer thread commits; reads are
// RocksDB's own thread-safe gets and iterators, and commits take the write lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "schedfarm.pb.h"

namespace rocksdb {
class ColumnFamilyHandle;
class DB;
class Env;
}  // namespace rocksdb

namespace schedfarm {

// A measurement with the sequence number the store gave it.
struct StoredMeasurement {
  uint64_t seq = 0;
  Measurement measurement;
};

class Store {
 public:
  // Records to write together. Each Put serializes its record at once (the caller may
  // reuse it); an invalid id makes the batch fail at Commit without writing anything.
  class Batch {
   public:
    // `id` is the pipeline's PipelineId (pipeline/spec.h).
    void PutPipeline(const std::string& id, const PipelineSpec& pipeline);
    void PutCampaign(const Campaign& campaign);
    void PutCandidate(const CandidateRecord& record);
    void PutModel(const Model& model);
    void PutWorker(const WorkerRecord& worker);
    // Inserts or replaces the round of its campaign (round >= 0).
    void PutValueRound(const ValueRound& round);
    // Appended under the next measurement sequence number; indexed for BestMeasurements
    // when its status is OK with a finite median.
    void AddMeasurement(const Measurement& measurement);
    // Appended to the event log; its seq field is set at commit.
    void AddEvent(const Event& event);
    // Appends every record of `other`, in its order.
    void Append(Batch&& other);
    bool empty() const { return ops_.empty() && status_.ok(); }
    size_t size() const { return ops_.size(); }

   private:
    friend class Store;
    enum class Kind { kPut, kMeasurement, kEvent };
    struct Op {
      Kind kind;
      int cf;                // kPut: index into the store's column families
      std::string key;       // kPut: the key; kMeasurement: the campaign
      std::string value;     // kPut, kMeasurement: the serialized record
      std::string pipeline;  // kMeasurement
      bool indexed = false;  // kMeasurement: status OK with a finite median
      double median = 0;     // kMeasurement
      Event event;           // kEvent
    };
    void Put(int cf, std::string key, const google::protobuf::Message& record);
    void Fail(const Status& status);

    std::vector<Op> ops_;
    Status status_;
  };

  // The sequence numbers given to the batch's measurements and events, in the order
  // they were added.
  struct Committed {
    std::vector<uint64_t> measurement_seqs;
    std::vector<uint64_t> event_seqs;
  };

  // Opens (creating if needed) the database at `path` for writing. Fails while another
  // writer holds it. `env` replaces RocksDB's default environment (a test's file system
  // that loses power); it must outlive the store.
  static StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                               rocksdb::Env* env = nullptr);
  // Opens a read-only live view of the database a writer holds at `primary_path`;
  // `secondary_path` is the view's own directory for its info logs.
  static StatusOr<std::unique_ptr<Store>> OpenSecondary(const std::string& primary_path,
                                                        const std::string& secondary_path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // One synced, atomic write of the whole batch (thread-safe). Sequence numbers are
  // used only once the write succeeded.
  StatusOr<Committed> Commit(const Batch& batch);
  // Secondary only: brings the view up to the primary's latest synced writes.
  Status CatchUp();

  // Each returns nullopt when the record is absent, an error naming the column family
  // and key when it is unparseable.
  StatusOr<std::optional<PipelineSpec>> GetPipeline(const std::string& id) const;
  StatusOr<std::optional<Campaign>> GetCampaign(const std::string& id) const;
  // `slot` is store_keys::CandidateSlot of the candidate's hash and repeat.
  StatusOr<std::optional<CandidateRecord>> GetCandidate(const std::string& campaign,
                                                        const std::string& pipeline_id,
                                                        const std::string& slot) const;
  StatusOr<std::optional<Measurement>> GetMeasurement(const std::string& campaign,
                                                      uint64_t seq) const;
  StatusOr<std::optional<Model>> GetModel(const std::string& kind,
                                          const std::string& version) const;
  StatusOr<std::optional<WorkerRecord>> GetWorker(const std::string& worker_id) const;

  // Scans call `visit` in key order until it returns false.
  // The campaign's measurements with seq >= from_seq, in seq order.
  Status ScanMeasurements(const std::string& campaign, uint64_t from_seq,
                          const std::function<bool(const StoredMeasurement&)>& visit) const;
  // The campaign's candidates, by pipeline id then schedule hash.
  Status ScanCandidates(const std::string& campaign,
                        const std::function<bool(const CandidateRecord&)>& visit) const;
  // Every campaign, by id.
  Status ScanCampaigns(const std::function<bool(const Campaign&)>& visit) const;
  // Every model, by kind then version.
  Status ScanModels(const std::function<bool(const Model&)>& visit) const;
  // The campaign's value-iteration rounds, in round order.
  Status ScanValueRounds(const std::string& campaign,
                         const std::function<bool(const ValueRound&)>& visit) const;
  // Every worker, by id.
  Status ScanWorkers(const std::function<bool(const WorkerRecord&)>& visit) const;
  // The event log from `from_seq` on.
  Status ScanEvents(uint64_t from_seq, const std::function<bool(const Event&)>& visit) const;

  // The k measurements of the pipeline with status OK and the smallest median runtime
  // (ties by seq), over all campaigns or within `campaign` when it is non-empty.
  StatusOr<std::vector<StoredMeasurement>> BestMeasurements(const std::string& pipeline_id,
                                                            size_t k,
                                                            const std::string& campaign = "") const;

  // A consistent copy of the whole database in `dir` (which must not exist), taken
  // while writes go on (a RocksDB checkpoint: files hard-linked where the file system
  // allows, the log copied). A store opens on it like on the original.
  Status Checkpoint(const std::string& dir) const;

  // The last sequence numbers committed (0 when none); a secondary reads them at open
  // and at each CatchUp.
  uint64_t last_measurement_seq() const { return next_measurement_seq_ - 1; }
  uint64_t last_event_seq() const { return next_event_seq_ - 1; }

 private:
  Store(std::string path, bool secondary);
  static StatusOr<std::unique_ptr<Store>> OpenImpl(const std::string& path,
                                                   const std::string& secondary_path,
                                                   rocksdb::Env* env);
  Status LoadMeta(bool create);
  template <typename T>
  StatusOr<std::optional<T>> GetRecord(int cf, const std::string& key) const;
  template <typename T>
  Status ParseRecord(int cf, const std::string& key, const std::string& value, T* out) const;
  Status Scan(int cf, const std::string& prefix, const std::string& start,
              const std::function<Status(const std::string& key, const std::string& value,
                                         bool* more)>& visit) const;
  Status Error(const std::string& what) const;

  std::string path_;
  bool secondary_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs_;  // indexed by the CF enum in store.cc
  Mutex write_mu_;                                 // serializes Commit and CatchUp
  std::atomic<uint64_t> next_measurement_seq_{1};
  std::atomic<uint64_t> next_event_seq_{1};
};

}  // namespace schedfarm
