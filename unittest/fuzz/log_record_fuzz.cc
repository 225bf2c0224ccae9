// Fuzzes the decoding of what the leveldb LogStorage stores
// (node/leveldb_log_format.h): checksummed record and variable values, the
// meta value checked at every open, and record keys. Input: byte 0 picks the
// key (even: a record key, its instance from the next 8 bytes; odd: a
// variable key, its name the next (byte 0 >> 1) % 16 bytes); the rest is the
// stored value. Properties (a break is __builtin_trap()):
//   - DecodeChecksummed is ok exactly when re-encoding the payload under the
//     same key gives the value back; otherwise Corruption, payload untouched;
//   - CheckMeta never crashes, and is ok only for the encoding of the
//     expected identity (version 2, or version 1 with *upgrade set);
//   - InstanceOfRecordKey(RecordKey(i)) == i.
#include <cstddef>
#include <cstdint>
#include <string>

#include "node/leveldb_log_format.h"
#include "unittest/fuzz/fuzz_require.h"
#include "utils/coding.h"

namespace chorus {
namespace leveldb_log {
namespace {

using chorus::fuzz::Require;

// The identity the fuzzed meta values are checked against (the seed corpus
// holds its encodings).
constexpr LogIdentity kExpected{9, 0, (uint64_t{0x7f000001} << 16) | 7001};

void CheckChecksummed(const std::string& key, const std::string& value) {
  std::string payload = "untouched";
  const Status s = DecodeChecksummed(key, value, "fuzzed value", &payload);
  if (s.ok()) {
    Require(EncodeChecksummed(key, payload) == value);
  } else {
    Require(s.IsCorruption() && payload == "untouched");
  }
}

void CheckMetaValue(const std::string& value) {
  bool upgrade = true;
  const Status s = CheckMeta(value, kExpected, "/fuzz", &upgrade);
  if (s.ok()) {
    if (upgrade) {
      Require(value == EncodeMetaV1(kExpected.cluster_id, kExpected.group));
    } else {
      Require(value == EncodeMeta(kExpected));
    }
  } else {
    Require(s.IsCorruption() || s.IsInvalidArgument());
  }
}

}  // namespace
}  // namespace leveldb_log
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace chorus::leveldb_log;  // NOLINT: one entry point
  if (size == 0) return 0;
  const char* p = reinterpret_cast<const char*>(data) + 1;
  size_t left = size - 1;
  std::string key;
  if ((data[0] & 1) == 0) {
    char id[8] = {0};
    const size_t n = std::min<size_t>(8, left);
    std::copy(p, p + n, id);
    p += n;
    left -= n;
    const uint64_t instance = chorus::DecodeFixed64(id);
    key = RecordKey(instance);
    Require(key.size() == 9 && key[0] == kRecordPrefix && InstanceOfRecordKey(key) == instance);
  } else {
    const size_t n = std::min<size_t>((data[0] >> 1) % 16, left);
    key = VariableKey(std::string(p, n));
    p += n;
    left -= n;
  }
  const std::string value(p, left);
  CheckChecksummed(key, value);
  CheckMetaValue(value);
  return 0;
}
