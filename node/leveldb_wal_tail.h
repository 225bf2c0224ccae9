// Torn tails of leveldb's write-ahead log.
//
// leveldb appends every write to its newest "<number>.log" file as records
// of 32 KiB blocks (a 7-byte header: masked crc32c (4) | length (2) |
// type (1), then the payload; a write larger than a block's rest is split
// into FIRST / MIDDLE / LAST fragments). A power loss in the middle of an
// append leaves a torn tail: the file ends in a cut record, or (on many file
// systems, which extend the size before the data lands) in zeroed or stale
// bytes where the record should be. That write never returned, so it was
// never acknowledged: dropping it loses nothing anyone was promised.
//
// leveldb itself ignores a cut record at the very end of the file, but with
// paranoid_checks (which chorus keeps on, so that damage in the middle of the
// log refuses to open) a zeroed or garbage tail is a checksum mismatch and
// DB::Open fails. CutTornWalTail tells the two apart and cuts only a tail.
#ifndef CHORUS_NODE_LEVELDB_WAL_TAIL_H_
#define CHORUS_NODE_LEVELDB_WAL_TAIL_H_

#include <cstdint>
#include <string>

#include "chorus/status.h"

namespace chorus {
namespace leveldb_wal {

constexpr size_t kBlockSize = 32768;
constexpr size_t kHeaderSize = 7;

// Where the first damaged record of a write-ahead log file starts.
struct TailScan {
  // Bytes from the start of the file up to the end of the last complete
  // write (the last FULL or LAST fragment before the damage).
  uint64_t good_end = 0;
  // True when the file holds a damaged record (a failed checksum, a bad
  // type, a fragment out of order, a length beyond its block).
  bool damaged = false;
  // True when, after the damage, some valid record follows: the damage is
  // in the middle of the file, not a torn tail.
  bool valid_after_damage = false;
};

// Scans the bytes of one write-ahead log file.
TailScan ScanWal(const std::string& bytes);

// If the newest write-ahead log file in the leveldb directory `dir` ends in
// a torn tail (damage with no valid record after it), copies the dropped
// bytes to dir/lost/<file>.torn-at-<offset> and truncates the file at the end
// of its last complete write (both synced), then sets *note to a sentence
// that says what was cut. Leaves everything alone and *note empty when that
// file is intact or damaged in the middle. IOError when a file cannot be
// read, copied or truncated.
Status CutTornWalTail(const std::string& dir, std::string* note);

}  // namespace leveldb_wal
}  // namespace chorus

#endif  // CHORUS_NODE_LEVELDB_WAL_TAIL_H_
