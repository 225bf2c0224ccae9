// Log trimming in the leveldb log storage: delete_below hides the records
// below it at once (a durable marker) and the storage's own thread deletes
// and compacts them.

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <leveldb/db.h>
#include <leveldb/iterator.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "chorus/leveldb_log_storage.h"
#include "node/leveldb_log_format.h"

#include "unittest/node/leveldb_log_fixture.h"

namespace chorus {
namespace leveldb_log_trim_test {
namespace {

TEST_F(LevelDbLogStorageTest, DeleteBelow) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 100), true).ok());
  LogWriteBatch trim;
  trim.delete_below = 40;
  ASSERT_TRUE(storage_->Write(trim, true).ok());
  std::string rec;
  for (uint64_t i = 0; i < 100; ++i) {
    Status s = storage_->Get(i, &rec);
    if (i < 40) {
      EXPECT_TRUE(s.IsNotFound()) << i;
    } else {
      ASSERT_TRUE(s.ok()) << i;
      EXPECT_EQ("rec-" + std::to_string(i), rec);
    }
  }
  uint64_t min = 0, max = 0;
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
  EXPECT_EQ(40u, min);
  EXPECT_EQ(99u, max);

  // A record in the trimming batch itself is kept; trimming everything else
  // leaves it as the only record.
  LogWriteBatch b;
  b.delete_below = 1000;
  b.records.emplace_back(7, "kept");
  b.variables.emplace_back("checkpoint", "999");
  ASSERT_TRUE(storage_->Write(b, true).ok());
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
  EXPECT_EQ(7u, min);
  EXPECT_EQ(7u, max);
  EXPECT_TRUE(storage_->Get(99, &rec).IsNotFound());
  std::string v;
  ASSERT_TRUE(storage_->GetVariable("checkpoint", &v).ok());
  EXPECT_EQ("999", v);

  LogWriteBatch all;
  all.delete_below = 8;
  ASSERT_TRUE(storage_->Write(all, true).ok());
  EXPECT_TRUE(storage_->GetMinInstanceId(&min).IsNotFound());
  EXPECT_TRUE(storage_->GetMaxInstanceId(&max).IsNotFound());
  // Variables are not records and survive trimming.
  ASSERT_TRUE(storage_->GetVariable("checkpoint", &v).ok());
}

// The trimmed records are deleted and compacted away off the writer's
// thread: the directory shrinks while the storage stays open (no close
// needed), and a reopen does not step over their tombstones to find the
// log's start.
TEST_F(LevelDbLogStorageTest, DeleteBelowCompactsTheTrimmedRange) {
  Open();
  WriteKibRecords(4000);
  const uint64_t before = DirBytes();
  ASSERT_GT(before, 4000u * 1024);
  LogWriteBatch trim;
  trim.delete_below = 3900;
  ASSERT_TRUE(storage_->Write(trim, true).ok());
  // Waits for the condition, not for a time; the bound only ends a hung run.
  for (int i = 0; i < 6000 && DirBytes() >= before / 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LT(DirBytes(), before / 4);
  storage_.reset();
  Open();
  uint64_t min = 0;
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  EXPECT_EQ(min, 3900u);
  std::string rec;
  EXPECT_TRUE(storage_->Get(3899, &rec).IsNotFound());
  ASSERT_TRUE(storage_->Get(3999, &rec).ok());
}

// ---- Lazy trimming: a marker hides the trimmed records at once, the
// storage's own thread deletes them (node/leveldb_log_trim.h) ----

// Sets *count to the raw record keys stored below `below` (storage closed).
static void CountRawRecordsBelow(const std::string& dir, uint64_t below, uint64_t* count) {
  leveldb::DB* db = nullptr;
  ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), dir, &db).ok());
  std::unique_ptr<leveldb::DB> owned(db);
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator(leveldb::ReadOptions()));
  const std::string end = leveldb_log::RecordKey(below);
  *count = 0;
  for (it->Seek(leveldb_log::RecordKey(0)); it->Valid() && it->key().compare(end) < 0; it->Next()) {
    ++*count;
  }
  ASSERT_TRUE(it->status().ok());
}

TEST_F(LevelDbLogStorageTest, TrimHidesAtOnceAndMovesRepeatedly) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 5000), false).ok());
  auto expect_log = [&](uint64_t below, uint64_t end) {
    uint64_t min = 0, max = 0;
    ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok()) << below;
    ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok()) << below;
    EXPECT_EQ(below, min);
    EXPECT_EQ(end - 1, max);
    std::string rec;
    for (uint64_t i : {uint64_t{0}, below / 2, below - 1}) {
      EXPECT_TRUE(storage_->Get(i, &rec).IsNotFound()) << i << " below " << below;
    }
    ASSERT_TRUE(storage_->Get(below, &rec).ok());
    EXPECT_EQ("rec-" + std::to_string(below), rec);
  };
  for (uint64_t below : {1000u, 1001u, 2500u, 4000u}) {
    LogWriteBatch trim;
    trim.delete_below = below;
    ASSERT_TRUE(storage_->Write(trim, true).ok());
    expect_log(below, 5000);
  }
  // A trim point below the current one trims nothing more and brings
  // nothing back.
  LogWriteBatch lower;
  lower.delete_below = 10;
  ASSERT_TRUE(storage_->Write(lower, true).ok());
  expect_log(4000, 5000);
  // A trim in a batch with records above it keeps them.
  LogWriteBatch with_records = Records(5000, 5100);
  with_records.delete_below = 4500;
  ASSERT_TRUE(storage_->Write(with_records, true).ok());
  expect_log(4500, 5100);
  // Trimming past the end leaves no record; later records are visible.
  LogWriteBatch all;
  all.delete_below = 6000;
  ASSERT_TRUE(storage_->Write(all, true).ok());
  uint64_t id = 0;
  EXPECT_TRUE(storage_->GetMinInstanceId(&id).IsNotFound());
  EXPECT_TRUE(storage_->GetMaxInstanceId(&id).IsNotFound());
  ASSERT_TRUE(storage_->Write(Records(6000, 6010), true).ok());
  expect_log(6000, 6010);
  Open();  // the marker is durable
  expect_log(6000, 6010);
  storage_.reset();
  uint64_t left = 1;
  CountRawRecordsBelow(dir_, 6000, &left);
  EXPECT_EQ(0u, left);  // closing finishes the deletion
}

