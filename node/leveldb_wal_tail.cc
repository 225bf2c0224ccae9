// The record format scanned here is leveldb's (doc/log_format.md of
// leveldb); leveldb does not install its log reader, so chorus reads the
// few fields itself.
#include "node/leveldb_wal_tail.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {
namespace leveldb_wal {

namespace {

enum RecordType : uint8_t { kZeroType = 0, kFullType = 1, kFirstType = 2, kMiddleType = 3, kLastType = 4 };

// leveldb stores crc32c values masked (crc32c.h of leveldb).
constexpr uint32_t kMaskDelta = 0xa282ead8ul;
uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

enum class Parse {
  kRecord,      // a valid physical record
  kEndOfBlock,  // a block trailer or zero padding: leveldb goes on at the next block
  kCutAtEnd,    // a record cut by the end of the file: leveldb ignores it
  kBad,         // a failed checksum, an unknown type, a length beyond its block
};

struct Physical {
  uint8_t type = 0;
  size_t length = 0;
};

size_t NextBlock(size_t pos) { return (pos / kBlockSize + 1) * kBlockSize; }

Parse ParseAt(const std::string& bytes, size_t pos, Physical* rec) {
  const size_t block_left = kBlockSize - pos % kBlockSize;
  if (block_left < kHeaderSize) return Parse::kEndOfBlock;
  if (pos + kHeaderSize > bytes.size()) return Parse::kCutAtEnd;
  const char* h = bytes.data() + pos;
  rec->length = static_cast<uint8_t>(h[4]) | (static_cast<size_t>(static_cast<uint8_t>(h[5])) << 8);
  rec->type = static_cast<uint8_t>(h[6]);
  if (rec->type == kZeroType && rec->length == 0) return Parse::kEndOfBlock;
  // Like leveldb's reader: a length past the end of a short last block is a
  // write cut by the end of the file; past the end of a full block, damage.
  const bool in_short_last_block = bytes.size() < NextBlock(pos);
  if (pos + kHeaderSize + rec->length > bytes.size() && in_short_last_block) {
    return Parse::kCutAtEnd;
  }
  if (kHeaderSize + rec->length > block_left) return Parse::kBad;
  if (rec->type < kFullType || rec->type > kLastType) return Parse::kBad;
  if (crc32c::Value(h + 6, 1 + rec->length) != Unmask(DecodeFixed32(h))) return Parse::kBad;
  return Parse::kRecord;
}

// Whether a valid record starts anywhere after the damaged record at `bad`:
// at any offset of the rest of its block (its own length field may be the
// damaged part, so it is not trusted), or at the start of any later block
// (where leveldb always starts a fragment).
bool ValidRecordAfter(const std::string& bytes, size_t bad) {
  Physical rec;
  // Only an offset whose type byte (the last of its header) holds a record
  // type can start a record, so instead of parsing a header at each of up to
  // 32 KiB offsets, memchr finds the next byte of each type: a torn tail is
  // mostly zeros or stale bytes, which hold none. The type bytes searched are
  // those of the offsets bad + 1 .. the end of the block, cut where a header
  // would run past the end of the file (ParseAt's kCutAtEnd, not a record).
  const size_t first = bad + kHeaderSize;
  const size_t end = std::min(NextBlock(bad) + kHeaderSize - 1, bytes.size());
  auto find = [&bytes, end](uint8_t type, size_t from) -> size_t {
    if (from >= end) return end;
    const void* hit = memchr(bytes.data() + from, type, end - from);
    return hit == nullptr ? end : static_cast<size_t>(static_cast<const char*>(hit) - bytes.data());
  };
  size_t next[kLastType + 1];  // per type, the next type byte at or after the one tried
  for (uint8_t t = kFullType; t <= kLastType; ++t) next[t] = find(t, first);
  while (true) {
    uint8_t type = kFullType;
    for (uint8_t t = kFullType + 1; t <= kLastType; ++t) {
      if (next[t] < next[type]) type = t;
    }
    const size_t at = next[type];
    if (at == end) break;
    if (ParseAt(bytes, at - (kHeaderSize - 1), &rec) == Parse::kRecord) return true;
    next[type] = find(type, at + 1);
  }
  for (size_t block = NextBlock(bad); block < bytes.size(); block += kBlockSize) {
    if (ParseAt(bytes, block, &rec) == Parse::kRecord) return true;
  }
  return false;
}

Status ReadFile(const std::string& path, std::string* bytes) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open '" + path + "'", errno);
  bytes->clear();
  char buf[1 << 16];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return Status::FromErrno("cannot read '" + path + "'", err);
    }
    if (n == 0) break;
    bytes->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return Status::OK();
}

