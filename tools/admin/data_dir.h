// chorus_admin's offline access to a node's data dir, read-only.
//
// A group's log is a leveldb database (data_dir/g<group>/, format in
// node/leveldb_log_format.h). leveldb's Open may write to its directory
// (log recovery, compaction, a new MANIFEST), so the tool never opens the
// node's own database: GroupCopy takes the database's LOCK (the same fcntl
// lock leveldb takes, so a live node holding it is detected and refused, and
// no node can open the database while the copy is made), copies it into a
// private temp dir (hard links for the immutable table files, copies of the
// rest), releases the lock and opens the copy. The node's files are only
// ever opened for reading (the LOCK file for writing, as fcntl requires to
// take a write lock; its bytes are never written).
#ifndef CHORUS_TOOLS_ADMIN_DATA_DIR_H_
#define CHORUS_TOOLS_ADMIN_DATA_DIR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace leveldb {
class DB;
}

namespace chorus {
namespace admin {

// The groups of a data dir: the numbers of its g<N> subdirectories, sorted.
Status ListGroups(const std::string& data_dir, std::vector<uint32_t>* groups);

// A private, openable copy of one group's log. Removes its temp dir when
// destroyed.
class GroupCopy {
 public:
  // Busy (naming the pid) when a live process holds `db_dir`'s LOCK;
  // NotFound when `db_dir` is no leveldb database; IOError otherwise.
  static Status Open(const std::string& db_dir, std::unique_ptr<GroupCopy>* out);
  ~GroupCopy();
  leveldb::DB* db() const { return db_; }

 private:
  GroupCopy() = default;
  std::string tmp_;
  leveldb::DB* db_ = nullptr;
};

// Checks whether a process holds the leveldb LOCK of `db_dir` (fcntl F_GETLK:
// takes nothing). Returns OK (free), Busy naming the pid, NotFound (no LOCK).
Status CheckLock(const std::string& db_dir);

}  // namespace admin
}  // namespace chorus

#endif  // CHORUS_TOOLS_ADMIN_DATA_DIR_H_
