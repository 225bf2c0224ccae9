// NodeImpl's own duties, driven through a Transport the test plays: incoming
// messages reach their group's core with the sender the transport verified.
#include "node/node_impl.h"

#include <mutex>
#include <string>
#include <thread>
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

// Node 0 of a 3-node cluster whose peers are `transport`: nothing it
// proposes is chosen unless the test answers for the peers.
Options ScriptedOptions(const TempDir& dir, Transport* transport) {
  Options o;
  o.nodes = {NodeInfo{"127.0.0.1", 1}, NodeInfo{"127.0.0.1", 2}, NodeInfo{"127.0.0.1", 3}};
  o.self = o.nodes[0];
  o.data_dir = dir.path() + "/d";
  o.create_if_missing = true;  // a fresh dir: the first start
  o.transport = transport;
  o.log_level = LogLevel::kNone;
  return o;
}

TEST(NodeImplTest, AMessageInAnotherMembersNameIsDropped) {
  TempDir dir;
  ScriptedTransport transport;
  const Options o = ScriptedOptions(dir, &transport);
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

TEST(NodeImplTest, DestructorWaitsForTheCallsInsideAndAnswersThemStopped) {
  TempDir dir;
  ScriptedTransport transport;
  Options o = ScriptedOptions(dir, &transport);
  o.propose_timeout_ms = 600000;  // only the destructor ends these proposals
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  auto* impl = static_cast<NodeImpl*>(node.get());
  constexpr int kCallers = 4;
  std::vector<Status> results(kCallers);
  std::vector<std::thread> callers;
  for (int t = 0; t < kCallers; ++t) {
    callers.emplace_back([&, t] {
      uint64_t instance = 0;
      uint32_t index = 0;
      results[t] = t % 2 == 0 ? impl->Propose(0, "never-chosen", &instance, nullptr)
                              : impl->BatchPropose(0, "never-chosen", &instance, &index, nullptr);
    });
  }
  // Every caller is inside the node (it registers before anything else).
  ASSERT_TRUE(WaitUntil([&] { return impl->active_calls_for_testing() == kCallers; }));
  node.reset();  // returns only once every caller has left the node
  for (auto& t : callers) t.join();
  for (const Status& s : results) EXPECT_TRUE(s.IsStopped()) << s.ToString();
}

TEST(NodeImplTest, AfterStopAProposalNeverReachesAGroup) {
  TempDir dir;
  ScriptedTransport transport;
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(ScriptedOptions(dir, &transport), &node).ok());
  node->Stop();
  uint64_t instance = 0;
  uint32_t index = 0;
  // The stop check comes before the group lookup: even a bad group is Stopped.
  EXPECT_TRUE(node->Propose(0, "late", &instance).IsStopped());
  EXPECT_TRUE(node->Propose(99, "late", &instance).IsStopped());
  EXPECT_TRUE(node->BatchPropose(99, "late", &instance, &index).IsStopped());
  // Queries keep answering until the destructor.
  EXPECT_TRUE(node->GetGroupStatus(0).IsStopped());
  EXPECT_TRUE(node->GetGroupStatus(99).IsInvalidArgument());
  EXPECT_EQ(static_cast<NodeImpl*>(node.get())->active_calls_for_testing(), 0);
}

}  // namespace
}  // namespace chorus
