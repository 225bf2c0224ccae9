#include "sample/kv/kv_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include <leveldb/db.h>
#include <leveldb/write_batch.h>

#include "sample/kv/kv_dump.h"
#include "sample/kv/resp.h"
#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {
namespace kv {

namespace fs = std::filesystem;

namespace {

const char kDataPrefix[] = "d";
const char kPositionKey[] = "m";
const char kActive[] = "ACTIVE";
const char kDumpFile[] = "kv.dump";

// A failed read or write of the live database: going on would let this
// replica's state differ from the others' without anyone noticing, so the
// process stops; a restart replays from the last position it wrote.
[[noreturn]] void Die(const char* what, const leveldb::Status& s) {
  std::fprintf(stderr, "kv_store: %s failed: %s; stopping (a restart replays the log)\n", what,
               s.ToString().c_str());
  std::abort();
}

std::string EncodePosition(const KvPosition& p, uint64_t writes) {
  std::string v;
  PutFixed64(&v, p.instance);
  PutFixed32(&v, p.batch_index);
  PutFixed64(&v, writes);
  return v;
}

bool Before(const KvPosition& a, const KvPosition& b) {
  return a.instance < b.instance || (a.instance == b.instance && a.batch_index < b.batch_index);
}

std::string DbName(uint64_t generation) { return "db-" + std::to_string(generation); }

Status SyncDir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return Status::FromErrno("kv_store: open " + dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  return rc == 0 ? Status::OK() : Status::FromErrno("kv_store: fsync " + dir, err);
}

// Replaces dir/ACTIVE with "db-<generation>": written to a temporary file,
// synced, renamed over the old one (atomic), and the directory synced.
Status WriteActive(const std::string& dir, uint64_t generation) {
  const std::string tmp = dir + "/" + kActive + ".tmp";
  const std::string text = DbName(generation) + "\n";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return Status::FromErrno("kv_store: create " + tmp, errno);
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok) return Status::FromErrno("kv_store: write " + tmp, err);
  if (::rename(tmp.c_str(), (dir + "/" + kActive).c_str()) != 0) {
    return Status::FromErrno("kv_store: rename " + tmp, errno);
  }
  return SyncDir(dir);
}

// Reads dir/ACTIVE: NotFound when there is none.
Status ReadActive(const std::string& dir, uint64_t* generation) {
  const std::string path = dir + "/" + kActive;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    if (errno == ENOENT) return Status::NotFound(path);
    return Status::FromErrno("kv_store: open " + path, errno);
  }
  char buf[64] = {0};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string text(buf, n);
  uint64_t g = 0;
  if (text.size() < 5 || text.compare(0, 3, "db-") != 0 || text.back() != '\n' ||
      !ParsePositiveDecimal(text.substr(3, text.size() - 4), UINT64_MAX / 2, &g)) {
    return Status::Corruption("kv_store: " + path + " is damaged");
  }
  *generation = g;
  return Status::OK();
}

Status OpenLevelDb(const std::string& path, bool create, std::unique_ptr<leveldb::DB>* db) {
  leveldb::Options o;
  o.create_if_missing = create;
  o.error_if_exists = create;
  o.write_buffer_size = 16u << 20;
  leveldb::DB* raw = nullptr;
  Status s = FromLevelDb(leveldb::DB::Open(o, path, &raw));
  if (s.ok()) db->reset(raw);
  return s;
}

// Whether a strict decimal int64 ("-12"), as Redis's INCR accepts it.
bool ParseStoredInt(const std::string& s, int64_t* v) {
  if (s.empty() || s.size() > 20) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size() || (s[i] == '0' && s.size() > i + 1)) return false;
  __int128 n = 0;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    n = n * 10 + (s[i] - '0');
  }
  if (s[0] == '-') n = -n;
  if (n > INT64_MAX || n < INT64_MIN) return false;
  *v = static_cast<int64_t>(n);
  return true;
}

}  // namespace

