// The default LogStorage: one leveldb database per group. The key/value
// layout is in node/leveldb_log_format.h.
#include <alloca.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <leveldb/cache.h>
#include <leveldb/db.h>
#include <leveldb/env.h>
#include <leveldb/iterator.h>
#include <leveldb/options.h>
#include <leveldb/write_batch.h>

#include <algorithm>
#include <system_error>
#include <thread>
#include <vector>

#include "chorus/leveldb_log_storage.h"
#include "node/fs_util.h"
#include "node/leveldb_log_format.h"
#include "node/leveldb_log_trim.h"
#include "node/leveldb_wal_sync_env.h"
#include "node/leveldb_wal_tail.h"
#include "utils/mutex.h"
#include "utils/thread_name.h"

namespace chorus {

namespace {

#if defined(__SANITIZE_THREAD__)
#define CHORUS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CHORUS_TSAN 1
#endif
#endif

// db->CompactRange(nullptr, limit). leveldb keeps that call's
// ManualCompaction on the caller's stack, and its background thread writes
// into it under leveldb's own mutex, which ThreadSanitizer cannot see (the
// Debian leveldb is not instrumented). Where this thread's own code wrote
// the same stack bytes before (CollectRecordKeys, a moment earlier), TSan
// then reports a race between this thread's old stack frame and leveldb's
// thread that is not one; it showed once unity builds inlined
// CollectRecordKeys into its caller. Under TSan the call is made 64 KiB
// further down the stack (8 MiB per thread), below anything this thread's
// code reaches first: the report cannot arise, and a real race elsewhere
// is still reported.
__attribute__((noinline)) void CompactBelow(leveldb::DB* db, const leveldb::Slice* limit) {
#if defined(CHORUS_TSAN)
  char* gap = static_cast<char*>(alloca(64 * 1024));
  asm volatile("" : : "r"(gap) : "memory");  // keeps the gap
#endif
  db->CompactRange(nullptr, limit);  // thread-safe; its errors resurface on reads
}

using leveldb_log::RecordKey;

// Maps a leveldb error onto a chorus Status, prefixed with `context`.
Status FromLevelDb(const std::string& context, const leveldb::Status& s) {
  const std::string msg = context + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsNotSupportedError()) return Status::NotSupported(msg);
  return Status::IOError(msg);
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// Sets *empty to whether `dir` holds no entries. REQUIRES: dir exists.
Status DirIsEmpty(const std::string& dir, bool* empty) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return Status::FromErrno("cannot list log directory '" + dir + "'", errno);
  *empty = true;
  while (struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") {
      *empty = false;
      break;
    }
  }
  closedir(d);
  return Status::OK();
}

class LevelDbLogStorage : public LogStorage {
 public:
  LevelDbLogStorage(std::string dir, std::unique_ptr<leveldb::Env> env,
                    std::unique_ptr<leveldb::Cache> cache, std::unique_ptr<leveldb::DB> db)
      : dir_(std::move(dir)), env_(std::move(env)), cache_(std::move(cache)), db_(std::move(db)) {}

  ~LevelDbLogStorage() override {
    {
      MutexLock l(&compact_mu_);
      compact_stopping_ = true;
    }
    compact_cv_.SignalAll();
    if (compactor_.joinable()) compactor_.join();  // runs the compaction still due
    db_.reset();  // the database uses the cache and the env: close it first
    cache_.reset();
    env_.reset();
  }

  // Loads trimmed_below and the min/max cache. Called once before the
  // storage is shared. Records still below the marker (a crash before the
  // background deletion finished) stay hidden, and their deletion resumes.
  Status LoadBounds() {
    uint64_t below = 0;
    Status s = leveldb_log::ReadTrimmedBelow(db_.get(), dir_, &below);
    if (!s.ok()) return s;
    {
      MutexLock l(&bounds_mu_);
      trimmed_below_ = below;
      s = ScanBoundsLocked();
      if (!s.ok()) return s;
    }
    if (below == 0) return Status::OK();
    std::vector<std::string> hidden;
    leveldb::Status ls =
        leveldb_log::CollectRecordKeys(db_.get(), RecordKey(0), below, 1, &hidden);
    if (!ls.ok()) return FromLevelDb("log in '" + dir_ + "': scanning trimmed records", ls);
    if (!hidden.empty()) ScheduleCompaction(below);
    return Status::OK();
  }

