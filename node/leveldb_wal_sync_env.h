// The leveldb Env under every chorus log: it makes the name of a new
// write-ahead log file durable before a synced write to it returns, and
// syncs a log file when leveldb closes it.
//
// leveldb 1.23 starts a new "<number>.log" whenever its memtable fills and
// syncs the file on every synced write, but syncs the directory only when it
// syncs a MANIFEST, which happens after the old memtable reaches a table, a
// moment later. POSIX keeps a file's name only once its directory is
// synced, so a power loss in between may lose the new log's name, and with
// it every synced write in it: writes that were acknowledged, promises that
// were answered. (ext4 and xfs happen to commit the name with the file's
// fsync; the contract does not say so.) This Env syncs the directory on the
// first Sync of each log file it created, before the file itself: one more
// fsync per log switch (every write_buffer_bytes of writes).
//
// And at a switch leveldb 1.23 neither syncs nor even Close()s the old log
// (MakeRoomForWrite creates the new file, then deletes the old one's
// object, which closes it unsynced), while the next synced write goes to
// the new log: a crash could then keep a later write and lose an earlier
// (unsynced) one, a gap no prefix of the writes explains (the core refuses
// to open a log with a chosen instance after a missing one). So when this
// Env creates a log file while another log file it created is still open
// (a switch: at DB::Open no log is open yet), it syncs the old one first,
// before anything can reach the new one: one more fsync per log switch,
// which keeps the logs together a prefix of the writes. A log that leveldb
// closes when the database goes away stays unsynced, as it would be at a
// crash: nothing follows it.
#ifndef CHORUS_NODE_LEVELDB_WAL_SYNC_ENV_H_
#define CHORUS_NODE_LEVELDB_WAL_SYNC_ENV_H_

#include <leveldb/env.h>

#include <functional>
#include <string>

#include "utils/mutex.h"

namespace chorus {

class WalSyncEnv : public leveldb::EnvWrapper {
 public:
  // `base` is borrowed and must outlive this Env. `sync_dir` syncs a
  // directory (LevelDbLogOptions::sync_dir); empty: fsync(2) of it.
  WalSyncEnv(leveldb::Env* base, std::function<leveldb::Status(const std::string& dir)> sync_dir);

  leveldb::Status NewWritableFile(const std::string& fname, leveldb::WritableFile** result) override;
  leveldb::Status NewAppendableFile(const std::string& fname,
                                    leveldb::WritableFile** result) override;

  // Syncs directory `dir`.
  leveldb::Status SyncDirectory(const std::string& dir);

  // The log file that leveldb writes now: the newest one this Env created,
  // while it is open (its file object registers and unregisters itself).
  void SetLiveLog(leveldb::WritableFile* log);
  void ClearLiveLog(leveldb::WritableFile* log);

 private:
  // Opens through the base Env; a log file it creates comes back wrapped.
  leveldb::Status Open(const std::string& fname, bool append, leveldb::WritableFile** result);

  const std::function<leveldb::Status(const std::string& dir)> sync_dir_;
  Mutex live_mu_;
  leveldb::WritableFile* live_log_ GUARDED_BY(live_mu_) = nullptr;  // borrowed
};

}  // namespace chorus

#endif  // CHORUS_NODE_LEVELDB_WAL_SYNC_ENV_H_