struct KvStore::Db {
  std::unique_ptr<leveldb::DB> db;
  std::string path;
  // Set when a LoadCheckpoint replaced it: the last user deletes its files.
  std::atomic<bool> obsolete{false};
  ~Db() {
    db.reset();
    if (obsolete.load()) {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
};

namespace {

// Writes one checkpoint: the snapshot PrepareCheckpoint took, dumped to
// dir/kv.dump. Holds the database it reads, so a LoadCheckpoint that
// replaces the live one meanwhile leaves this one's files until it is done.
class KvCheckpointWriter : public CheckpointWriter {
 public:
  KvCheckpointWriter(std::shared_ptr<void> keep, leveldb::DB* db, const DumpHeader& header)
      : keep_(std::move(keep)), db_(db), snapshot_(db->GetSnapshot()), header_(header) {}
  ~KvCheckpointWriter() override { db_->ReleaseSnapshot(snapshot_); }
  Status Write(const std::string& dir) override {
    return WriteDump(db_, snapshot_, kDataPrefix, header_, dir + "/" + kDumpFile);
  }

 private:
  const std::shared_ptr<void> keep_;  // the KvStore::Db that owns db_
  leveldb::DB* const db_;
  const leveldb::Snapshot* const snapshot_;
  const DumpHeader header_;
};

}  // namespace

KvStore::KvStore(std::string dir, KvStoreOptions options)
    : dir_(std::move(dir)), options_(std::move(options)) {}

KvStore::~KvStore() = default;

Status KvStore::Open(const std::string& dir, const KvStoreOptions& options,
                     std::unique_ptr<KvStore>* store) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    if (!options.create_if_missing) {
      return Status::InvalidArgument("kv store " + dir +
                                     " does not exist (create it with create_if_missing on the "
                                     "replica's first start only)");
    }
    fs::create_directories(dir, ec);
    if (ec) return Status::IOError("kv_store: create " + dir + ": " + ec.message());
  }
  uint64_t generation = 1;
  Status s = ReadActive(dir, &generation);
  const bool fresh = s.IsNotFound();
  if (fresh && !options.create_if_missing) {
    return Status::InvalidArgument("no kv store in " + dir + " (no " + kActive + " file)");
  }
  if (!s.ok() && !fresh) return s;
  std::unique_ptr<KvStore> st(new KvStore(dir, options));
  const std::string path = dir + "/" + DbName(generation);
  if (fresh) fs::remove_all(path, ec);  // a first start that died before ACTIVE
  auto db = std::make_shared<Db>();
  db->path = path;
  s = OpenLevelDb(path, fresh, &db->db);
  if (s.ok() && fresh) s = WriteActive(dir, generation);
  if (!s.ok()) return s;
  // Databases other than the live one were left by an interrupted load (or
  // by a replaced one whose deletion a crash cut short).
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if ((name.compare(0, 3, "db-") == 0 && name != DbName(generation)) ||
        name == std::string(kActive) + ".tmp") {
      fs::remove_all(e.path(), ec);
    }
  }
  std::string v;
  leveldb::Status ls = db->db->Get(leveldb::ReadOptions(), kPositionKey, &v);
  if (ls.ok()) {
    if (v.size() != 20) return Status::Corruption("kv_store: damaged position record in " + path);
    st->next_instance_.store(DecodeFixed64(v.data()));
    st->next_batch_.store(DecodeFixed32(v.data() + 8));
    st->writes_.store(DecodeFixed64(v.data() + 12));
  } else if (!ls.IsNotFound()) {
    return FromLevelDb(ls);
  }
  st->generation_ = generation;
  st->db_ = std::move(db);
  *store = std::move(st);
  return Status::OK();
}

std::shared_ptr<KvStore::Db> KvStore::db() const {
  std::lock_guard<std::mutex> lock(mu_);
  return db_;
}

KvPosition KvStore::position() const {
  KvPosition p;
  p.instance = next_instance_.load(std::memory_order_acquire);
  p.batch_index = next_batch_.load(std::memory_order_acquire);
  return p;
}

void KvStore::Commit(leveldb::WriteBatch* batch, const KvPosition& next, uint64_t writes) {
  leveldb::WriteBatch own;
  if (batch == nullptr) batch = &own;
  batch->Put(kPositionKey, EncodePosition(next, writes));
  // Not synced: see the header (chorus's synced log replays what a machine
  // crash loses, and the position says where to start).
  leveldb::Status s = db()->db->Write(leveldb::WriteOptions(), batch);
  if (!s.ok()) Die("write", s);
  next_batch_.store(next.batch_index, std::memory_order_release);
  next_instance_.store(next.instance, std::memory_order_release);
  writes_.store(writes, std::memory_order_release);
}

