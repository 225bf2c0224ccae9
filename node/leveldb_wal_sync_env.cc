#include "node/leveldb_wal_sync_env.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <utility>

namespace chorus {

namespace {

bool IsWalName(const std::string& fname) {
  const size_t slash = fname.rfind('/');
  const std::string base = slash == std::string::npos ? fname : fname.substr(slash + 1);
  return base.size() > 4 && base.compare(base.size() - 4, 4, ".log") == 0 &&
         base.find_first_not_of("0123456789") == base.size() - 4;
}

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

// A log file whose name may not be durable yet: its first successful Sync
// syncs the directory first. Only the writer at the head of leveldb's write
// queue writes it; the Env syncs it on that writer too, at the switch to the
// next log.
class WalFile : public leveldb::WritableFile {
 public:
  WalFile(WalSyncEnv* env, std::string dir, std::unique_ptr<leveldb::WritableFile> base)
      : env_(env), dir_(std::move(dir)), base_(std::move(base)) {
    env_->SetLiveLog(this);
  }
  ~WalFile() override { env_->ClearLiveLog(this); }

  leveldb::Status Append(const leveldb::Slice& data) override { return base_->Append(data); }
  // A leveldb that closes the old log at a switch (1.23 deletes it without
  // a Close, see the header) gets it synced here too: cheap once the Env
  // synced it at the switch.
  leveldb::Status Close() override {
    leveldb::Status s = Sync();
    if (!s.ok()) return s;
    return base_->Close();
  }
  leveldb::Status Flush() override { return base_->Flush(); }
  leveldb::Status Sync() override {
    if (!name_synced_) {
      leveldb::Status s = env_->SyncDirectory(dir_);
      if (!s.ok()) return s;
      name_synced_ = true;
    }
    return base_->Sync();
  }

 private:
  WalSyncEnv* const env_;
  const std::string dir_;
  std::unique_ptr<leveldb::WritableFile> base_;
  bool name_synced_ = false;
};

}  // namespace

WalSyncEnv::WalSyncEnv(leveldb::Env* base,
                       std::function<leveldb::Status(const std::string& dir)> sync_dir)
    : leveldb::EnvWrapper(base), sync_dir_(std::move(sync_dir)) {}

leveldb::Status WalSyncEnv::Open(const std::string& fname, bool append,
                                 leveldb::WritableFile** result) {
  *result = nullptr;
  const bool existed = target()->FileExists(fname);
  const bool new_log = !existed && IsWalName(fname);
  if (new_log) {
    // A switch: every byte of the old log becomes durable before the first
    // byte of the new one can (leveldb deletes the old file object right
    // after this returns, unsynced). Only the writer at the head of
    // leveldb's write queue creates logs and writes the live one, so it
    // cannot change or go away in between.
    leveldb::WritableFile* old_log = nullptr;
    {
      MutexLock l(&live_mu_);
      old_log = live_log_;
    }
    if (old_log != nullptr) {
      leveldb::Status s = old_log->Sync();
      if (!s.ok()) return s;
    }
  }
  leveldb::Status s = append ? target()->NewAppendableFile(fname, result)
                             : target()->NewWritableFile(fname, result);
  if (!s.ok() || !new_log) return s;
  *result = new WalFile(this, DirOf(fname), std::unique_ptr<leveldb::WritableFile>(*result));
  return s;
}

leveldb::Status WalSyncEnv::NewWritableFile(const std::string& fname,
                                            leveldb::WritableFile** result) {
  return Open(fname, /*append=*/false, result);
}

leveldb::Status WalSyncEnv::NewAppendableFile(const std::string& fname,
                                              leveldb::WritableFile** result) {
  return Open(fname, /*append=*/true, result);
}

void WalSyncEnv::SetLiveLog(leveldb::WritableFile* log) {
  MutexLock l(&live_mu_);
  live_log_ = log;
}

void WalSyncEnv::ClearLiveLog(leveldb::WritableFile* log) {
  MutexLock l(&live_mu_);
  if (live_log_ == log) live_log_ = nullptr;
}

leveldb::Status WalSyncEnv::SyncDirectory(const std::string& dir) {
  if (sync_dir_) return sync_dir_(dir);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return leveldb::Status::IOError(dir, strerror(errno));
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  return rc == 0 ? leveldb::Status::OK() : leveldb::Status::IOError(dir, strerror(err));
}

}  // namespace chorus
