// A torn tail of leveldb's write-ahead log, as a crash or power loss in the
// middle of a write leaves it (cut short, zeroed, stale bytes), is cut off at
// open; damage in the middle of the log refuses to open and cuts nothing.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/leveldb_log_storage.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace leveldb_log_storage_torn_tail_test {
namespace {

off_t FileSize(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_size : -1;
}

// Overwrites `n` bytes at `offset` of `path` with `byte`.
void Overwrite(const std::string& path, off_t offset, size_t n, char byte) {
  const int fd = open(path.c_str(), O_WRONLY);
  ASSERT_GE(fd, 0) << path;
  const std::string bytes(n, byte);
  ASSERT_EQ(static_cast<ssize_t>(n), pwrite(fd, bytes.data(), n, offset));
  close(fd);
}

// Where each record of a write-ahead log file shorter than one block
// starts (leveldb's header: crc (4) | length (2, little-endian) | type (1)).
std::vector<off_t> RecordStarts(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<off_t> starts;
  size_t pos = 0;
  while (pos + 7 <= bytes.size()) {
    starts.push_back(static_cast<off_t>(pos));
    pos += 7 + (static_cast<uint8_t>(bytes[pos + 4]) | (static_cast<uint8_t>(bytes[pos + 5]) << 8));
  }
  return starts;
}

class TornTailTest : public ::testing::Test {
 public:
  void SetUp() override {
    dir_ = root_.path() + "/g0";
    options_.cluster_id = 5;
    options_.node_id = 0x7f0000011f41;  // 127.0.0.1:8001
    options_.create_if_missing = true;
  }
  void TearDown() override { storage_.reset(); }
  void Open() {
    storage_.reset();
    Status s = OpenLevelDbLogStorage(dir_, options_, &storage_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  const std::string& dir() const { return dir_; }
  const LevelDbLogOptions& options() const { return options_; }
  // Writes `writes` synced batches (write k holds record k with `bytes`
  // bytes), closes the log, and returns the write-ahead log file that holds
  // them (leveldb replays it at the next open).
  std::string WriteAndClose(int writes, size_t bytes) {
    Open();
    for (int k = 0; k < writes; ++k) {
      LogWriteBatch b;
      b.records.emplace_back(k, Payload(k, bytes));
      EXPECT_TRUE(storage_->Write(b, true).ok());
    }
    storage_.reset();
    return testing::NewestLevelDbLog(dir_);
  }
  static std::string Payload(int k, size_t bytes) {
    return std::string(bytes, static_cast<char>('a' + k % 26));
  }
  // Records 0..intact-1 are there with their payload, `intact` is not.
  void ExpectRecords(int intact, size_t bytes) {
    for (int k = 0; k < intact; ++k) {
      std::string rec;
      ASSERT_TRUE(storage_->Get(k, &rec).ok()) << k;
      EXPECT_EQ(Payload(k, bytes), rec) << k;
    }
    std::string rec;
    EXPECT_TRUE(storage_->Get(intact, &rec).IsNotFound());
    // And the log takes new writes.
    LogWriteBatch later;
    later.records.emplace_back(100, "later");
    ASSERT_TRUE(storage_->Write(later, true).ok());
    Open();
    ASSERT_TRUE(storage_->Get(100, &rec).ok());
  }
  std::vector<std::string> Lost() {
    std::vector<std::string> names;
    DIR* d = opendir((dir_ + "/lost").c_str());
    if (d == nullptr) return names;
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.push_back(e->d_name);
    }
    closedir(d);
    return names;
  }

 protected:
  testing::TempDir root_;
  std::string dir_;
  LevelDbLogOptions options_;
  std::unique_ptr<LogStorage> storage_;
};

TEST_F(TornTailTest, TruncatedTailOpensWithoutTheLastWrite) {
  const std::string wal = WriteAndClose(5, 1000);
  ASSERT_FALSE(wal.empty());
  const off_t size = FileSize(wal);
  ASSERT_EQ(0, truncate(wal.c_str(), size - 300));  // the last write is cut short
  Open();
  ExpectRecords(4, 1000);
}

TEST_F(TornTailTest, TruncatedHeaderOpensWithoutTheLastWrite) {
  const std::string wal = WriteAndClose(5, 1000);
  const off_t size = FileSize(wal);
  ASSERT_EQ(0, truncate(wal.c_str(), size - 1000 - 3));  // inside the last header
  Open();
  ExpectRecords(4, 1000);
}

TEST_F(TornTailTest, ZeroedTailIsCutAndKept) {
  const std::string wal = WriteAndClose(5, 1000);
  const off_t size = FileSize(wal);
  // The file has its full size but the last write's bytes never landed.
  Overwrite(wal, size - 400, 400, '\0');
  std::vector<std::string> warnings;
  options_.warning_log = [&](const std::string& line) { warnings.push_back(line); };
  Open();
  ExpectRecords(4, 1000);
  ASSERT_EQ(1u, warnings.size());
  EXPECT_NE(std::string::npos, warnings[0].find("torn tail")) << warnings[0];
  ASSERT_EQ(1u, Lost().size());
  EXPECT_NE(std::string::npos, Lost()[0].find(".log.torn-at-")) << Lost()[0];
}

TEST_F(TornTailTest, ZeroedTailFromTheMiddleOfAHeaderIsCut) {
  const std::string wal = WriteAndClose(5, 1000);
  const off_t size = FileSize(wal);
  Overwrite(wal, size - 1000 - 5, 1000 + 5, '\0');  // from the length field on
  Open();
  ExpectRecords(4, 1000);
}

TEST_F(TornTailTest, ZeroedTailOfAWriteSpanningBlocksIsCut) {
  // The last write (100 KB) is split over four 32 KiB blocks; its last two
  // fragments are zeroed.
  Open();
  for (int k = 0; k < 3; ++k) {
    LogWriteBatch b;
    b.records.emplace_back(k, Payload(k, k == 2 ? 100000 : 1000));
    ASSERT_TRUE(storage_->Write(b, true).ok());
  }
  storage_.reset();
  const std::string wal = testing::NewestLevelDbLog(dir_);
  const off_t size = FileSize(wal);
  Overwrite(wal, size - 40000, 40000, '\0');
  Open();
  std::string rec;
  ASSERT_TRUE(storage_->Get(1, &rec).ok());
  EXPECT_EQ(Payload(1, 1000), rec);
  EXPECT_TRUE(storage_->Get(2, &rec).IsNotFound());
}

TEST_F(TornTailTest, GarbageTailIsCut) {
  const std::string wal = WriteAndClose(5, 1000);
  const off_t size = FileSize(wal);
  Overwrite(wal, size - 600, 600, '\x5a');  // stale bytes of a reused disk block
  Open();
  ExpectRecords(4, 1000);
}

// Five writes of 1000 bytes; then `byte` overwrites the byte at
// `offset_in_record` of record `record` (record 0 is the meta, so records
// after `record` are intact writes). Opening must refuse, and cut nothing.
void ExpectCorruptionInTheMiddleRefused(TornTailTest* t, size_t record, off_t offset_in_record,
                                        char byte) {
  const std::string wal = t->WriteAndClose(5, 1000);
  const off_t size = FileSize(wal);
  const std::vector<off_t> starts = RecordStarts(wal);
  ASSERT_EQ(6u, starts.size());
  Overwrite(wal, starts[record] + offset_in_record, 1, byte);
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::unique_ptr<LogStorage> st;
    Status s = OpenLevelDbLogStorage(t->dir(), t->options(), &st);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(std::string::npos, s.message().find(t->dir())) << s.message();
    EXPECT_NE(std::string::npos, s.message().find("damaged")) << s.message();
    EXPECT_EQ(nullptr, st);
    // Nothing was cut: the file is as it was.
    EXPECT_EQ(size, FileSize(wal));
    EXPECT_TRUE(t->Lost().empty());
  }
}

TEST_F(TornTailTest, CorruptionInTheMiddleRefusesToOpen) {
  // One flipped byte in the second write's payload; three intact writes follow.
  ExpectCorruptionInTheMiddleRefused(this, 2, 500, '\x01');
}

TEST_F(TornTailTest, CorruptedLengthInTheMiddleRefusesToOpen) {
  // The length field of the third write's header: its checksum fails and
  // the length can no longer be trusted; two intact writes follow.
  ExpectCorruptionInTheMiddleRefused(this, 3, 4, '\x7f');
}

}  // namespace
}  // namespace leveldb_log_storage_torn_tail_test
}  // namespace chorus
