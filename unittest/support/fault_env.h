// FaultEnv: a leveldb Env for crash and I/O-error tests. It wraps another
// Env (normally leveldb::Env::Default()) and writes through to it, so the
// files on disk are real files that other code (chorus's torn-tail cutter,
// a plain leveldb::DB::Open) can read. Alongside it records what a power loss
// would keep:
//
//  - file data: per file, the bytes covered by a completed Sync(). Bytes
//    appended after the last completed Sync are "unsynced".
//  - names: every create, rename and remove since the last sync of its
//    directory. Only leveldb's posix Env syncs directories, and only inside
//    WritableFile::Sync of a MANIFEST-* file (its SyncDirIfManifest), so a
//    completed Sync of a MANIFEST-* file counts as a sync of its directory.
//    Nothing else does (leveldb renames CURRENT without syncing its dir),
//    except SyncDir(), which code above the env calls (chorus's log
//    storage syncs its directory through LevelDbLogOptions::sync_dir).
//
// SimulateCrash() then puts the disk into the state a crash leaves, in
// place:
//  1. every tracked file is cut back to its synced size; with kPrefix, a
//     seeded random prefix of its unsynced bytes is kept instead (the page
//     cache wrote some of them back in order); with kZeroTail the file keeps
//     its full size but only a random prefix of the unsynced bytes, zeros
//     after it (the file system extended the size before the data landed);
//  2. the names: every create, rename and remove not covered by a
//     directory sync is undone, newest first (the directory reverts to its
//     state at its last sync, which is the conservative POSIX reading: a
//     journaling file system may keep more, never less). A removed file is
//     kept under the trash directory until then, and so is a file a rename
//     replaced; a file re-created over an existing name (NewWritableFile
//     truncates it) counts as empty until it is synced.
// After SimulateCrash the env forgets everything: what is on disk is the
// durable baseline of the next life.
//
// Not modelled: directory creation (CreateDir and chorus's own mkdir are
// taken as durable), the LOCK file and the info LOG (leveldb opens them
// through other calls), reordering of writes inside the unsynced bytes
// (only prefixes are kept).
//
// Failures: FailAfter() makes the n+1-th later operation of the chosen kinds
// fail with an IOError that writes nothing; with sticky, every later one
// fails too (a process that died there: nothing after the crash point
// reaches the disk). Counting is across all files.
//
// Thread safety: every method may be called from any thread; one mutex
// serializes the file operations of all files (leveldb's writer and its
// background compaction).
#ifndef CHORUS_UNITTEST_SUPPORT_FAULT_ENV_H_
#define CHORUS_UNITTEST_SUPPORT_FAULT_ENV_H_

#include <leveldb/env.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace testing {

class FaultEnv : public leveldb::EnvWrapper {
 public:
  // What happens to a file's unsynced bytes at a crash.
  enum class Tear {
    kNone,      // all dropped: the file ends at its synced size
    kPrefix,    // a random prefix of them is kept (possibly none, possibly all)
    kZeroTail,  // the size is kept, the bytes after a random prefix are zeros
  };

  // Operation kinds for FailAfter (a bit mask).
  enum OpKind : unsigned {
    kAppend = 1,  // WritableFile::Append
    kSync = 2,    // WritableFile::Sync
    kNames = 4,   // NewWritableFile, NewAppendableFile, RenameFile, RemoveFile
    kAllOps = kAppend | kSync | kNames,
  };

  // What the last SimulateCrash did (figures for a test's report).
  struct CrashReport {
    uint64_t files_cut = 0;        // files that lost unsynced bytes
    uint64_t bytes_dropped = 0;    // unsynced bytes dropped
    uint64_t bytes_torn_kept = 0;  // unsynced bytes kept by a tear
    uint64_t names_undone = 0;     // creates, renames, removes undone
  };

  // `base` is borrowed and must outlive this env. `trash_dir` is a
  // directory on the same file system as the databases (removed files wait
  // there until their removal is durable); it is created if missing.
  // `seed` drives the tear choices.
  FaultEnv(leveldb::Env* base, std::string trash_dir, uint64_t seed);
  ~FaultEnv() override;

