#include "sample/kv/kv_dump.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {
namespace kv {
namespace {

constexpr char kMagic[] = "CHKVDMP1";  // 8 bytes, no terminator written
constexpr uint32_t kEndMarker = 0xffffffffu;
// Keys or values longer than this are damage (the parser caps them at far less).
constexpr uint32_t kMaxField = 1u << 30;
// A load writes the dump into leveldb in batches of about this size.
constexpr size_t kBatchBytes = 1u << 20;

struct FileCloser {
  void operator()(FILE* f) const {
    if (f != nullptr) std::fclose(f);
  }
};
using File = std::unique_ptr<FILE, FileCloser>;

// Appends to a file and keeps the crc32c of everything written.
class DumpOut {
 public:
  explicit DumpOut(FILE* f) : f_(f) {}
  void Put(const char* p, size_t n) {
    crc_ = crc32c::Extend(crc_, p, n);
    if (ok_ && std::fwrite(p, 1, n, f_) != n) ok_ = false;
  }
  void Put32(uint32_t v) {
    char b[4];
    EncodeFixed32(b, v);
    Put(b, 4);
  }
  void Put64(uint64_t v) {
    char b[8];
    EncodeFixed64(b, v);
    Put(b, 8);
  }
  uint32_t crc() const { return crc_; }
  bool ok() const { return ok_; }

 private:
  FILE* f_;
  uint32_t crc_ = 0;
  bool ok_ = true;
};

// Reads from a file and keeps the crc32c of everything read.
class DumpIn {
 public:
  explicit DumpIn(FILE* f) : f_(f) {}
  bool Get(char* p, size_t n) {
    if (std::fread(p, 1, n, f_) != n) return false;
    crc_ = crc32c::Extend(crc_, p, n);
    consumed_ += n;
    return true;
  }
  bool Get(std::string* s, size_t n) {
    s->resize(n);
    return n == 0 || Get(&(*s)[0], n);
  }
  bool Get32(uint32_t* v) {
    char b[4];
    if (!Get(b, 4)) return false;
    *v = DecodeFixed32(b);
    return true;
  }
  bool Get64(uint64_t* v) {
    char b[8];
    if (!Get(b, 8)) return false;
    *v = DecodeFixed64(b);
    return true;
  }
  uint32_t crc() const { return crc_; }
  uint64_t consumed() const { return consumed_; }

 private:
  FILE* f_;
  uint32_t crc_ = 0;
  uint64_t consumed_ = 0;
};

}  // namespace

Status FromLevelDb(const leveldb::Status& s) {
  if (s.ok()) return Status::OK();
  if (s.IsCorruption()) return Status::Corruption(s.ToString());
  if (s.IsNotFound()) return Status::NotFound(s.ToString());
  return Status::IOError(s.ToString());
}

Status WriteDump(leveldb::DB* db, const leveldb::Snapshot* snapshot, const std::string& prefix,
                 const DumpHeader& header, const std::string& path) {
  File f(std::fopen(path.c_str(), "wbx"));
  if (f == nullptr) return Status::FromErrno("kv dump: create " + path, errno);
  std::setvbuf(f.get(), nullptr, _IOFBF, 1u << 20);
  DumpOut out(f.get());
  out.Put(kMagic, 8);
  out.Put64(header.instance);
  out.Put64(header.writes);
  leveldb::ReadOptions ro;
  ro.snapshot = snapshot;
  ro.fill_cache = false;  // a full scan would only evict what the readers need
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(ro));
  uint64_t count = 0;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    leveldb::Slice k = it->key();
    k.remove_prefix(prefix.size());
    const leveldb::Slice v = it->value();
    out.Put32(static_cast<uint32_t>(k.size()));
    out.Put32(static_cast<uint32_t>(v.size()));
    out.Put(k.data(), k.size());
    out.Put(v.data(), v.size());
    ++count;
  }
  if (!it->status().ok()) return FromLevelDb(it->status());
  out.Put32(kEndMarker);
  out.Put64(count);
  const uint32_t crc = out.crc();
  out.Put32(crc);
  if (!out.ok() || std::fflush(f.get()) != 0) {
    return Status::FromErrno("kv dump: write " + path, errno);
  }
  FILE* raw = f.release();
  if (std::fclose(raw) != 0) return Status::FromErrno("kv dump: close " + path, errno);
  return Status::OK();
}

Status ReadDump(const std::string& path, const std::string& prefix, leveldb::DB* db,
                DumpHeader* header) {
  File f(std::fopen(path.c_str(), "rb"));
  if (f == nullptr) return Status::FromErrno("kv dump: open " + path, errno);
  struct stat st;
  if (fstat(fileno(f.get()), &st) != 0) return Status::FromErrno("kv dump: stat " + path, errno);
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  std::setvbuf(f.get(), nullptr, _IOFBF, 1u << 20);
  DumpIn in(f.get());
  const Status truncated = Status::Corruption("kv dump " + path + ": truncated");
  char magic[8];
  if (!in.Get(magic, 8)) return truncated;
  if (std::memcmp(magic, kMagic, 8) != 0) {
    return Status::Corruption("kv dump " + path + ": not a kv dump (bad magic)");
  }
  if (!in.Get64(&header->instance) || !in.Get64(&header->writes)) return truncated;
  leveldb::WriteBatch batch;
  leveldb::WriteOptions wo;
  uint64_t count = 0;
  std::string key = prefix;
  std::string value;
  while (true) {
    uint32_t klen = 0;
    if (!in.Get32(&klen)) return truncated;
    if (klen == kEndMarker) break;
    uint32_t vlen = 0;
    if (!in.Get32(&vlen)) return truncated;
    // Checked before anything is allocated for them: a damaged length must
    // not make the load allocate a gigabyte.
    if (klen > kMaxField || vlen > kMaxField ||
        uint64_t{klen} + vlen > file_size - in.consumed()) {
      return Status::Corruption("kv dump " + path + ": field length out of range");
    }
    key.resize(prefix.size());
    std::string k;
    if (!in.Get(&k, klen) || !in.Get(&value, vlen)) return truncated;
    key += k;
    batch.Put(key, value);
    ++count;
    if (batch.ApproximateSize() >= kBatchBytes) {
      Status s = FromLevelDb(db->Write(wo, &batch));
      if (!s.ok()) return s;
      batch.Clear();
    }
  }
  uint64_t stored_count = 0;
  if (!in.Get64(&stored_count)) return truncated;
  const uint32_t computed = in.crc();
  uint32_t stored_crc = 0;
  if (!in.Get32(&stored_crc)) return truncated;
  if (stored_crc != computed) return Status::Corruption("kv dump " + path + ": checksum mismatch");
  if (stored_count != count) return Status::Corruption("kv dump " + path + ": key count mismatch");
  char extra;
  if (std::fread(&extra, 1, 1, f.get()) != 0) {
    return Status::Corruption("kv dump " + path + ": bytes after the end");
  }
  return FromLevelDb(db->Write(wo, &batch));
}

}  // namespace kv
}  // namespace chorus
