// CheckpointStore: commit (listing and verifying), the manifest's encoding
// and its checks on untrusted input, what Open does with leftovers and
// damage, pins, chunked reads and scratch dirs.
#include "node/checkpoint_store.h"

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "node/fs_util.h"
#include "unittest/support/test_util.h"
#include "utils/crc32c.h"

namespace chorus {
namespace checkpoint_store_test {
namespace {

using testing::TempDir;

constexpr uint64_t kCluster = 5;
constexpr uint32_t kGroup = 3;

class CheckpointStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(Reopen().ok()); }

  Status Reopen() {
    store_.reset();
    return CheckpointStore::Open(dir(), kCluster, kGroup, &logger_, &store_);
  }
  std::string dir() const { return tmp_.path() + "/ck/g3"; }

  // Writes `files` (path -> content) into a fresh staging dir.
  std::string Stage(const std::vector<std::pair<std::string, std::string>>& files) {
    std::string staging;
    EXPECT_TRUE(store_->BeginStaging(&staging).ok());
    for (const auto& [path, content] : files) {
      const std::string full = staging + "/" + path;
      EXPECT_TRUE(CreateDirs(full.substr(0, full.rfind('/'))).ok());
      EXPECT_TRUE(WriteWholeFile(full, content).ok());
    }
    return staging;
  }

  // Commits a checkpoint of `instance` with a file per state machine 1 and 2.
  CheckpointManifest CommitSimple(uint64_t instance) {
    CheckpointManifest m;
    m.instance = instance;
    m.chain_checksum = static_cast<uint32_t>(instance * 7);
    const std::string staging = Stage({{"sm1/data", "one@" + std::to_string(instance)},
                                       {"sm2/sub/x", "two"}});
    EXPECT_TRUE(store_->Commit(staging, &m).ok());
    return m;
  }

  TempDir tmp_;
  Logger logger_{nullptr, LogLevel::kNone};
  std::unique_ptr<CheckpointStore> store_;
};

TEST_F(CheckpointStoreTest, CommitListsChecksumsAndPublishesTheStagingDir) {
  CheckpointManifest none;
  EXPECT_TRUE(store_->Newest(&none).IsNotFound());
  CheckpointManifest m;
  m.instance = 100;
  m.chain_checksum = 77;
  const std::string staging = Stage({{"sm2/b", "bbbb"}, {"sm1/z/y", "yy"}, {"sm1/a", "a"}});
  ASSERT_TRUE(store_->Commit(staging, &m).ok());
  EXPECT_FALSE(PathExists(staging));
  EXPECT_EQ(m.cluster_id, kCluster);
  EXPECT_EQ(m.group, kGroup);
  ASSERT_EQ(m.files.size(), 3u);
  EXPECT_EQ(m.files[0].path, "sm1/a");
  EXPECT_EQ(m.files[1].path, "sm1/z/y");
  EXPECT_EQ(m.files[2].path, "sm2/b");
  EXPECT_EQ(m.files[2].size, 4u);
  EXPECT_EQ(m.files[2].crc, crc32c::Value(std::string("bbbb")));
  EXPECT_EQ(m.total_bytes(), 7u);
  EXPECT_TRUE(PathExists(store_->DirOf(100) + "/MANIFEST"));
  EXPECT_EQ(store_->commits(), 1u);

  ASSERT_TRUE(Reopen().ok());
  CheckpointManifest back;
  ASSERT_TRUE(store_->Newest(&back).ok());
  EXPECT_EQ(back.instance, 100u);
  EXPECT_EQ(back.chain_checksum, 77u);
  EXPECT_EQ(back.files, m.files);
}

TEST_F(CheckpointStoreTest, ManifestRoundTripsAndRejectsDamage) {
  CheckpointManifest m;
  m.cluster_id = 1;
  m.group = 2;
  m.instance = 3;
  m.chain_checksum = 4;
  m.files = {{"sm1/a", 10, 11}, {"sm1/b/c", 12, 13}};
  const std::string bytes = m.Encode();
  CheckpointManifest back;
  ASSERT_TRUE(CheckpointManifest::Decode(bytes, &back).ok());
  EXPECT_EQ(back.files, m.files);
  EXPECT_EQ(back.instance, 3u);
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] ^= 0x40;
    EXPECT_TRUE(CheckpointManifest::Decode(bad, &back).IsCorruption()) << "byte " << i;
  }
  EXPECT_TRUE(CheckpointManifest::Decode(bytes.substr(0, bytes.size() - 1), &back).IsCorruption());
  EXPECT_TRUE(CheckpointManifest::Decode("", &back).IsCorruption());
  // Paths a peer might send to escape the directory, and disorder: each is
  // refused even with a valid crc.
  for (const char* path :
       {"../x", "/etc/passwd", "sm1/../../x", "sm1//x", "sm1/./x", "top", "sm0/x", "smx/y", "sm1"}) {
    CheckpointManifest evil = m;
    evil.files = {{path, 1, 1}};
    EXPECT_TRUE(CheckpointManifest::Decode(evil.Encode(), &back).IsCorruption()) << path;
  }
  CheckpointManifest unsorted = m;
  unsorted.files = {{"sm1/b", 1, 1}, {"sm1/a", 1, 1}};
  EXPECT_TRUE(CheckpointManifest::Decode(unsorted.Encode(), &back).IsCorruption());
  CheckpointManifest twice = m;
  twice.files = {{"sm1/a", 1, 1}, {"sm1/a", 1, 1}};
  EXPECT_TRUE(CheckpointManifest::Decode(twice.Encode(), &back).IsCorruption());
}

