#include "sample/kv/kv_store.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "sample/kv/kv_ops.h"

namespace chorus {
namespace kv {
namespace {

namespace fs = std::filesystem;

class KvStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kv_store_test.XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<KvStore> OpenStore(const std::string& name, KvStoreOptions o = {}) {
    o.create_if_missing = true;
    std::unique_ptr<KvStore> s;
    Status st = KvStore::Open(root_ + "/" + name, o, &s);
    EXPECT_TRUE(st.ok()) << st.ToString();
    return s;
  }

  // Executes one request as the value of instance `instance`.
  static std::string Run(KvStore* s, uint64_t instance, RespRequest r, uint32_t batch_index = 0,
                         uint32_t batch_size = 1) {
    WriteOp op;
    EXPECT_EQ(MakeWriteOp(Upper(r[0]), &r, &op), "");
    std::string value;
    EncodeOps({op}, &value);
    ExecuteInfo info;
    info.instance = instance;
    info.batch_index = batch_index;
    info.batch_size = batch_size;
    ExecuteContext ctx;
    EXPECT_TRUE(s->Execute(info, value, &ctx).ok());
    return ctx.output;
  }

  static std::string GetOr(KvStore* s, const std::string& key) {
    std::string v;
    Status st = s->Get(key, &v);
    return st.ok() ? v : st.IsNotFound() ? "<none>" : "<" + st.ToString() + ">";
  }

  // PrepareCheckpoint at `instance` and Write into a fresh dir; returns it.
  std::string MakeCheckpoint(KvStore* s, uint64_t instance, const std::string& name) {
    CheckpointInfo info;
    info.instance = instance;
    std::unique_ptr<CheckpointWriter> w;
    Status st = s->PrepareCheckpoint(info, &w);
    EXPECT_TRUE(st.ok()) << st.ToString();
    const std::string dir = root_ + "/" + name;
    fs::create_directories(dir);
    if (w) {
      EXPECT_TRUE(w->Write(dir).ok());
    }
    return dir;
  }

