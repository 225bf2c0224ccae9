#include "node/checkpoint_store.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>

#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {

namespace {

constexpr char kManifestName[] = "MANIFEST";

std::string InstanceName(uint64_t instance) { return std::to_string(instance); }

// A directory name that is a checkpoint's: decimal digits, no leading zero.
bool ParseInstanceName(const std::string& name, uint64_t* instance) {
  if (name.empty() || name.size() > 20 || (name.size() > 1 && name[0] == '0')) return false;
  for (char c : name) {
    if (c < '0' || c > '9') return false;
  }
  errno = 0;
  const unsigned long long v = std::strtoull(name.c_str(), nullptr, 10);
  if (errno != 0) return false;
  *instance = v;
  return true;
}

Status ReadAt(const std::string& path, uint64_t offset, size_t n, std::string* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open '" + path + "'", errno);
  const size_t start = out->size();
  out->resize(start + n);
  size_t done = 0;
  Status s;
  while (done < n) {
    const ssize_t r = pread(fd, &(*out)[start + done], n - done,
                            static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      s = Status::FromErrno("cannot read '" + path + "'", errno);
      break;
    }
    if (r == 0) {
      s = Status::Corruption("'" + path + "' is shorter than its manifest says");
      break;
    }
    done += static_cast<size_t>(r);
  }
  close(fd);
  if (!s.ok()) out->resize(start);
  return s;
}

uint64_t RandomBits() {
  try {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd();
  } catch (...) {
    return static_cast<uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count());
  }
}

}  // namespace

// ---- CheckpointStore ----

CheckpointStore::CheckpointStore(const std::string& dir, uint64_t cluster_id, uint32_t group,
                                 Logger* logger)
    : dir_(dir), cluster_id_(cluster_id), group_(group), logger_(logger) {
  temp_seq_.store(RandomBits() & 0xffffffffull, std::memory_order_relaxed);
}

Status CheckpointStore::Open(const std::string& dir, uint64_t cluster_id, uint32_t group,
                             Logger* logger, std::unique_ptr<CheckpointStore>* store) {
  if (dir.empty()) return Status::InvalidArgument("checkpoint store: empty directory name");
  std::unique_ptr<CheckpointStore> s(new CheckpointStore(dir, cluster_id, group, logger));
  Status st = CreateDirs(dir);
  if (!st.ok()) return st.Annotate("checkpoint store");
  st = s->Load();
  if (!st.ok()) return st;
  *store = std::move(s);
  return Status::OK();
}

Status CheckpointStore::Load() {
  // No other thread has the store yet: the lock is uncontended.
  MutexLock lock(&mu_);
  std::vector<std::string> names;
  Status s = ListDir(dir_, &names);
  if (!s.ok()) return s.Annotate("checkpoint store");
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    uint64_t instance = 0;
    if (name.rfind("staging-", 0) == 0 || name.rfind("scratch-", 0) == 0) {
      // A checkpoint that was never committed, or a load that did not
      // clean up (a crash): never complete, never needed.
      Status r = RemoveTree(dir_ + "/" + name);
      if (!r.ok()) {
        CHORUS_LOG(logger_, kWarning, "checkpoint store %s: %s", dir_.c_str(),
                   r.ToString().c_str());
      }
    } else if (ParseInstanceName(name, &instance)) {
      CheckpointManifest m;
      Status r = Inspect(name, instance, &m);
      if (r.ok()) {
        index_[instance].manifest = std::move(m);
      } else {
        damaged_.insert(name);
        CHORUS_LOG(logger_, kWarning,
                   "checkpoint store %s: skipping damaged checkpoint %s (an older one is used): %s",
                   dir_.c_str(), name.c_str(), r.ToString().c_str());
      }
    } else {
      CHORUS_LOG(logger_, kWarning, "checkpoint store %s: ignoring unknown entry '%s'",
                 dir_.c_str(), name.c_str());
    }
  }
  return Status::OK();
}

