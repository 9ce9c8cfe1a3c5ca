#include "storage/store.h"

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>

#include <cmath>
#include <cstring>

#include "storage/keys.h"

namespace schedfarm {

namespace {

// The column families, in the order of kCfNames.
enum Cf {
  kDefault,
  kPipelines,
  kCampaigns,
  kCandidates,
  kMeasurements,
  kModels,
  kWorkers,
  kEvents,
  kBestByPipeline,
  kBestByCampaign,
  kValueRounds,
  kNumCfs,
};

const char* const kCfNames[kNumCfs] = {
    "default",  // rocksdb::kDefaultColumnFamilyName
    "pipelines", "campaigns", "candidates",       "measurements",     "models",
    "workers",   "events",    "best_by_pipeline", "best_by_campaign", "value_rounds",
};

std::string U64Bytes(uint64_t v) {
  std::string bytes;
  store_keys::AppendU64(&bytes, v);
  return bytes;
}

bool StartsWith(const rocksdb::Slice& s, const std::string& prefix) {
  return s.size() >= prefix.size() && std::memcmp(s.data(), prefix.data(), prefix.size()) == 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// Batch

void Store::Batch::Fail(const Status& status) {
  if (status_.ok()) {
    status_ = status.WithContext("record " + std::to_string(ops_.size()) + " of the batch");
  }
}

void Store::Batch::Put(int cf, std::string key, const google::protobuf::Message& record) {
  Op op{Kind::kPut, cf, std::move(key), "", "", false, 0, Event()};
  if (!record.SerializeToString(&op.value)) {
    Fail(Status::Error("cannot serialize the " + record.GetTypeName()));
    return;
  }
  ops_.push_back(std::move(op));
}

void Store::Batch::PutPipeline(const std::string& id, const PipelineSpec& pipeline) {
  Status status = store_keys::CheckId("pipeline id", id);
  if (!status.ok()) return Fail(status);
  Put(kPipelines, id, pipeline);
}

void Store::Batch::PutCampaign(const Campaign& campaign) {
  Status status = store_keys::CheckId("campaign id", campaign.id());
  if (!status.ok()) return Fail(status);
  Put(kCampaigns, campaign.id(), campaign);
}

void Store::Batch::PutCandidate(const CandidateRecord& record) {
  const Candidate& c = record.candidate();
  for (Status status : {store_keys::CheckId("candidate's campaign", c.campaign()),
                        store_keys::CheckId("candidate's pipeline id", c.pipeline_id()),
                        store_keys::CheckId("candidate's schedule hash", c.schedule_hash())}) {
    if (!status.ok()) return Fail(status);
  }
  Put(kCandidates,
      store_keys::CandidateKey(c.campaign(), c.pipeline_id(),
                               store_keys::CandidateSlot(c.schedule_hash(), c.repeat())),
      record);
}

void Store::Batch::PutModel(const Model& model) {
  for (Status status : {store_keys::CheckId("model kind", model.kind()),
                        store_keys::CheckId("model version", model.version())}) {
    if (!status.ok()) return Fail(status);
  }
  Put(kModels, store_keys::ModelKey(model.kind(), model.version()), model);
}

void Store::Batch::PutValueRound(const ValueRound& round) {
  Status status = store_keys::CheckId("value round's campaign", round.campaign());
  if (!status.ok()) return Fail(status);
  if (round.round() < 0) return Fail(Status::Error("value round " + std::to_string(round.round()) +
                                                   " is negative"));
  Put(kValueRounds, store_keys::ValueRoundKey(round.campaign(), round.round()), round);
}

void Store::Batch::PutWorker(const WorkerRecord& worker) {
  Status status = store_keys::CheckId("worker id", worker.host().worker_id());
  if (!status.ok()) return Fail(status);
  Put(kWorkers, worker.host().worker_id(), worker);
}

void Store::Batch::AddMeasurement(const Measurement& measurement) {
  const Candidate& c = measurement.candidate();
  for (Status status : {store_keys::CheckId("measurement's campaign", c.campaign()),
                        store_keys::CheckId("measurement's pipeline id", c.pipeline_id())}) {
    if (!status.ok()) return Fail(status);
  }
  const double median = measurement.stats().median_seconds();
  Op op{Kind::kMeasurement,
        kMeasurements,
        c.campaign(),
        "",
        c.pipeline_id(),
        measurement.status() == OK && std::isfinite(median),
        median,
        Event()};
  if (!measurement.SerializeToString(&op.value)) {
    return Fail(Status::Error("cannot serialize the measurement"));
  }
  ops_.push_back(std::move(op));
}

void Store::Batch::AddEvent(const Event& event) {
  ops_.push_back(Op{Kind::kEvent, kEvents, "", "", "", false, 0, event});
}

void Store::Batch::Append(Batch&& other) {
  if (!other.status_.ok()) Fail(other.status_);
  if (ops_.empty()) {
    ops_ = std::move(other.ops_);
  } else {
    ops_.insert(ops_.end(), std::make_move_iterator(other.ops_.begin()),
                std::make_move_iterator(other.ops_.end()));
  }
  other.ops_.clear();
}

// ---------------------------------------------------------------------------
// Opening

Store::Store(std::string path, bool secondary) : path_(std::move(path)), secondary_(secondary) {}

Store::~Store() {
  if (!db_) return;
  for (rocksdb::ColumnFamilyHandle* cf : cfs_)
    db_->DestroyColumnFamilyHandle(cf).PermitUncheckedError();
  db_->Close().PermitUncheckedError();
}

Status Store::Error(const std::string& what) const {
  return Status::Error("store " + path_ + ": " + what);
}

StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& path, rocksdb::Env* env) {
  return OpenImpl(path, "", env);
}

StatusOr<std::unique_ptr<Store>> Store::OpenSecondary(const std::string& primary_path,
                                                      const std::string& secondary_path) {
  if (secondary_path.empty()) {
    return Status::Error("store " + primary_path + ": the secondary needs its own directory");
  }
  return OpenImpl(primary_path, secondary_path, nullptr);
}

StatusOr<std::unique_ptr<Store>> Store::OpenImpl(const std::string& path,
                                                 const std::string& secondary_path,
                                                 rocksdb::Env* env) {
  const bool secondary = !secondary_path.empty();
  std::unique_ptr<Store> store(new Store(path, secondary));
  rocksdb::Options options;
  options.create_if_missing = !secondary;
  options.create_missing_column_families = !secondary;
  if (secondary) options.max_open_files = -1;  // required by secondary instances
  if (env != nullptr) options.env = env;
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const char* name : kCfNames) {
    descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions(options));
  }
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = secondary ? rocksdb::DB::OpenAsSecondary(options, path, secondary_path,
                                                               descriptors, &store->cfs_, &db)
                                : rocksdb::DB::Open(options, path, descriptors, &store->cfs_, &db);
  if (!s.ok()) {
    if (!secondary && s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
      return store->Error(
          "already open for writing by another process or instance (one writer at a time; "
          "readers use a secondary instance): " +
          s.ToString());
    }
    return store->Error(std::string("cannot open") + (secondary ? " as a secondary" : "") + ": " +
                        s.ToString());
  }
  store->db_.reset(db);
  SCHEDFARM_RETURN_IF_ERROR(store->LoadMeta(!secondary));
  return store;
}

