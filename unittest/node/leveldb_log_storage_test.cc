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

namespace chorus {
namespace {

class LevelDbLogStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/chorus_log_test_XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(tmpl));
    root_ = tmpl;
    dir_ = root_ + "/data/g3";  // parents do not exist yet
    options_.cluster_id = 77;
    options_.group = 3;
    options_.node_id = 0x7f0000011f41;  // 127.0.0.1:8001
    options_.create_if_missing = true;
  }
  void TearDown() override {
    storage_.reset();
    std::string cmd = "rm -rf '" + root_ + "'";
    ASSERT_EQ(0, std::system(cmd.c_str()));
  }

  void Open() {
    storage_.reset();
    Status s = OpenLevelDbLogStorage(dir_, options_, &storage_);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  // Writes `value` under the raw leveldb key `key` (storage must be closed).
  void PutRaw(const std::string& key, const std::string& value) {
    leveldb::DB* db = nullptr;
    leveldb::Options o;
    ASSERT_TRUE(leveldb::DB::Open(o, dir_, &db).ok());
    ASSERT_TRUE(db->Put(leveldb::WriteOptions(), key, value).ok());
    delete db;
  }
  std::string GetRaw(const std::string& key) {
    leveldb::DB* db = nullptr;
    leveldb::Options o;
    EXPECT_TRUE(leveldb::DB::Open(o, dir_, &db).ok());
    std::string v;
    EXPECT_TRUE(db->Get(leveldb::ReadOptions(), key, &v).ok());
    delete db;
    return v;
  }

  // Writes records [0, n) of 1 KiB each, 500 a batch.
  void WriteKibRecords(uint64_t n) {
    const std::string big(1024, 'r');
    for (uint64_t first = 0; first < n; first += 500) {
      LogWriteBatch b;
      for (uint64_t i = first; i < std::min(n, first + 500); ++i) b.records.emplace_back(i, big);
      ASSERT_TRUE(storage_->Write(b, false).ok());
    }
  }
  // The bytes of the regular files in the log directory.
  uint64_t DirBytes() const {
    uint64_t total = 0;
    std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir_.c_str()), closedir);
    while (struct dirent* e = readdir(d.get())) {
      struct stat st;
      if (stat((dir_ + "/" + e->d_name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
        total += static_cast<uint64_t>(st.st_size);
      }
    }
    return total;
  }

  static LogWriteBatch Records(uint64_t from, uint64_t to) {
    LogWriteBatch b;
    for (uint64_t i = from; i < to; ++i) b.records.emplace_back(i, "rec-" + std::to_string(i));
    return b;
  }

  std::string root_;
  std::string dir_;
  LevelDbLogOptions options_;
  std::unique_ptr<LogStorage> storage_;
};

TEST_F(LevelDbLogStorageTest, EmptyLog) {
  Open();
  uint64_t id = 123;
  std::string rec = "untouched";
  EXPECT_TRUE(storage_->GetMaxInstanceId(&id).IsNotFound());
  EXPECT_TRUE(storage_->GetMinInstanceId(&id).IsNotFound());
  EXPECT_EQ(123u, id);
  EXPECT_TRUE(storage_->Get(0, &rec).IsNotFound());
  EXPECT_TRUE(storage_->GetVariable("promise", &rec).IsNotFound());
  EXPECT_EQ("untouched", rec);
  EXPECT_TRUE(storage_->Write(LogWriteBatch(), true).ok());
}

TEST_F(LevelDbLogStorageTest, PutGetOverwrite) {
  Open();
  LogWriteBatch b;
  b.records.emplace_back(5, "five");
  b.records.emplace_back(1, std::string("with\0nul", 8));
  b.records.emplace_back(0, "");
  ASSERT_TRUE(storage_->Write(b, true).ok());
  std::string rec;
  ASSERT_TRUE(storage_->Get(5, &rec).ok());
  EXPECT_EQ("five", rec);
  ASSERT_TRUE(storage_->Get(1, &rec).ok());
  EXPECT_EQ(std::string("with\0nul", 8), rec);
  ASSERT_TRUE(storage_->Get(0, &rec).ok());
  EXPECT_EQ("", rec);
  EXPECT_TRUE(storage_->Get(2, &rec).IsNotFound());

  LogWriteBatch b2;
  b2.records.emplace_back(5, "FIVE");
  ASSERT_TRUE(storage_->Write(b2, false).ok());
  ASSERT_TRUE(storage_->Get(5, &rec).ok());
  EXPECT_EQ("FIVE", rec);
}

