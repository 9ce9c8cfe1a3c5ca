// A RocksDB file system that can lose power, for the store's power-loss test. Until
// the cut it passes everything to the real file system and remembers, for each file
// written, how many bytes were written and how many of them were synced. The cut is
// the power going off, at a moment (Cut()) or inside the file system: instead of the
// n-th sync from now (CutAtSync), or halfway through the n-th append (CutInAppend).
// From then on every write, sync, rename and delete is accepted and dropped, and new
// files are not created. Restore(), after the database is closed, leaves on disk what
// a disk keeps: each file written truncated to its synced length. (Renames and
// deletions before the cut are kept whole: only data is lost.)
#pragma once

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace schedfarm::testing_support {

class PowerLossFileSystem : public rocksdb::FileSystemWrapper {
 public:
  PowerLossFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}

  const char* Name() const override { return "PowerLossFileSystem"; }

  void Cut() { cut_.store(true); }
  void CutAtSync(int n) { syncs_to_cut_.store(n); }
  void CutInAppend(int n) { appends_to_cut_.store(n); }
  bool cut() const { return cut_.load(); }

  // Truncates every file written to its synced length; returns how many bytes that
  // dropped.
  uint64_t Restore() {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t dropped = 0;
    for (const auto& [name, sizes] : files_) {
      if (sizes.written > sizes.synced && ::truncate(name.c_str(), sizes.synced) == 0) {
        dropped += sizes.written - sizes.synced;
      }
    }
    files_.clear();
    return dropped;
  }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override {
    std::unique_ptr<rocksdb::FSWritableFile> file;
    if (!cut()) {
      rocksdb::IOStatus s = target()->NewWritableFile(name, options, &file, dbg);
      if (!s.ok()) return s;
      std::lock_guard<std::mutex> lock(mutex_);
      files_[name] = {};
    }
    result->reset(new File(std::move(file), name, this));
    return rocksdb::IOStatus::OK();
  }

  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    if (cut()) return rocksdb::IOStatus::OK();
    rocksdb::IOStatus s = target()->RenameFile(from, to, options, dbg);
    std::lock_guard<std::mutex> lock(mutex_);
    if (s.ok() && files_.count(from)) {
      files_[to] = files_[from];
      files_.erase(from);
    }
    return s;
  }

  rocksdb::IOStatus DeleteFile(const std::string& name, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    if (cut()) return rocksdb::IOStatus::OK();
    std::lock_guard<std::mutex> lock(mutex_);
    files_.erase(name);
    return target()->DeleteFile(name, options, dbg);
  }

 private:
  struct Sizes {
    uint64_t written = 0;
    uint64_t synced = 0;
  };

  // A file written through the wrapper; `target` is null for a file opened after the cut.
  class File : public rocksdb::FSWritableFile {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> target, std::string name,
         PowerLossFileSystem* fs)
        : target_(std::move(target)), name_(std::move(name)), fs_(fs) {}

    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
      size_ += data.size();
      if (Dropped()) return rocksdb::IOStatus::OK();
      if (fs_->appends_to_cut_.fetch_sub(1) == 1) {  // half of it reaches the file
        const rocksdb::Slice half(data.data(), data.size() / 2);
        if (target_->Append(half, options, dbg).ok()) fs_->Wrote(name_, half.size());
        fs_->Cut();
        return rocksdb::IOStatus::OK();
      }
      rocksdb::IOStatus s = target_->Append(data, options, dbg);
      if (s.ok()) fs_->Wrote(name_, data.size());
      return s;
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo&,
                             rocksdb::IODebugContext* dbg) override {
      return Append(data, options, dbg);
    }
    rocksdb::IOStatus Truncate(uint64_t size, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
      size_ = size;
      if (Dropped()) return rocksdb::IOStatus::OK();
      return target_->Truncate(size, options, dbg);
    }
    rocksdb::IOStatus Close(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
      return target_ ? target_->Close(options, dbg) : rocksdb::IOStatus::OK();
    }
    rocksdb::IOStatus Flush(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
      if (Dropped()) return rocksdb::IOStatus::OK();
      return target_->Flush(options, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
      if (Dropped()) return rocksdb::IOStatus::OK();
      if (fs_->syncs_to_cut_.fetch_sub(1) == 1) {
        fs_->Cut();
        return rocksdb::IOStatus::OK();
      }
      rocksdb::IOStatus s = target_->Sync(options, dbg);
      if (s.ok()) fs_->Synced(name_);
      return s;
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
      return Sync(options, dbg);
    }
    uint64_t GetFileSize(const rocksdb::IOOptions&, rocksdb::IODebugContext*) override {
      return size_;
    }

   private:
    bool Dropped() const { return target_ == nullptr || fs_->cut(); }

    std::unique_ptr<rocksdb::FSWritableFile> target_;
    std::string name_;
    PowerLossFileSystem* fs_;
    uint64_t size_ = 0;
  };

  void Wrote(const std::string& name, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    files_[name].written += bytes;
  }
  void Synced(const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    Sizes& sizes = files_[name];
    sizes.synced = sizes.written;
  }

  std::atomic<bool> cut_{false};
  std::atomic<int> syncs_to_cut_{0};    // counts down; the cut at 1
  std::atomic<int> appends_to_cut_{0};
  std::mutex mutex_;
  std::map<std::string, Sizes> files_;
};

}  // namespace schedfarm::testing_support