Status Store::Checkpoint(const std::string& dir) const {
  rocksdb::Checkpoint* raw = nullptr;
  rocksdb::Status s = rocksdb::Checkpoint::Create(db_.get(), &raw);
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  if (s.ok()) s = checkpoint->CreateCheckpoint(dir);
  if (!s.ok()) return Error("cannot copy to '" + dir + "': " + s.ToString());
  return Status::Ok();
}

Status Store::LoadMeta(bool create) {
  std::string value;
  rocksdb::Status s =
      db_->Get(rocksdb::ReadOptions(), cfs_[kDefault], store_keys::kLayoutVersionKey, &value);
  if (s.IsNotFound() && create) {
    rocksdb::WriteOptions write_options;
    write_options.sync = true;
    s = db_->Put(write_options, cfs_[kDefault], store_keys::kLayoutVersionKey,
                 U64Bytes(store_keys::kLayoutVersion));
    if (!s.ok()) return Error("cannot write the layout version: " + s.ToString());
  } else if (s.IsNotFound()) {
    return Error("no layout version: not a schedfarm store, or not created yet");
  } else if (!s.ok()) {
    return Error("cannot read the layout version: " + s.ToString());
  } else if (value.size() != 8 || store_keys::DecodeU64(value) != store_keys::kLayoutVersion) {
    return Error("layout version '" + store_keys::PrintableKey(value) + "' is not " +
                 std::to_string(store_keys::kLayoutVersion));
  }
  for (auto [key, next] : {std::pair{store_keys::kNextMeasurementSeqKey, &next_measurement_seq_},
                           std::pair{store_keys::kNextEventSeqKey, &next_event_seq_}}) {
    s = db_->Get(rocksdb::ReadOptions(), cfs_[kDefault], key, &value);
    if (s.IsNotFound()) continue;
    if (!s.ok()) return Error(std::string("cannot read ") + key + ": " + s.ToString());
    if (value.size() != 8) {
      return Error(std::string("column family default, key '") + key + "': not 8 bytes");
    }
    *next = store_keys::DecodeU64(value);
  }
  return Status::Ok();
}