  Status Write(const LogWriteBatch& batch, bool sync) override {
    if (batch.empty()) return Status::OK();
    for (const auto& var : batch.variables) {
      if (var.first.empty()) return Status::InvalidArgument("variable name is empty");
    }
    // Writers (and the deleter's chunks) are serialized so that the marker
    // and the bounds update see exactly the state this batch applies to.
    MutexLock wl(&write_mu_);
    if (!write_error_.ok()) return write_error_;
    uint64_t old_below = 0;
    {
      MutexLock l(&bounds_mu_);
      old_below = trimmed_below_;
    }
    const uint64_t trim = std::max(old_below, batch.delete_below);
    bool writes_below = false;
    for (const auto& rec : batch.records) writes_below = writes_below || rec.first < trim;
    leveldb::WriteBatch wb;
    uint64_t new_below = old_below;
    if (writes_below) {
      // A record under the (new) marker must stay visible, which a marker
      // cannot express: fall back to deleting every record below `trim`
      // here, synchronously, and drop the marker. The core never does this
      // (it trims only behind a checkpoint and records nothing below the
      // log's start), so the slow path costs nothing in practice. Deletes go
      // first: leveldb applies a batch in order, so the records put below
      // are kept.
      std::vector<std::string> keys;
      leveldb::Status ls = leveldb_log::CollectRecordKeys(db_.get(), RecordKey(0), trim, 0, &keys);
      if (!ls.ok()) return FromLevelDb("log in '" + dir_ + "': scanning records to trim", ls);
      for (const std::string& key : keys) wb.Delete(key);
      wb.Delete(leveldb_log::kTrimmedBelowKey);
      new_below = 0;
    } else if (batch.delete_below > old_below) {
      // O(1) on this thread: the marker hides the records at once; the
      // background deleter removes them.
      new_below = batch.delete_below;
      wb.Put(leveldb_log::kTrimmedBelowKey, leveldb_log::EncodeTrimmedBelow(new_below));
    }
    for (const auto& rec : batch.records) {
      const std::string key = RecordKey(rec.first);
      wb.Put(key, leveldb_log::EncodeChecksummed(key, rec.second));
    }
    for (const auto& var : batch.variables) {
      const std::string key = leveldb_log::VariableKey(var.first);
      wb.Put(key, leveldb_log::EncodeChecksummed(key, var.second));
    }
    leveldb::WriteOptions wo;
    wo.sync = sync;
    leveldb::Status s = db_->Write(wo, &wb);
    if (!s.ok()) return FailWrites(FromLevelDb("log in '" + dir_ + "': write failed", s));

    if (new_below > old_below || writes_below) ScheduleCompaction(trim);
    MutexLock l(&bounds_mu_);
    trimmed_below_ = new_below;
    // A new marker needs a seek for the new start (it skips no tombstone:
    // nothing at or above the marker was deleted).
    if (new_below != old_below || writes_below) return ScanBoundsLocked();
    for (const auto& rec : batch.records) {
      if (!has_records_) {
        has_records_ = true;
        min_ = max_ = rec.first;
      } else {
        min_ = std::min(min_, rec.first);
        max_ = std::max(max_, rec.first);
      }
    }
    return Status::OK();
  }

  Status Get(uint64_t instance, std::string* record) override {
    const std::string what = "instance " + std::to_string(instance);
    {
      // A trimmed record may still be stored, waiting for the deleter.
      MutexLock l(&bounds_mu_);
      if (instance < trimmed_below_) return Status::NotFound(what + " is not in the log");
    }
    return ReadValue(RecordKey(instance), what, record);
  }

  Status GetMaxInstanceId(uint64_t* instance) override {
    MutexLock l(&bounds_mu_);
    if (!has_records_) return Status::NotFound("log in '" + dir_ + "' holds no record");
    *instance = max_;
    return Status::OK();
  }

  Status GetMinInstanceId(uint64_t* instance) override {
    MutexLock l(&bounds_mu_);
    if (!has_records_) return Status::NotFound("log in '" + dir_ + "' holds no record");
    *instance = min_;
    return Status::OK();
  }

