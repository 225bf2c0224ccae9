#include "node/leveldb_wal_tail.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {
namespace leveldb_wal {
namespace leveldb_wal_tail_test {
namespace {

// Appends one physical record in leveldb's format (masked crc32c of type +
// payload), padding to the next block first when the header does not fit.
void Append(std::string* file, uint8_t type, const std::string& payload) {
  const size_t left = kBlockSize - file->size() % kBlockSize;
  if (left < kHeaderSize) file->append(left, '\0');
  std::string typed(1, static_cast<char>(type));
  typed += payload;
  const uint32_t crc = crc32c::Value(typed);
  const uint32_t masked = ((crc >> 15) | (crc << 17)) + 0xa282ead8ul;
  PutFixed32(file, masked);
  file->push_back(static_cast<char>(payload.size() & 0xff));
  file->push_back(static_cast<char>(payload.size() >> 8));
  file->append(typed);
}

constexpr uint8_t kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4;

TEST(ScanWalTest, AnIntactFileIsUndamagedToItsEnd) {
  std::string f;
  Append(&f, kFull, "one");
  Append(&f, kFirst, std::string(100, 'a'));
  Append(&f, kMiddle, std::string(100, 'b'));
  Append(&f, kLast, std::string(100, 'c'));
  const TailScan scan = ScanWal(f);
  EXPECT_FALSE(scan.damaged);
  EXPECT_EQ(scan.good_end, f.size());
}

TEST(ScanWalTest, AZeroedTailIsDamageWithNothingAfterIt) {
  std::string f;
  Append(&f, kFull, "one");
  const size_t end_of_one = f.size();
  Append(&f, kFull, std::string(500, 'x'));
  for (size_t i = f.size() - 200; i < f.size(); ++i) f[i] = '\0';
  f.append(3 * kBlockSize, '\0');  // the file system extended it further
  const TailScan scan = ScanWal(f);
  EXPECT_TRUE(scan.damaged);
  EXPECT_FALSE(scan.valid_after_damage);
  EXPECT_EQ(scan.good_end, end_of_one);
}

TEST(ScanWalTest, AnUnfinishedWriteIsCutBeforeItsFirstFragment) {
  std::string f;
  Append(&f, kFull, "one");
  const size_t end_of_one = f.size();
  Append(&f, kFirst, std::string(100, 'a'));
  Append(&f, kMiddle, std::string(100, 'b'));
  // The LAST fragment landed as stale bytes (each parses as a header with
  // length 257 and a wrong checksum).
  f.append(400, '\x01');
  const TailScan scan = ScanWal(f);
  EXPECT_TRUE(scan.damaged);
  EXPECT_FALSE(scan.valid_after_damage);
  EXPECT_EQ(scan.good_end, end_of_one);
}

TEST(ScanWalTest, AValidRecordAfterTheDamageMeansTheMiddle) {
  std::string f;
  Append(&f, kFull, std::string(100, 'a'));
  Append(&f, kFull, std::string(100, 'b'));
  std::string flipped = f;
  flipped[50] ^= 1;  // payload of the first record: the second follows in its block
  TailScan scan = ScanWal(flipped);
  EXPECT_TRUE(scan.damaged);
  EXPECT_TRUE(scan.valid_after_damage);
  EXPECT_EQ(scan.good_end, 0u);

  flipped = f;
  flipped[4] = '\x7f';  // its length: the next record is found anyway
  scan = ScanWal(flipped);
  EXPECT_TRUE(scan.damaged);
  EXPECT_TRUE(scan.valid_after_damage);

  // Damage in one block, an intact record at the start of a later one.
  std::string blocks;
  Append(&blocks, kFull, std::string(kBlockSize - 2 * kHeaderSize, 'c'));
  blocks.resize(kBlockSize, '\0');
  Append(&blocks, kFull, "later");
  blocks[100] ^= 1;
  scan = ScanWal(blocks);
  EXPECT_TRUE(scan.damaged);
  EXPECT_TRUE(scan.valid_after_damage);
}

// The search after damage looks at the type byte of each offset first
// (leveldb_wal_tail.cc): a record must be found at every offset of the rest
// of the block, whatever fills the bytes around it, and stale bytes that
// hold record types (headers with wrong checksums) must not count.
TEST(ScanWalTest, TheSearchAfterDamageFindsARecordAtAnyOffsetOfTheBlock) {
  std::string damaged;
  Append(&damaged, kFull, "xyz");
  damaged[kHeaderSize + 1] ^= 1;  // a failed checksum at offset 0
  std::vector<size_t> offsets;
  for (size_t k = damaged.size() - 3; k < 300; ++k) offsets.push_back(k);
  const size_t last_fit = kBlockSize - (kHeaderSize + 5);  // the record below ends the block
  for (size_t k = last_fit - 20; k <= last_fit; ++k) offsets.push_back(k);
  for (const char fill : {'\0', '\x01', '\x03', '\x04', '\xff'}) {
    for (const size_t k : offsets) {
      std::string record;
      const uint8_t type = static_cast<uint8_t>(kFull + k % 4);
      Append(&record, type, "valid");
      std::string f = damaged;
      f.resize(k, fill);
      f += record;
      f.append(k % 9, fill);
      TailScan scan = ScanWal(f);
      ASSERT_TRUE(scan.damaged) << "fill " << int(fill) << " at " << k;
      EXPECT_EQ(scan.good_end, 0u);
      ASSERT_TRUE(scan.valid_after_damage) << "fill " << int(fill) << " at " << k;
      f[k + kHeaderSize] ^= 1;  // the same record, its checksum failed
      scan = ScanWal(f);
      ASSERT_TRUE(scan.damaged);
      ASSERT_FALSE(scan.valid_after_damage) << "fill " << int(fill) << " at " << k;
    }
  }
}

TEST(ScanWalTest, AFragmentOutOfOrderIsDamageBeforeValidData) {
  std::string f;
  Append(&f, kFirst, "a");
  Append(&f, kFull, "b");  // the FIRST never got its LAST
  const TailScan scan = ScanWal(f);
  EXPECT_TRUE(scan.damaged);
  EXPECT_TRUE(scan.valid_after_damage);
}

TEST(ScanWalTest, ACutLastRecordIsLeftToLevelDb) {
  std::string f;
  Append(&f, kFull, "one");
  const size_t end_of_one = f.size();
  Append(&f, kFull, std::string(100, 'x'));
  f.resize(f.size() - 30);
  TailScan scan = ScanWal(f);
  EXPECT_FALSE(scan.damaged);  // leveldb reads it as the end of the file
  EXPECT_EQ(scan.good_end, end_of_one);
  // So is a header whose length runs past the end of the file.
  f.resize(end_of_one);
  f.append(50, '\x33');
  scan = ScanWal(f);
  EXPECT_FALSE(scan.damaged);
  EXPECT_EQ(scan.good_end, end_of_one);
}

}  // namespace
}  // namespace leveldb_wal_tail_test
}  // namespace leveldb_wal
}  // namespace chorus