TEST_F(CheckpointStoreTest, CommitOfAReceivedCheckpointVerifiesEveryFile) {
  CheckpointManifest sent;
  sent.instance = 50;
  sent.files = {{"sm1/a", 3, crc32c::Value(std::string("abc"))},
                {"sm1/b", 2, crc32c::Value(std::string("de"))}};
  // One flipped byte.
  CheckpointManifest m = sent;
  std::string staging = Stage({{"sm1/a", "abc"}, {"sm1/b", "dX"}});
  Status s = store_->Commit(staging, &m);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("sm1/b"), std::string::npos) << s.ToString();
  EXPECT_FALSE(PathExists(staging));
  CheckpointManifest none;
  EXPECT_TRUE(store_->Newest(&none).IsNotFound());
  // A file too many.
  m = sent;
  staging = Stage({{"sm1/a", "abc"}, {"sm1/b", "de"}, {"sm1/c", "x"}});
  EXPECT_TRUE(store_->Commit(staging, &m).IsCorruption());
  // A file missing.
  m = sent;
  staging = Stage({{"sm1/a", "abc"}});
  EXPECT_TRUE(store_->Commit(staging, &m).IsCorruption());
  // Exactly right.
  m = sent;
  staging = Stage({{"sm1/a", "abc"}, {"sm1/b", "de"}});
  ASSERT_TRUE(store_->Commit(staging, &m).ok());
  EXPECT_EQ(store_->newest_instance(), 50u);
}

TEST_F(CheckpointStoreTest, CommitRefusesForeignCheckpointsAndStrayFiles) {
  CheckpointManifest m;
  m.instance = 9;
  m.cluster_id = kCluster + 1;
  std::string staging = Stage({{"sm1/a", "a"}});
  EXPECT_TRUE(store_->Commit(staging, &m).IsInvalidArgument());
  EXPECT_FALSE(PathExists(staging));
  m = CheckpointManifest();
  m.instance = 9;
  staging = Stage({{"stray", "a"}});
  EXPECT_TRUE(store_->Commit(staging, &m).IsInvalidArgument());
  m = CheckpointManifest();
  m.instance = 9;
  staging = Stage({{"sm1/a", "a"}});
  ASSERT_EQ(symlink("/etc/hostname", (staging + "/sm1/link").c_str()), 0);
  EXPECT_TRUE(store_->Commit(staging, &m).IsInvalidArgument());
  EXPECT_EQ(store_->newest_instance(), 0u);
}