Status CheckpointStore::Inspect(const std::string& name, uint64_t instance,
                                CheckpointManifest* m) const {
  const std::string base = dir_ + "/" + name;
  std::string bytes;
  Status s = ReadWholeFile(base + "/" + kManifestName, &bytes);
  if (!s.ok()) return s;
  s = CheckpointManifest::Decode(bytes, m);
  if (!s.ok()) return s.Annotate(base);
  if (m->cluster_id != cluster_id_ || m->group != group_ || m->instance != instance) {
    return Status::Corruption(base + ": the manifest names cluster " +
                              std::to_string(m->cluster_id) + " group " + std::to_string(m->group) +
                              " instance " + std::to_string(m->instance));
  }
  for (const CheckpointFile& f : m->files) {
    struct stat st;
    if (stat((base + "/" + f.path).c_str(), &st) != 0) {
      return Status::FromErrno(base + ": file '" + f.path + "'", errno);
    }
    if (static_cast<uint64_t>(st.st_size) != f.size) {
      return Status::Corruption(base + ": file '" + f.path + "' has " +
                                std::to_string(st.st_size) + " bytes, the manifest says " +
                                std::to_string(f.size));
    }
  }
  return Status::OK();
}

Status CheckpointStore::Newest(CheckpointManifest* m) const {
  MutexLock lock(&mu_);
  if (index_.empty()) return Status::NotFound("no checkpoint stored in " + dir_);
  *m = index_.rbegin()->second.manifest;
  return Status::OK();
}

uint64_t CheckpointStore::newest_instance() const {
  MutexLock lock(&mu_);
  return index_.empty() ? 0 : index_.rbegin()->first;
}

Status CheckpointStore::Get(uint64_t instance, CheckpointManifest* m) const {
  MutexLock lock(&mu_);
  auto it = index_.find(instance);
  if (it == index_.end()) {
    return Status::NotFound("checkpoint " + std::to_string(instance) + " is not stored in " + dir_);
  }
  *m = it->second.manifest;
  return Status::OK();
}

std::string CheckpointStore::DirOf(uint64_t instance) const {
  return dir_ + "/" + InstanceName(instance);
}

Status CheckpointStore::MakeTempDir(const char* prefix, std::string* path) {
  const uint64_t seq = temp_seq_.fetch_add(1, std::memory_order_relaxed);
  char tag[64];
  std::snprintf(tag, sizeof(tag), "%s-%llu-%08llx", prefix, static_cast<unsigned long long>(seq),
                static_cast<unsigned long long>(RandomBits() & 0xffffffffull));
  const std::string p = dir_ + "/" + tag;
  if (mkdir(p.c_str(), 0755) != 0) return Status::FromErrno("cannot create '" + p + "'", errno);
  *path = p;
  return Status::OK();
}

Status CheckpointStore::BeginStaging(std::string* staging_dir) {
  return MakeTempDir("staging", staging_dir);
}

void CheckpointStore::Abort(const std::string& staging_dir) {
  Status s = RemoveTree(staging_dir);
  if (!s.ok()) {
    CHORUS_LOG(logger_, kWarning, "checkpoint store %s: %s", dir_.c_str(), s.ToString().c_str());
  }
}

