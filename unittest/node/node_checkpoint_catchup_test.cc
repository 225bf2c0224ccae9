// Catch-up by checkpoint on a real 3-node cluster in one process (NodeImpl +
// loopback TCP): node 2 stops, the others go on until their logs are
// trimmed past it, node 2 restarts and comes back by fetching a checkpoint
// from a peer and loading it in-process, then follows the log again. Also
// with two groups transferring at once. Every wait is for a state (a
// counter, the executed values), never for a time.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/node.h"
#include "node/checkpoint_wire.h"
#include "node/node_impl.h"
#include "unittest/support/test_util.h"
#include "utils/coding.h"

namespace chorus {
namespace node_checkpoint_catchup_test {
namespace {

using testing::FreePort;
using testing::TempDir;
using testing::WaitUntil;

// Deadline of every wait here: generous, a slow (TSan, loaded) run is not a
// failure; a stuck one is.
constexpr std::chrono::seconds kPatience(120);

// Holds every value it executed, in order; a checkpoint is that list (one
// value per line: the test's values hold no newline).
class ListStateMachine : public StateMachine {
 public:
  int id() const override { return 1; }
  Status Execute(const ExecuteInfo&, const std::string& value, ExecuteContext*) override {
    std::lock_guard<std::mutex> lock(mu_);
    values_.push_back(value);
    return Status::OK();
  }
  Status PrepareCheckpoint(const CheckpointInfo&, std::unique_ptr<CheckpointWriter>* w) override {
    class Writer : public CheckpointWriter {
     public:
      explicit Writer(std::vector<std::string> v) : values_(std::move(v)) {}
      Status Write(const std::string& dir) override {
        std::ofstream out(dir + "/values", std::ios::trunc);
        for (const auto& v : values_) out << v << "\n";
        out.close();
        return out ? Status::OK() : Status::IOError("write");
      }

     private:
      const std::vector<std::string> values_;
    };
    std::lock_guard<std::mutex> lock(mu_);
    *w = std::make_unique<Writer>(values_);  // a copy: what Write writes is this instant's
    return Status::OK();
  }
  Status LoadCheckpoint(const CheckpointInfo&, const std::string& dir) override {
    std::ifstream in(dir + "/values");
    if (!in) return Status::IOError("no values file in " + dir);
    std::vector<std::string> loaded;
    for (std::string line; std::getline(in, line);) loaded.push_back(line);
    std::lock_guard<std::mutex> lock(mu_);
    values_.swap(loaded);
    ++loads_;
    return Status::OK();
  }
  std::vector<std::string> values() const {
    std::lock_guard<std::mutex> lock(mu_);
    return values_;
  }
  int loads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return loads_;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> values_;  // GUARDED_BY(mu_)
  int loads_ = 0;                    // GUARDED_BY(mu_)
};

class CheckpointCluster {
 public:
  explicit CheckpointCluster(int groups) : groups_(groups) {
    for (int i = 0; i < 3; ++i) nodes_.push_back(NodeInfo{"127.0.0.1", FreePort()});
    running_.resize(3);
    machines_.resize(3);
    started_.resize(3, false);
  }
  ~CheckpointCluster() {
    for (auto& n : running_) n.reset();
  }
  Status Start(int i) {
    // A fresh in-memory state machine: it comes back from the checkpoints.
    machines_[i].clear();
    for (int g = 0; g < groups_; ++g) machines_[i].push_back(std::make_unique<ListStateMachine>());
    Options o;
    o.self = nodes_[i];
    o.nodes = nodes_;
    o.cluster_id = 78;
    o.group_count = groups_;
    o.data_dir = dir_.path() + "/n" + std::to_string(i);
    o.create_if_missing = !started_[i];
    started_[i] = true;
    for (int g = 0; g < groups_; ++g) {
      o.state_machines.push_back({static_cast<uint32_t>(g), machines_[i][g].get()});
    }
    o.prepare_timeout_ms = 100;
    o.accept_timeout_ms = 100;
    o.learn_interval_ms = 50;
    o.propose_timeout_ms = 30000;  // generous: TSan on a loaded 2-core machine
    o.checkpoint_interval_instances = 10;
    o.log_keep_instances = 5;
    o.checkpoint_chunk_bytes = 4096;  // several chunks per checkpoint
    o.log_level = LogLevel::kNone;
    return Node::Open(o, &running_[i]);
  }
  void Stop(int i) { running_[i].reset(); }
  Node* node(int i) { return running_[i].get(); }
  const NodeInfo& info(int i) const { return nodes_[i]; }
  const std::vector<NodeInfo>& nodes() const { return nodes_; }
  ListStateMachine* machine(int i, int g) { return machines_[i][g].get(); }
  const CheckpointTransfer& transfer(int i) {
    return static_cast<NodeImpl*>(node(i))->checkpoint_transfer_for_testing();
  }