  std::string root_;
};

TEST_F(KvStoreTest, CommandsAndReplies) {
  auto s = OpenStore("a");
  EXPECT_EQ(Run(s.get(), 0, {"SET", "k", "v"}), "+OK\r\n");
  EXPECT_EQ(Run(s.get(), 1, {"SET", "k", "w", "NX"}), "$-1\r\n");
  EXPECT_EQ(Run(s.get(), 2, {"SET", "x", "w", "XX"}), "$-1\r\n");
  EXPECT_EQ(Run(s.get(), 3, {"SET", "k", "w", "XX"}), "+OK\r\n");
  EXPECT_EQ(Run(s.get(), 4, {"INCR", "n"}), ":1\r\n");
  EXPECT_EQ(Run(s.get(), 5, {"INCRBY", "n", "41"}), ":42\r\n");
  EXPECT_EQ(Run(s.get(), 6, {"INCR", "k"}), "-ERR value is not an integer or out of range\r\n");
  EXPECT_EQ(Run(s.get(), 7, {"SET", "big", "9223372036854775807"}), "+OK\r\n");
  EXPECT_EQ(Run(s.get(), 8, {"INCR", "big"}), "-ERR increment or decrement would overflow\r\n");
  EXPECT_EQ(Run(s.get(), 9, {"MSET", "a", "1", "b", "2"}), "+OK\r\n");
  EXPECT_EQ(Run(s.get(), 10, {"DEL", "a", "b", "nope"}), ":2\r\n");
  EXPECT_EQ(GetOr(s.get(), "k"), "w");
  EXPECT_EQ(GetOr(s.get(), "n"), "42");
  EXPECT_EQ(GetOr(s.get(), "a"), "<none>");
  EXPECT_EQ(s->GetCheckpointInstanceId(0), 11u);
  EXPECT_EQ(s->writes_applied(), 11u);
}

TEST_F(KvStoreTest, OpsOfOneValueSeeEachOther) {
  auto s = OpenStore("a");
  std::vector<WriteOp> ops;
  for (RespRequest r : {RespRequest{"INCR", "n"}, RespRequest{"INCR", "n"},
                        RespRequest{"DEL", "n"}, RespRequest{"SET", "n", "5", "NX"}}) {
    WriteOp op;
    ASSERT_EQ(MakeWriteOp(Upper(r[0]), &r, &op), "");
    ops.push_back(op);
  }
  std::string replies;
  s->Apply(ops, KvPosition{1, 0}, &replies);
  EXPECT_EQ(replies, ":1\r\n:2\r\n:1\r\n+OK\r\n");
  EXPECT_EQ(GetOr(s.get(), "n"), "5");
}

TEST_F(KvStoreTest, CompareAndSet) {
  auto s = OpenStore("a");
  // "" expects an absent key.
  EXPECT_EQ(Run(s.get(), 0, {"CHORUS.CAS", "k", "", "a"}), ":1\r\n");
  EXPECT_EQ(GetOr(s.get(), "k"), "a");
  EXPECT_EQ(Run(s.get(), 1, {"CHORUS.CAS", "k", "", "b"}), ":0\r\n");
  EXPECT_EQ(Run(s.get(), 2, {"CHORUS.CAS", "k", "x", "b"}), ":0\r\n");
  EXPECT_EQ(GetOr(s.get(), "k"), "a");
  EXPECT_EQ(Run(s.get(), 3, {"chorus.cas", "k", "a", "b"}), ":1\r\n");
  EXPECT_EQ(GetOr(s.get(), "k"), "b");
  // A key holding "" is not absent.
  EXPECT_EQ(Run(s.get(), 4, {"SET", "e", ""}), "+OK\r\n");
  EXPECT_EQ(Run(s.get(), 5, {"CHORUS.CAS", "e", "", "z"}), ":0\r\n");
  EXPECT_EQ(GetOr(s.get(), "e"), "");
  EXPECT_EQ(Run(s.get(), 6, {"CHORUS.CAS", "gone", "a", "z"}), ":0\r\n");
  EXPECT_EQ(GetOr(s.get(), "gone"), "<none>");
  EXPECT_EQ(s->writes_applied(), 7u);
  // Ops of one value see each other: each CAS finds the previous one's value.
  std::vector<WriteOp> ops;
  for (RespRequest r : {RespRequest{"CHORUS.CAS", "c", "", "1"}, RespRequest{"CHORUS.CAS", "c", "1", "2"},
                        RespRequest{"CHORUS.CAS", "c", "1", "3"}, RespRequest{"DEL", "c"},
                        RespRequest{"CHORUS.CAS", "c", "", "4"}}) {
    WriteOp op;
    ASSERT_EQ(MakeWriteOp(Upper(r[0]), &r, &op), "");
    ops.push_back(op);
  }
  std::string replies;
  s->Apply(ops, KvPosition{8, 0}, &replies);
  EXPECT_EQ(replies, ":1\r\n:1\r\n:0\r\n:1\r\n:1\r\n");
  EXPECT_EQ(GetOr(s.get(), "c"), "4");
}

TEST_F(KvStoreTest, RestartKeepsStateAndPositionAndSkipsWhatWasApplied) {
  {
    auto s = OpenStore("a");
    Run(s.get(), 0, {"INCR", "n"});
    Run(s.get(), 1, {"INCR", "n"}, 0, 3);  // a batch of 3, applied up to index 1
    Run(s.get(), 1, {"INCR", "n"}, 1, 3);
    EXPECT_EQ(s->GetCheckpointInstanceId(0), 1u);  // instance 1 is not complete
  }
  KvStoreOptions o;
  std::unique_ptr<KvStore> s;
  ASSERT_TRUE(KvStore::Open(root_ + "/a", o, &s).ok());
  EXPECT_EQ(s->GetCheckpointInstanceId(0), 1u);
  // The replay executes instance 1 again, whole: the first two are skipped.
  Run(s.get(), 1, {"INCR", "n"}, 0, 3);
  Run(s.get(), 1, {"INCR", "n"}, 1, 3);
  Run(s.get(), 1, {"INCR", "n"}, 2, 3);
  EXPECT_EQ(GetOr(s.get(), "n"), "4");
  EXPECT_EQ(s->GetCheckpointInstanceId(0), 2u);
  s->ExecuteNoop(0, 2);
  EXPECT_EQ(s->GetCheckpointInstanceId(0), 3u);
}

TEST_F(KvStoreTest, MissingStoreIsAnErrorWithoutCreate) {
  std::unique_ptr<KvStore> s;
  EXPECT_TRUE(KvStore::Open(root_ + "/none", KvStoreOptions(), &s).IsInvalidArgument());
  fs::create_directories(root_ + "/empty");
  EXPECT_TRUE(KvStore::Open(root_ + "/empty", KvStoreOptions(), &s).IsInvalidArgument());
}

TEST_F(KvStoreTest, UndecodableValueIsRejectedAlikeAndPassed) {
  auto s = OpenStore("a");
  ExecuteInfo info;
  info.instance = 4;
  ExecuteContext ctx;
  EXPECT_TRUE(s->Execute(info, "garbage", &ctx).IsCorruption());
  EXPECT_EQ(ctx.output.substr(0, 4), "-ERR");
  EXPECT_EQ(s->GetCheckpointInstanceId(0), 5u);
}

TEST_F(KvStoreTest, CheckpointIsASnapshotAndLoadsIntoAnotherStore) {
  auto src = OpenStore("src");
  for (int i = 0; i < 1000; ++i) Run(src.get(), i, {"SET", "k" + std::to_string(i), "v"});
  CheckpointInfo info;
  info.instance = 1000;
  std::unique_ptr<CheckpointWriter> w;
  ASSERT_TRUE(src->PrepareCheckpoint(info, &w).ok());
  // Writes after Prepare are not in the checkpoint.
  Run(src.get(), 1000, {"SET", "after", "x"});
  Run(src.get(), 1001, {"DEL", "k0"});
  const std::string dir = root_ + "/ckpt";
  fs::create_directories(dir);
  ASSERT_TRUE(w->Write(dir).ok());
  w.reset();

  auto dst = OpenStore("dst");
  Run(dst.get(), 0, {"SET", "old", "gone"});
  Status st = dst->LoadCheckpoint(info, dir);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(GetOr(dst.get(), "k0"), "v");
  EXPECT_EQ(GetOr(dst.get(), "k999"), "v");
  EXPECT_EQ(GetOr(dst.get(), "after"), "<none>");
  EXPECT_EQ(GetOr(dst.get(), "old"), "<none>");
  EXPECT_EQ(dst->GetCheckpointInstanceId(0), 1000u);
  EXPECT_EQ(dst->writes_applied(), 1000u);
  EXPECT_EQ(dst->checkpoints_loaded(), 1u);
  // It goes on from the checkpoint, and comes back after a restart.
  Run(dst.get(), 1000, {"SET", "after", "x"});
  dst.reset();
  dst = OpenStore("dst");
  EXPECT_EQ(GetOr(dst.get(), "after"), "x");
  EXPECT_EQ(GetOr(dst.get(), "k5"), "v");
  EXPECT_EQ(dst->GetCheckpointInstanceId(0), 1001u);
  // Only the live database is left.
  int dbs = 0;
  for (const auto& e : fs::directory_iterator(root_ + "/dst")) {
    dbs += e.path().filename().string().compare(0, 3, "db-") == 0;
  }
  EXPECT_EQ(dbs, 1);
  uint64_t keys = 0, keys2 = 0;
  uint32_t d1 = 0, d2 = 0;
  ASSERT_TRUE(dst->Count(&keys, &d1).ok());
  ASSERT_TRUE(src->Count(&keys2, &d2).ok());
  EXPECT_EQ(keys, 1001u);   // k0..k999 from the checkpoint, "after" since
  EXPECT_EQ(keys2, 1000u);  // src deleted k0
  EXPECT_NE(d1, d2);
}

TEST_F(KvStoreTest, PrepareRefusesAStoreAheadOfTheCheckpoint) {
  auto s = OpenStore("a");
  Run(s.get(), 0, {"SET", "k", "v"});
  Run(s.get(), 1, {"SET", "k", "w"});
  CheckpointInfo info;
  info.instance = 1;  // the store already applied instance 1
  std::unique_ptr<CheckpointWriter> w;
  EXPECT_TRUE(s->PrepareCheckpoint(info, &w).IsInvalidArgument());
  EXPECT_EQ(w, nullptr);
  // Behind is fine: instances 2..4 held nothing for it.
  info.instance = 5;
  ASSERT_TRUE(s->PrepareCheckpoint(info, &w).ok());
  const std::string dir = root_ + "/c";
  fs::create_directories(dir);
  ASSERT_TRUE(w->Write(dir).ok());
  auto d = OpenStore("d");
  ASSERT_TRUE(d->LoadCheckpoint(info, dir).ok());
  EXPECT_EQ(GetOr(d.get(), "k"), "w");
  EXPECT_EQ(d->GetCheckpointInstanceId(0), 5u);
}

// The old state stays intact and in use whenever a load fails.
TEST_F(KvStoreTest, FailedLoadKeepsTheOldState) {
  auto src = OpenStore("src");
  Run(src.get(), 0, {"SET", "new", "1"});
  const std::string good = MakeCheckpoint(src.get(), 1, "good");

  int fail_at = 0;  // 1: "built", 2: "switch"
  KvStoreOptions o;
  o.load_fault = [&fail_at](const std::string& step) {
    if ((fail_at == 1 && step == "built") || (fail_at == 2 && step == "switch")) {
      return Status::IOError("injected at " + step);
    }
    return Status::OK();
  };
  auto dst = OpenStore("dst", o);
  Run(dst.get(), 0, {"SET", "old", "1"});
  CheckpointInfo info;
  info.instance = 1;

  auto expect_old = [&](const char* when) {
    EXPECT_EQ(GetOr(dst.get(), "old"), "1") << when;
    EXPECT_EQ(GetOr(dst.get(), "new"), "<none>") << when;
    EXPECT_EQ(dst->GetCheckpointInstanceId(0), 1u) << when;
    EXPECT_EQ(dst->checkpoints_loaded(), 0u) << when;
  };
  for (fail_at = 1; fail_at <= 2; ++fail_at) {
    EXPECT_TRUE(dst->LoadCheckpoint(info, good).IsIOError());
    expect_old("after an injected failure");
  }
  fail_at = 0;

  // A damaged file: every flipped byte and every truncation is refused.
  std::ifstream in(good + "/kv.dump", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 40u);
  const std::string bad = root_ + "/bad";
  fs::create_directories(bad);
  auto write_bad = [&](const std::string& b) {
    std::ofstream(bad + "/kv.dump", std::ios::binary | std::ios::trunc) << b;
  };
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string b = bytes;
    b[i] ^= 0x20;
    write_bad(b);
    EXPECT_FALSE(dst->LoadCheckpoint(info, bad).ok()) << "flipped byte " << i;
    write_bad(bytes.substr(0, i));
    EXPECT_FALSE(dst->LoadCheckpoint(info, bad).ok()) << "truncated at " << i;
  }
  write_bad(bytes + "x");
  EXPECT_TRUE(dst->LoadCheckpoint(info, bad).IsCorruption());
  // A checkpoint of another instance is refused too.
  CheckpointInfo other;
  other.instance = 2;
  EXPECT_TRUE(dst->LoadCheckpoint(other, good).IsCorruption());
  expect_old("after damaged files");
  Run(dst.get(), 1, {"SET", "still", "works"});
  EXPECT_EQ(GetOr(dst.get(), "still"), "works");

