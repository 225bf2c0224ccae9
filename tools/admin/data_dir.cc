#include "tools/admin/data_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "leveldb/db.h"
#include "node/fs_util.h"

namespace chorus {
namespace admin {

namespace {

Status Errno(const std::string& what) { return Status::IOError(what + ": " + strerror(errno)); }

bool IsTableFile(const std::string& name) {
  auto ends = [&name](const char* s) {
    const size_t n = strlen(s);
    return name.size() > n && name.compare(name.size() - n, n, s) == 0;
  };
  return ends(".ldb") || ends(".sst");
}

// Copies `from` to `to` byte for byte (reading `from` only).
Status CopyFile(const std::string& from, const std::string& to) {
  std::string data;
  Status s = ReadWholeFile(from, &data);
  if (!s.ok()) return s;
  return WriteWholeFile(to, data);
}

}  // namespace

Status ListGroups(const std::string& data_dir, std::vector<uint32_t>* groups) {
  std::vector<std::string> names;
  Status s = ListDir(data_dir, &names);
  if (!s.ok()) return s;
  groups->clear();
  for (const std::string& n : names) {
    if (n.size() < 2 || n[0] != 'g' || n.size() > 11) continue;
    if (!std::all_of(n.begin() + 1, n.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    if (!PathExists(data_dir + "/" + n + "/CURRENT")) continue;
    groups->push_back(static_cast<uint32_t>(std::strtoul(n.c_str() + 1, nullptr, 10)));
  }
  std::sort(groups->begin(), groups->end());
  if (groups->empty()) return Status::NotFound("'" + data_dir + "' holds no group log (g<N>/)");
  return Status::OK();
}

Status CheckLock(const std::string& db_dir) {
  const std::string lock = db_dir + "/LOCK";
  const int fd = open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::NotFound("'" + db_dir + "' is not a leveldb database (no LOCK)");
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const int r = fcntl(fd, F_GETLK, &fl);
  const int err = errno;
  close(fd);
  if (r != 0) return Status::IOError("fcntl(F_GETLK) on " + lock + ": " + strerror(err));
  if (fl.l_type == F_UNLCK) return Status::OK();
  return Status::Busy("'" + db_dir + "' is held open by a live process (pid " +
                      std::to_string(fl.l_pid) +
                      "): stop that node first, or query it live (chorus_admin live)");
}

Status GroupCopy::Open(const std::string& db_dir, std::unique_ptr<GroupCopy>* out) {
  Status s = CheckLock(db_dir);
  if (!s.ok()) return s;
  // Hold the lock while copying, so that no node opens (and changes) the
  // database meanwhile. O_RDWR without O_CREAT or O_TRUNC: nothing is written.
  const std::string lock = db_dir + "/LOCK";
  const int lock_fd = open(lock.c_str(), O_RDWR | O_CLOEXEC);
  if (lock_fd < 0) return Errno("opening " + lock);
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(lock_fd, F_SETLK, &fl) != 0) {
    close(lock_fd);
    return Status::Busy("'" + db_dir + "' was just opened by another process");
  }
  std::unique_ptr<GroupCopy> copy(new GroupCopy());
  const char* tmpdir = getenv("TMPDIR");
  std::string templ = std::string(tmpdir != nullptr && *tmpdir ? tmpdir : "/tmp") +
                      "/chorus-admin.XXXXXX";
  if (mkdtemp(&templ[0]) == nullptr) {
    close(lock_fd);
    return Errno("mkdtemp");
  }
  copy->tmp_ = templ;
  std::vector<std::string> names;
  s = ListDir(db_dir, &names);
  for (size_t i = 0; s.ok() && i < names.size(); ++i) {
    const std::string& n = names[i];
    if (n == "LOCK") continue;  // the copy gets its own
    const std::string from = db_dir + "/" + n, to = copy->tmp_ + "/" + n;
    struct stat st {};
    if (stat(from.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    // leveldb never rewrites a table file, so a link is a safe copy; the
    // rest (log, MANIFEST, CURRENT) leveldb may append to: real copies.
    s = IsTableFile(n) ? LinkOrCopyFile(from, to) : CopyFile(from, to);
  }
  close(lock_fd);  // releases the lock
  if (!s.ok()) return s.Annotate("copying " + db_dir);
  leveldb::Options options;
  options.create_if_missing = false;
  options.paranoid_checks = true;
  leveldb::Status ls = leveldb::DB::Open(options, copy->tmp_, &copy->db_);
  if (!ls.ok()) return Status::Corruption("opening a copy of " + db_dir + ": " + ls.ToString());
  *out = std::move(copy);
  return Status::OK();
}

GroupCopy::~GroupCopy() {
  delete db_;
  if (!tmp_.empty()) RemoveTree(tmp_);
}

}  // namespace admin
}  // namespace chorus