Status Store::CatchUp() {
  if (!secondary_) return Error("CatchUp is for secondary instances");
  MutexLock lock(write_mu_);
  rocksdb::Status s = db_->TryCatchUpWithPrimary();
  if (!s.ok()) return Error("cannot catch up with the primary: " + s.ToString());
  return LoadMeta(false);
}

// ---------------------------------------------------------------------------
// Writing

StatusOr<Store::Committed> Store::Commit(const Batch& batch) {
  if (secondary_) return Error("a secondary instance is read-only");
  if (!batch.status_.ok()) return batch.status_.WithContext("store " + path_);
  MutexLock lock(write_mu_);
  const uint64_t first_measurement = next_measurement_seq_;
  const uint64_t first_event = next_event_seq_;
  uint64_t measurement_seq = first_measurement;
  uint64_t event_seq = first_event;
  Committed committed;
  rocksdb::WriteBatch wb;
  auto put = [&](int cf, const std::string& key, const std::string& value) {
    rocksdb::Status s = wb.Put(cfs_[cf], key, value);
    return s.ok() ? Status::Ok()
                  : Error(std::string("cannot add to the batch (column family ") + kCfNames[cf] +
                          "): " + s.ToString());
  };
  for (const Batch::Op& op : batch.ops_) {
    switch (op.kind) {
      case Batch::Kind::kPut:
        SCHEDFARM_RETURN_IF_ERROR(put(op.cf, op.key, op.value));
        break;
      case Batch::Kind::kMeasurement: {
        const uint64_t seq = measurement_seq++;
        SCHEDFARM_RETURN_IF_ERROR(
            put(kMeasurements, store_keys::MeasurementKey(op.key, seq), op.value));
        if (op.indexed) {
          SCHEDFARM_RETURN_IF_ERROR(put(
              kBestByPipeline, store_keys::BestByPipelineKey(op.pipeline, op.median, seq), op.key));
          SCHEDFARM_RETURN_IF_ERROR(
              put(kBestByCampaign,
                  store_keys::BestByCampaignKey(op.key, op.pipeline, op.median, seq), ""));
        }
        committed.measurement_seqs.push_back(seq);
        break;
      }
      case Batch::Kind::kEvent: {
        Event event = op.event;
        event.set_seq(event_seq++);
        std::string value;
        if (!event.SerializeToString(&value)) return Error("cannot serialize an event");
        SCHEDFARM_RETURN_IF_ERROR(put(kEvents, store_keys::EventKey(event.seq()), value));
        committed.event_seqs.push_back(event.seq());
        break;
      }
    }
  }
  if (measurement_seq != first_measurement) {
    SCHEDFARM_RETURN_IF_ERROR(
        put(kDefault, store_keys::kNextMeasurementSeqKey, U64Bytes(measurement_seq)));
  }
  if (event_seq != first_event) {
    SCHEDFARM_RETURN_IF_ERROR(put(kDefault, store_keys::kNextEventSeqKey, U64Bytes(event_seq)));
  }
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  rocksdb::Status s = db_->Write(write_options, &wb);
  if (!s.ok()) {
    return Error("write of " + std::to_string(batch.ops_.size()) +
                 " records failed: " + s.ToString());
  }
  next_measurement_seq_ = measurement_seq;
  next_event_seq_ = event_seq;
  return committed;
}

