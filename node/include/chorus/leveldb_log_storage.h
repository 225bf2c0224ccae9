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
#include <memory>
#include <string>

#include "chorus/log_storage.h"
#include "chorus/status.h"

namespace chorus {

// Options of the leveldb log storage.
struct LevelDbLogOptions {
  // Identity checked against the data dir: opening a dir made for another
  // cluster or group fails with InvalidArgument.
  uint64_t cluster_id = 0;
  uint32_t group = 0;
  // Create the database when `dir` holds none. With false, a missing
  // database is InvalidArgument.
  bool create_if_missing = true;
  // leveldb block cache size in bytes (0: leveldb's default of 8 MiB).
  size_t block_cache_bytes = 0;
};

// Opens (or creates) the leveldb paxos log of one group in directory `dir`.
// On success *storage owns the database. Fails with a clear message when the
// directory cannot be created or written, is not a chorus log, or belongs to
// another cluster or group.
Status OpenLevelDbLogStorage(const std::string& dir, const LevelDbLogOptions& options,
                             std::unique_ptr<LogStorage>* storage);

}  // namespace chorus

#endif  // CHORUS_LEVELDB_LOG_STORAGE_H_
