// The kv store's checkpoint file: every key and value of a leveldb snapshot
// in one file, with length prefixes and a crc32c over the whole file.
//
//   "CHKVDMP1"                      8 bytes of magic
//   u64 instance                    the checkpoint reflects [0, instance)
//   u64 writes                      write ops applied up to it (KvStore::writes_applied)
//   per key: u32 key length, u32 value length, key, value   (in key order)
//   u32 0xffffffff                  end marker (no key is that long)
//   u64 key count
//   u32 crc32c of every byte before it
// (integers little-endian). Written and read streaming, in bounded memory.
#ifndef CHORUS_SAMPLE_KV_KV_DUMP_H_
#define CHORUS_SAMPLE_KV_KV_DUMP_H_

#include <cstdint>
#include <string>

#include "chorus/status.h"

namespace leveldb {
class DB;
class Snapshot;
class Status;
}  // namespace leveldb

namespace chorus {
namespace kv {

// leveldb's status as chorus's: OK, Corruption, NotFound, else IOError
// (with leveldb's text).
Status FromLevelDb(const leveldb::Status& s);

struct DumpHeader {
  uint64_t instance = 0;
  uint64_t writes = 0;
};

// Writes the keys of `db` under `prefix` as of `snapshot` (prefix stripped)
// into a new file `path`. IOError when the file cannot be written.
Status WriteDump(leveldb::DB* db, const leveldb::Snapshot* snapshot, const std::string& prefix,
                 const DumpHeader& header, const std::string& path);

// Reads the dump `path` into `db` (keys under `prefix`), in batches, and
// verifies it: Corruption for a bad magic, a truncated or overlong file, a
// count or checksum mismatch. The caller must discard `db` on any error
// (part of the dump may be in it). Sets *header.
Status ReadDump(const std::string& path, const std::string& prefix, leveldb::DB* db,
                DumpHeader* header);

}  // namespace kv
}  // namespace chorus

#endif  // CHORUS_SAMPLE_KV_KV_DUMP_H_