// ---------------------------------------------------------------------------
// Reading

template <typename T>
Status Store::ParseRecord(int cf, const std::string& key, const std::string& value, T* out) const {
  if (out->ParseFromString(value)) return Status::Ok();
  return Error(std::string("column family ") + kCfNames[cf] + ", key '" +
               store_keys::PrintableKey(key) + "': not a valid " + out->GetTypeName() +
               " record (" + std::to_string(value.size()) + " bytes)");
}

template <typename T>
StatusOr<std::optional<T>> Store::GetRecord(int cf, const std::string& key) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cfs_[cf], key, &value);
  if (s.IsNotFound()) return std::optional<T>();
  if (!s.ok()) {
    return Error(std::string("column family ") + kCfNames[cf] + ", key '" +
                 store_keys::PrintableKey(key) + "': " + s.ToString());
  }
  T record;
  SCHEDFARM_RETURN_IF_ERROR(ParseRecord(cf, key, value, &record));
  return std::optional<T>(std::move(record));
}

StatusOr<std::optional<PipelineSpec>> Store::GetPipeline(const std::string& id) const {
  return GetRecord<PipelineSpec>(kPipelines, id);
}

StatusOr<std::optional<Campaign>> Store::GetCampaign(const std::string& id) const {
  return GetRecord<Campaign>(kCampaigns, id);
}

StatusOr<std::optional<CandidateRecord>> Store::GetCandidate(
    const std::string& campaign, const std::string& pipeline_id, const std::string& slot) const {
  return GetRecord<CandidateRecord>(kCandidates,
                                    store_keys::CandidateKey(campaign, pipeline_id, slot));
}

StatusOr<std::optional<Measurement>> Store::GetMeasurement(const std::string& campaign,
                                                           uint64_t seq) const {
  return GetRecord<Measurement>(kMeasurements, store_keys::MeasurementKey(campaign, seq));
}

StatusOr<std::optional<Model>> Store::GetModel(const std::string& kind,
                                               const std::string& version) const {
  return GetRecord<Model>(kModels, store_keys::ModelKey(kind, version));
}

StatusOr<std::optional<WorkerRecord>> Store::GetWorker(const std::string& worker_id) const {
  return GetRecord<WorkerRecord>(kWorkers, worker_id);
}

Status Store::Scan(int cf, const std::string& prefix, const std::string& start,
                   const std::function<Status(const std::string& key, const std::string& value,
                                              bool* more)>& visit) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cfs_[cf]));
  for (it->Seek(start); it->Valid() && StartsWith(it->key(), prefix); it->Next()) {
    bool more = true;
    SCHEDFARM_RETURN_IF_ERROR(visit(it->key().ToString(), it->value().ToString(), &more));
    if (!more) return Status::Ok();
  }
  if (!it->status().ok()) {
    return Error(std::string("scan of column family ") + kCfNames[cf] +
                 " failed: " + it->status().ToString());
  }
  return Status::Ok();
}

Status Store::ScanMeasurements(const std::string& campaign, uint64_t from_seq,
                               const std::function<bool(const StoredMeasurement&)>& visit) const {
  const std::string prefix = store_keys::IdPrefix(campaign);
  return Scan(kMeasurements, prefix, store_keys::MeasurementKey(campaign, from_seq),
              [&](const std::string& key, const std::string& value, bool* more) {
                if (key.size() != prefix.size() + 8) {
                  return Error("column family measurements, key '" + store_keys::PrintableKey(key) +
                               "': not campaign and seq");
                }
                StoredMeasurement m;
                m.seq = store_keys::DecodeU64(key, prefix.size());
                SCHEDFARM_RETURN_IF_ERROR(ParseRecord(kMeasurements, key, value, &m.measurement));
                *more = visit(m);
                return Status::Ok();
              });
}