TEST_F(CheckpointStoreTest, ANewerCheckpointReplacesOlderOnesUnlessPinned) {
  CommitSimple(10);
  ASSERT_TRUE(store_->Pin(10).ok());
  CommitSimple(20);
  EXPECT_TRUE(PathExists(store_->DirOf(10)));  // pinned: being sent
  CommitSimple(30);
  EXPECT_FALSE(PathExists(store_->DirOf(20)));
  EXPECT_TRUE(PathExists(store_->DirOf(10)));
  CheckpointManifest m;
  EXPECT_TRUE(store_->Get(10, &m).ok());
  store_->Unpin(10);
  EXPECT_FALSE(PathExists(store_->DirOf(10)));
  EXPECT_TRUE(store_->Get(10, &m).IsNotFound());
  EXPECT_TRUE(store_->Pin(10).IsNotFound());
  // The newest stays when unpinned.
  ASSERT_TRUE(store_->Pin(30).ok());
  store_->Unpin(30);
  EXPECT_TRUE(PathExists(store_->DirOf(30)));
  EXPECT_EQ(store_->newest_instance(), 30u);
}

TEST_F(CheckpointStoreTest, ARepeatedOrOlderCommitKeepsTheStoredOne) {
  const CheckpointManifest first = CommitSimple(40);
  CheckpointManifest again;
  again.instance = 40;
  const std::string staging = Stage({{"sm1/other", "zzz"}});
  ASSERT_TRUE(store_->Commit(staging, &again).ok());
  EXPECT_FALSE(PathExists(staging));
  EXPECT_EQ(again.files, first.files);
  CheckpointManifest older;
  older.instance = 30;
  ASSERT_TRUE(store_->Commit(Stage({{"sm1/a", "a"}}), &older).ok());
  EXPECT_EQ(store_->newest_instance(), 40u);
  EXPECT_FALSE(PathExists(store_->DirOf(30)));
}

TEST_F(CheckpointStoreTest, OpenDeletesLeftoversAndSkipsDamagedCheckpoints) {
  CommitSimple(10);
  ASSERT_TRUE(store_->Pin(10).ok());
  CommitSimple(20);
  store_.reset();  // (the pin dies with the process)
  // A crash mid-commit and mid-load leaves these.
  ASSERT_TRUE(CreateDirs(dir() + "/staging-7-abc/sm1").ok());
  ASSERT_TRUE(CreateDirs(dir() + "/scratch-8-def").ok());
  // The newest one's manifest is damaged.
  std::string manifest;
  ASSERT_TRUE(ReadWholeFile(dir() + "/20/MANIFEST", &manifest).ok());
  manifest[manifest.size() / 2] ^= 1;
  ASSERT_TRUE(WriteWholeFile(dir() + "/20/MANIFEST", manifest).ok());
  ASSERT_TRUE(Reopen().ok());
  EXPECT_FALSE(PathExists(dir() + "/staging-7-abc"));
  EXPECT_FALSE(PathExists(dir() + "/scratch-8-def"));
  CheckpointManifest m;
  ASSERT_TRUE(store_->Newest(&m).ok());
  EXPECT_EQ(m.instance, 10u);  // the older one, kept
  EXPECT_TRUE(PathExists(dir() + "/20"));
  // A complete newer one replaces both.
  CommitSimple(30);
  EXPECT_FALSE(PathExists(dir() + "/20"));
  EXPECT_FALSE(PathExists(dir() + "/10"));
  // A missing file, a short file and a foreign manifest are damage too.
  CommitSimple(40);
  CommitSimple(50);  // 40 is gone: make three to damage
  ASSERT_TRUE(store_->Pin(50).ok());
  store_.reset();
  ASSERT_EQ(unlink((dir() + "/50/sm2/sub/x").c_str()), 0);
  ASSERT_TRUE(Reopen().ok());
  EXPECT_EQ(store_->newest_instance(), 0u) << "50 misses a file and is the only one";
  store_.reset();
  ASSERT_TRUE(CheckpointStore::Open(dir(), kCluster + 1, kGroup, &logger_, &store_).ok());
  EXPECT_EQ(store_->newest_instance(), 0u);
}

