#include "unittest/support/fault_env.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "node/fs_util.h"

namespace chorus {
namespace testing {

namespace {

std::string DirOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}

std::string BaseName(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

}  // namespace

// A writable file: forwards to the base env's file and reports appends and
// completed syncs to the env. Files are never renamed while open (leveldb
// closes a file before renaming it), so the name stays valid.
class FaultEnv::File : public leveldb::WritableFile {
 public:
  File(FaultEnv* env, std::string path, std::unique_ptr<leveldb::WritableFile> base)
      : env_(env), path_(std::move(path)), base_(std::move(base)) {}

  ~File() override {
    base_.reset();  // closes (and flushes) the real file
    std::lock_guard<std::mutex> l(env_->mu_);
    auto it = env_->files_.find(path_);
    if (it != env_->files_.end()) it->second.open_writers--;
  }

  leveldb::Status Append(const leveldb::Slice& data) override {
    std::lock_guard<std::mutex> l(env_->mu_);
    if (env_->ShouldFailLocked(kAppend, path_)) return env_->InjectedError("append to " + path_);
    return base_->Append(data);
  }

  leveldb::Status Close() override { return base_->Close(); }
  leveldb::Status Flush() override { return base_->Flush(); }

  leveldb::Status Sync() override {
    std::lock_guard<std::mutex> l(env_->mu_);
    if (env_->ShouldFailLocked(kSync, path_)) return env_->InjectedError("sync of " + path_);
    leveldb::Status s = base_->Sync();
    if (!s.ok()) return s;
    // The base flushed and synced everything appended so far: the real
    // file's size is what a crash keeps.
    struct stat st;
    if (stat(path_.c_str(), &st) != 0) return leveldb::Status::IOError(path_, "stat after sync");
    env_->files_[path_].synced = static_cast<uint64_t>(st.st_size);
    if (BaseName(path_).compare(0, 9, "MANIFEST-") == 0) env_->DirSyncedLocked(DirOf(path_));
    return s;
  }