Status WriteFileSynced(const std::string& path, const char* data, size_t n) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("cannot create '" + path + "'", errno);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = write(fd, data + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      const int err = errno;
      close(fd);
      return Status::FromErrno("cannot write '" + path + "'", err);
    }
    done += static_cast<size_t>(w);
  }
  if (fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno("cannot sync '" + path + "'", err);
  }
  close(fd);
  return Status::OK();
}

Status SyncDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open directory '" + dir + "'", errno);
  const int rc = fsync(fd);
  const int err = errno;
  close(fd);
  return rc == 0 ? Status::OK() : Status::FromErrno("cannot sync directory '" + dir + "'", err);
}

// The name of the newest "<number>.log" in `dir`, "" when there is none.
Status NewestLog(const std::string& dir, std::string* name) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Status::FromErrno("cannot list '" + dir + "'", errno);
  name->clear();
  unsigned long long newest = 0;
  while (struct dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() <= 4 || n.compare(n.size() - 4, 4, ".log") != 0) continue;
    const std::string digits = n.substr(0, n.size() - 4);
    if (digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const unsigned long long number = std::strtoull(digits.c_str(), nullptr, 10);
    if (name->empty() || number > newest) {
      newest = number;
      *name = n;
    }
  }
  closedir(d);
  return Status::OK();
}

}  // namespace

TailScan ScanWal(const std::string& bytes) {
  TailScan scan;
  bool in_fragments = false;  // a FIRST was read, its LAST not yet
  size_t pos = 0;
  while (pos < bytes.size()) {
    Physical rec;
    const Parse p = ParseAt(bytes, pos, &rec);
    if (p == Parse::kEndOfBlock) {
      pos = NextBlock(pos);
      continue;
    }
    if (p == Parse::kCutAtEnd) break;
    if (p == Parse::kBad) {
      scan.damaged = true;
      scan.valid_after_damage = ValidRecordAfter(bytes, pos);
      return scan;
    }
    const bool starts = rec.type == kFullType || rec.type == kFirstType;
    if (starts == in_fragments) {
      // A fragment out of order: this record is valid, the one before is
      // not complete, so the damage lies before valid data.
      scan.damaged = true;
      scan.valid_after_damage = true;
      return scan;
    }
    pos += kHeaderSize + rec.length;
    if (rec.type == kFirstType) in_fragments = true;
    if (rec.type == kFullType || rec.type == kLastType) {
      in_fragments = false;
      scan.good_end = pos;
    }
  }
  return scan;
}

Status CutTornWalTail(const std::string& dir, std::string* note) {
  note->clear();
  std::string name;
  Status s = NewestLog(dir, &name);
  if (!s.ok() || name.empty()) return s;
  const std::string path = dir + "/" + name;
  std::string bytes;
  s = ReadFile(path, &bytes);
  if (!s.ok()) return s;
  const TailScan scan = ScanWal(bytes);
  if (!scan.damaged || scan.valid_after_damage) return Status::OK();

  // Keep what is cut: nobody was promised it, but a person may want to look.
  const std::string lost_dir = dir + "/lost";
  if (mkdir(lost_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::FromErrno("cannot create '" + lost_dir + "'", errno);
  }
  const std::string kept = lost_dir + "/" + name + ".torn-at-" + std::to_string(scan.good_end);
  s = WriteFileSynced(kept, bytes.data() + scan.good_end, bytes.size() - scan.good_end);
  if (!s.ok()) return s;
  s = SyncDir(lost_dir);
  if (!s.ok()) return s;
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("cannot open '" + path + "' to cut its torn tail", errno);
  if (ftruncate(fd, static_cast<off_t>(scan.good_end)) != 0 || fsync(fd) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno("cannot cut the torn tail of '" + path + "'", err);
  }
  close(fd);
  *note = "cut a torn tail of " + std::to_string(bytes.size() - scan.good_end) +
          " bytes off '" + path + "' at offset " + std::to_string(scan.good_end) +
          " (a write that never completed, so never acknowledged); the bytes are kept in '" +
          kept + "'";
  return Status::OK();
}

}  // namespace leveldb_wal
}  // namespace chorus
