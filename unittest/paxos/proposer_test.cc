// Proposer phases through a hand-pumped 3-node cluster.
#include <gtest/gtest.h>

#include "paxos/value.h"
#include "unittest/paxos/harness.h"

namespace chorus {
namespace paxos {
namespace proposer_test {
namespace {

using testing::Harness;

TEST(ProposerTest, FirstProposalRunsBothPhasesLaterOnesSkipPhaseOne) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 11, "a").ok());
  h.Pump();
  EXPECT_EQ(h.core(0)->stats().prepares_started, 1u);
  ASSERT_EQ(h.node(0).finished.size(), 1u);
  EXPECT_TRUE(h.node(0).finished[0].status.ok());
  EXPECT_EQ(h.node(0).finished[0].token, 11u);
  EXPECT_EQ(h.node(0).finished[0].instance, 0u);

  for (uint64_t t = 12; t < 20; ++t) ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
  // Several proposals are in phase 2 at once (pipelining), and no new phase 1.
  h.Pump();
  EXPECT_EQ(h.core(0)->stats().prepares_started, 1u);
  EXPECT_GE(h.core(0)->stats().fast_accepts, 8u);
  ASSERT_EQ(h.node(0).finished.size(), 9u);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(h.node(i).applied.size(), 9u) << "node " << i;
    for (size_t k = 0; k < 9; ++k) {
      EXPECT_EQ(h.node(i).applied[k].instance, k);
      EXPECT_EQ(h.node(i).applied[k].value, h.node(0).applied[k].value);
    }
  }
  EXPECT_EQ(h.node(0).applied[0].value, "a");
  EXPECT_TRUE(h.node(0).applied[0].ours);
  EXPECT_FALSE(h.node(1).applied[0].ours);
}

// OutMessage::before_persist: the ACCEPTs of a prepared proposer may leave
// before its step's persist (its own vote is in that persist); a PREPARE
// (with its promise, a variable) may not.
TEST(ProposerTest, OnlyAcceptRequestsOfAPromisedBallotLeaveBeforeThePersist) {
  Harness h(3);
  Outputs first;
  ASSERT_TRUE(h.core(0)->Propose(1, "a", &first).ok());
  EXPECT_FALSE(first.persist.variables.empty());  // phase 1: our own promise
  ASSERT_FALSE(first.messages.empty());
  for (const OutMessage& m : first.messages) {
    PaxosMsg msg;
    ASSERT_TRUE(msg.ParseFromString(m.bytes));
    EXPECT_EQ(msg.type(), PREPARE);
    EXPECT_FALSE(m.before_persist);
  }
  h.Exec(0, &first);
  h.Pump();
  ASSERT_EQ(h.node(0).finished.size(), 1u);

  Outputs second;
  ASSERT_TRUE(h.core(0)->Propose(2, "b", &second).ok());
  ASSERT_EQ(second.messages.size(), 1u);  // one broadcast ACCEPT
  PaxosMsg accept;
  ASSERT_TRUE(accept.ParseFromString(second.messages[0].bytes));
  EXPECT_EQ(accept.type(), ACCEPT);
  EXPECT_EQ(second.messages[0].to, kBroadcast);
  EXPECT_TRUE(second.messages[0].before_persist);
  ASSERT_EQ(second.persist.records.size(), 1u);  // our own vote, synced
  EXPECT_TRUE(second.sync);
  EXPECT_TRUE(second.persist.variables.empty());
  // An acceptor's reply, its vote, waits for the persist that holds it.
  Outputs vote;
  ASSERT_TRUE(h.core(1)->OnMessage(second.messages[0].bytes, &vote).ok());
  ASSERT_EQ(vote.messages.size(), 1u);
  PaxosMsg accepted;
  ASSERT_TRUE(accepted.ParseFromString(vote.messages[0].bytes));
  EXPECT_EQ(accepted.type(), ACCEPTED);
  EXPECT_FALSE(vote.messages[0].before_persist);
  EXPECT_FALSE(vote.persist.records.empty());
  EXPECT_TRUE(vote.sync);
  h.Exec(1, &vote);
  h.Exec(0, &second);
  h.Pump();
  ASSERT_EQ(h.node(0).finished.size(), 2u);
  EXPECT_TRUE(h.node(0).finished[1].status.ok());
}