 private:
  const int groups_;
  TempDir dir_;
  std::vector<NodeInfo> nodes_;
  std::vector<std::vector<std::unique_ptr<ListStateMachine>>> machines_;
  std::vector<std::unique_ptr<Node>> running_;
  std::vector<bool> started_;
};

// A 100-byte value, so the checkpoints span several 4 KiB chunks.
std::string Value(int g, int k) {
  std::string v = "g" + std::to_string(g) + "-v" + std::to_string(k) + "-";
  v.resize(100, 'p');
  return v;
}

void CatchUpByCheckpoint(int groups) {
  CheckpointCluster c(groups);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(c.Start(i).ok());
  uint64_t instance = 0;
  for (int g = 0; g < groups; ++g) {
    for (int k = 0; k < 3; ++k) {
      ASSERT_TRUE(c.node(0)->Propose(static_cast<uint32_t>(g), Value(g, k), &instance).ok());
    }
  }
  ASSERT_TRUE(
      WaitUntil([&] { return c.machine(2, groups - 1)->values().size() == 3; }, kPatience));
  std::vector<uint64_t> behind(groups);
  for (int g = 0; g < groups; ++g) behind[g] = c.node(2)->GetNowInstanceId(static_cast<uint32_t>(g));
  c.Stop(2);
  // The others go on until both trimmed their logs past node 2's position.
  for (int k = 3; k < 60; ++k) {
    for (int g = 0; g < groups; ++g) {
      ASSERT_TRUE(c.node(k % 2)->Propose(static_cast<uint32_t>(g), Value(g, k), &instance).ok());
    }
  }
  for (int g = 0; g < groups; ++g) {
    for (int i : {0, 1}) {
      ASSERT_TRUE(WaitUntil([&] {
        return c.node(i)->GetMinChosenInstanceId(static_cast<uint32_t>(g)) > behind[g];
      }, kPatience)) << "node " << i << " group " << g << " did not trim past node 2";
    }
  }
  // The transports keep frames for a peer that is down; restarting the
  // others drops them, so node 2 must ask for what it missed.
  for (int i : {0, 1}) {
    c.Stop(i);
    ASSERT_TRUE(c.Start(i).ok());
  }
  ASSERT_TRUE(c.Start(2).ok());
  for (int g = 0; g < groups; ++g) {
    ASSERT_TRUE(WaitUntil([&] {
      return c.machine(2, g)->values().size() == 60;
    }, kPatience)) << "group " << g << ": node 2 holds " << c.machine(2, g)->values().size();
    // Node 0 was restarted too: it may still be learning the last values.
    ASSERT_TRUE(WaitUntil([&] { return c.machine(0, g)->values().size() == 60; }, kPatience));
    EXPECT_EQ(c.machine(2, g)->values(), c.machine(0, g)->values());
    // The count moves once the install after the load is done.
    GroupStatus st;
    EXPECT_TRUE(WaitUntil([&] {
      return c.node(2)->GetGroupStatus(static_cast<uint32_t>(g), &st).ok() &&
             st.checkpoints_loaded >= 1;
    }, kPatience));
    EXPECT_GE(c.machine(2, g)->loads(), 1);
    EXPECT_GE(c.transfer(2).Progress(static_cast<uint32_t>(g)).received, 1u);
  }
  EXPECT_GE(c.transfer(2).stats().chunks_received, 2u * groups);
  EXPECT_EQ(c.transfer(2).stats().bad_chunks, 0u);
  // And node 2 takes part again, from the log.
  for (int g = 0; g < groups; ++g) {
    ASSERT_TRUE(c.node(2)->Propose(static_cast<uint32_t>(g), Value(g, 99), &instance).ok());
    ASSERT_TRUE(WaitUntil([&] {
      return c.machine(0, g)->values().size() == 61 && c.machine(2, g)->values().size() == 61;
    }, kPatience));
    EXPECT_EQ(c.machine(2, g)->values(), c.machine(0, g)->values());
  }
}

TEST(NodeCheckpointCatchupTest, NodeBehindEveryLogCatchesUpByCheckpoint) {
  CatchUpByCheckpoint(1);
}

TEST(NodeCheckpointCatchupTest, TwoGroupsCatchUpByCheckpointAtOnce) { CatchUpByCheckpoint(2); }

// Bad frames on the checkpoint channel, from a member over real TCP: each
// is dropped and counted by the node's transfer; the group keeps working.
TEST(NodeCheckpointCatchupTest, BadCheckpointFramesAreDroppedAndCounted) {
  CheckpointCluster c(1);
  for (int i : {0, 1}) ASSERT_TRUE(c.Start(i).ok());
  // Node 2's identity, without a node: a bare transport.
  TcpTransportOptions to;
  to.self = c.info(2);
  to.nodes = c.nodes();
  to.cluster_id = 78;
  std::unique_ptr<TcpTransport> t;
  ASSERT_TRUE(NewTcpTransport(to, &t).ok());
  ASSERT_TRUE(t->Start([](uint64_t, std::string) {}).ok());
  const uint64_t to_node = c.info(0).id();
  std::string junk;
  PutFixed32(&junk, kCheckpointChannel | 0);
  junk += "not a checkpoint message";
  ASSERT_TRUE(t->Send(to_node, junk).ok());
  CheckpointMessage m;
  m.type = CheckpointMessage::Type::kFetch;
  m.cluster_id = 78;
  m.from = c.info(2).id();
  m.group = 5;  // no such group
  ASSERT_TRUE(t->Send(to_node, EncodeCheckpointMessage(m)).ok());
  m.group = 0;
  m.cluster_id = 79;  // another cluster
  ASSERT_TRUE(t->Send(to_node, EncodeCheckpointMessage(m)).ok());
  m.cluster_id = 78;
  m.from = c.info(1).id();  // speaks for node 1
  ASSERT_TRUE(t->Send(to_node, EncodeCheckpointMessage(m)).ok());
  const CheckpointTransfer& transfer = c.transfer(0);
  ASSERT_TRUE(WaitUntil([&] {
    const CheckpointTransferStats s = transfer.stats();
    return s.malformed == 1 && s.unknown_group == 1 && s.foreign == 2;
  }));
  EXPECT_EQ(transfer.stats().chunks_sent, 0u);
  t->Stop();
  uint64_t instance = 0;
  for (int k = 0; k < 3; ++k) ASSERT_TRUE(c.node(0)->Propose(0, Value(0, k), &instance).ok());
}

}  // namespace
}  // namespace node_checkpoint_catchup_test
}  // namespace chorus