TEST_F(LevelDbLogStorageTest, MaxMinIdsAreNumericOrder) {
  Open();
  LogWriteBatch b;
  // Values whose little-endian or decimal order differs from numeric order.
  for (uint64_t id : {256ull, 1ull, 255ull, 65536ull, 0x0100000000000000ull, 2ull}) {
    b.records.emplace_back(id, std::to_string(id));
  }
  ASSERT_TRUE(storage_->Write(b, true).ok());
  uint64_t max = 0, min = 0;
  ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  EXPECT_EQ(0x0100000000000000ull, max);
  EXPECT_EQ(1u, min);
  // Variables never count as records.
  ASSERT_TRUE(storage_->SetVariable("zzz", "v", true).ok());
  // The bounds survive a reopen (they are scanned from disk, not remembered).
  Open();
  ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  EXPECT_EQ(0x0100000000000000ull, max);
  EXPECT_EQ(1u, min);
}

TEST_F(LevelDbLogStorageTest, Variables) {
  Open();
  ASSERT_TRUE(storage_->SetVariable("promise", "p1", true).ok());
  ASSERT_TRUE(storage_->SetVariable("membership", "m1", false).ok());
  std::string v;
  ASSERT_TRUE(storage_->GetVariable("promise", &v).ok());
  EXPECT_EQ("p1", v);
  ASSERT_TRUE(storage_->SetVariable("promise", "p2", true).ok());
  ASSERT_TRUE(storage_->GetVariable("promise", &v).ok());
  EXPECT_EQ("p2", v);
  ASSERT_TRUE(storage_->GetVariable("membership", &v).ok());
  EXPECT_EQ("m1", v);
  EXPECT_TRUE(storage_->GetVariable("prom", &v).IsNotFound());
  EXPECT_TRUE(storage_->SetVariable("", "x", true).IsInvalidArgument());
  uint64_t id;
  EXPECT_TRUE(storage_->GetMaxInstanceId(&id).IsNotFound());
}

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

TEST_F(LevelDbLogStorageTest, BatchIsAtomic) {
  Open();
  // A batch with an invalid part changes nothing.
  LogWriteBatch bad = Records(0, 10);
  bad.variables.emplace_back("ok", "1");
  bad.variables.emplace_back("", "2");
  EXPECT_TRUE(storage_->Write(bad, true).IsInvalidArgument());
  std::string v;
  EXPECT_TRUE(storage_->Get(0, &v).IsNotFound());
  EXPECT_TRUE(storage_->GetVariable("ok", &v).IsNotFound());
  uint64_t id;
  EXPECT_TRUE(storage_->GetMaxInstanceId(&id).IsNotFound());

  // A crash in the middle of a sync batch leaves all or nothing: a child
  // writes many large batches and is killed at a random point.
  storage_.reset();
  int fds[2];
  ASSERT_EQ(0, pipe(fds));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    std::unique_ptr<LogStorage> st;
    if (!OpenLevelDbLogStorage(dir_, options_, &st).ok()) _exit(1);
    for (uint64_t round = 0;; ++round) {
      if (round == 50 && write(fds[1], "x", 1) != 1) _exit(3);  // well under way
      LogWriteBatch b;
      for (uint64_t i = 0; i < 20; ++i) {
        b.records.emplace_back(round * 20 + i, std::string(4000, static_cast<char>('a' + i)));
      }
      b.variables.emplace_back("round", std::to_string(round));
      if (!st->Write(b, false).ok()) _exit(2);
    }
  }
  close(fds[1]);
  char c;
  ASSERT_EQ(1, read(fds[0], &c, 1)) << "the child failed before writing";
  close(fds[0]);
  usleep(50 * 1000);  // let it get into later batches; any point is fine
  kill(pid, SIGKILL);
  int wstatus = 0;
  ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
  ASSERT_TRUE(WIFSIGNALED(wstatus)) << "child exited early with " << WEXITSTATUS(wstatus);
  Open();
  // Records 0 .. 20*(round+1)-1 exist, nothing after: whole batches only.
  std::string round_text;
  ASSERT_TRUE(storage_->GetVariable("round", &round_text).ok());
  const uint64_t rounds = std::stoull(round_text) + 1;
  uint64_t max = 0;
  ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
  EXPECT_EQ(rounds * 20 - 1, max);
  for (uint64_t i = 0; i < rounds * 20; ++i) {
    std::string rec;
    ASSERT_TRUE(storage_->Get(i, &rec).ok()) << i;
    ASSERT_EQ(std::string(4000, static_cast<char>('a' + i % 20)), rec);
  }
}

