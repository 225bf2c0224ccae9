// Copyright (c) chorus authors.
//
// LogStorage: the durable paxos log of ONE group. chorus ships a leveldb
// implementation (one database per group, see OpenLevelDbLogStorage); an
// application may plug in its own.
//
// The log maps an instance id to an opaque record (the protocol core's
// serialized acceptor state for that instance) and holds a few named
// variables (the group-wide promise, membership and master state, ...).
// Records are bytes to the storage: it adds its own checksum when writing and
// verifies it when reading, so a corrupted or truncated record comes back as
// Status::Corruption, never as data.
//
// Thread safety: implementations must allow concurrent calls from several
// threads (the group loop writes while a catch-up reader reads).

#ifndef CHORUS_LOG_STORAGE_H_
#define CHORUS_LOG_STORAGE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chorus/status.h"

namespace chorus {

// One atomic change to the log: all of it is applied, or none of it.
struct LogWriteBatch {
  // Instance records to store (instance id -> record bytes), replacing any
  // record already stored under that id.
  std::vector<std::pair<uint64_t, std::string>> records;
  // Named variables to set.
  std::vector<std::pair<std::string, std::string>> variables;
  // Remove every record with instance id < delete_below (0: remove nothing).
  // Used by log trimming after a checkpoint. Applied before `records`, so a
  // record written by the same batch is kept whatever its id.
  uint64_t delete_below = 0;

  bool empty() const { return records.empty() && variables.empty() && delete_below == 0; }
};

class LogStorage {
 public:
  virtual ~LogStorage();

  // Applies `batch` atomically. With sync == true the call returns only once
  // the batch is durable (it survives a crash of the process or the machine).
  // A promise or accept must never be answered before such a write returns ok.
  virtual Status Write(const LogWriteBatch& batch, bool sync) = 0;

  // Reads the record of `instance` into *record.
  // Returns NotFound if none is stored, Corruption if the stored bytes fail
  // their checksum (then *record is left untouched).
  virtual Status Get(uint64_t instance, std::string* record) = 0;

  // Sets *instance to the largest instance id with a record.
  // Returns NotFound when the log holds no record.
  virtual Status GetMaxInstanceId(uint64_t* instance) = 0;

  // Sets *instance to the smallest instance id that still has a record (the
  // log below it was trimmed). Returns NotFound when the log holds no record.
  virtual Status GetMinInstanceId(uint64_t* instance) = 0;

  // Reads / writes a named variable. GetVariable returns NotFound when unset
  // and Corruption when the stored bytes fail their checksum.
  virtual Status GetVariable(const std::string& name, std::string* value) = 0;
  Status SetVariable(const std::string& name, const std::string& value, bool sync);
};

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
  // Receives a line when opening repaired something (a torn tail cut off
  // leveldb's write-ahead log). Default (empty): the line is dropped.
  std::function<void(const std::string& line)> warning_log;
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
Status OpenLevelDbLogStorage(const std::string& dir, const LevelDbLogOptions& options,
                             std::unique_ptr<LogStorage>* storage);

}  // namespace chorus

#endif  // CHORUS_LOG_STORAGE_H_