TEST(ProposerTest, PipelinesUpToMaxInflight) {
  Harness h(3, [](CoreOptions* o) { o->max_inflight = 3; });
  ASSERT_TRUE(h.Propose(0, 1, "first").ok());
  h.Pump();
  for (uint64_t t = 2; t < 8; ++t) ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
  // Count distinct instances in ACCEPT messages queued before any reply.
  std::set<uint64_t> instances;
  for (const auto& m : h.net()) {
    PaxosMsg msg;
    ASSERT_TRUE(msg.ParseFromString(m.second));
    if (msg.type() == ACCEPT) instances.insert(msg.instance());
  }
  EXPECT_EQ(instances.size(), 3u);
  h.Pump();
  EXPECT_EQ(h.node(0).finished.size(), 7u);
}

TEST(ProposerTest, AdoptsPreviouslyAcceptedValue) {
  Harness h(3);
  // Node 1 gets value "old" accepted at instance 0 by itself and node 2 only
  // (node 0 is cut off), but nobody learns it is chosen.
  h.Isolate(0);
  ASSERT_TRUE(h.Propose(1, 7, "old").ok());
  // Deliver prepare + promise + accept, but drop the ACCEPTED replies and
  // chosen notices so node 1 never learns the outcome.
  for (int round = 0; round < 10 && !h.net().empty(); ++round) {
    auto m = h.net().front();
    h.net().pop_front();
    PaxosMsg msg;
    ASSERT_TRUE(msg.ParseFromString(m.second));
    if (msg.type() == ACCEPTED || msg.type() == CHOSEN) continue;
    h.Deliver(m.first, m.second);
  }
  h.net().clear();
  h.Heal(0);
  // Now node 0 proposes: phase 1 must report "old" at instance 0 and node 0
  // must re-propose it there; its own value goes to instance 1.
  ASSERT_TRUE(h.Propose(0, 8, "new").ok());
  h.Pump();
  // Its first ballot was below node 1's (it had seen none): rejected, it
  // backs off and retries above the ballot the rejections reported.
  EXPECT_TRUE(h.node(0).applied.empty());
  h.Fire(0, TimerKind::kBackoff);
  h.Pump();
  ASSERT_GE(h.node(0).applied.size(), 2u);
  EXPECT_EQ(h.node(0).applied[0].value, "old");
  EXPECT_FALSE(h.node(0).applied[0].ours);
  EXPECT_EQ(h.node(0).applied[1].value, "new");
  ASSERT_EQ(h.node(0).finished.size(), 1u);
  EXPECT_EQ(h.node(0).finished[0].instance, 1u);
}

TEST(ProposerTest, RetriesWithHigherBallotAfterRejection) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.Pump();
  // Node 1 takes over with a higher ballot.
  ASSERT_TRUE(h.Propose(1, 2, "b").ok());
  h.Pump();
  const Ballot b1 = h.core(1)->promised();
  // Node 0's fast path is now rejected; it backs off and re-prepares.
  ASSERT_TRUE(h.Propose(0, 3, "c").ok());
  h.Pump();
  EXPECT_EQ(h.node(0).finished.size(), 1u);
  h.Fire(0, TimerKind::kBackoff);
  h.Pump();
  ASSERT_EQ(h.node(0).finished.size(), 2u);
  EXPECT_TRUE(h.node(0).finished[1].status.ok());
  EXPECT_GT(h.core(0)->promised(), b1);
  EXPECT_EQ(h.core(0)->stats().prepares_started, 2u);
}

TEST(ProposerTest, AcceptTimeoutLeadsToRetryAndCompletion) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.net().clear();  // every message lost
  h.Fire(0, TimerKind::kPrepare);
  h.Fire(0, TimerKind::kBackoff);
  h.Pump();
  ASSERT_EQ(h.node(0).finished.size(), 1u);
  EXPECT_TRUE(h.node(0).finished[0].status.ok());
}

TEST(ProposerTest, CancelQueuedAndRejectBadValues) {
  Harness h(3, [](CoreOptions* o) { o->max_value_bytes = 8; });
  EXPECT_TRUE(h.Propose(0, 1, "").IsInvalidArgument());
  EXPECT_TRUE(h.Propose(0, 1, "123456789").IsTooLarge());
  ASSERT_TRUE(h.Propose(0, 1, "x").ok());  // phase 1 pending: still queued
  Outputs out;
  h.core(0)->Cancel(1, &out);
  h.Exec(0, &out);
  ASSERT_EQ(h.node(0).finished.size(), 1u);
  EXPECT_TRUE(h.node(0).finished[0].status.IsStopped());
  h.Pump();
  // Phase 1 completed with nothing to propose: nothing chosen.
  EXPECT_TRUE(h.node(0).applied.empty());
}

}  // namespace
}  // namespace proposer_test
}  // namespace paxos
}  // namespace chorus