TEST_F(LevelDbLogStorageTest, CorruptedRecordIsCorruption) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 5), true).ok());
  ASSERT_TRUE(storage_->SetVariable("promise", "p", true).ok());
  storage_.reset();

  std::string raw = GetRaw(leveldb_log::RecordKey(3));
  raw[raw.size() - 1] ^= 0x20;  // one flipped bit in the payload
  PutRaw(leveldb_log::RecordKey(3), raw);
  std::string var = GetRaw(leveldb_log::VariableKey("promise"));
  var[0] ^= 1;  // a flipped bit in the checksum
  PutRaw(leveldb_log::VariableKey("promise"), var);

  Open();
  std::string rec = "untouched";
  Status s = storage_->Get(3, &rec);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("instance 3")) << s.message();
  EXPECT_EQ("untouched", rec);
  s = storage_->GetVariable("promise", &rec);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("promise")) << s.message();
  EXPECT_EQ("untouched", rec);
  // Its neighbours are intact.
  ASSERT_TRUE(storage_->Get(2, &rec).ok());
  EXPECT_EQ("rec-2", rec);
}

TEST_F(LevelDbLogStorageTest, RecordMovedUnderAnotherKeyIsCorruption) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 5), true).ok());
  storage_.reset();
  PutRaw(leveldb_log::RecordKey(4), GetRaw(leveldb_log::RecordKey(1)));
  Open();
  std::string rec;
  EXPECT_TRUE(storage_->Get(4, &rec).IsCorruption());
  EXPECT_TRUE(storage_->Get(1, &rec).ok());
}

TEST_F(LevelDbLogStorageTest, TruncatedValueIsCorruption) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 3), true).ok());
  ASSERT_TRUE(storage_->SetVariable("v", "value", true).ok());
  storage_.reset();
  std::string raw = GetRaw(leveldb_log::RecordKey(1));
  PutRaw(leveldb_log::RecordKey(1), raw.substr(0, raw.size() - 2));  // payload cut short
  PutRaw(leveldb_log::RecordKey(2), raw.substr(0, 2));               // even the crc is cut
  PutRaw(leveldb_log::VariableKey("v"), "");
  Open();
  std::string rec = "untouched";
  Status s = storage_->Get(1, &rec);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("instance 1")) << s.message();
  s = storage_->Get(2, &rec);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("instance 2")) << s.message();
  s = storage_->GetVariable("v", &rec);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_EQ("untouched", rec);
}

TEST_F(LevelDbLogStorageTest, ReopenKeepsData) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(10, 20), false).ok());
  ASSERT_TRUE(storage_->SetVariable("promise", "p", false).ok());
  Open();  // closes, then reopens
  std::string rec;
  for (uint64_t i = 10; i < 20; ++i) {
    ASSERT_TRUE(storage_->Get(i, &rec).ok()) << i;
    EXPECT_EQ("rec-" + std::to_string(i), rec);
  }
  ASSERT_TRUE(storage_->GetVariable("promise", &rec).ok());
  EXPECT_EQ("p", rec);
  uint64_t min = 0;
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  EXPECT_EQ(10u, min);
}

// A child writes with sync=true, reports each acknowledged write over a pipe,
// and dies without closing the database; the parent finds every acknowledged
// record.
void CrashAfterSyncedWrites(const std::string& dir, const LevelDbLogOptions& options,
                            bool sigkill, uint64_t* acked) {
  int fds[2];
  ASSERT_EQ(0, pipe(fds));
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    std::unique_ptr<LogStorage> st;
    if (!OpenLevelDbLogStorage(dir, options, &st).ok()) _exit(1);
    for (uint64_t i = 0; i < (sigkill ? UINT64_MAX : 50); ++i) {
      LogWriteBatch b;
      b.records.emplace_back(i, "synced-" + std::to_string(i));
      if (!st->Write(b, true).ok()) _exit(2);
      if (write(fds[1], &i, sizeof(i)) != sizeof(i)) _exit(3);
    }
    _exit(0);  // no destructor, no close
  }
  close(fds[1]);
  *acked = 0;
  uint64_t last = 0;
  bool any = false;
  while (true) {
    if (sigkill && any && last >= 20) {
      kill(pid, SIGKILL);
      sigkill = false;  // keep draining what was written before the kill
    }
    uint64_t v;
    ssize_t n = read(fds[0], &v, sizeof(v));
    if (n != sizeof(v)) break;
    last = v;
    any = true;
  }
  close(fds[0]);
  int wstatus = 0;
  ASSERT_EQ(pid, waitpid(pid, &wstatus, 0));
  ASSERT_TRUE(any) << "child wrote nothing; status " << wstatus;
  *acked = last + 1;
}

