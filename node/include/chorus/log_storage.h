// Copyright (c) chorus authors.
//
// LogStorage: the durable paxos log of ONE group. chorus ships a leveldb
// implementation (one database per group: chorus/leveldb_log_storage.h); an
// application may plug in its own.
//
// A vocabulary header: it depends on the standard library and status.h only,
// so the protocol core (paxos/) can use it without the runtime API.
//
// The log maps an instance id to an opaque record (the protocol core's
// serialized acceptor state for that instance) and holds a few named
// variables (the group-wide promise, membership and master state, ...).
// Records are bytes to the storage: it adds its own checksum when writing and
// verifies it when reading, so a corrupted or truncated record comes back as
// Status::Corruption, never as data.
//
// Thread safety: implementations must allow concurrent calls from several
// threads. The group's loop thread makes every Write; reads come from the
// thread that opens the node (recovery, replay), from the loop, and, while
// the loop writes, from the node's catch-up reader thread (the records a
// lagging peer asks for).

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
// Guarantee to implementations: a batch chorus hands to Write never holds two
// entries for one instance id in `records`, nor two for one name in
// `variables` (group commit keeps only the last state of each key),
// so a storage may apply the entries in any order.
struct LogWriteBatch {
  // Instance records to store (instance id -> record bytes), replacing any
  // record already stored under that id. Each id at most once.
  std::vector<std::pair<uint64_t, std::string>> records;
  // Named variables to set. Each name at most once.
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

}  // namespace chorus

#endif  // CHORUS_LOG_STORAGE_H_