Status CheckpointStore::Commit(const std::string& staging_dir, CheckpointManifest* m) {
  if (newest_instance() >= m->instance && Get(m->instance, m).ok()) {
    Abort(staging_dir);  // a repeat: the stored one is complete
    return Status::OK();
  }
  Status s = [&]() -> Status {
    if (m->cluster_id == 0) m->cluster_id = cluster_id_;
    if (m->group == 0) m->group = group_;
    if (m->cluster_id != cluster_id_ || m->group != group_) {
      return Status::InvalidArgument("checkpoint of cluster " + std::to_string(m->cluster_id) +
                                     " group " + std::to_string(m->group) + " offered to the store of " +
                                     dir_);
    }
    std::vector<std::string> paths;
    std::vector<std::string> dirs;
    Status r = ListFilesRecursive(staging_dir, &paths, &dirs);
    if (!r.ok()) return r;
    const bool verify = !m->files.empty();
    if (verify && paths.size() != m->files.size()) {
      return Status::Corruption("checkpoint " + std::to_string(m->instance) + ": staging holds " +
                                std::to_string(paths.size()) + " files, the manifest names " +
                                std::to_string(m->files.size()));
    }
    std::vector<CheckpointFile> found;
    for (size_t i = 0; i < paths.size(); ++i) {
      if (!IsCleanCheckpointPath(paths[i])) {
        return Status::InvalidArgument("checkpoint " + std::to_string(m->instance) + ": file '" +
                                       paths[i] + "' is outside every sm<id>/ directory");
      }
      CheckpointFile f;
      f.path = paths[i];
      r = ChecksumFile(staging_dir + "/" + f.path, /*sync=*/true, &f.size, &f.crc);
      if (!r.ok()) return r;
      if (verify && !(m->files[i] == f)) {
        return Status::Corruption("checkpoint " + std::to_string(m->instance) + ": file '" +
                                  m->files[i].path + "' does not match its manifest entry (found '" +
                                  f.path + "', " + std::to_string(f.size) + " bytes)");
      }
      found.push_back(std::move(f));
    }
    m->files = std::move(found);
    r = WriteWholeFile(staging_dir + "/" + kManifestName, m->Encode());
    if (!r.ok()) return r;
    // Each directory's entries (the files, the subdirectories, MANIFEST)
    // must be durable before the rename publishes the checkpoint.
    for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) {
      r = SyncPath(it->empty() ? staging_dir : staging_dir + "/" + *it);
      if (!r.ok()) return r;
    }
    return Status::OK();
  }();
  if (!s.ok()) {
    Abort(staging_dir);
    return s;
  }

  std::vector<std::string> doomed;
  bool committed = false;
  {
    MutexLock lock(&mu_);
    if (!index_.empty() && index_.rbegin()->first >= m->instance) {
      // Already as new (a transfer of what this node made itself, or a
      // repeat): keep the stored one, it is complete.
      auto same = index_.find(m->instance);
      if (same != index_.end()) *m = same->second.manifest;
      s = Status::OK();
    } else {
      const std::string name = InstanceName(m->instance);
      const std::string target = DirOf(m->instance);
      // A damaged checkpoint under this very name (skipped by Open) is garbage.
      if (damaged_.erase(name) > 0) s = RemoveTree(target);
      if (s.ok() && rename(staging_dir.c_str(), target.c_str()) != 0) {
        s = Status::FromErrno("cannot rename '" + staging_dir + "' to '" + target + "'", errno);
      }
      if (s.ok()) s = SyncPath(dir_);
      if (s.ok()) {
        index_[m->instance].manifest = *m;
        commits_.fetch_add(1, std::memory_order_relaxed);
        committed = true;
        CollectLocked(&doomed);
      } else if (PathExists(target) && !PathExists(staging_dir)) {
        // Renamed, but the parent's sync failed: it may or may not survive
        // a crash, so it is not offered; a later Open decides.
        damaged_.insert(name);
      }
    }
  }
  if (committed) {
    RemoveAll(doomed);
    return Status::OK();
  }
  Abort(staging_dir);  // (gone already when it was renamed)
  return s;
}


void CheckpointStore::CollectLocked(std::vector<std::string>* doomed) {
  if (index_.empty()) return;
  const uint64_t newest = index_.rbegin()->first;
  for (auto it = index_.begin(); it != index_.end();) {
    if (it->first < newest && it->second.pins == 0) {
      doomed->push_back(DirOf(it->first));
      it = index_.erase(it);
    } else {
      ++it;
    }
  }
  for (const std::string& name : damaged_) doomed->push_back(dir_ + "/" + name);
  damaged_.clear();
}

