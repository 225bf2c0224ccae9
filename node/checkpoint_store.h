// CheckpointStore: the stored checkpoints of ONE group on this node.
//
// Layout (dir = Options::checkpoint_dir/g<group>):
//   dir/<instance>/MANIFEST        what the checkpoint holds (CheckpointManifest)
//   dir/<instance>/sm<id>/...      the files state machine <id>'s writer wrote
//   dir/staging-<tag>/             a checkpoint being written or received
//   dir/scratch-<tag>/             links of one state machine's files for its
//                                  LoadCheckpoint (the caller removes it)
// A checkpoint directory exists under its final name only once complete:
// every file and the MANIFEST are fsynced in the staging dir, which is then
// renamed and its parent fsynced (Commit). So after a crash the store holds
// complete checkpoints and leftover staging dirs, which Open deletes.
//
// What is kept: the newest checkpoint, and any older one that is pinned
// (being sent to a peer) until it is unpinned. An older one is deleted only
// after a newer one is complete, so there is always one to load.
//
// Thread safety: every method may be called from any thread; mu_ guards
// the index. File I/O runs outside the lock, except the rename and index
// update of Commit, so a checkpoint being written never blocks Newest().
#ifndef CHORUS_NODE_CHECKPOINT_STORE_H_
#define CHORUS_NODE_CHECKPOINT_STORE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "node/fs_util.h"
#include "utils/logging.h"
#include "utils/mutex.h"

namespace chorus {

// One file of a checkpoint. `path` is relative to the checkpoint's dir,
// "sm<id>/..." (no "..", no empty or "." component, no leading '/').
struct CheckpointFile {
  std::string path;
  uint64_t size = 0;
  uint32_t crc = 0;  // crc32c of the file's bytes
  bool operator==(const CheckpointFile& o) const {
    return path == o.path && size == o.size && crc == o.crc;
  }
};

// Bound on the files one manifest lists. A manifest comes from disk or from a
// peer (untrusted) and is held in memory whole.
constexpr uint32_t kMaxCheckpointFiles = 1u << 20;

struct CheckpointManifest {
  uint64_t cluster_id = 0;
  uint32_t group = 0;
  // The checkpoint reflects every instance below `instance`.
  uint64_t instance = 0;
  // The learner's chained checksum of instance `instance` - 1 (0 when
  // instance == 0): Core::chain_checksum() when it was made.
  uint32_t chain_checksum = 0;
  // Sorted by path, paths unique.
  std::vector<CheckpointFile> files;
  // The group's membership history as of `instance` (Core::MembershipAt,
  // paxos::Membership::Encode), which the install hands to the core (M6).
  // Empty: a checkpoint that carries none (made by an older chorus); its
  // install keeps the node's own membership.
  std::string membership;

  // Sum of the files' sizes: the bytes ReadChunk serves.
  uint64_t total_bytes() const;
  // The wire and disk form, ending with its own crc32c.
  std::string Encode() const;
  // Parses `bytes` (untrusted: it may come from a peer). Corruption naming
  // the problem for a bad crc, a truncated or oversized field, a path that
  // is not relative and clean, or files not sorted by unique paths.
  static Status Decode(const std::string& bytes, CheckpointManifest* m);
};

class CheckpointStore {
 public:
  // Opens (creating it and its parents) the store in `dir`: deletes leftover
  // staging and scratch dirs and indexes the checkpoints it finds. Each
  // one's MANIFEST must decode, name this cluster, group and its dir's
  // instance, and every file must exist with its size (crcs are checked when
  // a checkpoint is loaded: MakeScratch). A damaged one is skipped with a
  // warning (an older one is used) and deleted once a newer one is
  // committed. IOError when `dir` cannot be created or listed.
  static Status Open(const std::string& dir, uint64_t cluster_id, uint32_t group,
                     Logger* logger, std::unique_ptr<CheckpointStore>* store);

  CheckpointStore(const CheckpointStore&) = delete;
  CheckpointStore& operator=(const CheckpointStore&) = delete;

  const std::string& dir() const { return dir_; }

  // The newest complete checkpoint; NotFound when there is none.
  Status Newest(CheckpointManifest* m) const;
  // The instance of the newest checkpoint, 0 when none.
  uint64_t newest_instance() const;
  // The committed checkpoint `instance`; NotFound when it is not stored.
  Status Get(uint64_t instance, CheckpointManifest* m) const;
  // The directory of checkpoint `instance` (whether or not it exists).
  std::string DirOf(uint64_t instance) const;