  FaultEnv(const FaultEnv&) = delete;
  FaultEnv& operator=(const FaultEnv&) = delete;

  // After `ops` more successful operations whose kind is in `kinds` (on
  // files whose name ends with `suffix`, e.g. ".log"; "" for every file), the
  // next one fails with an IOError and writes nothing; with `sticky` every
  // later such one fails too. Replaces an earlier plan.
  void FailAfter(uint64_t ops, unsigned kinds, bool sticky, const std::string& suffix = "");
  // No more failures (the counters stay).
  void ClearFailure();

  // Operations of any kind performed or attempted so far (to pick a crash
  // point inside a workload), and the number that failed by plan.
  uint64_t operations() const;
  uint64_t injected_failures() const;

  // fsync(2) of directory `dir`, recorded: its name changes become durable.
  // Counts as a kSync operation (and fails like one, by plan).
  Status SyncDir(const std::string& dir);

  // Puts the disk into its crashed state (see the top of this file) and
  // forgets all tracking and any failure plan. REQUIRES: every file this env
  // opened for writing is closed (the databases that use it are destroyed);
  // otherwise InvalidArgument and nothing changes. IOError when a file
  // cannot be cut or a name cannot be restored. *report may be null.
  Status SimulateCrash(Tear tear, CrashReport* report);

  // leveldb::Env
  leveldb::Status NewWritableFile(const std::string& fname, leveldb::WritableFile** result) override;
  leveldb::Status NewAppendableFile(const std::string& fname,
                                    leveldb::WritableFile** result) override;
  leveldb::Status RemoveFile(const std::string& fname) override;
  leveldb::Status RenameFile(const std::string& src, const std::string& target) override;

 private:
  class File;
  friend class File;

  // Per file (by its current name): bytes covered by a completed Sync.
  struct FileState {
    uint64_t synced = 0;
    int open_writers = 0;
  };
  // One name change not yet covered by a sync of its directory.
  struct NameChange {
    enum class Kind { kCreate, kRename, kRemove } kind;
    std::string dir;
    std::string path;       // kCreate, kRemove: the file; kRename: the new name
    std::string from;       // kRename: the old name
    std::string kept_copy;  // kRemove: the file under trash; kRename: the replaced file, or ""
  };

  leveldb::Status OpenFile(const std::string& fname, bool append, leveldb::WritableFile** result);
  // Counts one operation of `kind`; false when the plan says it fails.
  // REQUIRES: mu_ held.
  bool ShouldFailLocked(OpKind kind, const std::string& path);
  leveldb::Status InjectedError(const std::string& what) const;
  std::string NewTrashPathLocked();
  // A directory sync of `dir`: its pending name changes become durable.
  void DirSyncedLocked(const std::string& dir);
  // Moves the tracking of `from` to `to`.
  void MoveStateLocked(const std::string& from, const std::string& to);
  Status CutFileLocked(const std::string& path, uint64_t synced, Tear tear, CrashReport* report);
  Status UndoLocked(const NameChange& change);

  const std::string trash_dir_;
  mutable std::mutex mu_;
  std::mt19937_64 rng_;                      // GUARDED_BY(mu_)
  std::map<std::string, FileState> files_;   // GUARDED_BY(mu_)
  std::vector<NameChange> pending_names_;    // GUARDED_BY(mu_), oldest first
  uint64_t trash_seq_ = 0;                   // GUARDED_BY(mu_)
  uint64_t operations_ = 0;                  // GUARDED_BY(mu_)
  uint64_t injected_failures_ = 0;           // GUARDED_BY(mu_)
  bool failure_planned_ = false;             // GUARDED_BY(mu_)
  uint64_t ops_before_failure_ = 0;          // GUARDED_BY(mu_)
  unsigned failing_kinds_ = 0;               // GUARDED_BY(mu_)
  bool failure_sticky_ = false;              // GUARDED_BY(mu_)
  std::string failing_suffix_;               // GUARDED_BY(mu_)
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SUPPORT_FAULT_ENV_H_