void CheckpointStore::RemoveAll(const std::vector<std::string>& doomed) {
  for (const std::string& path : doomed) {
    Status s = RemoveTree(path);
    if (!s.ok()) {
      CHORUS_LOG(logger_, kWarning, "checkpoint store %s: cannot delete an old checkpoint: %s",
                 dir_.c_str(), s.ToString().c_str());
    }
  }
}

Status CheckpointStore::Pin(uint64_t instance) {
  MutexLock lock(&mu_);
  auto it = index_.find(instance);
  if (it == index_.end()) {
    return Status::NotFound("checkpoint " + std::to_string(instance) + " is not stored in " + dir_);
  }
  ++it->second.pins;
  return Status::OK();
}

void CheckpointStore::Unpin(uint64_t instance) {
  std::vector<std::string> doomed;
  {
    MutexLock lock(&mu_);
    auto it = index_.find(instance);
    if (it == index_.end() || it->second.pins == 0) return;
    --it->second.pins;
    if (it->second.pins == 0 && it->first != index_.rbegin()->first) {
      doomed.push_back(DirOf(it->first));
      index_.erase(it);
    }
  }
  RemoveAll(doomed);
}

Status CheckpointStore::ReadChunk(const CheckpointManifest& m, uint64_t offset, size_t max_bytes,
                                  std::string* data) const {
  data->clear();
  const uint64_t total = m.total_bytes();
  if (offset > total) {
    return Status::InvalidArgument("checkpoint " + std::to_string(m.instance) + ": offset " +
                                   std::to_string(offset) + " is beyond its " +
                                   std::to_string(total) + " bytes");
  }
  const std::string base = DirOf(m.instance);
  uint64_t file_start = 0;
  for (const CheckpointFile& f : m.files) {
    if (data->size() >= max_bytes || offset >= total) break;
    const uint64_t file_end = file_start + f.size;
    if (offset < file_end) {
      const uint64_t in_file = offset - file_start;
      const size_t n = static_cast<size_t>(
          std::min<uint64_t>(f.size - in_file, max_bytes - data->size()));
      Status s = ReadAt(base + "/" + f.path, in_file, n, data);
      if (!s.ok()) {
        data->clear();
        return s;
      }
      offset += n;
    }
    file_start = file_end;
  }
  return Status::OK();
}

Status CheckpointStore::MakeScratch(const CheckpointManifest& m, int state_machine_id,
                                    std::string* scratch) {
  Status s = Pin(m.instance);
  if (!s.ok()) return s;
  std::string dir;
  s = MakeTempDir("scratch", &dir);
  const std::string prefix = StateMachineDirName(state_machine_id) + "/";
  const std::string base = DirOf(m.instance);
  for (const CheckpointFile& f : m.files) {
    if (!s.ok()) break;
    if (f.path.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rel = f.path.substr(prefix.size());
    const size_t slash = rel.rfind('/');
    if (slash != std::string::npos) s = CreateDirs(dir + "/" + rel.substr(0, slash));
    if (s.ok()) s = LinkOrCopyFile(base + "/" + f.path, dir + "/" + rel);
    uint64_t size = 0;
    uint32_t crc = 0;
    if (s.ok()) s = ChecksumFile(dir + "/" + rel, /*sync=*/false, &size, &crc);
    if (s.ok() && (size != f.size || crc != f.crc)) {
      s = Status::Corruption("checkpoint " + std::to_string(m.instance) + ": file '" + f.path +
                             "' does not match its manifest (" + std::to_string(size) +
                             " bytes, crc " + std::to_string(crc) + ")");
    }
  }
  Unpin(m.instance);
  if (!s.ok()) {
    if (!dir.empty()) Abort(dir);
    return s;
  }
  *scratch = dir;
  return Status::OK();
}

}  // namespace chorus