TEST_F(CheckpointStoreTest, OpenFailsClearlyOnAPathThatIsNoDirectory) {
  ASSERT_TRUE(WriteWholeFile(tmp_.path() + "/file", "x").ok());
  std::unique_ptr<CheckpointStore> s;
  Status st = CheckpointStore::Open(tmp_.path() + "/file/g0", 1, 0, &logger_, &s);
  EXPECT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_TRUE(CheckpointStore::Open("", 1, 0, &logger_, &s).IsInvalidArgument());
}

TEST_F(CheckpointStoreTest, ReadChunkServesTheFilesConcatenated) {
  CheckpointManifest m;
  m.instance = 5;
  ASSERT_TRUE(store_->Commit(Stage({{"sm1/a", "0123"}, {"sm1/b", ""}, {"sm2/c", "456789"}}), &m).ok());
  ASSERT_TRUE(store_->Pin(5).ok());
  std::string all;
  std::string chunk;
  for (uint64_t offset = 0; offset < m.total_bytes(); offset += chunk.size()) {
    ASSERT_TRUE(store_->ReadChunk(m, offset, 3, &chunk).ok());
    ASSERT_FALSE(chunk.empty());
    EXPECT_LE(chunk.size(), 3u);
    all += chunk;
  }
  EXPECT_EQ(all, "0123456789");
  ASSERT_TRUE(store_->ReadChunk(m, 2, 100, &chunk).ok());
  EXPECT_EQ(chunk, "23456789");
  ASSERT_TRUE(store_->ReadChunk(m, 10, 100, &chunk).ok());
  EXPECT_TRUE(chunk.empty());
  EXPECT_TRUE(store_->ReadChunk(m, 11, 100, &chunk).IsInvalidArgument());
  store_->Unpin(5);
}

TEST_F(CheckpointStoreTest, ScratchHoldsLinksOfOneStateMachinesFiles) {
  const CheckpointManifest m = CommitSimple(60);
  std::string scratch;
  ASSERT_TRUE(store_->MakeScratch(m, 2, &scratch).ok());
  std::vector<std::string> files;
  ASSERT_TRUE(ListFilesRecursive(scratch, &files, nullptr).ok());
  ASSERT_EQ(files, std::vector<std::string>{"sub/x"});
  // Moving a file away (what a state machine may do) leaves the store whole.
  ASSERT_EQ(rename((scratch + "/sub/x").c_str(), (tmp_.path() + "/moved").c_str()), 0);
  EXPECT_TRUE(PathExists(store_->DirOf(60) + "/sm2/sub/x"));
  ASSERT_TRUE(RemoveTree(scratch).ok());
  // A state machine with no files gets an empty dir.
  ASSERT_TRUE(store_->MakeScratch(m, 9, &scratch).ok());
  ASSERT_TRUE(ListFilesRecursive(scratch, &files, nullptr).ok());
  EXPECT_TRUE(files.empty());
  ASSERT_TRUE(RemoveTree(scratch).ok());
  // A stored file whose bytes rotted (same size) is caught.
  ASSERT_TRUE(WriteWholeFile(store_->DirOf(60) + "/sm1/data", "ONE@60").ok());
  Status s = store_->MakeScratch(m, 1, &scratch);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  std::vector<std::string> left;
  ASSERT_TRUE(ListDir(dir(), &left).ok());
  EXPECT_EQ(left, std::vector<std::string>{"60"});  // no scratch left behind
  CheckpointManifest gone = m;
  gone.instance = 61;
  EXPECT_TRUE(store_->MakeScratch(gone, 1, &scratch).IsNotFound());
}

}  // namespace
}  // namespace checkpoint_store_test
}  // namespace chorus
