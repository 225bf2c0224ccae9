// MemberCluster: an in-process cluster over loopback TCP for the membership
// tests. Nodes have explicit ids (1, 2, ...: "id@127.0.0.1:port"); the
// first `initial` start as the genesis members (Options::nodes), the others
// as spares that start with Options::join and an empty data dir. A node can
// be restarted with a fresh data dir (a lost disk). Every node's log lines
// are kept, so a test can assert what was logged.
#ifndef CHORUS_UNITTEST_NODE_MEMBERSHIP_CLUSTER_H_
#define CHORUS_UNITTEST_NODE_MEMBERSHIP_CLUSTER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/node.h"
#include "node/node_impl.h"
#include "unittest/node/checkpoint_machine.h"
#include "unittest/node/ops_cluster.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace testing {

constexpr auto kMemberWait = std::chrono::seconds(60);

class MemberCluster {
 public:
  // Each cluster gets its own cluster id: tests run in parallel and pick
  // ports with FreePort, so a port reused by another test's node must not
  // let the two clusters (with the same node ids) talk to each other.
  MemberCluster(int initial, int spares)
      : initial_(initial), cluster_id_(1 + (std::random_device{}() & 0x7fffffff)) {
    for (int i = 0; i < initial + spares; ++i) {
      NodeInfo n;
      n.host = "127.0.0.1";
      n.port = FreePort();
      n.node_id = static_cast<uint64_t>(i + 1);
      nodes_.push_back(n);
      machines_.push_back(std::make_unique<CheckpointMachine>());
    }
    running_.resize(nodes_.size());
    generation_.resize(nodes_.size(), 0);
    started_.resize(nodes_.size(), false);
  }
  ~MemberCluster() {
    for (auto& n : running_) n.reset();
  }

  // Checkpoints: off unless set (Options::checkpoint_interval_instances).
  uint64_t checkpoint_interval = 0;
  uint64_t log_keep = 10;

  // The genesis members' addresses.
  std::vector<NodeInfo> genesis() const {
    return std::vector<NodeInfo>(nodes_.begin(), nodes_.begin() + initial_);
  }
  std::string data_dir(int i) const {
    return dir_.path() + "/n" + std::to_string(i) + "." + std::to_string(generation_[i]);
  }
  Options OptionsFor(int i, bool join) {
    Options o;
    o.self = nodes_[i];
    if (join) {
      o.join = genesis();
    } else {
      o.nodes = genesis();
    }
    o.cluster_id = cluster_id_;
    o.data_dir = data_dir(i);
    o.create_if_missing = !started_[i];
    o.state_machines.push_back({0, machines_[i].get()});
    o.propose_timeout_ms = 20000;
    o.prepare_timeout_ms = 100;
    o.accept_timeout_ms = 100;
    o.learn_interval_ms = 100;
    o.master_election = true;
    o.lease_ms = 400;
    o.heartbeat_interval_ms = 50;
    o.election_timeout_ms = 400;
    o.election_jitter_ms = 100;
    o.member_live_ms = 1000;
    o.membership_timeout_ms = 60000;
    o.checkpoint_interval_instances = checkpoint_interval;
    o.log_keep_instances = log_keep;
    o.log_level = LogLevel::kInfo;
    LogLines* lines = &lines_;
    o.log_hook = [lines, i](LogLevel level, const std::string& text) { lines->Add(i, level, text); };
    return o;
  }
  // Starts node i: a genesis member (nodes) or, with `join`, a new node
  // joining through the genesis members. Its state machine starts empty
  // (a fresh process: the node replays its log or loads a checkpoint).
  Status Start(int i, bool join = false, const std::function<void(Options*)>& tweak = nullptr) {
    Options o = OptionsFor(i, join);
    if (tweak) tweak(&o);
    machines_[i]->Reset();
    started_[i] = true;
    return Node::Open(o, &running_[i]);
  }
  void StartGenesis() {
    for (int i = 0; i < initial_; ++i) {
      Status s = Start(i);
      ASSERT_TRUE(s.ok()) << "node " << i << ": " << s.ToString();
    }
  }
  void Stop(int i) { running_[i].reset(); }
  // Stops node i and returns its group 0 protocol counters.
  paxos::CoreStats StopAndStats(int i) {
    running_[i]->Stop();
    const paxos::CoreStats stats = impl(i)->core_stats_for_testing(0);
    running_[i].reset();
    return stats;
  }
  // Node i executed at least what node `of` had executed when called.
  bool WaitUntilCaughtUp(int i, int of) {
    const uint64_t target = node(of)->GetNowInstanceId(0);
    return WaitUntil([&] { return node(i)->GetNowInstanceId(0) >= target; }, kMemberWait);
  }
  // The next Start of node i uses a new, empty data dir (its disk was lost).
  void LoseDisk(int i) {
    ++generation_[i];
    started_[i] = false;
  }

