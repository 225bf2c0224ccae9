// NodeImpl's own duties, driven through a Transport the test plays: incoming
// messages reach their group's core with the sender the transport verified.
#include "node/node_impl.h"

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "paxos.pb.h"
#include "unittest/support/test_util.h"
#include "utils/coding.h"

namespace chorus {
namespace {

using testing::TempDir;
using testing::WaitUntil;

// A Transport whose peers are the test: it records what the node sends and
// hands the test the receiver, to deliver messages "from" any member.
class ScriptedTransport : public Transport {
 public:
  Status Start(Receiver receiver) override {
    std::lock_guard<std::mutex> lock(mu_);
    receiver_ = std::move(receiver);
    return Status::OK();
  }
  Status Send(uint64_t to, std::string message) override {
    std::lock_guard<std::mutex> lock(mu_);
    sent_.emplace_back(to, std::move(message));
    return Status::OK();
  }
  void Stop() override {}

  // Delivers `message` as the transport would after verifying `from`.
  void Deliver(uint64_t from, std::string message) {
    Receiver receiver;
    {
      std::lock_guard<std::mutex> lock(mu_);
      receiver = receiver_;
    }
    receiver(from, std::move(message));
  }
  // The PROMISEs sent so far, as (to, ballot number).
  std::vector<std::pair<uint64_t, uint64_t>> Promises() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (const auto& [to, bytes] : sent_) {
      paxos::PaxosMsg m;
      if (bytes.size() < 4 || !m.ParseFromString(bytes.substr(4))) continue;
      if (m.type() == paxos::PROMISE) out.emplace_back(to, m.ballot().number());
    }
    return out;
  }

 private:
  std::mutex mu_;
  Receiver receiver_;                                   // GUARDED_BY(mu_)
  std::vector<std::pair<uint64_t, std::string>> sent_;  // GUARDED_BY(mu_)
};

// Group 0's envelope around a PREPARE that claims to come from `claimed`.
std::string Prepare(uint64_t cluster_id, uint64_t claimed, uint64_t ballot_number) {
  paxos::PaxosMsg m;
  m.set_type(paxos::PREPARE);
  m.set_cluster_id(cluster_id);
  m.set_group(0);
  m.set_from(claimed);
  m.mutable_ballot()->set_number(ballot_number);
  m.mutable_ballot()->set_node_id(claimed);
  std::string framed;
  PutFixed32(&framed, 0);
  framed.append(m.SerializeAsString());
  return framed;
}

TEST(NodeImplTest, AMessageInAnotherMembersNameIsDropped) {
  TempDir dir;
  ScriptedTransport transport;
  Options o;
  o.nodes = {NodeInfo{"127.0.0.1", 1}, NodeInfo{"127.0.0.1", 2}, NodeInfo{"127.0.0.1", 3}};
  o.self = o.nodes[0];
  o.data_dir = dir.path() + "/d";
  o.transport = &transport;
  o.log_level = LogLevel::kNone;
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  const uint64_t b = o.nodes[1].id(), c = o.nodes[2].id();

  // Member b sends a PREPARE in c's name (ballot 7), then one in its own
  // (ballot 5). Had the first counted, the node would have promised 7 to c
  // and refused 5; it promises 5 to b and nothing to c.
  transport.Deliver(b, Prepare(o.cluster_id, c, 7));
  transport.Deliver(b, Prepare(o.cluster_id, b, 5));
  ASSERT_TRUE(WaitUntil([&] { return !transport.Promises().empty(); }));
  // The group's loop handles messages in arrival order: the first is done.
  EXPECT_EQ(transport.Promises(), (std::vector<std::pair<uint64_t, uint64_t>>{{b, 5}}));

  // No sender at all (0 is no node's id) is dropped before the group.
  auto* impl = static_cast<NodeImpl*>(node.get());
  transport.Deliver(0, Prepare(o.cluster_id, c, 9));
  EXPECT_EQ(impl->misrouted_messages(), 1u);

  node->Stop();
  // After Stop the loop is joined: its core's counters may be read.
  EXPECT_EQ(impl->core_stats_for_testing(0).sender_mismatches, 1u);
}

}  // namespace
}  // namespace chorus
