#include "node/leveldb_log_trim.h"

#include <leveldb/iterator.h>
#include <leveldb/options.h>

#include <memory>

#include "node/leveldb_log_format.h"

namespace chorus {
namespace leveldb_log {

Status ReadTrimmedBelow(leveldb::DB* db, const std::string& dir, uint64_t* below) {
  leveldb::ReadOptions ro;
  ro.verify_checksums = true;
  std::string raw;
  leveldb::Status s = db->Get(ro, kTrimmedBelowKey, &raw);
  if (s.IsNotFound()) {
    *below = 0;  // never trimmed, or a log written before lazy trimming
    return Status::OK();
  }
  if (!s.ok()) {
    const std::string msg = "log in '" + dir + "': reading trimmed_below: " + s.ToString();
    return s.IsCorruption() ? Status::Corruption(msg) : Status::IOError(msg);
  }
  return DecodeTrimmedBelow(raw, "log in '" + dir + "': trimmed_below", below);
}

leveldb::Status CollectRecordKeys(leveldb::DB* db, const std::string& from, uint64_t below,
                                  size_t max_keys, std::vector<std::string>* keys) {
  leveldb::ReadOptions ro;
  ro.fill_cache = false;  // trimmed records are never read again
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(ro));
  const std::string end = RecordKey(below);
  size_t n = 0;
  for (it->Seek(from); it->Valid() && it->key().compare(end) < 0; it->Next()) {
    keys->push_back(it->key().ToString());
    if (max_keys != 0 && ++n == max_keys) break;
  }
  return it->status();
}

}  // namespace leveldb_log
}  // namespace chorus