  // A crash before the switch (the store reopened) also finds the old state,
  // and the half-built database is gone.
  dst.reset();
  dst = OpenStore("dst");
  EXPECT_EQ(GetOr(dst.get(), "old"), "1");
  EXPECT_EQ(GetOr(dst.get(), "new"), "<none>");
  int dbs = 0;
  for (const auto& e : fs::directory_iterator(root_ + "/dst")) {
    dbs += e.path().filename().string().compare(0, 3, "db-") == 0;
  }
  EXPECT_EQ(dbs, 1);
  // And then the good checkpoint loads.
  EXPECT_TRUE(dst->LoadCheckpoint(info, good).ok());
  EXPECT_EQ(GetOr(dst.get(), "new"), "1");
  EXPECT_EQ(GetOr(dst.get(), "old"), "<none>");
}

// A checkpoint being written keeps reading its snapshot even when a load
// replaces the live database meanwhile.
TEST_F(KvStoreTest, WriterOutlivesALoad) {
  auto src = OpenStore("src");
  Run(src.get(), 0, {"SET", "x", "1"});
  const std::string other = MakeCheckpoint(src.get(), 1, "other");

  auto s = OpenStore("a");
  Run(s.get(), 0, {"SET", "mine", "1"});
  CheckpointInfo info;
  info.instance = 1;
  std::unique_ptr<CheckpointWriter> w;
  ASSERT_TRUE(s->PrepareCheckpoint(info, &w).ok());
  ASSERT_TRUE(s->LoadCheckpoint(info, other).ok());
  const std::string dir = root_ + "/out";
  fs::create_directories(dir);
  ASSERT_TRUE(w->Write(dir).ok());
  w.reset();
  auto check = OpenStore("check");
  ASSERT_TRUE(check->LoadCheckpoint(info, dir).ok());
  EXPECT_EQ(GetOr(check.get(), "mine"), "1");
  EXPECT_EQ(GetOr(check.get(), "x"), "<none>");
}

}  // namespace
}  // namespace kv
}  // namespace chorus
