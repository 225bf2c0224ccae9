// Copyright (c) chorus authors.
//
// The leveldb LogStorage that chorus uses by default (Options::data_dir): one
// leveldb database per group, synced writes, a checksum on every record. Open
// it yourself to wrap it (Options::log_storage_factory) or to inspect a log.
// Part of the runtime API: it may include the vocabulary headers, never the
// reverse.

#ifndef CHORUS_LEVELDB_LOG_STORAGE_H_
#define CHORUS_LEVELDB_LOG_STORAGE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "chorus/log_storage.h"
#include "chorus/status.h"

namespace leveldb {
class Env;
}  // namespace leveldb

namespace chorus {

// Options of the leveldb log storage.
struct LevelDbLogOptions {
  // Identity recorded in the log when it is created and checked on every
  // open: a log made for another cluster, group or node fails with
  // InvalidArgument naming both. node_id is NodeInfo::id() of the node that
  // owns the log (a data dir copied or swapped between two nodes would make
  // two acceptors share one history, which breaks Paxos safety).
  uint64_t cluster_id = 0;
  uint32_t group = 0;
  uint64_t node_id = 0;
  // Create a new, empty log when `dir` is missing or empty. Default false
  // (leveldb's convention): then a missing or empty `dir` is InvalidArgument
  // naming it. An existing log is opened whatever this says.
  bool create_if_missing = false;
  // leveldb block cache size in bytes (0: leveldb's default of 8 MiB).
  size_t block_cache_bytes = 0;
  // leveldb write buffer (memtable) size in bytes (0: leveldb's default of
  // 4 MiB). The log's size on disk, once trimmed, is about this plus the
  // live records (a test that watches the size under trimming lowers it).
  size_t write_buffer_bytes = 0;
  // Receives a line when opening repaired something (a torn tail cut off
  // leveldb's write-ahead log). Default (empty): the line is dropped.
  std::function<void(const std::string& line)> warning_log;
  // The leveldb Env the database does its file I/O through (borrowed: it
  // must outlive the storage). Default nullptr: leveldb's default Env, the
  // real file system. Tests plug in one that injects faults or simulates a
  // crash; it must keep the files as real files under `dir` (chorus reads
  // and repairs a torn write-ahead log tail directly, outside the Env).
  leveldb::Env* env = nullptr;
  // Syncs a directory of the log. chorus syncs the log's directory once
  // per new write-ahead log file, before the first synced write to it
  // returns (leveldb does not: a crash could lose the new file's name and the
  // acknowledged writes in it). Default (empty): fsync(2) of the directory.
  // A test Env that models a crash sets it to record the sync.
  std::function<Status(const std::string& dir)> sync_dir;
};

// Opens (or, with create_if_missing, creates) the leveldb paxos log of one
// group in directory `dir`. On success *storage owns the database.
// Returns:
//   InvalidArgument  `dir` is missing or empty and create_if_missing is
//                    false; it holds something that is not a chorus log; the
//                    log belongs to another cluster, group or node;
//   IOError          the directory cannot be created, read or written;
//   Corruption       the log is damaged. A torn tail of leveldb's
//                    write-ahead log, as a crash or power loss in the middle
//                    of a write leaves it, is not damage: that write never
//                    returned, so it is cut off (its bytes kept under
//                    dir/lost/) and the open succeeds. Damage anywhere else
//                    (in the middle of the write-ahead log, in a table, in
//                    the meta record) refuses to open.
// A write that fails (IOError from the disk) leaves the log in a state only
// a reopen sorts out: every later Write returns an IOError until the storage
// is destroyed and opened again. Reads keep working.
Status OpenLevelDbLogStorage(const std::string& dir, const LevelDbLogOptions& options,
                             std::unique_ptr<LogStorage>* storage);


}  // namespace chorus

#endif  // CHORUS_LEVELDB_LOG_STORAGE_H_