TEST_F(LevelDbLogStorageTest, ReopenAfterExitWithoutClose) {
  uint64_t acked = 0;
  ASSERT_NO_FATAL_FAILURE(CrashAfterSyncedWrites(dir_, options_, false, &acked));
  EXPECT_EQ(50u, acked);
  Open();
  for (uint64_t i = 0; i < acked; ++i) {
    std::string rec;
    ASSERT_TRUE(storage_->Get(i, &rec).ok()) << i;
    EXPECT_EQ("synced-" + std::to_string(i), rec);
  }
  uint64_t max = 0;
  ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
  EXPECT_EQ(acked - 1, max);
}

TEST_F(LevelDbLogStorageTest, ReopenAfterSigkill) {
  uint64_t acked = 0;
  ASSERT_NO_FATAL_FAILURE(CrashAfterSyncedWrites(dir_, options_, true, &acked));
  ASSERT_GE(acked, 21u);
  Open();
  for (uint64_t i = 0; i < acked; ++i) {
    std::string rec;
    ASSERT_TRUE(storage_->Get(i, &rec).ok()) << i;
    EXPECT_EQ("synced-" + std::to_string(i), rec);
  }
  // And the log is writable after the crash.
  ASSERT_TRUE(storage_->Write(Records(acked + 100, acked + 101), true).ok());
}

TEST_F(LevelDbLogStorageTest, ForeignClusterOrGroupIsRejected) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 1), true).ok());
  storage_.reset();

  LevelDbLogOptions other = options_;
  other.cluster_id = 78;
  std::unique_ptr<LogStorage> st;
  Status s = OpenLevelDbLogStorage(dir_, other, &st);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("cluster 77")) << s.message();
  EXPECT_NE(std::string::npos, s.message().find("cluster 78")) << s.message();
  EXPECT_EQ(nullptr, st);

  other = options_;
  other.group = 4;
  s = OpenLevelDbLogStorage(dir_, other, &st);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("group 3")) << s.message();
  EXPECT_NE(std::string::npos, s.message().find("group 4")) << s.message();
  EXPECT_EQ(nullptr, st);

  // The right identity still opens it, data intact.
  Open();
  std::string rec;
  EXPECT_TRUE(storage_->Get(0, &rec).ok());
}

TEST_F(LevelDbLogStorageTest, LevelDbWithoutMetaIsNotAChorusLog) {
  ASSERT_EQ(0, system(("mkdir -p '" + dir_ + "'").c_str()));
  leveldb::DB* db = nullptr;
  leveldb::Options o;
  o.create_if_missing = true;
  ASSERT_TRUE(leveldb::DB::Open(o, dir_, &db).ok());
  ASSERT_TRUE(db->Put(leveldb::WriteOptions(), "somebody", "else's data").ok());
  delete db;
  std::unique_ptr<LogStorage> st;
  Status s = OpenLevelDbLogStorage(dir_, options_, &st);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("not a chorus log")) << s.message();
  EXPECT_EQ(nullptr, st);
}

TEST_F(LevelDbLogStorageTest, DirWithRandomFilesIsNotAChorusLog) {
  ASSERT_EQ(0, system(("mkdir -p '" + dir_ + "'").c_str()));
  std::ofstream(dir_ + "/notes.txt") << "hello";
  std::unique_ptr<LogStorage> st;
  Status s = OpenLevelDbLogStorage(dir_, options_, &st);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("not a chorus log")) << s.message();
  EXPECT_NE(std::string::npos, s.message().find(dir_)) << s.message();
  EXPECT_EQ(nullptr, st);
  // Nothing was created in it.
  struct stat st_buf;
  EXPECT_NE(0, stat((dir_ + "/CURRENT").c_str(), &st_buf));
}

