// Persist before send, checked in the runtime: every PROMISE and ACCEPTED a
// node sends must be covered by a synced log write that had already
// returned when the frame was handed to the transport. The core promises
// this only if the group loop executes a round as persist -> send; these
// tests watch the loop from outside (a recording LogStorage and Transport)
// so that sending before the write, or writing without sync, fails them.
#include <atomic>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "chorus/node.h"
#include "paxos/acceptor.h"
#include "paxos/ballot.h"
#include "unittest/node/group_rig.h"
#include "unittest/support/runtime_fakes.h"
#include "unittest/support/test_util.h"

namespace chorus {
namespace persist_before_send_test {
namespace {

using paxos::Ballot;
using paxos::PaxosMsg;
using testing::RecordingLogStorage;
using testing::RecordingTransport;

struct Coverage {
  std::vector<std::string> violations;
  int promises = 0;   // PROMISEs checked
  int accepteds = 0;  // ACCEPTEDs checked
};

// What a crash at `before` (an EventOrder number) leaves of the log: every
// write up to the last synced one that returned before it. A synced write
// makes the unsynced writes before it durable too (leveldb syncs its log
// file, which holds them all); an unsynced write after it may be lost.
struct Durable {
  Ballot promise;
  std::map<uint64_t, paxos::InstanceRecord> records;
};

Durable DurableBefore(const std::vector<RecordingLogStorage::WriteRecord>& writes,
                      uint64_t before) {
  size_t end = 0;  // writes [0, end) are durable
  for (size_t i = 0; i < writes.size(); ++i) {
    if (writes[i].returned < before && writes[i].ok && writes[i].sync) end = i + 1;
  }
  Durable d;
  for (size_t i = 0; i < end; ++i) {
    const LogWriteBatch& b = writes[i].batch;
    if (!writes[i].ok) continue;
    if (b.delete_below != 0) {
      d.records.erase(d.records.begin(), d.records.lower_bound(b.delete_below));
    }
    for (const auto& [name, value] : b.variables) {
      paxos::BallotPb pb;
      if (name == paxos::kPromiseVariable && pb.ParseFromString(value)) {
        d.promise = Ballot::FromPb(pb);
      }
    }
    for (const auto& [instance, bytes] : b.records) d.records[instance].ParseFromString(bytes);
  }
  return d;
}

// Checks every PROMISE and ACCEPTED of group `group` in `sent` against the
// writes of that group's log.
Coverage CheckCoverage(const std::vector<RecordingLogStorage::WriteRecord>& writes,
                       const std::vector<RecordingTransport::Sent>& sent, uint32_t group) {
  Coverage c;
  for (const RecordingTransport::Sent& s : sent) {
    uint32_t g = 0;
    PaxosMsg msg;
    if (!testing::DecodeGroupFrame(s.bytes, &g, &msg) || g != group) continue;
    if (msg.type() != paxos::PROMISE && msg.type() != paxos::ACCEPTED) continue;
    const Ballot b = Ballot::FromPb(msg.ballot());
    const Durable d = DurableBefore(writes, s.order);
    std::string what = paxos::MsgType_Name(msg.type()) + " of ballot " + b.ToString() +
                       " at instance " + std::to_string(msg.instance()) + " (send #" +
                       std::to_string(s.order) + ")";
    if (msg.type() == paxos::PROMISE) {
      ++c.promises;
      if (d.promise < b) {
        c.violations.push_back(what + ": the durable promise is only " + d.promise.ToString());
      }
    } else {
      ++c.accepteds;
      auto it = d.records.find(msg.instance());
      if (it == d.records.end()) {
        c.violations.push_back(what + ": no durable record of that instance");
      } else if (!it->second.chosen() && Ballot::FromPb(it->second.accepted_ballot()) < b) {
        c.violations.push_back(what + ": the durable record holds only ballot " +
                               Ballot::FromPb(it->second.accepted_ballot()).ToString());
      }
    }
  }
  return c;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size() && i < 10; ++i) out += "\n  " + lines[i];
  if (lines.size() > 10) out += "\n  ... and " + std::to_string(lines.size() - 10) + " more";
  return out;
}

// The test plays two peers against one group: PREPAREs and ACCEPTs of rising
// ballots, one at a time and then several in one round (queued before the
// loop wakes up), so merged rounds are covered too.
TEST(PersistBeforeSendTest, RepliesToScriptedPeersAreDurableBeforeTheyLeave) {
  testing::GroupRig rig(3);
  ASSERT_TRUE(rig.Start().ok());
  const uint64_t b = rig.peer(1), c = rig.peer(2);
  auto replies = [&](paxos::MsgType type) {
    return testing::SentOfType(rig.transport()->sent(), type).size();
  };
  auto wait_replies = [&](paxos::MsgType type, size_t n) {
    return rig.transport()->WaitFor([&](const std::vector<RecordingTransport::Sent>& sent) {
      return testing::SentOfType(sent, type).size() >= n;
    });
  };

  rig.group()->PostMessage(b, rig.Message(paxos::PREPARE, b, 5, 0));
  ASSERT_TRUE(wait_replies(paxos::PROMISE, 1));
  rig.group()->PostMessage(b, rig.Message(paxos::ACCEPT, b, 5, 0, "v0"));
  ASSERT_TRUE(wait_replies(paxos::ACCEPTED, 1));
  // A higher ballot's ACCEPT implies its promise.
  rig.group()->PostMessage(c, rig.Message(paxos::ACCEPT, c, 6, 1, "v1"));
  ASSERT_TRUE(wait_replies(paxos::ACCEPTED, 2));
  // A burst: the loop takes these together and answers them in one round.
  rig.group()->PostMessage(b, rig.Message(paxos::PREPARE, b, 7, 0));
  rig.group()->PostMessage(b, rig.Message(paxos::ACCEPT, b, 7, 2, "v2"));
  rig.group()->PostMessage(b, rig.Message(paxos::ACCEPT, b, 7, 3, "v3"));
  rig.group()->PostMessage(c, rig.Message(paxos::PREPARE, c, 8, 0));
  rig.group()->PostMessage(c, rig.Message(paxos::ACCEPT, c, 8, 4, "v4"));
  ASSERT_TRUE(wait_replies(paxos::PROMISE, 3));
  ASSERT_TRUE(wait_replies(paxos::ACCEPTED, 5));
  EXPECT_EQ(replies(paxos::PROMISE), 3u);

  const Coverage cov = CheckCoverage(rig.log()->writes(), rig.transport()->sent(), 0);
  EXPECT_EQ(cov.promises, 3);
  EXPECT_EQ(cov.accepteds, 5);
  EXPECT_TRUE(cov.violations.empty()) << Join(cov.violations);
}

// The same property on a real 3-node cluster over TCP, with proposals from
// every node at once (duelling proposers: many PREPAREs, PROMISEs, ACCEPTs).
TEST(PersistBeforeSendTest, EveryNodeOfABusyClusterPersistsBeforeItReplies) {
  constexpr int kNodes = 3;
  testing::TempDir dir;
  std::vector<NodeInfo> nodes;
  for (int i = 0; i < kNodes; ++i) nodes.push_back(NodeInfo{"127.0.0.1", testing::FreePort()});
  struct Member {
    testing::EventOrder order;
    std::unique_ptr<TcpTransport> tcp;
    std::unique_ptr<RecordingTransport> transport;
    RecordingLogStorage* log = nullptr;  // owned by the node
    testing::ValueLog sm;
    std::unique_ptr<Node> node;
  };
  std::vector<std::unique_ptr<Member>> members;
  for (int i = 0; i < kNodes; ++i) {
    auto m = std::make_unique<Member>();
    TcpTransportOptions to;
    to.self = nodes[i];
    to.nodes = nodes;
    to.cluster_id = 5;
    ASSERT_TRUE(NewTcpTransport(to, &m->tcp).ok());
    m->transport = std::make_unique<RecordingTransport>(m->tcp.get(), &m->order);
    Options o;
    o.self = nodes[i];
    o.nodes = nodes;
    o.cluster_id = 5;
    o.transport = m->transport.get();
    o.state_machines = {{0, &m->sm}};
    o.prepare_timeout_ms = 50;
    o.accept_timeout_ms = 50;
    o.log_level = LogLevel::kNone;
    Member* raw = m.get();
    const std::string path = dir.path() + "/n" + std::to_string(i);
    o.log_storage_factory = [raw, path](uint32_t group, std::unique_ptr<LogStorage>* out) {
      LevelDbLogOptions lo;
      lo.cluster_id = 5;
      lo.group = group;
      lo.create_if_missing = true;  // a fresh temp dir
      std::unique_ptr<LogStorage> base;
      Status s = OpenLevelDbLogStorage(path, lo, &base);
      if (!s.ok()) return s;
      auto log = std::make_unique<RecordingLogStorage>(std::move(base), &raw->order);
      raw->log = log.get();
      *out = std::move(log);
      return Status::OK();
    };
    ASSERT_TRUE(Node::Open(o, &m->node).ok());
    members.push_back(std::move(m));
  }
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < kNodes; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 15; ++k) {
        uint64_t instance = 0;
        if (!members[i]->node->Propose(0, "n" + std::to_string(i) + "-" + std::to_string(k),
                                       &instance).ok()) {
          failures++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  for (auto& m : members) m->node->Stop();  // nothing is recorded from here on

  int promises = 0, accepteds = 0;
  for (int i = 0; i < kNodes; ++i) {
    const Coverage cov = CheckCoverage(members[i]->log->writes(), members[i]->transport->sent(), 0);
    promises += cov.promises;
    accepteds += cov.accepteds;
    EXPECT_TRUE(cov.violations.empty()) << "node " << i << ":" << Join(cov.violations);
  }
  // Not vacuous: the nodes did answer each other.
  EXPECT_GT(promises, 0);
  EXPECT_GT(accepteds, 0);
}

}  // namespace
}  // namespace persist_before_send_test
}  // namespace chorus
