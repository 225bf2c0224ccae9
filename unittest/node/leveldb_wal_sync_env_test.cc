// WalSyncEnv (node/leveldb_wal_sync_env.h) over a FaultEnv: what a power
// loss keeps of the write-ahead logs it wraps. The file calls mimic leveldb
// 1.23's: at a memtable switch it creates the new log, then deletes the old
// log's file object without Close() or Sync(); at DB close it deletes the
// live one the same way.
#include "node/leveldb_wal_sync_env.h"

#include <memory>
#include <string>

#include <leveldb/env.h>
#include <gtest/gtest.h>

#include "node/fs_util.h"
#include "unittest/support/fault_env.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace leveldb_wal_sync_env_test {
namespace {

using testing::FaultEnv;

class WalSyncEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = root_.path() + "/db";
    ASSERT_TRUE(CreateDirs(dir_).ok());
    fault_ = std::make_unique<FaultEnv>(leveldb::Env::Default(), root_.path() + "/trash", 11);
    env_ = std::make_unique<WalSyncEnv>(
        fault_.get(), [this](const std::string& dir) {
          const Status s = fault_->SyncDir(dir);
          return s.ok() ? leveldb::Status::OK() : leveldb::Status::IOError(s.ToString());
        });
  }

  // Opens `name` in the database directory through the WalSyncEnv.
  std::unique_ptr<leveldb::WritableFile> NewFile(const std::string& name) {
    leveldb::WritableFile* f = nullptr;
    const leveldb::Status s = env_->NewWritableFile(dir_ + "/" + name, &f);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return std::unique_ptr<leveldb::WritableFile>(f);
  }
  std::string Read(const std::string& name) {
    std::string data;
    Status s = ReadWholeFile(dir_ + "/" + name, &data);
    return s.ok() ? data : "<" + s.ToString() + ">";
  }
  void Crash() { ASSERT_TRUE(fault_->SimulateCrash(FaultEnv::Tear::kNone, nullptr).ok()); }

  testing::TempDir root_;
  std::string dir_;
  std::unique_ptr<FaultEnv> fault_;
  std::unique_ptr<WalSyncEnv> env_;
};

// The cause of a node that could not reopen after a power loss ("chosen
// instance 38 follows a gap at 37"): the unsynced tail of the old log was
// lost while a synced write in the next log survived.
TEST_F(WalSyncEnvTest, ASwitchMakesTheOldLogDurableBeforeTheNewOneIsWritten) {
  std::unique_ptr<leveldb::WritableFile> old_log = NewFile("000003.log");
  ASSERT_TRUE(old_log->Append("synced-").ok());
  ASSERT_TRUE(old_log->Sync().ok());
  ASSERT_TRUE(old_log->Append("unsynced").ok());
  ASSERT_TRUE(old_log->Flush().ok());
  std::unique_ptr<leveldb::WritableFile> new_log = NewFile("000004.log");
  ASSERT_TRUE(new_log);
  old_log.reset();  // no Close, no Sync: leveldb 1.23 at a switch
  ASSERT_TRUE(new_log->Append("later").ok());
  ASSERT_TRUE(new_log->Sync().ok());
  new_log.reset();
  Crash();
  EXPECT_EQ("synced-unsynced", Read("000003.log"));
  EXPECT_EQ("later", Read("000004.log"));
}

// Even a log never synced before the switch keeps its name and its bytes.
TEST_F(WalSyncEnvTest, ASwitchAfterOnlyUnsyncedWritesKeepsTheOldLogAndItsName) {
  std::unique_ptr<leveldb::WritableFile> old_log = NewFile("000003.log");
  ASSERT_TRUE(old_log->Append("unsynced").ok());
  std::unique_ptr<leveldb::WritableFile> new_log = NewFile("000004.log");
  ASSERT_TRUE(new_log);
  old_log.reset();
  new_log.reset();
  Crash();
  EXPECT_EQ("unsynced", Read("000003.log"));
  EXPECT_FALSE(PathExists(dir_ + "/000004.log"));  // created, never synced
}

// No switch, no extra sync: a log deleted when the database goes away keeps
// only what was synced, as at a crash (the crash tests stay meaningful).
TEST_F(WalSyncEnvTest, TheLastLogKeepsOnlyItsSyncedBytes) {
  std::unique_ptr<leveldb::WritableFile> log = NewFile("000003.log");
  ASSERT_TRUE(log->Append("synced-").ok());
  ASSERT_TRUE(log->Sync().ok());
  ASSERT_TRUE(log->Append("unsynced").ok());
  // A table or a MANIFEST is no log: creating one syncs nothing.
  std::unique_ptr<leveldb::WritableFile> table = NewFile("000005.ldb");
  ASSERT_TRUE(table);
  table.reset();
  log.reset();
  Crash();
  EXPECT_EQ("synced-", Read("000003.log"));
}

TEST_F(WalSyncEnvTest, ALogClosedExplicitlyIsSynced) {
  std::unique_ptr<leveldb::WritableFile> log = NewFile("000003.log");
  ASSERT_TRUE(log->Append("closed").ok());
  ASSERT_TRUE(log->Close().ok());
  log.reset();
  Crash();
  EXPECT_EQ("closed", Read("000003.log"));
}

// A failed sync of the old log fails the switch (leveldb then fails the
// write that wanted it): the new log is never handed out.
TEST_F(WalSyncEnvTest, AFailedSyncOfTheOldLogFailsTheSwitch) {
  std::unique_ptr<leveldb::WritableFile> old_log = NewFile("000003.log");
  ASSERT_TRUE(old_log->Append("unsynced").ok());
  fault_->FailAfter(0, FaultEnv::kSync, /*sticky=*/false);
  leveldb::WritableFile* f = nullptr;
  const leveldb::Status s = env_->NewWritableFile(dir_ + "/000004.log", &f);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(nullptr, f);
  EXPECT_EQ(1u, fault_->injected_failures());
}

}  // namespace
}  // namespace leveldb_wal_sync_env_test
}  // namespace chorus