TEST_F(LevelDbLogStorageTest, MissingWithoutCreateIsInvalidArgument) {
  options_.create_if_missing = false;
  std::unique_ptr<LogStorage> st;
  Status s = OpenLevelDbLogStorage(dir_, options_, &st);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(dir_)) << s.message();
  EXPECT_NE(std::string::npos, s.message().find("create_if_missing")) << s.message();
  EXPECT_EQ(nullptr, st);
  // Nothing was created.
  struct stat st_buf;
  EXPECT_NE(0, stat(dir_.c_str(), &st_buf));
  // An empty directory (e.g. an unmounted volume's mount point) is no log either.
  ASSERT_EQ(0, system(("mkdir -p '" + dir_ + "'").c_str()));
  s = OpenLevelDbLogStorage(dir_, options_, &st);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("missing or empty")) << s.message();
  EXPECT_EQ(nullptr, st);
}

TEST_F(LevelDbLogStorageTest, UnwritableDirFails) {
  const std::string file = root_ + "/plain_file";
  std::ofstream(file) << "x";
  std::unique_ptr<LogStorage> st;
  Status s = OpenLevelDbLogStorage(file + "/g0", options_, &st);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find(file)) << s.message();
  EXPECT_EQ(nullptr, st);
  // A regular file where the log directory itself should be.
  s = OpenLevelDbLogStorage(file, options_, &st);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(nullptr, st);
}

TEST_F(LevelDbLogStorageTest, ConcurrentWritersAndReaders) {
  Open();
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 200;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const uint64_t id = i * kThreads + static_cast<uint64_t>(t);
        LogWriteBatch b;
        b.records.emplace_back(id, "r" + std::to_string(id));
        ASSERT_TRUE(storage_->Write(b, false).ok());
        std::string rec;
        ASSERT_TRUE(storage_->Get(id, &rec).ok());
        ASSERT_EQ("r" + std::to_string(id), rec);
        uint64_t max = 0;
        ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
        ASSERT_GE(max, id);
      }
    });
  }
  for (auto& th : threads) th.join();
  uint64_t max = 0, min = 1;
  ASSERT_TRUE(storage_->GetMaxInstanceId(&max).ok());
  ASSERT_TRUE(storage_->GetMinInstanceId(&min).ok());
  EXPECT_EQ(kThreads * kPerThread - 1, max);
  EXPECT_EQ(0u, min);
}


// ---- Identity of the data dir ----

TEST_F(LevelDbLogStorageTest, AnotherNodesLogIsRejected) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 1), true).ok());
  storage_.reset();
  LevelDbLogOptions other = options_;
  other.node_id = 0x7f0000011f42;  // 127.0.0.1:8002
  std::unique_ptr<LogStorage> st;
  Status s = OpenLevelDbLogStorage(dir_, other, &st);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("127.0.0.1:8001")) << s.message();
  EXPECT_NE(std::string::npos, s.message().find("127.0.0.1:8002")) << s.message();
  EXPECT_NE(std::string::npos, s.message().find("share one history")) << s.message();
  EXPECT_EQ(nullptr, st);
  Open();  // its own node still opens it
}

TEST_F(LevelDbLogStorageTest, VersionOneLogIsUpgradedToRecordTheNode) {
  Open();
  ASSERT_TRUE(storage_->Write(Records(0, 3), true).ok());
  storage_.reset();
  PutRaw(leveldb_log::kMetaKey, leveldb_log::EncodeMetaV1(options_.cluster_id, options_.group));
  Open();  // a log written before node ids were recorded
  std::string rec;
  ASSERT_TRUE(storage_->Get(2, &rec).ok());
  storage_.reset();
  leveldb_log::LogIdentity id;
  id.cluster_id = options_.cluster_id;
  id.group = options_.group;
  id.node_id = options_.node_id;
  EXPECT_EQ(leveldb_log::EncodeMeta(id), GetRaw(leveldb_log::kMetaKey));
  // From now on it belongs to that node.
  LevelDbLogOptions other = options_;
  other.node_id = 0x7f0000011f42;
  std::unique_ptr<LogStorage> st;
  EXPECT_TRUE(OpenLevelDbLogStorage(dir_, other, &st).IsInvalidArgument());
}

}  // namespace
}  // namespace chorus
