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
// syncs the directory first. Only leveldb's writer thread calls it.
class WalFile : public leveldb::WritableFile {
 public:
  WalFile(WalSyncEnv* env, std::string dir, std::unique_ptr<leveldb::WritableFile> base)
      : env_(env), dir_(std::move(dir)), base_(std::move(base)) {}

  leveldb::Status Append(const leveldb::Slice& data) override { return base_->Append(data); }
  // leveldb closes a log when it switches to a new one, without a sync:
  // sync it here, or a crash could drop its unsynced tail while synced
  // writes in the next log survive (a gap: the log would no longer hold a
  // prefix of the writes, and a lost chosen record below a kept one
  // stops the node from opening).
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
  const bool existed = target()->FileExists(fname);
  leveldb::Status s = append ? target()->NewAppendableFile(fname, result)
                             : target()->NewWritableFile(fname, result);
  if (!s.ok() || existed || !IsWalName(fname)) return s;
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