  Node* node(int i) { return running_[i].get(); }
  NodeImpl* impl(int i) { return static_cast<NodeImpl*>(running_[i].get()); }
  const NodeInfo& info(int i) const { return nodes_[i]; }
  uint64_t id(int i) const { return nodes_[i].id(); }
  CheckpointMachine* machine(int i) { return machines_[i].get(); }
  const LogLines& log() const { return lines_; }
  int size() const { return static_cast<int>(nodes_.size()); }

  // The index of the running node that holds the lease, once every running
  // node in `among` (empty: all running) names it as master; -1 on timeout.
  int WaitForMaster(const std::vector<int>& among = {}) {
    int master = -1;
    WaitUntil(
        [&] {
          master = -1;
          for (int i = 0; i < size(); ++i) {
            if (running_[i] && running_[i]->IsMaster(0)) master = i;
          }
          if (master < 0) return false;
          for (int i = 0; i < size(); ++i) {
            if (!running_[i] || (!among.empty() && !Contains(among, i))) continue;
            MasterInfo m;
            if (!running_[i]->GetMaster(0, &m).ok() || m.node.id() != id(master)) return false;
          }
          return true;
        },
        kMemberWait);
    return master;
  }
  // Proposes `n` values through node `from`; returns how many failed.
  int ProposeMany(int from, int n, int timeout_ms = 0) {
    int failures = 0;
    for (int k = 0; k < n; ++k) {
      ExecuteContext ctx;
      ctx.timeout_ms = timeout_ms;
      if (!node(from)->Propose(0, "v" + std::to_string(seq_++), nullptr, &ctx).ok()) ++failures;
    }
    return failures;
  }
  // Every node of `group` executed the same instances to the same state.
  bool Converged(const std::vector<int>& group) {
    return WaitUntil(
        [&] {
          const uint64_t now = node(group[0])->GetNowInstanceId(0);
          for (int i : group) {
            if (node(i)->GetNowInstanceId(0) != now) return false;
            if (!(machine(i)->state() == machine(group[0])->state())) return false;
          }
          return true;
        },
        kMemberWait);
  }
  MemberRole Role(int i) {
    GroupStatus st;
    EXPECT_TRUE(node(i)->GetGroupStatus(0, &st).ok());
    return st.role;
  }
  bool WaitRole(int i, MemberRole role) {
    return WaitUntil([&] { return Role(i) == role; }, kMemberWait);
  }
  MembershipInfo Members(int i) {
    MembershipInfo m;
    EXPECT_TRUE(node(i)->GetMembership(0, &m).ok());
    return m;
  }
  // The ids of node i's newest membership: voters, or followers.
  std::vector<uint64_t> Ids(int i, bool voters) {
    std::vector<uint64_t> out;
    for (const MemberInfo& m : Members(i).members) {
      if (m.voter == voters) out.push_back(m.node.id());
    }
    return out;
  }
  // Node i's membership reached version `v` and is in force there.
  bool WaitVersion(int i, uint64_t v) {
    return WaitUntil(
        [&] {
          MembershipInfo m = Members(i);
          return m.version >= v && !m.pending;
        },
        kMemberWait);
  }

 private:
  static bool Contains(const std::vector<int>& v, int x) {
    for (int y : v) {
      if (y == x) return true;
    }
    return false;
  }

  const int initial_;
  const uint64_t cluster_id_;
  TempDir dir_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::unique_ptr<CheckpointMachine>> machines_;
  std::vector<std::unique_ptr<Node>> running_;
  std::vector<int> generation_;
  std::vector<bool> started_;
  LogLines lines_;
  int seq_ = 0;
};

}  // namespace testing
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NODE_MEMBERSHIP_CLUSTER_H_