  // Creates a fresh empty staging dir (dir/staging-<n>-<random>/).
  Status BeginStaging(std::string* staging_dir);

  // Makes the checkpoint in `staging_dir` durable as checkpoint
  // m->instance. With m->files empty, every regular file under staging_dir
  // is listed, checksummed and fsynced into m->files (a staging dir with a
  // top-level MANIFEST, a symlink or another special file: InvalidArgument).
  // With m->files set (a received checkpoint), the files found must be
  // exactly those, with those sizes and crcs: Corruption naming the first
  // that is not. m->cluster_id and m->group, when 0, are set to the store's;
  // others: InvalidArgument. Then writes and fsyncs MANIFEST, fsyncs every
  // directory of the staging tree, renames it to DirOf(m->instance) and
  // fsyncs dir. Then deletes the older checkpoints that are not pinned.
  // If checkpoint m->instance (or a newer one) is already stored, nothing is
  // committed: the staging dir is removed and OK returned.
  // On every error the staging dir is removed; the store is unchanged.
  Status Commit(const std::string& staging_dir, CheckpointManifest* m);
  // Removes a staging dir that will not be committed.
  void Abort(const std::string& staging_dir);

  // Keeps checkpoint `instance` from being deleted while it is being sent
  // or loaded (a refcount). NotFound when it is not stored.
  Status Pin(uint64_t instance);
  // Undoes one Pin. A checkpoint that is neither the newest nor pinned any
  // more is deleted.
  void Unpin(uint64_t instance);

  // Reads up to max_bytes at `offset` of the concatenation of m.files (in
  // manifest order) of the stored checkpoint m.instance: what a transfer
  // sends. An offset at total_bytes() gives no data; beyond it:
  // InvalidArgument. REQUIRES: the checkpoint is pinned (else it may be
  // deleted under the read: NotFound or IOError).
  Status ReadChunk(const CheckpointManifest& m, uint64_t offset, size_t max_bytes,
                   std::string* data) const;

  // Builds a scratch dir (dir/scratch-<n>-<random>/) holding the files of
  // sm<state_machine_id>/ of checkpoint m.instance, hard links where the
  // file system allows (copies elsewhere), each file checked against its
  // size and crc (Corruption otherwise), for LoadCheckpoint: the state
  // machine may move the files away without touching the stored ones. The
  // caller removes it with RemoveTree. A state machine with no files gets
  // an empty dir. Pins the checkpoint while it works.
  Status MakeScratch(const CheckpointManifest& m, int state_machine_id, std::string* scratch);

  // Checkpoints committed through this store since Open (own and received).
  uint64_t commits() const { return commits_.load(std::memory_order_relaxed); }

 private:
  CheckpointStore(const std::string& dir, uint64_t cluster_id, uint32_t group, Logger* logger);
  Status Load();
  // Checks the stored checkpoint in `name`; OK with *m filled, or why not.
  Status Inspect(const std::string& name, uint64_t instance, CheckpointManifest* m) const;
  // A fresh "<prefix>-<n>-<random>" dir under dir_.
  Status MakeTempDir(const char* prefix, std::string* path);
  // Under mu_: moves the checkpoints that may go (older than the newest and
  // unpinned; damaged ones once a good one exists) from the index to *doomed.
  void CollectLocked(std::vector<std::string>* doomed) REQUIRES(mu_);
  void RemoveAll(const std::vector<std::string>& doomed);

  struct Entry {
    CheckpointManifest manifest;
    int pins = 0;
  };

  const std::string dir_;
  const uint64_t cluster_id_;
  const uint32_t group_;
  Logger* const logger_;
  std::atomic<uint64_t> temp_seq_{0};
  std::atomic<uint64_t> commits_{0};

  mutable Mutex mu_;
  std::map<uint64_t, Entry> index_ GUARDED_BY(mu_);  // the complete checkpoints
  std::set<std::string> damaged_ GUARDED_BY(mu_);  // dir names Open skipped
};

// "sm<id>", the directory of state machine `id` inside a checkpoint.
std::string StateMachineDirName(int id);
// Whether `path` names a file inside some sm<id>/ with no empty, "." or ".."
// component and no leading '/': safe to join to a directory, whoever sent
// it (a received manifest's paths are checked with it).
bool IsCleanCheckpointPath(const std::string& path);

}  // namespace chorus

#endif  // CHORUS_NODE_CHECKPOINT_STORE_H_