  Status GetVariable(const std::string& name, std::string* value) override {
    return ReadValue(leveldb_log::VariableKey(name), "variable '" + name + "'", value);
  }

 private:
  // A trim only raises the marker; a thread of this storage (started by the
  // first trim, or by an Open that finds hidden records) deletes the hidden
  // records, then compacts the range: the tombstones and the values they
  // hide go at once, which keeps the directory small and a scan from the
  // log's start (the deleter's next pass) fast. Never on the writer's thread.
  void ScheduleCompaction(uint64_t below) {
    MutexLock l(&compact_mu_);
    compact_below_ = std::max(compact_below_, below);
    if (!compactor_.joinable() && !compact_stopping_) {
      try {
        compactor_ = std::thread([this] { CompactLoop(); });
      } catch (const std::system_error&) {
        return;  // leveldb compacts on its own, later
      }
    }
    compact_cv_.Signal();
  }

  void CompactLoop() {
    SetThreadName("chorus-compact");
    uint64_t done = 0;
    MutexLock l(&compact_mu_);
    for (;;) {
      compact_cv_.Wait(&compact_mu_, [&]() REQUIRES(compact_mu_) {
        return compact_stopping_ || compact_below_ > done;
      });
      // A trim not compacted yet is, even when closing: the next Open then
      // finds no tombstones (closing takes that long, once).
      if (compact_below_ <= done) return;
      const uint64_t below = compact_below_;
      l.Unlock();
      // On an error the records stay hidden by the durable marker; the next
      // trim or Open tries again. Compacting first would be wasted.
      if (DeleteHidden(below).ok()) {
        const std::string end = RecordKey(below);
        const leveldb::Slice limit(end);
        CompactBelow(db_.get(), &limit);
      }
      l.Lock();
      done = below;
    }
  }

  // Deletes the stored records below `below` that are still hidden, in
  // chunks. Unsynced: the synced marker keeps them hidden across a crash,
  // and the next Open resumes. Each chunk is written under write_mu_ and
  // only below the marker of that moment: a Write that records below the
  // marker drops it (the slow path in Write), and its records must survive.
  leveldb::Status DeleteHidden(uint64_t below) {
    std::string from = RecordKey(0);
    for (;;) {
      std::vector<std::string> keys;
      leveldb::Status s = leveldb_log::CollectRecordKeys(db_.get(), from, below,
                                                         leveldb_log::kTrimChunkKeys, &keys);
      if (!s.ok() || keys.empty()) return s;
      from = keys.back() + '\0';  // the next key: this pass's tombstones stay behind
      MutexLock wl(&write_mu_);
      std::string hidden_end;
      {
        MutexLock l(&bounds_mu_);
        hidden_end = RecordKey(trimmed_below_);
      }
      if (!write_error_.ok()) return leveldb::Status::IOError(write_error_.ToString());
      leveldb::WriteBatch wb;
      for (const std::string& key : keys) {
        if (key < hidden_end) wb.Delete(key);
      }
      s = db_->Write(leveldb::WriteOptions(), &wb);
      if (!s.ok()) {
        FailWrites(FromLevelDb("log in '" + dir_ + "': deleting trimmed records failed", s));
        return s;
      }
    }
  }

  // After a failed write the write-ahead log may end in a part of it
  // (leveldb 1.23 keeps appending after a failed append, and its own reader
  // may then skip or refuse the writes behind the broken record): no write
  // is tried again until the log is reopened, where the part is a torn tail.
  // Returns `error`.
  Status FailWrites(const Status& error) REQUIRES(write_mu_) {
    if (write_error_.ok()) {
      write_error_ = Status::IOError(error.ToString() +
                                     " (the log takes no more writes until it is reopened)");
    }
    return error;
  }

  Status ReadValue(const std::string& key, const std::string& what, std::string* payload) {
    leveldb::ReadOptions ro;
    ro.verify_checksums = true;
    std::string raw;
    leveldb::Status s = db_->Get(ro, key, &raw);
    if (s.IsNotFound()) return Status::NotFound(what + " is not in the log");
    if (!s.ok()) return FromLevelDb("log in '" + dir_ + "': reading " + what, s);
    return leveldb_log::DecodeChecksummed(key, raw, "log in '" + dir_ + "': " + what, payload);
  }

