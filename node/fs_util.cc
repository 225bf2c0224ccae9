#include "node/fs_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>

#include "utils/crc32c.h"

namespace chorus {

namespace {

// Closes an fd on every path out.
struct Fd {
  int fd;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

constexpr size_t kIoBytes = 1 << 20;

Status WriteAll(int fd, const char* data, size_t n, const std::string& path) {
  while (n > 0) {
    const ssize_t w = write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("cannot write '" + path + "'", errno);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Status ListInto(const std::string& root, const std::string& rel, std::vector<std::string>* files,
                std::vector<std::string>* dirs) {
  if (dirs != nullptr) dirs->push_back(rel);
  const std::string here = rel.empty() ? root : root + "/" + rel;
  std::vector<std::string> names;
  Status s = ListDir(here, &names);
  if (!s.ok()) return s;
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string child = rel.empty() ? name : rel + "/" + name;
    struct stat st;
    if (lstat((root + "/" + child).c_str(), &st) != 0) {
      return Status::FromErrno("cannot stat '" + root + "/" + child + "'", errno);
    }
    if (S_ISDIR(st.st_mode)) {
      s = ListInto(root, child, files, dirs);
      if (!s.ok()) return s;
    } else if (S_ISREG(st.st_mode)) {
      files->push_back(child);
    } else {
      return Status::InvalidArgument("'" + root + "/" + child +
                                     "' is neither a regular file nor a directory");
    }
  }
  return Status::OK();
}

}  // namespace

Status CreateDirs(const std::string& dir) {
  size_t pos = 0;
  while (pos <= dir.size()) {
    size_t slash = dir.find('/', pos);
    if (slash == std::string::npos) slash = dir.size();
    const std::string path = dir.substr(0, slash);
    pos = slash + 1;
    if (path.empty()) continue;  // the leading '/'
    if (mkdir(path.c_str(), 0755) == 0) {
      // The new directory's name lives in its parent: sync the parent, or a
      // crash may lose the directory (and all that is later made durable
      // inside it, e.g. a group's whole log) while its parent's other
      // entries (the IDENTITY) survive.
      const size_t up = path.rfind('/');
      const std::string parent = up == std::string::npos ? "." : up == 0 ? "/" : path.substr(0, up);
      Status s = SyncPath(parent);
      if (!s.ok()) return s;
    } else if (errno != EEXIST) {
      return Status::FromErrno("cannot create directory '" + path + "'", errno);
    }
    struct stat st;
    if (stat(path.c_str(), &st) != 0) {
      return Status::FromErrno("cannot stat directory '" + path + "'", errno);
    }
    if (!S_ISDIR(st.st_mode)) {
      return Status::IOError("cannot create directory '" + dir + "': '" + path +
                             "' is not a directory");
    }
  }
  return Status::OK();
}

Status RemoveTree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::OK();
    return Status::FromErrno("cannot stat '" + path + "'", errno);
  }
  if (S_ISDIR(st.st_mode)) {
    std::vector<std::string> names;
    Status s = ListDir(path, &names);
    if (!s.ok()) return s;
    for (const std::string& name : names) {
      s = RemoveTree(path + "/" + name);
      if (!s.ok()) return s;
    }
    if (rmdir(path.c_str()) != 0 && errno != ENOENT) {
      return Status::FromErrno("cannot remove directory '" + path + "'", errno);
    }
    return Status::OK();
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) {
    return Status::FromErrno("cannot remove '" + path + "'", errno);
  }
  return Status::OK();
}

Status ListDir(const std::string& dir, std::vector<std::string>* names) {
  names->clear();
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Status::FromErrno("cannot list directory '" + dir + "'", errno);
  while (struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names->push_back(name);
  }
  closedir(d);
  return Status::OK();
}

Status ListFilesRecursive(const std::string& dir, std::vector<std::string>* files,
                          std::vector<std::string>* dirs) {
  files->clear();
  if (dirs != nullptr) dirs->clear();
  Status s = ListInto(dir, "", files, dirs);
  if (!s.ok()) return s;
  std::sort(files->begin(), files->end());
  return Status::OK();
}

Status SyncPath(const std::string& path) {
  Fd f(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) return Status::FromErrno("cannot open '" + path + "' to sync it", errno);
  if (fsync(f.fd) != 0) return Status::FromErrno("cannot sync '" + path + "'", errno);
  return Status::OK();
}

Status ReadWholeFile(const std::string& path, std::string* data) {
  data->clear();
  Fd f(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) return Status::FromErrno("cannot open '" + path + "'", errno);
  struct stat st;
  if (fstat(f.fd, &st) != 0) return Status::FromErrno("cannot stat '" + path + "'", errno);
  data->resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < data->size()) {
    const ssize_t r = pread(f.fd, &(*data)[done], data->size() - done, static_cast<off_t>(done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("cannot read '" + path + "'", errno);
    if (r == 0) return Status::Corruption("'" + path + "' is shorter than its size");
    done += static_cast<size_t>(r);
  }
  return Status::OK();
}

Status WriteWholeFile(const std::string& path, const std::string& data) {
  Fd f(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (f.fd < 0) return Status::FromErrno("cannot create '" + path + "'", errno);
  Status s = WriteAll(f.fd, data.data(), data.size(), path);
  if (!s.ok()) return s;
  if (fsync(f.fd) != 0) return Status::FromErrno("cannot sync '" + path + "'", errno);
  return Status::OK();
}

Status ChecksumFile(const std::string& path, bool sync, uint64_t* size, uint32_t* crc) {
  Fd f(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) return Status::FromErrno("cannot open '" + path + "'", errno);
  std::string buf(kIoBytes, '\0');
  uint64_t total = 0;
  uint32_t c = 0;
  for (;;) {
    const ssize_t r = read(f.fd, &buf[0], buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("cannot read '" + path + "'", errno);
    if (r == 0) break;
    c = crc32c::Extend(c, buf.data(), static_cast<size_t>(r));
    total += static_cast<uint64_t>(r);
  }
  if (sync && fsync(f.fd) != 0) return Status::FromErrno("cannot sync '" + path + "'", errno);
  *size = total;
  *crc = c;
  return Status::OK();
}

bool PathExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

Status LinkOrCopyFile(const std::string& from, const std::string& to) {
  if (link(from.c_str(), to.c_str()) == 0) return Status::OK();
  if (errno != EXDEV && errno != EPERM && errno != EMLINK && errno != ENOTSUP) {
    return Status::FromErrno("cannot link '" + from + "' to '" + to + "'", errno);
  }
  Fd in(open(from.c_str(), O_RDONLY | O_CLOEXEC));
  if (in.fd < 0) return Status::FromErrno("cannot open '" + from + "'", errno);
  Fd out(open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (out.fd < 0) return Status::FromErrno("cannot create '" + to + "'", errno);
  std::string buf(kIoBytes, '\0');
  for (;;) {
    const ssize_t r = read(in.fd, &buf[0], buf.size());
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return Status::FromErrno("cannot read '" + from + "'", errno);
    if (r == 0) break;
    Status s = WriteAll(out.fd, buf.data(), static_cast<size_t>(r), to);
    if (!s.ok()) return s;
  }
  if (fsync(out.fd) != 0) return Status::FromErrno("cannot sync '" + to + "'", errno);
  return Status::OK();
}

}  // namespace chorus