 private:
  FaultEnv* const env_;
  const std::string path_;
  std::unique_ptr<leveldb::WritableFile> base_;
};

FaultEnv::FaultEnv(leveldb::Env* base, std::string trash_dir, uint64_t seed)
    : leveldb::EnvWrapper(base), trash_dir_(std::move(trash_dir)), rng_(seed) {
  CreateDirs(trash_dir_);  // a failure shows up as an IOError of the first remove
}

FaultEnv::~FaultEnv() = default;

void FaultEnv::FailAfter(uint64_t ops, unsigned kinds, bool sticky, const std::string& suffix) {
  std::lock_guard<std::mutex> l(mu_);
  failing_suffix_ = suffix;
  failure_planned_ = true;
  ops_before_failure_ = ops;
  failing_kinds_ = kinds;
  failure_sticky_ = sticky;
}

void FaultEnv::ClearFailure() {
  std::lock_guard<std::mutex> l(mu_);
  failure_planned_ = false;
}

uint64_t FaultEnv::operations() const {
  std::lock_guard<std::mutex> l(mu_);
  return operations_;
}

uint64_t FaultEnv::injected_failures() const {
  std::lock_guard<std::mutex> l(mu_);
  return injected_failures_;
}

bool FaultEnv::ShouldFailLocked(OpKind kind, const std::string& path) {
  operations_++;
  if (!failure_planned_ || (failing_kinds_ & kind) == 0) return false;
  if (path.size() < failing_suffix_.size() ||
      path.compare(path.size() - failing_suffix_.size(), failing_suffix_.size(),
                   failing_suffix_) != 0) {
    return false;
  }
  if (ops_before_failure_ > 0) {
    ops_before_failure_--;
    return false;
  }
  if (!failure_sticky_) failure_planned_ = false;
  injected_failures_++;
  return true;
}

leveldb::Status FaultEnv::InjectedError(const std::string& what) const {
  return leveldb::Status::IOError(what, "injected by FaultEnv");
}

std::string FaultEnv::NewTrashPathLocked() {
  return trash_dir_ + "/" + std::to_string(++trash_seq_);
}

leveldb::Status FaultEnv::OpenFile(const std::string& fname, bool append,
                                   leveldb::WritableFile** result) {
  *result = nullptr;
  std::lock_guard<std::mutex> l(mu_);
  if (ShouldFailLocked(kNames, fname)) return InjectedError("create " + fname);
  const bool existed = Exists(fname);
  struct stat st;
  uint64_t size_before = 0;
  if (existed && stat(fname.c_str(), &st) == 0) size_before = static_cast<uint64_t>(st.st_size);
  leveldb::WritableFile* raw = nullptr;
  leveldb::Status s = append ? target()->NewAppendableFile(fname, &raw)
                             : target()->NewWritableFile(fname, &raw);
  if (!s.ok()) return s;
  auto it = files_.find(fname);
  if (it == files_.end()) {
    // An untracked existing file is durable as it is; a truncated one keeps
    // nothing until it is synced.
    FileState state;
    state.synced = append ? size_before : 0;
    it = files_.emplace(fname, state).first;
  } else if (!append) {
    it->second.synced = 0;
  }
  it->second.open_writers++;
  if (!existed) {
    NameChange change{NameChange::Kind::kCreate, DirOf(fname), fname, "", ""};
    pending_names_.push_back(change);
  }
  *result = new File(this, fname, std::unique_ptr<leveldb::WritableFile>(raw));
  return s;
}

leveldb::Status FaultEnv::NewWritableFile(const std::string& fname,
                                          leveldb::WritableFile** result) {
  return OpenFile(fname, false, result);
}

leveldb::Status FaultEnv::NewAppendableFile(const std::string& fname,
                                            leveldb::WritableFile** result) {
  return OpenFile(fname, true, result);
}

leveldb::Status FaultEnv::RemoveFile(const std::string& fname) {
  std::lock_guard<std::mutex> l(mu_);
  if (ShouldFailLocked(kNames, fname)) return InjectedError("remove " + fname);
  // Kept under trash until the removal is durable.
  const std::string kept = NewTrashPathLocked();
  if (rename(fname.c_str(), kept.c_str()) != 0) {
    return leveldb::Status::IOError(fname, strerror(errno));
  }
  MoveStateLocked(fname, kept);
  pending_names_.push_back({NameChange::Kind::kRemove, DirOf(fname), fname, "", kept});
  return leveldb::Status::OK();
}

leveldb::Status FaultEnv::RenameFile(const std::string& src, const std::string& target) {
  std::lock_guard<std::mutex> l(mu_);
  if (ShouldFailLocked(kNames, target)) return InjectedError("rename " + src);
  std::string replaced;
  if (Exists(target)) {
    // The rename replaces `target` atomically; a crash before the directory
    // is synced may bring the old one back, so keep a link to it.
    replaced = NewTrashPathLocked();
    if (link(target.c_str(), replaced.c_str()) != 0) {
      return leveldb::Status::IOError(target, strerror(errno));
    }
  }
  if (rename(src.c_str(), target.c_str()) != 0) {
    const int err = errno;
    if (!replaced.empty()) unlink(replaced.c_str());
    return leveldb::Status::IOError(src, strerror(err));
  }
  if (!replaced.empty()) MoveStateLocked(target, replaced);
  MoveStateLocked(src, target);
  pending_names_.push_back({NameChange::Kind::kRename, DirOf(target), target, src, replaced});
  return leveldb::Status::OK();
}

Status FaultEnv::SyncDir(const std::string& dir) {
  std::lock_guard<std::mutex> l(mu_);
  if (ShouldFailLocked(kSync, dir)) {
    return Status::IOError("sync of directory " + dir + ": injected by FaultEnv");
  }
  Status s = SyncPath(dir);
  if (s.ok()) DirSyncedLocked(dir);
  return s;
}

void FaultEnv::MoveStateLocked(const std::string& from, const std::string& to) {
  auto it = files_.find(from);
  if (it == files_.end()) {
    files_.erase(to);  // untracked: durable as it is, wherever it goes
    return;
  }
  files_[to] = it->second;
  files_.erase(it);
}

void FaultEnv::DirSyncedLocked(const std::string& dir) {
  std::vector<NameChange> still;
  for (NameChange& change : pending_names_) {
    if (change.dir != dir) {
      still.push_back(std::move(change));
      continue;
    }
    if (!change.kept_copy.empty()) {
      unlink(change.kept_copy.c_str());  // durable now: nothing can bring it back
      files_.erase(change.kept_copy);
    }
  }
  pending_names_ = std::move(still);
}

Status FaultEnv::CutFileLocked(const std::string& path, uint64_t synced, Tear tear,
                               CrashReport* report) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::OK();  // removed for good
    return Status::FromErrno("cannot stat '" + path + "'", errno);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size <= synced) return Status::OK();
  const uint64_t unsynced = size - synced;
  // kPrefix: the size and the data got as far as a random point. kZeroTail:
  // the size got all the way (a metadata update), the data only to a
  // random point, zeros after it.
  uint64_t keep = 0;
  if (tear == Tear::kPrefix) keep = std::uniform_int_distribution<uint64_t>(0, unsynced)(rng_);
  if (tear == Tear::kZeroTail) keep = unsynced;
  if (tear == Tear::kZeroTail) {
    const uint64_t data = std::uniform_int_distribution<uint64_t>(0, keep - 1)(rng_);
    const std::string zeros(static_cast<size_t>(keep - data), '\0');
    const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno("cannot open '" + path + "'", errno);
    const ssize_t w = pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(synced + data));
    const int err = errno;
    close(fd);
    if (w != static_cast<ssize_t>(zeros.size())) {
      return Status::FromErrno("cannot zero the tail of '" + path + "'", err);
    }
  }
  if (truncate(path.c_str(), static_cast<off_t>(synced + keep)) != 0) {
    return Status::FromErrno("cannot cut '" + path + "'", errno);
  }
  report->files_cut++;
  report->bytes_dropped += unsynced - keep;
  report->bytes_torn_kept += keep;
  return Status::OK();
}

