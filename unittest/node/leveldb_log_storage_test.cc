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
namespace leveldb_log_storage_test {
namespace {

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
}  // namespace leveldb_log_storage_test
}  // namespace chorus
