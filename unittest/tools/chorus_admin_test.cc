// chorus_admin (the real binary, run as a child process) on data dirs that a
// real 3-node cluster made: it refuses a dir a live node holds, inspects and
// verifies a stopped one (table and --json), dumps values, reports the first
// bad record of a corrupted log (a chained-checksum break and a crc32c
// failure), and leaves every dir byte-for-byte as it found it.
#include <sys/wait.h>

#include <algorithm>
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
namespace chorus_admin_test {
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

// "a, b, c": the members `which` of `cluster` as chorus_admin lists them
// (by id; an address that derives its id as is).
std::string Voters(const OpsCluster& cluster, std::vector<int> which) {
  std::sort(which.begin(), which.end(),
            [&](int a, int b) { return cluster.info(a).id() < cluster.info(b).id(); });
  std::string out;
  for (int i : which) out += (out.empty() ? "" : ", ") + cluster.info(i).ToString();
  return out;
}

// "a,b,c": the ids of the members `which`, sorted (the membership log line's form).
std::string Ids(const OpsCluster& cluster, std::vector<int> which) {
  std::vector<uint64_t> ids;
  for (int i : which) ids.push_back(cluster.info(i).id());
  std::sort(ids.begin(), ids.end());
  std::string out;
  for (uint64_t id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out;
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
  // The genesis, recorded in the log on the first start.
  EXPECT_NE(r.out.find("membership           v0 (active from 0, changed at 0, activation distance "
                       "256): voters " + Voters(cluster, {0, 1, 2}) + "; followers -\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("node " + cluster.info(0).ToString()), std::string::npos) << r.out;

  r = Admin("--json inspect " + dir0);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("\"chosen_end\":" + std::to_string(end)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"node_id\":" + std::to_string(cluster.info(0).id())), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"first_instance\":0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"membership\":{\"recorded\":true,\"configs\":[{\"version\":0,"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\"membership_version\":0"), std::string::npos) << r.out;

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

// A membership change end to end, in-process: node 3 joins (Options::join,
// empty data dir), is added (a follower, then a voter), node 2 is removed.
// Every node that applied a change logged one info line for it; then
// chorus_admin shows the history offline (inspect, --json, dump), and the
// genesis only for a log that never recorded a membership (and says so).
TEST(ChorusAdminTest, MembershipChangesAreLoggedAndInspected) {
  OpsCluster cluster(4, /*election=*/true);
  const std::vector<NodeInfo> founders = {cluster.info(0), cluster.info(1), cluster.info(2)};
  cluster.options_hook = [&](int i, Options* o) {
    o->nodes.clear();
    (i < 3 ? o->nodes : o->join) = founders;
  };
  ASSERT_TRUE(cluster.StartAll().ok());
  int master = -1;
  ASSERT_TRUE(testing::WaitUntil([&] {
    for (int i = 0; i < 3; ++i) {
      if (cluster.node(i)->IsMaster(0)) master = i;
    }
    return master >= 0;
  }));
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(cluster.node(0)->Propose(0, "m" + std::to_string(i), nullptr).ok());
  }
  GroupStatus gs;
  ASSERT_TRUE(cluster.node(3)->GetGroupStatus(0, &gs).ok());
  EXPECT_EQ(gs.role, MemberRole::kJoining);

  Status s = cluster.node(1)->AddMember(0, cluster.info(3));
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = cluster.node(0)->RemoveMember(0, cluster.info(2).id());
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_TRUE(cluster.node(0)->Propose(0, "after", nullptr).ok());
  MembershipInfo info;
  ASSERT_TRUE(testing::WaitUntil([&] {
    return cluster.node(3)->GetMembership(0, &info).ok() && info.version == 3 && !info.pending;
  })) << info.version;
  ASSERT_EQ(info.members.size(), 3u);
  ASSERT_TRUE(cluster.node(3)->GetGroupStatus(0, &gs).ok());
  EXPECT_EQ(gs.role, MemberRole::kVoter);
  EXPECT_EQ(gs.membership_version, 3u);

  // One info line per applied change, on every node that applied it.
  const std::string v1 = "group 0 membership v1: voters " + Ids(cluster, {0, 1, 2}) +
                         " followers " + Ids(cluster, {3}) + " (active from ";
  const std::string v2 = "group 0 membership v2: voters " + Ids(cluster, {0, 1, 2, 3}) +
                         " followers - (active from ";
  const std::string v3 = "group 0 membership v3: voters " + Ids(cluster, {0, 1, 3}) +
                         " followers - (active from ";
  ASSERT_TRUE(testing::WaitUntil([&] {
    for (int i : {0, 1, 3}) {
      if (!cluster.log().Has(i, v3)) return false;
    }
    return true;
  })) << cluster.log().Dump();
  for (int i : {0, 1, 3}) {
    for (const std::string& line : {v1, v2, v3}) {
      int seen = 0;
      for (const testing::LogLines::Line& l : cluster.log().lines()) {
        if (l.node == i && l.level == LogLevel::kInfo && l.text.find(line) != std::string::npos) {
          ++seen;
        }
      }
      EXPECT_EQ(seen, 1) << "node " << i << ": " << line << "\n" << cluster.log().Dump();
    }
  }
  ASSERT_TRUE(testing::WaitUntil([&] {
    return cluster.log().Has(2, "this node (" + std::to_string(cluster.info(2).id()) +
                                    ") is no longer a member");
  })) << cluster.log().Dump();
  for (int i = 0; i < 4; ++i) cluster.Stop(i);

  // Offline: the newest configuration, and the ones the log still keeps.
  AdminRun r = Admin("inspect " + cluster.data_dir(3));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("IDENTITY             cluster 91, node " +
                       std::to_string(cluster.info(3).id())),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(", incarnation "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("created to join (Options::join)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("membership           v3 (active from "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("): voters " + Voters(cluster, {0, 1, 3}) + "; followers -\n"),
            std::string::npos)
      << r.out;
  r = Admin("--json inspect " + cluster.data_dir(0));
  EXPECT_NE(r.out.find("\"membership_version\":3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"id\":" + std::to_string(cluster.info(3).id()) + ",\"address\":"),
            std::string::npos)
      << r.out;
  // The changes in the log: a dump names them.
  r = Admin("dump " + cluster.data_dir(0) + " --group=0");
  EXPECT_NE(r.out.find("membership change from v0: voters " + Voters(cluster, {0, 1, 2}) +
                       "; followers "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("membership change from v2: voters " + Voters(cluster, {0, 1, 3}) +
                       "; followers -"),
            std::string::npos)
      << r.out;

  // A log that never recorded a membership: the genesis, said to be one.
  {
    leveldb::DB* db = nullptr;
    ASSERT_TRUE(leveldb::DB::Open(leveldb::Options(), cluster.data_dir(1) + "/g0", &db).ok());
    ASSERT_TRUE(db->Delete(leveldb::WriteOptions(),
                           leveldb_log::VariableKey("paxos.membership")).ok());
    delete db;
  }
  r = Admin("inspect " + cluster.data_dir(1));
  EXPECT_NE(r.out.find("membership           not recorded in this log: the genesis governs"),
            std::string::npos)
      << r.out;
  std::string list;
  for (int i = 0; i < 3; ++i) list += (i ? "," : "") + cluster.info(i).ToString();
  r = Admin("--nodes=" + list + " inspect " + cluster.data_dir(1));
  EXPECT_NE(r.out.find("not recorded in this log: the genesis governs, v0: voters "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(from --nodes, not from the log)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace chorus_admin_test
}  // namespace chorus
