// chorus_admin (the real binary, run as a child process) on data dirs that a
// real 3-node cluster made: it refuses a dir a live node holds, inspects and
// verifies a stopped one (table and --json), dumps values, reports the first
// bad record of a corrupted log (a chained-checksum break and a crc32c
// failure), and leaves every dir byte-for-byte as it found it.
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "leveldb/db.h"
#include "node/fs_util.h"
#include "node/leveldb_log_format.h"
#include "paxos.pb.h"
#include "unittest/node/ops_cluster.h"

namespace chorus {
namespace {

using testing::OpsCluster;

struct AdminRun {
  int code = -1;
  std::string out;
};

AdminRun Admin(const std::string& args) {
  AdminRun r;
  const std::string cmd = std::string(CHORUS_ADMIN_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Every file under `dir` (relative path -> bytes).
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::vector<std::string> files;
  std::vector<std::string> dirs;
  EXPECT_TRUE(ListFilesRecursive(dir, &files, &dirs).ok());
  std::map<std::string, std::string> out;
  for (const std::string& f : files) {
    std::string data;
    EXPECT_TRUE(ReadWholeFile(dir + "/" + f, &data).ok()) << f;
    out[f] = data;
  }
  return out;
}

// Rewrites the record of `instance` in the group 0 log of `data_dir`:
// `alter_value` changes its value under a valid crc32c (the chain breaks);
// otherwise one stored byte is flipped (its crc32c fails).
void Corrupt(const std::string& data_dir, uint64_t instance, bool alter_value) {
  leveldb::DB* db = nullptr;
  leveldb::Options o;
  ASSERT_TRUE(leveldb::DB::Open(o, data_dir + "/g0", &db).ok());
  const std::string key = leveldb_log::RecordKey(instance);
  std::string stored;
  ASSERT_TRUE(db->Get(leveldb::ReadOptions(), key, &stored).ok());
  if (alter_value) {
    std::string payload;
    ASSERT_TRUE(leveldb_log::DecodeChecksummed(key, stored, "r", &payload).ok());
    paxos::InstanceRecord rec;
    ASSERT_TRUE(rec.ParseFromString(payload));
    ASSERT_TRUE(rec.chosen());
    std::string v = rec.value();
    v.back() ^= 0x01;
    rec.set_value(v);
    stored = leveldb_log::EncodeChecksummed(key, rec.SerializeAsString());
  } else {
    stored.back() ^= 0x01;
  }
  ASSERT_TRUE(db->Put(leveldb::WriteOptions(), key, stored).ok());
  delete db;
}

TEST(ChorusAdminTest, InspectVerifyDumpAndRefuseLive) {
  OpsCluster cluster(3, /*election=*/false);
  ASSERT_TRUE(cluster.StartAll().ok());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(cluster.node(0)->Propose(0, "value-" + std::to_string(i), nullptr).ok());
  }
  const uint64_t end = cluster.node(0)->GetNowInstanceId(0);
  const std::string dir0 = cluster.data_dir(0);

  // Live: refused, and nothing is touched.
  for (const char* cmd : {"inspect", "verify"}) {
    const AdminRun live = Admin(std::string(cmd) + " " + dir0);
    EXPECT_EQ(live.code, 2) << live.out;
    EXPECT_NE(live.out.find("held open by a live process"), std::string::npos) << live.out;
  }
  ASSERT_TRUE(testing::WaitUntil([&] {
    return cluster.node(1)->GetNowInstanceId(0) == end && cluster.node(2)->GetNowInstanceId(0) == end;
  }));
  for (int i = 0; i < 3; ++i) cluster.Stop(i);

  const auto before = Snapshot(dir0);
  ASSERT_FALSE(before.empty());

  AdminRun r = Admin("inspect " + dir0);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("group 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("chosen end           " + std::to_string(end)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("promised ballot"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("membership           not recorded"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node " + cluster.info(0).ToString()), std::string::npos) << r.out;

  r = Admin("--json inspect " + dir0);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"chosen_end\":" + std::to_string(end)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"node_id\":" + std::to_string(cluster.info(0).id())), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"first_instance\":0"), std::string::npos) << r.out;

  r = Admin("verify " + dir0);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("group 0: ok (" + std::to_string(end) + " records, " + std::to_string(end) +
                       " chained checksums checked)"),
            std::string::npos)
      << r.out;

  r = Admin("dump " + dir0 + " --group=0 --from=0 --to=" + std::to_string(end));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("sm 1  value-0\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sm 1  value-29\n"), std::string::npos) << r.out;
  r = Admin("--json --hex dump " + dir0 + " --group=0 --from=0 --to=1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"hex\":\"76616c75652d30\""), std::string::npos) << r.out;  // "value-0"

  EXPECT_TRUE(Snapshot(dir0) == before) << "chorus_admin changed " << dir0;

  // A value altered under a valid crc: the chain breaks at that instance.
  Corrupt(cluster.data_dir(1), 12, /*alter_value=*/true);
  r = Admin("verify " + cluster.data_dir(1));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("group 0: BAD at instance 12: record 12: chained checksum"),
            std::string::npos)
      << r.out;
  r = Admin("--json verify " + cluster.data_dir(1));
  EXPECT_NE(r.out.find("\"ok\":false"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"bad_instance\":12"), std::string::npos) << r.out;

  // A flipped stored byte: the record fails its crc32c.
  Corrupt(cluster.data_dir(2), 5, /*alter_value=*/false);
  r = Admin("verify " + cluster.data_dir(2));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("BAD at instance 5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("crc32c"), std::string::npos) << r.out;
}

TEST(ChorusAdminTest, UsageAndMissingDir) {
  EXPECT_EQ(Admin("").code, 2);
  const AdminRun help = Admin("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.out.find("usage: chorus_admin"), std::string::npos);
  const AdminRun missing = Admin("inspect /nonexistent/chorus-dir");
  EXPECT_NE(missing.code, 0);
  const AdminRun unreachable = Admin("live 127.0.0.1:1");
  EXPECT_EQ(unreachable.code, 1) << unreachable.out;
  EXPECT_NE(unreachable.out.find("unreachable"), std::string::npos) << unreachable.out;
}

}  // namespace
}  // namespace chorus