// A crash after the trim's write but before the background deletion leaves
// the marker with records below it: Open hides them and deletes them.
TEST_F(LevelDbLogStorageTest, CrashBeforeBackgroundDeletionKeepsTrimmedRecordsHidden) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 3000), true).ok());
  storage_.reset();
  PutRaw(leveldb_log::kTrimmedBelowKey, leveldb_log::EncodeTrimmedBelow(2000));
  uint64_t left = 0;
  CountRawRecordsBelow(dir_, 2000, &left);
  ASSERT_EQ(2000u, left);
  Open();
  uint64_t min = 0, max = 0;
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
  EXPECT_EQ(2000u, min);
  EXPECT_EQ(2999u, max);
  std::string rec;
  EXPECT_TRUE(storage_->Get(0, &rec).IsNotFound());
  EXPECT_TRUE(storage_->Get(1999, &rec).IsNotFound());
  ASSERT_TRUE(storage_->Get(2000, &rec).ok());
  storage_.reset();  // waits for the deletion Open scheduled
  CountRawRecordsBelow(dir_, 2000, &left);
  EXPECT_EQ(0u, left);
  Open();
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  EXPECT_EQ(2000u, min);
}

TEST_F(LevelDbLogStorageTest, CorruptTrimMarkerIsCorruption) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 10), true).ok());
  storage_.reset();
  std::string marker = leveldb_log::EncodeTrimmedBelow(5);
  marker[marker.size() - 1] ^= 0x01;
  PutRaw(leveldb_log::kTrimmedBelowKey, marker);
  Status s = OpenLevelDbLogStorage(dir_, options_, &storage_);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  // The right bytes under a wrong length are corrupt too.
  PutRaw(leveldb_log::kTrimmedBelowKey,
         leveldb_log::EncodeChecksummed(leveldb_log::kTrimmedBelowKey, "1234"));
  s = OpenLevelDbLogStorage(dir_, options_, &storage_);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
}

// A record written below the trim point (in the trimming batch, or later
// below an earlier trim) is kept, also across a reopen and once the
// background deletion of the others has run.
TEST_F(LevelDbLogStorageTest, RecordWrittenBelowTheTrimPointStays) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 20010), false).ok());
  LogWriteBatch trim;
  trim.delete_below = 20000;
  ASSERT_TRUE(storage_->Write(trim, true).ok());
  // Right away: the deleter is likely still at work below 20000.
  LogWriteBatch later;
  later.records.emplace_back(10, "later");
  ASSERT_TRUE(storage_->Write(later, true).ok());
  LogWriteBatch same;
  same.delete_below = 5;
  same.records.emplace_back(3, "same");
  ASSERT_TRUE(storage_->Write(same, true).ok());
  auto expect_kept = [&] {
    std::string rec;
    ASSERT_TRUE(storage_->Get(10, &rec).ok());
    EXPECT_EQ("later", rec);
    ASSERT_TRUE(storage_->Get(3, &rec).ok());
    EXPECT_EQ("same", rec);
    EXPECT_TRUE(storage_->Get(11, &rec).IsNotFound());
    EXPECT_TRUE(storage_->Get(19999, &rec).IsNotFound());
    ASSERT_TRUE(storage_->Get(20000, &rec).ok());
    uint64_t min = 0, max = 0;
    ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
    ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
    EXPECT_EQ(3u, min);
    EXPECT_EQ(20009u, max);
  };
  expect_kept();
  Open();  // closing finished the background work
  expect_kept();
  storage_.reset();
  uint64_t left = 0;
  CountRawRecordsBelow(dir_, 20000, &left);
  EXPECT_EQ(2u, left);
}

// Trims while another thread reads (the catch-up reader's pattern): a read
// never sees a torn state, and after each trim returns the records below it
// are gone.
TEST_F(LevelDbLogStorageTest, TrimWhileReading) {
  Open();
  std::atomic<uint64_t> trimmed{0};
  std::atomic<bool> done{false};
  std::thread reader([&] {
    std::string rec;
    while (!done.load()) {
      const uint64_t below = trimmed.load();
      if (below > 0) {
        EXPECT_TRUE(storage_->Get(below - 1, &rec).IsNotFound()) << below;
      }
      uint64_t min = 0;
      Status s = storage_->GetMinInstanceId(&min);
      EXPECT_TRUE(s.ok() || s.IsNotFound()) << s.ToString();
      if (s.ok()) {
        EXPECT_GE(min, below);
      }
      s = storage_->Get(below + 50, &rec);
      EXPECT_TRUE(s.ok() || s.IsNotFound()) << s.ToString();
    }
  });
  for (uint64_t first = 0; first < 20000; first += 1000) {
    ASSERT_TRUE(storage_->Write(Records(first, first + 1000), false).ok());
    LogWriteBatch trim;
    trim.delete_below = first + 500;
    ASSERT_TRUE(storage_->Write(trim, true).ok());
    trimmed.store(first + 500);
  }
  done.store(true);
  reader.join();
}


}  // namespace
}  // namespace leveldb_log_trim_test
}  // namespace chorus