void KvStore::Apply(const std::vector<WriteOp>& ops, const KvPosition& next,
                    std::string* replies) {
  std::shared_ptr<Db> d = db();
  leveldb::WriteBatch batch;
  // What this value already wrote: a later op of the same value reads it
  // (INCR a; INCR a). nullopt: deleted.
  std::map<std::string, std::optional<std::string>> written;
  auto read = [&](const std::string& key, std::string* value) {
    auto it = written.find(key);
    if (it != written.end()) {
      if (!it->second) return false;
      *value = *it->second;
      return true;
    }
    leveldb::Status s = d->db->Get(leveldb::ReadOptions(), kDataPrefix + key, value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) Die("read", s);
    return true;
  };
  auto put = [&](const std::string& key, const std::string& value) {
    batch.Put(kDataPrefix + key, value);
    written[key] = value;
  };
  std::string old;
  for (const WriteOp& op : ops) {
    switch (op.code) {
      case OpCode::kSet: {
        if (op.flags != 0) {
          const bool exists = read(op.args[0], &old);
          if (((op.flags & kNx) != 0 && exists) || ((op.flags & kXx) != 0 && !exists)) {
            AppendNullBulk(replies);
            break;
          }
        }
        put(op.args[0], op.args[1]);
        AppendSimple(replies, "OK");
        break;
      }
      case OpCode::kMSet:
        for (size_t i = 0; i + 1 < op.args.size(); i += 2) put(op.args[i], op.args[i + 1]);
        AppendSimple(replies, "OK");
        break;
      case OpCode::kDel: {
        int64_t n = 0;
        for (const std::string& key : op.args) {
          if (!read(key, &old)) continue;
          ++n;
          batch.Delete(kDataPrefix + key);
          written[key] = std::nullopt;
        }
        AppendInteger(replies, n);
        break;
      }
      case OpCode::kIncrBy: {
        int64_t n = 0;
        if (read(op.args[0], &old) && !ParseStoredInt(old, &n)) {
          AppendError(replies, "ERR value is not an integer or out of range");
          break;
        }
        if ((op.delta > 0 && n > INT64_MAX - op.delta) ||
            (op.delta < 0 && n < INT64_MIN - op.delta)) {
          AppendError(replies, "ERR increment or decrement would overflow");
          break;
        }
        n += op.delta;
        put(op.args[0], std::to_string(n));
        AppendInteger(replies, n);
        break;
      }
      case OpCode::kCas: {
        // Expected "" matches an absent key only (not one holding "").
        const bool exists = read(op.args[0], &old);
        const bool match = op.args[1].empty() ? !exists : exists && old == op.args[1];
        if (match) put(op.args[0], op.args[2]);
        AppendInteger(replies, match ? 1 : 0);
        break;
      }
    }
  }
  Commit(&batch, next, writes_.load(std::memory_order_relaxed) + ops.size());
}

Status KvStore::Execute(const ExecuteInfo& info, const std::string& value, ExecuteContext* ctx) {
  const KvPosition at{info.instance, info.batch_index};
  // Already applied: a batch half applied before a restart comes again whole.
  if (Before(at, position())) return Status::OK();
  KvPosition next = at;
  if (info.batch_index + 1 >= info.batch_size) {
    next.instance = info.instance + 1;
    next.batch_index = 0;
  } else {
    next.batch_index = info.batch_index + 1;
  }
  std::vector<WriteOp> ops;
  std::string replies;
  if (!DecodeOps(value, &ops)) {
    // Every replica rejects it alike; the position still moves past it.
    Commit(nullptr, next, writes_.load(std::memory_order_relaxed));
    AppendError(&replies, "ERR the replicated value does not decode");
    if (ctx != nullptr) ctx->output = std::move(replies);
    return Status::Corruption("kv: undecodable value at instance " +
                              std::to_string(info.instance));
  }
  Apply(ops, next, &replies);
  if (ctx != nullptr) ctx->output = std::move(replies);
  return Status::OK();
}

void KvStore::ExecuteNoop(uint32_t, uint64_t instance) {
  if (instance < next_instance_.load(std::memory_order_relaxed)) return;
  Commit(nullptr, KvPosition{instance + 1, 0}, writes_.load(std::memory_order_relaxed));
}

uint64_t KvStore::GetCheckpointInstanceId(uint32_t) const {
  return next_instance_.load(std::memory_order_acquire);
}

