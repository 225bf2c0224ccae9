// Fuzzes node/leveldb_wal_tail.h's ScanWal, which reads the bytes of a
// leveldb write-ahead log file after a crash. Input: byte 0 picks the mode.
//   even: the rest is a log file, as found on disk: ScanWal must not crash,
//         good_end <= size, and valid_after_damage implies damaged;
//   odd:  the rest describes writes; they are laid out as leveldb's log
//         writer does (32 KiB blocks, FULL / FIRST / MIDDLE / LAST
//         fragments, zero-padded block trailers), then
//           - the whole file scans as intact: good_end == its size;
//           - the file cut at any offset (a torn tail), with or without the
//             rest zeroed, is not damaged in the middle, and good_end is the
//             end of the last write that fits before the cut.
//         Each write: len (2, little-endian; 0x8000 and up stretch it past a
//         block) then a fill byte (its top bit set). The last byte
//         picks the cut.
// A break is __builtin_trap().
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "node/leveldb_wal_tail.h"
#include "unittest/fuzz/fuzz_require.h"
#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {
namespace leveldb_wal {
namespace {

using chorus::fuzz::Require;

constexpr uint32_t kMaskDelta = 0xa282ead8ul;
uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }

// leveldb's log::Writer::AddRecord, in memory.
class WalWriter {
 public:
  void Add(const std::string& record) {
    size_t left = record.size();
    size_t offset = 0;
    bool begin = true;
    do {
      const size_t block_left = kBlockSize - file_.size() % kBlockSize;
      if (block_left < kHeaderSize) file_.append(block_left, '\0');
      const size_t avail = kBlockSize - file_.size() % kBlockSize - kHeaderSize;
      const size_t n = std::min(left, avail);
      const bool end = n == left;
      const uint8_t type = begin && end ? 1 : begin ? 2 : end ? 4 : 3;
      Emit(type, record.data() + offset, n);
      offset += n;
      left -= n;
      begin = false;
    } while (left > 0);
    ends_.push_back(file_.size());
  }
  const std::string& file() const { return file_; }
  const std::vector<size_t>& ends() const { return ends_; }

 private:
  void Emit(uint8_t type, const char* p, size_t n) {
    char header[kHeaderSize];
    header[4] = static_cast<char>(n & 0xFF);
    header[5] = static_cast<char>(n >> 8);
    header[6] = static_cast<char>(type);
    uint32_t crc = crc32c::Extend(0, header + 6, 1);
    crc = crc32c::Extend(crc, p, n);
    EncodeFixed32(header, Mask(crc));
    file_.append(header, kHeaderSize);
    file_.append(p, n);
  }
  std::string file_;
  std::vector<size_t> ends_;
};

void CheckRaw(const std::string& bytes) {
  const TailScan scan = ScanWal(bytes);
  Require(scan.good_end <= bytes.size());
  Require(!scan.valid_after_damage || scan.damaged);
}

void CheckWritten(const uint8_t* p, size_t n) {
  if (n == 0) return;
  const uint8_t cut_byte = p[n - 1];
  --n;
  WalWriter writer;
  for (size_t i = 0; i + 3 <= n && writer.file().size() < 2 * kBlockSize; i += 3) {
    size_t len = p[i] | (static_cast<size_t>(p[i + 1]) << 8);
    if (len >= 0x8000) len = (len - 0x8000) * 3;  // up to ~96 KiB: several blocks
    // The fill is never zero (a zeroed tail must not rebuild the record it
    // replaced) and never a record type: ScanWal's search for a valid record
    // after damage tries every offset, and payload bytes that look like
    // headers make it checksum each (slow, not wrong; raw mode still has it).
    writer.Add(std::string(len, static_cast<char>(p[i + 2] | 0x80)));
  }
  const std::string& file = writer.file();
  const TailScan whole = ScanWal(file);
  Require(!whole.damaged && whole.good_end == file.size());
  if (file.empty()) return;
  // Cut at a byte offset derived from the last input byte, spread over the file.
  const size_t cut = static_cast<size_t>(cut_byte) * file.size() / 255;
  size_t expected = 0;
  for (size_t end : writer.ends()) {
    if (end <= cut) expected = end;
  }
  const TailScan torn = ScanWal(file.substr(0, cut));
  Require(!torn.damaged && torn.good_end == expected);
  std::string zeroed = file.substr(0, cut);
  zeroed.append(file.size() - cut, '\0');
  const TailScan zero_tail = ScanWal(zeroed);
  Require(!zero_tail.valid_after_damage && zero_tail.good_end == expected);
}

}  // namespace
}  // namespace leveldb_wal
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if ((data[0] & 1) == 0) {
    chorus::leveldb_wal::CheckRaw(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  } else {
    chorus::leveldb_wal::CheckWritten(data + 1, size - 1);
  }
  return 0;
}
