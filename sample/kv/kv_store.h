// KvStore: the kv sample's state machine, a key-value map in its own
// leveldb, replicated by chorus.
//
// Every Execute writes its changes and the position it reached (the next
// (instance, batch index) to apply) in ONE leveldb batch, so the state and
// the position never disagree, whatever kills the process. The batch is not
// synced: chorus's log has the votes synced and replays from
// GetCheckpointInstanceId() after a restart, and a value already applied
// (a replayed batch that was half applied) is recognised by its position
// and skipped.
//
// Checkpoints (StateMachine's API): PrepareCheckpoint takes a leveldb
// snapshot on the loop thread; the writer dumps it into one checksummed file
// (kv_dump.h) on chorus's checkpoint thread while Execute goes on.
// LoadCheckpoint builds a new leveldb from such a file BESIDE the live one,
// verifies it, and only then switches to it: the file ACTIVE names the live
// database directory and is replaced by an atomic rename (the commit point),
// so a crash or an error at any step leaves the old state intact and in use.
//
//   dir/ACTIVE        "db-<n>": the live database
//   dir/db-<n>/       leveldb; keys "d<key>" (the data) and "m" (the position)
//
// Threads: Execute, ExecuteNoop, PrepareCheckpoint and LoadCheckpoint are
// called by chorus one at a time (the group's loop); the reads (Get, Count,
// position accessors) may run on any thread at the same time.
#ifndef CHORUS_SAMPLE_KV_KV_STORE_H_
#define CHORUS_SAMPLE_KV_KV_STORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chorus/state_machine.h"
#include "chorus/status.h"
#include "sample/kv/kv_ops.h"

namespace leveldb {
class WriteBatch;
}

namespace chorus {
namespace kv {

struct KvStoreOptions {
  // Create the store when `dir` is missing or holds none. Default false: a
  // missing store is an error (a replica must not come back empty by
  // accident and then replay only the log after its checkpoint id).
  bool create_if_missing = false;
  // Test seam: called by LoadCheckpoint at its steps ("built": the new
  // database is complete and verified; "switch": just before ACTIVE is
  // replaced). A non-ok Status makes LoadCheckpoint fail right there, as an
  // I/O error at that step would. Default: none.
  std::function<Status(const std::string& step)> load_fault;
};

// Where the store is in the group's log: the next value to apply.
struct KvPosition {
  uint64_t instance = 0;
  uint32_t batch_index = 0;
};

class KvStore : public StateMachine {
 public:
  // Opens (or, with create_if_missing, creates) the store in `dir`.
  // Deletes database directories left by an interrupted LoadCheckpoint.
  // InvalidArgument for a missing store without create_if_missing; IOError,
  // Corruption from leveldb or a damaged ACTIVE / position record.
  static Status Open(const std::string& dir, const KvStoreOptions& options,
                     std::unique_ptr<KvStore>* store);
  ~KvStore() override;

  // ---- StateMachine ----
  int id() const override { return 1; }
  // Applies the ops of `value` (kv_ops.h) in order; ctx->output gets one
  // RESP reply per op, concatenated. Returns OK, or Corruption for a value
  // that does not decode (every replica rejects it alike; each op gets an
  // error reply). A failed leveldb write ends the process (the replica's
  // state would silently diverge from the others'); a restart replays.
  Status Execute(const ExecuteInfo& info, const std::string& value, ExecuteContext* ctx) override;
  void ExecuteNoop(uint32_t group, uint64_t instance) override;
  uint64_t GetCheckpointInstanceId(uint32_t group) const override;
  Status PrepareCheckpoint(const CheckpointInfo& info,
                           std::unique_ptr<CheckpointWriter>* writer) override;
  Status LoadCheckpoint(const CheckpointInfo& info, const std::string& dir) override;

  // ---- Reads (any thread) ----
  // OK with *value, or NotFound; IOError / Corruption from leveldb.
  Status Get(const std::string& key, std::string* value) const;
  // Keys and a digest of every key and value (equal digests: equal data).
  Status Count(uint64_t* keys, uint32_t* digest) const;
  KvPosition position() const;
  // Write ops applied since the store was created (every replica agrees at
  // one position).
  uint64_t writes_applied() const { return writes_.load(std::memory_order_acquire); }
  // Checkpoints loaded into this store since Open.
  uint64_t checkpoints_loaded() const { return loads_.load(std::memory_order_relaxed); }

  // Applies `ops` as one value and moves the position to `next` (what
  // Execute does after decoding; tests call it directly). *replies gets one
  // RESP reply per op. A failed leveldb read or write ends the process.
  void Apply(const std::vector<WriteOp>& ops, const KvPosition& next, std::string* replies);

 private:
  struct Db;  // one open leveldb and its directory (kv_store.cc)

  KvStore(std::string dir, KvStoreOptions options);
  std::shared_ptr<Db> db() const;
  // Writes `batch` and the position record (next, writes) at once, then
  // advances the in-memory position. Ends the process if leveldb fails.
  void Commit(leveldb::WriteBatch* batch, const KvPosition& next, uint64_t writes);

  const std::string dir_;
  const KvStoreOptions options_;
  uint64_t generation_ = 0;  // n of the live db-<n>; loop thread only

  mutable std::mutex mu_;
  std::shared_ptr<Db> db_;  // GUARDED_BY(mu_); replaced by LoadCheckpoint only

  // The position and write count of the live database: written by the loop
  // thread (Execute, LoadCheckpoint), read by any.
  std::atomic<uint64_t> next_instance_{0};
  std::atomic<uint32_t> next_batch_{0};
  std::atomic<uint64_t> writes_{0};
  std::atomic<uint64_t> loads_{0};
};

}  // namespace kv
}  // namespace chorus

#endif  // CHORUS_SAMPLE_KV_KV_STORE_H_