Status KvStore::PrepareCheckpoint(const CheckpointInfo& info,
                                  std::unique_ptr<CheckpointWriter>* writer) {
  const KvPosition p = position();
  // chorus calls this when every instance below info.instance was executed
  // and none above, so the state is the state at info.instance, even when
  // the recorded position is lower (the last value of an instance belonged
  // to another state machine of the group: see ExecuteInfo::batch_size).
  // Only a store AHEAD of it (after a machine crash, the store kept writes
  // that chorus's log has yet to learn again) holds another state, which
  // must not be sold as the state at info.instance.
  if (Before(KvPosition{info.instance, 0}, p)) {
    return Status::InvalidArgument("kv store is at instance " + std::to_string(p.instance) +
                                   " batch " + std::to_string(p.batch_index) +
                                   ", not at the checkpoint's instance " +
                                   std::to_string(info.instance));
  }
  std::shared_ptr<Db> d = db();
  DumpHeader header;
  header.instance = info.instance;
  header.writes = writes_.load(std::memory_order_relaxed);
  leveldb::DB* raw = d->db.get();
  writer->reset(new KvCheckpointWriter(std::move(d), raw, header));
  return Status::OK();
}

Status KvStore::LoadCheckpoint(const CheckpointInfo& info, const std::string& dir) {
  const uint64_t generation = generation_ + 1;
  auto fresh = std::make_shared<Db>();
  fresh->path = dir_ + "/" + DbName(generation);
  std::error_code ec;
  fs::remove_all(fresh->path, ec);
  // Until WriteActive below succeeds, any failure deletes the new database
  // and leaves the live one as it was.
  fresh->obsolete.store(true);
  Status s = OpenLevelDb(fresh->path, true, &fresh->db);
  DumpHeader header;
  if (s.ok()) s = ReadDump(dir + "/" + kDumpFile, kDataPrefix, fresh->db.get(), &header);
  if (s.ok() && header.instance != info.instance) {
    s = Status::Corruption("kv checkpoint in " + dir + " is of instance " +
                           std::to_string(header.instance) + ", expected " +
                           std::to_string(info.instance));
  }
  const KvPosition next{info.instance, 0};
  if (s.ok()) {
    leveldb::WriteOptions sync;
    sync.sync = true;  // makes the whole new database durable before ACTIVE names it
    leveldb::WriteBatch b;
    b.Put(kPositionKey, EncodePosition(next, header.writes));
    s = FromLevelDb(fresh->db->Write(sync, &b));
  }
  if (s.ok() && options_.load_fault) s = options_.load_fault("built");
  if (s.ok() && options_.load_fault) s = options_.load_fault("switch");
  if (s.ok()) s = WriteActive(dir_, generation);  // the commit point
  if (!s.ok()) return s;  // `fresh` goes, with its files
  fresh->obsolete.store(false);
  std::shared_ptr<Db> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = std::move(db_);
    db_ = std::move(fresh);
  }
  old->obsolete.store(true);  // deleted when its last reader or writer is done
  generation_ = generation;
  next_batch_.store(0, std::memory_order_release);
  next_instance_.store(next.instance, std::memory_order_release);
  writes_.store(header.writes, std::memory_order_release);
  loads_.fetch_add(1, std::memory_order_relaxed);
  return Status::OK();
}

Status KvStore::Get(const std::string& key, std::string* value) const {
  std::shared_ptr<Db> d = db();
  return FromLevelDb(d->db->Get(leveldb::ReadOptions(), kDataPrefix + key, value));
}

Status KvStore::Count(uint64_t* keys, uint32_t* digest) const {
  std::shared_ptr<Db> d = db();
  leveldb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(d->db->NewIterator(ro));
  uint64_t n = 0;
  uint32_t crc = 0;
  char len[4];
  for (it->Seek(kDataPrefix); it->Valid() && it->key().starts_with(kDataPrefix); it->Next()) {
    EncodeFixed32(len, static_cast<uint32_t>(it->key().size()));
    crc = crc32c::Extend(crc, len, 4);
    crc = crc32c::Extend(crc, it->key().data(), it->key().size());
    EncodeFixed32(len, static_cast<uint32_t>(it->value().size()));
    crc = crc32c::Extend(crc, len, 4);
    crc = crc32c::Extend(crc, it->value().data(), it->value().size());
    ++n;
  }
  if (!it->status().ok()) return FromLevelDb(it->status());
  *keys = n;
  *digest = crc;
  return Status::OK();
}

}  // namespace kv
}  // namespace chorus
