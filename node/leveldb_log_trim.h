// Copyright (c) chorus authors.
//
// Lazy log trimming for the leveldb LogStorage. A LogWriteBatch's
// delete_below does not delete a record on the writer's (the group loop's)
// thread: the batch raises the trimmed_below key (leveldb_log_format.h)
// instead, in the same atomic, synced leveldb write, and the storage hides
// every record below it from its readers at once. A background thread then
// deletes the hidden records in small chunks and compacts the range. A crash
// before it finishes leaves the marker durable: the next Open hides the
// records again and resumes their deletion.
//
// Private to node/leveldb_log_storage.cc.

#ifndef CHORUS_NODE_LEVELDB_LOG_TRIM_H_
#define CHORUS_NODE_LEVELDB_LOG_TRIM_H_

#include <leveldb/db.h>
#include <leveldb/status.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace leveldb_log {

// Hidden records the background deleter removes per leveldb write. The
// writer waits for at most one such write (the deleter holds the write
// mutex for it), so it is kept small.
constexpr size_t kTrimChunkKeys = 1000;

// Sets *below to the stored trimmed_below (0 when the key is unset).
// Returns Corruption when the stored bytes fail their check.
Status ReadTrimmedBelow(leveldb::DB* db, const std::string& dir, uint64_t* below);

// Appends to *keys the record keys in [from, RecordKey(below)), at most
// max_keys of them (0: no limit), in order. Returns the iterator's status.
leveldb::Status CollectRecordKeys(leveldb::DB* db, const std::string& from, uint64_t below,
                                  size_t max_keys, std::vector<std::string>* keys);

}  // namespace leveldb_log
}  // namespace chorus

#endif  // CHORUS_NODE_LEVELDB_LOG_TRIM_H_
