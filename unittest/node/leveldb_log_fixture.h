// The fixture of the leveldb log storage tests (leveldb_log_storage_test.cc,
// leveldb_log_trim_test.cc): a fresh log directory per test and helpers to
// open, write and reopen it.
#ifndef CHORUS_UNITTEST_NODE_LEVELDB_LOG_FIXTURE_H_
#define CHORUS_UNITTEST_NODE_LEVELDB_LOG_FIXTURE_H_

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


}  // namespace chorus

#endif  // CHORUS_UNITTEST_NODE_LEVELDB_LOG_FIXTURE_H_