Status FaultEnv::UndoLocked(const NameChange& change) {
  switch (change.kind) {
    case NameChange::Kind::kCreate:
      if (unlink(change.path.c_str()) != 0 && errno != ENOENT) {
        return Status::FromErrno("cannot undo the creation of '" + change.path + "'", errno);
      }
      return Status::OK();
    case NameChange::Kind::kRemove:
      if (rename(change.kept_copy.c_str(), change.path.c_str()) != 0) {
        return Status::FromErrno("cannot undo the removal of '" + change.path + "'", errno);
      }
      return Status::OK();
    case NameChange::Kind::kRename:
      if (rename(change.path.c_str(), change.from.c_str()) != 0) {
        return Status::FromErrno("cannot undo the rename to '" + change.path + "'", errno);
      }
      if (!change.kept_copy.empty() &&
          rename(change.kept_copy.c_str(), change.path.c_str()) != 0) {
        return Status::FromErrno("cannot bring back the replaced '" + change.path + "'", errno);
      }
      return Status::OK();
  }
  return Status::OK();
}

Status FaultEnv::SimulateCrash(Tear tear, CrashReport* report) {
  CrashReport local;
  if (report == nullptr) report = &local;
  *report = CrashReport();
  std::lock_guard<std::mutex> l(mu_);
  for (const auto& entry : files_) {
    if (entry.second.open_writers > 0) {
      return Status::InvalidArgument("'" + entry.first +
                                     "' is still open for writing: destroy its database first");
    }
  }
  // Data first, by the names the files have now; then the names, newest
  // first, which carries the cut files back to where they were.
  for (const auto& entry : files_) {
    Status s = CutFileLocked(entry.first, entry.second.synced, tear, report);
    if (!s.ok()) return s;
  }
  for (auto it = pending_names_.rbegin(); it != pending_names_.rend(); ++it) {
    Status s = UndoLocked(*it);
    if (!s.ok()) return s;
    report->names_undone++;
  }
  files_.clear();
  pending_names_.clear();
  failure_planned_ = false;
  return Status::OK();
}

}  // namespace testing
}  // namespace chorus