  // Recomputes has_records_/min_/max_ from the database: the records at
  // or above trimmed_below_ (those below are trimmed, whether or not the
  // deleter got to them).
  Status ScanBoundsLocked() REQUIRES(bounds_mu_) {
    leveldb::ReadOptions ro;
    ro.fill_cache = false;
    std::unique_ptr<leveldb::Iterator> it(db_->NewIterator(ro));
    const std::string lo = RecordKey(trimmed_below_);
    const std::string hi(1, static_cast<char>(leveldb_log::kRecordPrefix + 1));
    has_records_ = false;
    it->Seek(lo);
    if (it->Valid() && it->key().compare(hi) < 0) {
      has_records_ = true;
      min_ = leveldb_log::InstanceOfRecordKey(it->key().ToString());
      it->Seek(hi);
      if (it->Valid()) {
        it->Prev();
      } else {
        it->SeekToLast();
      }
      max_ = leveldb_log::InstanceOfRecordKey(it->key().ToString());
    }
    if (!it->status().ok()) {
      return FromLevelDb("log in '" + dir_ + "': scanning instance ids", it->status());
    }
    return Status::OK();
  }

  const std::string dir_;
  std::unique_ptr<leveldb::Env> env_;      // the database's (a WalSyncEnv)
  std::unique_ptr<leveldb::Cache> cache_;  // may be null (leveldb's default cache)
  std::unique_ptr<leveldb::DB> db_;        // thread-safe by itself

  Mutex write_mu_;  // serializes Write() and the deleter's chunks
  Status write_error_ GUARDED_BY(write_mu_);  // the first failed write, sticky

  Mutex compact_mu_;
  CondVar compact_cv_;  // compact_below_ raised, or stopping
  uint64_t compact_below_ GUARDED_BY(compact_mu_) = 0;  // the highest trim point
  bool compact_stopping_ GUARDED_BY(compact_mu_) = false;
  std::thread compactor_;               // started under compact_mu_, joined by the destructor

  Mutex bounds_mu_;
  bool has_records_ GUARDED_BY(bounds_mu_) = false;
  uint64_t min_ GUARDED_BY(bounds_mu_) = 0;
  uint64_t max_ GUARDED_BY(bounds_mu_) = 0;
  // Records below it are trimmed (invisible); mirrors the stored marker.
  // Changed only with write_mu_ held too (or by LoadBounds, before the
  // storage is shared), so a holder of write_mu_ sees it stay put across its
  // own leveldb write.
  uint64_t trimmed_below_ GUARDED_BY(bounds_mu_) = 0;
};

}  // namespace

namespace {

// Opens the database; a torn tail of its write-ahead log is cut off first
// (see leveldb_wal_tail.h), any other damage is Corruption.
Status OpenDb(const std::string& dir, const leveldb::Options& lo, const std::string& group_text,
              const LevelDbLogOptions& options, std::unique_ptr<leveldb::DB>* db) {
  const std::string context = "cannot open the log of " + group_text + " in '" + dir + "'";
  leveldb::DB* raw_db = nullptr;
  leveldb::Status ls = leveldb::DB::Open(lo, dir, &raw_db);
  if (ls.IsCorruption()) {
    std::string note;
    Status s = leveldb_wal::CutTornWalTail(dir, &note);
    if (!s.ok()) return s.Annotate(context + " (" + ls.ToString() + "), nor cut its torn tail");
    if (!note.empty()) {
      if (options.warning_log) options.warning_log("log of " + group_text + ": " + note);
      ls = leveldb::DB::Open(lo, dir, &raw_db);
    }
    if (ls.IsCorruption()) {
      return Status::Corruption(
          context + ": " + ls.ToString() +
          ": the log is damaged (not a torn tail a crash leaves), and a node must not serve "
          "with a log that may have forgotten its promises; restore this data dir or repair "
          "it by hand");
    }
  }
  if (!ls.ok()) return FromLevelDb(context, ls);
  db->reset(raw_db);
  return Status::OK();
}

}  // namespace

