// A real 3-node cluster whose logs run over FaultEnv: two nodes (a majority)
// crash at once (every unsynced byte and unsynced name lost, tails torn),
// restart on the same data, and the cluster goes on: new proposals succeed,
// and every node agrees on the value of every instance, including those
// chosen before the crash.
#include <map>
#include <set>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <leveldb/env.h>
#include <gtest/gtest.h>

#include "chorus/leveldb_log_storage.h"
#include "chorus/node.h"
#include "unittest/node/group_rig.h"
#include "unittest/support/fault_env.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace node_crash_test {
namespace {

using testing::FaultEnv;

constexpr int kNodes = 3;
constexpr uint64_t kCluster = 5;

struct Member {
  std::unique_ptr<FaultEnv> env;
  std::unique_ptr<testing::ValueLog> sm;
  std::unique_ptr<Node> node;
};

class NodeCrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < kNodes; ++i) nodes_.push_back(NodeInfo{"127.0.0.1", testing::FreePort()});
    for (int i = 0; i < kNodes; ++i) {
      members_[i].env = std::make_unique<FaultEnv>(
          leveldb::Env::Default(), root_.path() + "/trash" + std::to_string(i), 100 + i);
    }
  }
  void TearDown() override {
    for (Member& m : members_) {
      if (m.node) m.node->Stop();
    }
  }

  Status Start(int i) {
    Member& m = members_[i];
    m.sm = std::make_unique<testing::ValueLog>();
    Options o;
    o.self = nodes_[i];
    o.nodes = nodes_;
    o.cluster_id = kCluster;
    o.state_machines = {{0, m.sm.get()}};
    o.prepare_timeout_ms = 50;
    o.accept_timeout_ms = 50;
    o.log_level = LogLevel::kNone;
    FaultEnv* env = m.env.get();
    const std::string path = root_.path() + "/n" + std::to_string(i);
    o.log_storage_factory = [env, path](uint32_t group, std::unique_ptr<LogStorage>* out) {
      LevelDbLogOptions lo;
      lo.cluster_id = kCluster;
      lo.group = group;
      lo.create_if_missing = true;  // a fresh temp dir at the first start
      lo.write_buffer_bytes = 16 << 10;  // log switches under the load
      lo.env = env;
      lo.sync_dir = [env](const std::string& dir) { return env->SyncDir(dir); };
      return OpenLevelDbLogStorage(path, lo, out);
    };
    return Node::Open(o, &m.node);
  }

  void Crash(int i, FaultEnv::Tear tear) {
    Member& m = members_[i];
    m.node->Stop();
    m.node.reset();  // its logs close
    ASSERT_TRUE(m.env->SimulateCrash(tear, nullptr).ok());
  }

  // Proposes `n` values through node `via`; returns the ones acknowledged.
  std::vector<std::string> Propose(int via, const std::string& tag, int n) {
    std::vector<std::string> acked;
    for (int k = 0; k < n; ++k) {
      const std::string value = tag + std::to_string(k) + std::string(600, 'p');
      uint64_t instance = 0;
      if (members_[via].node->Propose(0, value, &instance).ok()) acked.push_back(value);
    }
    return acked;
  }

  testing::TempDir root_;
  std::vector<NodeInfo> nodes_;
  Member members_[kNodes];
};

TEST_F(NodeCrashTest, AMajorityCrashesAndRestartsAndNoChosenValueIsLost) {
  for (int i = 0; i < kNodes; ++i) {
    const Status s = Start(i);
    ASSERT_TRUE(s.ok()) << "node " << i << ": " << s.ToString();
  }
  std::vector<std::string> acked = Propose(0, "before-", 40);
  ASSERT_EQ(40u, acked.size());  // a healthy cluster
  Crash(0, FaultEnv::Tear::kZeroTail);
  Crash(1, FaultEnv::Tear::kPrefix);
  for (int i = 0; i < 2; ++i) {
    const Status s = Start(i);
    ASSERT_TRUE(s.ok()) << "node " << i << ": " << s.ToString();
  }
  // Node 2 alone is no majority: these need a restarted node's log.
  std::vector<std::string> after = Propose(1, "after-", 20);
  EXPECT_EQ(20u, after.size());
  acked.insert(acked.end(), after.begin(), after.end());

  // Node 2 never crashed and executes everything; the restarted nodes
  // execute what they hold and catch up on the rest.
  ASSERT_TRUE(testing::WaitUntil([&] {
    for (const Member& m : members_) {
      if (m.sm->executed().size() < acked.size()) return false;
    }
    return true;
  }));
  std::map<uint64_t, std::string> chosen;  // instance -> value, the first node that executed it
  for (int i = 0; i < kNodes; ++i) {
    for (const auto& e : members_[i].sm->executed()) {
      auto it = chosen.emplace(e.first, e.second).first;
      EXPECT_EQ(it->second, e.second) << "node " << i << " executed another value at instance "
                                      << e.first;
    }
  }
  std::multiset<std::string> values;
  for (const auto& c : chosen) values.insert(c.second);
  for (const std::string& v : acked) {
    EXPECT_EQ(1u, values.count(v)) << "acknowledged value " << v.substr(0, 12)
                                   << " chosen " << values.count(v) << " times";
  }
}

}  // namespace
}  // namespace node_crash_test
}  // namespace chorus
