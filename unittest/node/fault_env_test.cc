// FaultEnv (unittest/support/fault_env.h) itself: what a simulated crash
// keeps and undoes, and the planned I/O errors.
#include "unittest/support/fault_env.h"

#include <sys/stat.h>

#include <memory>
#include <string>

#include <leveldb/env.h>
#include <gtest/gtest.h>

#include "node/fs_util.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace fault_env_test {
namespace {

using testing::FaultEnv;

class FaultEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = root_.path() + "/db";
    ASSERT_TRUE(CreateDirs(dir_).ok());
    env_ = std::make_unique<FaultEnv>(leveldb::Env::Default(), root_.path() + "/trash", 7);
  }
  // Writes `synced` then `unsynced` into a new file `name`, syncing between.
  void WriteFile(const std::string& name, const std::string& synced, const std::string& unsynced) {
    leveldb::WritableFile* f = nullptr;
    ASSERT_TRUE(env_->NewWritableFile(dir_ + "/" + name, &f).ok());
    ASSERT_TRUE(f->Append(synced).ok());
    ASSERT_TRUE(f->Sync().ok());
    ASSERT_TRUE(f->Append(unsynced).ok());
    ASSERT_TRUE(f->Close().ok());
    delete f;
  }
  std::string Read(const std::string& name) {
    std::string data;
    Status s = ReadWholeFile(dir_ + "/" + name, &data);
    return s.ok() ? data : "<" + s.ToString() + ">";
  }
  bool Exists(const std::string& name) { return PathExists(dir_ + "/" + name); }

  testing::TempDir root_;
  std::string dir_;
  std::unique_ptr<FaultEnv> env_;
};

TEST_F(FaultEnvTest, ACrashKeepsSyncedBytesAndUndoesAnUnsyncedCreate) {
  WriteFile("000002.log", "synced", "lost");
  WriteFile("MANIFEST-000001", "m", "");  // its sync syncs the directory
  EXPECT_EQ("syncedlost", Read("000002.log"));  // written through
  FaultEnv::CrashReport r;
  ASSERT_TRUE(env_->SimulateCrash(FaultEnv::Tear::kNone, &r).ok());
  EXPECT_EQ("synced", Read("000002.log"));  // created before the directory sync
  EXPECT_EQ("m", Read("MANIFEST-000001"));
  EXPECT_EQ(4u, r.bytes_dropped);

  WriteFile("000003.log", "synced", "");  // no directory sync since
  ASSERT_TRUE(env_->SimulateCrash(FaultEnv::Tear::kNone, &r).ok());
  EXPECT_FALSE(Exists("000003.log"));
  EXPECT_EQ(1u, r.names_undone);
}

TEST_F(FaultEnvTest, ACrashUndoesUnsyncedRenamesAndRemovesUntilTheDirectoryIsSynced) {
  WriteFile("CURRENT", "old", "");
  WriteFile("keep", "k", "");
  ASSERT_TRUE(env_->SyncDir(dir_).ok());
  WriteFile("dbtmp", "new", "");
  ASSERT_TRUE(env_->RenameFile(dir_ + "/dbtmp", dir_ + "/CURRENT").ok());
  ASSERT_TRUE(env_->RemoveFile(dir_ + "/keep").ok());
  EXPECT_EQ("new", Read("CURRENT"));
  EXPECT_FALSE(Exists("keep"));
  ASSERT_TRUE(env_->SimulateCrash(FaultEnv::Tear::kNone, nullptr).ok());
  EXPECT_EQ("old", Read("CURRENT"));  // the replaced file is back
  EXPECT_EQ("k", Read("keep"));
  EXPECT_FALSE(Exists("dbtmp"));  // its creation was never durable either

  WriteFile("dbtmp", "new", "");
  ASSERT_TRUE(env_->RenameFile(dir_ + "/dbtmp", dir_ + "/CURRENT").ok());
  ASSERT_TRUE(env_->RemoveFile(dir_ + "/keep").ok());
  ASSERT_TRUE(env_->SyncDir(dir_).ok());
  ASSERT_TRUE(env_->SimulateCrash(FaultEnv::Tear::kNone, nullptr).ok());
  EXPECT_EQ("new", Read("CURRENT"));
  EXPECT_FALSE(Exists("keep"));
}

TEST_F(FaultEnvTest, TearsKeepAPrefixOrTheSizeWithZeros) {
  const std::string unsynced(1000, 'u');
  bool some_prefix = false, some_zeros = false;
  for (int i = 0; i < 20; ++i) {
    const std::string name = std::to_string(i);
    WriteFile(name, "s", unsynced);
    ASSERT_TRUE(env_->SyncDir(dir_).ok());
    ASSERT_TRUE(env_->SimulateCrash(
        i % 2 == 0 ? FaultEnv::Tear::kPrefix : FaultEnv::Tear::kZeroTail, nullptr).ok());
    const std::string got = Read(name);
    ASSERT_EQ('s', got[0]);
    if (i % 2 == 0) {
      ASSERT_LE(got.size(), 1001u);
      EXPECT_EQ(std::string(got.size() - 1, 'u'), got.substr(1));
      some_prefix = some_prefix || (got.size() > 1 && got.size() < 1001);
    } else {
      ASSERT_EQ(1001u, got.size());  // the size got there, not all the data
      const size_t zeros = got.find('\0');
      ASSERT_NE(std::string::npos, zeros);
      EXPECT_EQ(std::string(zeros - 1, 'u'), got.substr(1, zeros - 1));
      EXPECT_EQ(std::string(1001 - zeros, '\0'), got.substr(zeros));
      some_zeros = true;
    }
  }
  EXPECT_TRUE(some_prefix);
  EXPECT_TRUE(some_zeros);
}

TEST_F(FaultEnvTest, ACrashRefusesWhileAFileIsOpen) {
  leveldb::WritableFile* f = nullptr;
  ASSERT_TRUE(env_->NewWritableFile(dir_ + "/open", &f).ok());
  EXPECT_TRUE(env_->SimulateCrash(FaultEnv::Tear::kNone, nullptr).IsInvalidArgument());
  delete f;
  EXPECT_TRUE(env_->SimulateCrash(FaultEnv::Tear::kNone, nullptr).ok());
}

TEST_F(FaultEnvTest, PlannedFailuresFailTheChosenOperationOnceOrFromThenOn) {
  leveldb::WritableFile* f = nullptr;
  ASSERT_TRUE(env_->NewWritableFile(dir_ + "/f.log", &f).ok());
  env_->FailAfter(1, FaultEnv::kAppend, /*sticky=*/false, ".log");
  EXPECT_TRUE(f->Append("a").ok());
  EXPECT_TRUE(f->Append("b").IsIOError());
  EXPECT_TRUE(f->Append("c").ok());
  EXPECT_TRUE(f->Sync().ok());
  env_->FailAfter(0, FaultEnv::kSync, /*sticky=*/true);
  EXPECT_TRUE(f->Sync().IsIOError());
  EXPECT_TRUE(f->Sync().IsIOError());
  EXPECT_TRUE(f->Append("d").ok());  // not a planned kind
  EXPECT_EQ(3u, env_->injected_failures());
  delete f;
  ASSERT_TRUE(env_->SimulateCrash(FaultEnv::Tear::kNone, nullptr).ok());
  // Only the synced "ac" stays; the failed append wrote nothing.
  EXPECT_FALSE(Exists("f.log"));  // never covered by a directory sync
}

}  // namespace
}  // namespace fault_env_test
}  // namespace chorus