Status OpenLevelDbLogStorage(const std::string& dir, const LevelDbLogOptions& options,
                             std::unique_ptr<LogStorage>* storage) {
  if (dir.empty()) return Status::InvalidArgument("log directory is empty");
  const std::string group_text = "cluster " + std::to_string(options.cluster_id) + " group " +
                                 std::to_string(options.group);
  leveldb_log::LogIdentity identity;
  identity.cluster_id = options.cluster_id;
  identity.group = options.group;
  identity.node_id = options.node_id;

  const bool has_db = FileExists(dir + "/CURRENT");
  if (!has_db) {
    bool empty = true;
    if (FileExists(dir)) {
      Status s = DirIsEmpty(dir, &empty);
      if (!s.ok()) return s;
    }
    if (!empty) {
      return Status::InvalidArgument("'" + dir +
                                     "' is not a chorus log: it holds files but no database");
    }
    if (!options.create_if_missing) {
      return Status::InvalidArgument(
          "no chorus log in '" + dir + "': the directory is missing or empty, and "
          "create_if_missing is false. On this node's first start set create_if_missing; "
          "otherwise mount or restore its data dir (a node that starts with a fresh log has "
          "forgotten its promises, which breaks Paxos safety)");
    }
    Status s = CreateDirs(dir);
    if (!s.ok()) return s.Annotate("the log of " + group_text);
  }

  leveldb::Options lo;
  lo.create_if_missing = !has_db;
  lo.paranoid_checks = true;
  std::function<leveldb::Status(const std::string&)> sync_dir;
  if (options.sync_dir) {
    sync_dir = [fn = options.sync_dir](const std::string& d) {
      const Status st = fn(d);
      return st.ok() ? leveldb::Status::OK() : leveldb::Status::IOError(st.ToString());
    };
  }
  // Declared before the database: destroyed after it on every path.
  auto env = std::make_unique<WalSyncEnv>(
      options.env != nullptr ? options.env : leveldb::Env::Default(), std::move(sync_dir));
  lo.env = env.get();
  if (options.write_buffer_bytes > 0) lo.write_buffer_size = options.write_buffer_bytes;
  std::unique_ptr<leveldb::Cache> cache;
  if (options.block_cache_bytes > 0) {
    cache.reset(leveldb::NewLRUCache(options.block_cache_bytes));
    lo.block_cache = cache.get();
  }
  std::unique_ptr<leveldb::DB> db;
  Status s = OpenDb(dir, lo, group_text, options, &db);
  if (!s.ok()) return s;

  // The meta key says whose log this is.
  std::string meta;
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  leveldb::WriteOptions wo;
  wo.sync = true;
  leveldb::Status ls = db->Get(ro, leveldb_log::kMetaKey, &meta);
  if (ls.ok()) {
    bool upgrade = false;
    s = leveldb_log::CheckMeta(meta, identity, dir, &upgrade);
    if (!s.ok()) return s;
    if (upgrade) {
      // A version 1 log records no node: from now on it belongs to this one.
      ls = db->Put(wo, leveldb_log::kMetaKey, leveldb_log::EncodeMeta(identity));
      if (!ls.ok()) return FromLevelDb("cannot upgrade the meta of the log in '" + dir + "'", ls);
    }
  } else if (ls.IsNotFound()) {
    // A database without meta is ours only when it is empty: we created it
    // just now, or a crash hit between creating it and writing the meta.
    std::unique_ptr<leveldb::Iterator> it(db->NewIterator(ro));
    it->SeekToFirst();
    if (it->Valid()) {
      return Status::InvalidArgument("'" + dir +
                                     "' is a leveldb database but not a chorus log (no meta key)");
    }
    if (!options.create_if_missing) {
      return Status::InvalidArgument(
          "'" + dir + "' holds an empty database that was never made a chorus log (a first "
          "start that crashed?): start it again with create_if_missing");
    }
    ls = db->Put(wo, leveldb_log::kMetaKey, leveldb_log::EncodeMeta(identity));
    if (!ls.ok()) return FromLevelDb("cannot write the meta of the log in '" + dir + "'", ls);
  } else {
    return FromLevelDb("cannot read the meta of the log in '" + dir + "'", ls);
  }

  auto result = std::make_unique<LevelDbLogStorage>(dir, std::move(env), std::move(cache),
                                                    std::move(db));
  s = result->LoadBounds();
  if (!s.ok()) return s;
  *storage = std::move(result);
  return Status::OK();
}

}  // namespace chorus