Status Store::ScanCandidates(const std::string& campaign,
                             const std::function<bool(const CandidateRecord&)>& visit) const {
  const std::string prefix = store_keys::IdPrefix(campaign);
  return Scan(kCandidates, prefix, prefix,
              [&](const std::string& key, const std::string& value, bool* more) {
                CandidateRecord record;
                SCHEDFARM_RETURN_IF_ERROR(ParseRecord(kCandidates, key, value, &record));
                *more = visit(record);
                return Status::Ok();
              });
}

Status Store::ScanCampaigns(const std::function<bool(const Campaign&)>& visit) const {
  return Scan(kCampaigns, "", "",
              [&](const std::string& key, const std::string& value, bool* more) {
                Campaign campaign;
                SCHEDFARM_RETURN_IF_ERROR(ParseRecord(kCampaigns, key, value, &campaign));
                *more = visit(campaign);
                return Status::Ok();
              });
}

Status Store::ScanValueRounds(const std::string& campaign,
                              const std::function<bool(const ValueRound&)>& visit) const {
  const std::string prefix = store_keys::IdPrefix(campaign);
  return Scan(kValueRounds, prefix, prefix,
              [&](const std::string& key, const std::string& value, bool* more) {
                ValueRound round;
                SCHEDFARM_RETURN_IF_ERROR(ParseRecord(kValueRounds, key, value, &round));
                *more = visit(round);
                return Status::Ok();
              });
}

Status Store::ScanModels(const std::function<bool(const Model&)>& visit) const {
  return Scan(kModels, "", "", [&](const std::string& key, const std::string& value, bool* more) {
    Model model;
    SCHEDFARM_RETURN_IF_ERROR(ParseRecord(kModels, key, value, &model));
    *more = visit(model);
    return Status::Ok();
  });
}

Status Store::ScanWorkers(const std::function<bool(const WorkerRecord&)>& visit) const {
  return Scan(kWorkers, "", "", [&](const std::string& key, const std::string& value, bool* more) {
    WorkerRecord worker;
    SCHEDFARM_RETURN_IF_ERROR(ParseRecord(kWorkers, key, value, &worker));
    *more = visit(worker);
    return Status::Ok();
  });
}

Status Store::ScanEvents(uint64_t from_seq, const std::function<bool(const Event&)>& visit) const {
  return Scan(kEvents, "", store_keys::EventKey(from_seq),
              [&](const std::string& key, const std::string& value, bool* more) {
                Event event;
                SCHEDFARM_RETURN_IF_ERROR(ParseRecord(kEvents, key, value, &event));
                *more = visit(event);
                return Status::Ok();
              });
}

StatusOr<std::vector<StoredMeasurement>> Store::BestMeasurements(
    const std::string& pipeline_id, size_t k, const std::string& campaign) const {
  const int cf = campaign.empty() ? kBestByPipeline : kBestByCampaign;
  const std::string prefix = campaign.empty() ? store_keys::IdPrefix(pipeline_id)
                                              : store_keys::IdPrefix(campaign, pipeline_id);
  std::vector<StoredMeasurement> best;
  if (k == 0) return best;
  SCHEDFARM_RETURN_IF_ERROR(
      Scan(cf, prefix, prefix, [&](const std::string& key, const std::string& value, bool* more) {
        if (key.size() != prefix.size() + 16) {
          return Error(std::string("column family ") + kCfNames[cf] + ", key '" +
                       store_keys::PrintableKey(key) + "': not an index key");
        }
        const std::string& owner = campaign.empty() ? value : campaign;
        const uint64_t seq = store_keys::DecodeU64(key, prefix.size() + 8);
        SCHEDFARM_ASSIGN_OR_RETURN(std::optional<Measurement> m, GetMeasurement(owner, seq));
        if (!m) {
          return Error(std::string("column family ") + kCfNames[cf] + ", key '" +
                       store_keys::PrintableKey(key) + "': its measurement is missing");
        }
        best.push_back(StoredMeasurement{seq, std::move(*m)});
        *more = best.size() < k;
        return Status::Ok();
      }));
  return best;
}

}  // namespace schedfarm
