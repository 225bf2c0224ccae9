// NodeImpl's own duties, driven through a Transport the test plays: incoming
// messages reach their group's core with the sender the transport verified;
// catch-up batches read from the log are served off the group's loop.
#include "node/node_impl.h"

#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/leveldb_log_storage.h"
#include "node/value_codec.h"
#include "paxos.pb.h"
#include "paxos/value.h"
#include "unittest/support/chosen_records.h"
#include "unittest/support/gated_log_storage.h"
#include "unittest/support/test_util.h"
#include "utils/coding.h"

namespace chorus {
namespace node_impl_test {
namespace {

using testing::GatedLogStorage;
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
  // The LEARN_VALUES sent so far, as (to, message).
  std::vector<std::pair<uint64_t, paxos::PaxosMsg>> Batches() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<uint64_t, paxos::PaxosMsg>> out;
    for (const auto& [to, bytes] : sent_) {
      paxos::PaxosMsg m;
      if (bytes.size() < 4 || DecodeFixed32(bytes.data()) != 0) continue;
      if (m.ParseFromString(bytes.substr(4)) && m.type() == paxos::LEARN_VALUES) {
        out.emplace_back(to, m);
      }
    }
    return out;
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

// Group 0's envelope around `m`.
std::string Framed(const paxos::PaxosMsg& m) {
  std::string framed;
  PutFixed32(&framed, 0);
  framed.append(m.SerializeAsString());
  return framed;
}

// Group 0's envelope around a PREPARE that claims to come from `claimed`,
// for the instances from `instance` on.
std::string Prepare(uint64_t cluster_id, uint64_t claimed, uint64_t ballot_number,
                    uint64_t instance = 0) {
  paxos::PaxosMsg m;
  m.set_type(paxos::PREPARE);
  m.set_cluster_id(cluster_id);
  m.set_group(0);
  m.set_from(claimed);
  m.set_instance(instance);
  m.mutable_ballot()->set_number(ballot_number);
  m.mutable_ballot()->set_node_id(claimed);
  return Framed(m);
}

// Group 0's envelope around an ASK_LEARN from `from` for `instance` on.
std::string AskLearn(uint64_t cluster_id, uint64_t from, uint64_t instance) {
  paxos::PaxosMsg m;
  m.set_type(paxos::ASK_LEARN);
  m.set_cluster_id(cluster_id);
  m.set_group(0);
  m.set_from(from);
  m.set_instance(instance);
  return Framed(m);
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

TEST(NodeImplTest, CatchUpFromTheLogIsServedOffTheGroupsLoop) {
  TempDir dir;
  ScriptedTransport transport;
  Options o = ScriptedOptions(dir, &transport);
  o.chosen_cache_size = 0;  // every catch-up batch comes from the log
  o.data_dir.clear();
  GatedLogStorage* gated = nullptr;  // the log of group 0, owned by the node
  const uint64_t cluster_id = o.cluster_id;
  o.log_storage_factory = [&gated, &dir, cluster_id](uint32_t group,
                                                      std::unique_ptr<LogStorage>* out) {
    LevelDbLogOptions lo;
    lo.cluster_id = cluster_id;
    lo.group = group;
    lo.create_if_missing = true;  // a fresh temp dir
    std::unique_ptr<LogStorage> base;
    Status s = OpenLevelDbLogStorage(dir.path() + "/g" + std::to_string(group), lo, &base);
    if (!s.ok()) return s;
    // Five values chosen before this start.
    testing::WriteChosenRecords(base.get(), 0, 5, [](uint64_t i) {
      return paxos::EncodeValue(2, 1000 + i,
                                EncodeSingleValue(0, 1000 + i, "v" + std::to_string(i)));
    });
    auto g = std::make_unique<GatedLogStorage>(std::move(base));
    gated = g.get();
    *out = std::move(g);
    return Status::OK();
  };
  std::unique_ptr<Node> node;
  ASSERT_TRUE(Node::Open(o, &node).ok());
  ASSERT_EQ(node->GetNowInstanceId(0), 5u);
  auto* impl = static_cast<NodeImpl*>(node.get());
  const uint64_t b = o.nodes[1].id();

  // The disk hangs; member b asks for everything.
  gated->Close();
  struct OpenAtExit {  // so that a failed assertion cannot hang the node's Stop
    GatedLogStorage* gate;
    ~OpenAtExit() { gate->Open(); }
  } open_at_exit{gated};
  transport.Deliver(b, AskLearn(cluster_id, b, 0));
  ASSERT_TRUE(WaitUntil([&] { return gated->held() == 1; }));
  // The read is stuck in the log, and the group's loop is not: it answers
  // a PREPARE meanwhile.
  transport.Deliver(b, Prepare(cluster_id, b, 5, /*instance=*/5));
  ASSERT_TRUE(WaitUntil([&] { return !transport.Promises().empty(); }));
  EXPECT_TRUE(transport.Batches().empty());

  gated->Open();
  ASSERT_TRUE(WaitUntil([&] { return !transport.Batches().empty(); }));
  const auto batches = transport.Batches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].first, b);
  const paxos::PaxosMsg& m = batches[0].second;
  EXPECT_EQ(m.from(), o.self.id());
  EXPECT_EQ(m.cluster_id(), cluster_id);
  EXPECT_EQ(m.chosen_end(), 5u);
  ASSERT_EQ(m.learned_size(), 5);
  for (int k = 0; k < 5; ++k) EXPECT_EQ(m.learned(k).instance(), static_cast<uint64_t>(k));
  // (Counted once the transport took it, which may be after we saw it.)
  EXPECT_TRUE(WaitUntil([&] { return impl->catchup_reader_for_testing().served() == 1; }));
  node->Stop();
  EXPECT_EQ(impl->core_stats_for_testing(0).catchup_reads, 1u);
}

}  // namespace
}  // namespace node_impl_test
}  // namespace chorus
