// Work nobody would decide (learner.h, proposer.h FillWanted / OnFill): an
// instance is decided only when a voter proposes there, and a quiet group
// proposes nothing. A removed node's slot (accepted by a minority, or by
// nobody) and a joiner's proposal below the first configuration it knows
// get decided because the node asks a voter to FILL up to them on its
// learn ticks; a vote nobody decides makes its acceptor run phase 1. And a
// node that installs a joiner's checkpoint keeps the configuration
// governing it (Membership::PrependOlder).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include "unittest/paxos/harness.h"
#include "unittest/paxos/membership_helpers.h"

namespace chorus {
namespace paxos {
namespace stranded_test {
namespace {

using testing::Change;
using testing::Cluster;
using testing::Finished;
using testing::Harness;
using testing::kAlpha;
using testing::M;
using testing::ProposeChange;
using testing::PumpUntil;
using testing::Tick;

// Drops the queued messages of `type` for `instance` addressed to node
// index `to`.
void Drop(Harness* h, int to, MsgType type, uint64_t instance) {
  auto& net = h->net();
  for (auto it = net.begin(); it != net.end();) {
    PaxosMsg msg;
    if (it->first == to && msg.ParseFromString(it->second) && msg.type() == type &&
        msg.instance() == instance) {
      it = net.erase(it);
    } else {
      ++it;
    }
  }
}

// `rounds` quiet rounds: every node's learn tick, then its proposer timers
// (Tick), pumping after each, until `done`.
void LearnTicks(Harness* h, int rounds, const std::function<bool()>& done) {
  for (int k = 0; k < rounds && !done(); ++k) {
    for (size_t i = 0; i < h->size(); ++i) {
      if (h->node(static_cast<int>(i)).timers.count(TimerKind::kLearn)) {
        h->Fire(static_cast<int>(i), TimerKind::kLearn);
      }
      h->Pump();
    }
    Tick(h);
  }
}

// Node 1's fillers cover 1..kAlpha - 1 at once.
void FullPipeline(CoreOptions* o) { o->max_inflight = kAlpha; }
// Node 4 asks node 2 while it knows no membership (node 1 is down).
void JoinViaNode2(CoreOptions* o) { o->join_peers = {2}; }

// True when an ACCEPT for `instance` is queued.
bool AcceptQueued(Harness* h, uint64_t instance) {
  for (const auto& m : h->net()) {
    PaxosMsg msg;
    if (msg.ParseFromString(m.second) && msg.type() == ACCEPT && msg.instance() == instance) {
      return true;
    }
  }
  return false;
}

// The slot of the trace that motivated the rule (seed 1300700 of the
// simulation). Node 1 gets node 3's removal chosen at 0 (in force from
// kAlpha); its fillers reach only its own acceptor. Node 3, cut off, queues
// "v"; back, it learns the change and runs phase 1 with promises of both
// remaining voters, so its ballot may go on at kAlpha. It adopts node 1's
// fillers at 1..7 and "v" lands at kAlpha while node 3 still votes
// (chosen_end 1). Only node 1 (`accepted_by_one`) or nobody gets that
// ACCEPT. Then node 3 is removed with the slot
// pending, and every log ends at kAlpha with nothing left to propose.
// Returns node 3's result for "v" after a few quiet rounds (nullptr: never
// decided).
const ProposalResult* RemovedNodesSlot(Harness* h, bool accepted_by_one) {
  h->Isolate(2);
  EXPECT_TRUE(ProposeChange(h, 0, 1, Change(0, {M(1), M(2)})).ok());
  PumpUntil(h, [h] { return h->core(0)->chosen_end() >= 1; });
  for (uint64_t i = 1; i < kAlpha; ++i) Drop(h, 1, ACCEPT, i);
  h->Pump();
  EXPECT_TRUE(h->Propose(2, 100, "v").ok());
  h->Heal(2);
  h->Fire(2, TimerKind::kLearn);  // it learns its removal, in force from kAlpha
  h->Pump();
  EXPECT_EQ(h->core(2)->chosen_end(), 1u);
  EXPECT_EQ(h->core(2)->role(), MemberRole::kRemoved);
  h->Fire(2, TimerKind::kPrepare);  // its first PREPARE was lost
  h->Fire(2, TimerKind::kBackoff);
  PumpUntil(h, [h] { return AcceptQueued(h, kAlpha); });
  Drop(h, 1, ACCEPT, kAlpha);
  if (!accepted_by_one) Drop(h, 0, ACCEPT, kAlpha);
  h->Pump();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h->core(i)->chosen_end(), kAlpha) << i;
  EXPECT_EQ(Finished(h, 2, 100), nullptr);
  LearnTicks(h, 6, [h] { return Finished(h, 2, 100) != nullptr; });
  return Finished(h, 2, 100);
}

// Node 1's vote at kAlpha makes its own learn ticks run phase 1 too (the
// vote rule, learner.h): either rule alone decides the slot.
TEST(StrandedTest, ARemovedNodesSlotAcceptedByAMinorityGetsChosen) {
  for (TestMutation m :
       {TestMutation::kNone, TestMutation::kNoFillRequest, TestMutation::kNoVoteRecovery}) {
    Harness h(3, Cluster(3, m, FullPipeline));
    const ProposalResult* r = RemovedNodesSlot(&h, /*accepted_by_one=*/true);
    ASSERT_NE(r, nullptr) << static_cast<int>(m);
    // A voter's phase 1 adopted node 1's vote: the value itself got chosen.
    EXPECT_TRUE(r->status.ok()) << r->status.ToString();
    EXPECT_EQ(r->instance, kAlpha);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(h.core(i)->chosen_end(), kAlpha + 1) << i;
  }
}

TEST(StrandedTest, ARemovedNodesSlotNobodyAcceptedIsFilledAndItsProposalEnds) {
  Harness h(3, Cluster(3, TestMutation::kNone, FullPipeline));
  const ProposalResult* r = RemovedNodesSlot(&h, /*accepted_by_one=*/false);
  ASSERT_NE(r, nullptr);
  // A noop filled instance 9; node 3 no longer votes, so the value ends.
  EXPECT_TRUE(r->status.IsInvalidArgument()) << r->status.ToString();
  EXPECT_GE(h.core(0)->stats().fills_proposed + h.core(1)->stats().fills_proposed, 1u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.core(i)->chosen_end(), kAlpha + 1) << i;
}

// Genesis 1, 2, 3; node 4 added as a voter at instance 0 (in force from 8).
// Node 1 goes down before its fillers leave, so the group stops at 1. Node
// 4 learned the history from the change on: it does not know the genesis,
// which governs 1..7, so it cannot run phase 1 from 1. Returns its result
// for a value proposed there after a few quiet rounds (nullptr: none).
const ProposalResult* JoinersProposal(Harness* h) {
  EXPECT_TRUE(ProposeChange(h, 0, 7, Change(0, {M(1), M(2), M(3), M(4, true, 44)})).ok());
  PumpUntil(h, [h] { return h->core(0)->chosen_end() >= 1; });
  for (uint64_t i = 1; i < kAlpha; ++i) {
    for (int to = 1; to < 4; ++to) Drop(h, to, ACCEPT, i);
  }
  h->Isolate(0);
  h->Pump();
  h->Fire(3, TimerKind::kLearn);  // node 4 catches up from node 2
  h->Pump();
  EXPECT_EQ(h->core(3)->chosen_end(), 1u);
  EXPECT_EQ(h->core(3)->role(), MemberRole::kVoter);
  EXPECT_EQ(h->core(3)->membership().At(1).VoterCount(), 0u);  // unknown here
  EXPECT_TRUE(h->Propose(3, 9, "w").ok());
  h->Pump();
  // A phase 1 it could never complete is not even started.
  EXPECT_EQ(h->core(3)->stats().prepares_started, 0u);
  LearnTicks(h, 10, [h] { return Finished(h, 3, 9) != nullptr; });
  return Finished(h, 3, 9);
}

TEST(StrandedTest, AJoinersProposalBelowItsFirstConfigurationGetsChosen) {
  Harness h(4, Cluster(3, TestMutation::kNone, JoinViaNode2));
  const ProposalResult* r = JoinersProposal(&h);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status.ok()) << r->status.ToString();
  EXPECT_GE(r->instance, kAlpha);  // after the fillers a voter proposed for it
  EXPECT_GE(h.core(3)->stats().fills_sent, 1u);
}

// Without the FILL requests a slot no voter voted for, and the joiner's
// proposal, stay undecided for good.
TEST(StrandedMutationTest, NoFillRequestLeavesThemUndecided) {
  {
    Harness h(3, Cluster(3, TestMutation::kNoFillRequest, FullPipeline));
    EXPECT_EQ(RemovedNodesSlot(&h, false), nullptr);
    EXPECT_EQ(h.core(2)->stats().fills_sent, 0u);
  }
  {
    Harness h(4, Cluster(3, TestMutation::kNoFillRequest, JoinViaNode2));
    EXPECT_EQ(JoinersProposal(&h), nullptr);
  }
}

// Node 1 gets "v" accepted by itself and node 2 (so it is chosen) but hears
// neither ACCEPTED, so nobody knows; then it restarts: its slot is gone,
// its vote is not (synced). Returns the lowest chosen_end of the nodes
// after a few quiet rounds (1: "v" was decided), and node 3's first value.
uint64_t VoteNobodyLearned(TestMutation m, std::string* first) {
  Harness h(3, Cluster(3, m));
  EXPECT_TRUE(h.Propose(0, 1, "v").ok());
  PumpUntil(&h, [&h] { return AcceptQueued(&h, 0); });
  Drop(&h, 2, ACCEPT, 0);
  PumpUntil(&h, [&h] { return !AcceptQueued(&h, 0); });
  Drop(&h, 0, ACCEPTED, 0);
  h.Pump();
  EXPECT_EQ(h.core(0)->chosen_end(), 0u);
  h.Open(0);
  LearnTicks(&h, 6, [&h] { return h.core(2)->chosen_end() > 0; });
  uint64_t end = UINT64_MAX;
  for (int i = 0; i < 3; ++i) end = std::min(end, h.core(i)->chosen_end());
  if (!h.node(2).applied.empty()) *first = h.node(2).applied[0].value;
  return end;
}

TEST(StrandedTest, AChosenVoteNobodyLearnedIsDecidedAgain) {
  std::string first;
  EXPECT_EQ(VoteNobodyLearned(TestMutation::kNone, &first), 1u);
  EXPECT_EQ(first, "v");  // phase 1 adopted it
}

TEST(StrandedMutationTest, NoVoteRecoveryLeavesAVoteUndecided) {
  std::string first;
  EXPECT_EQ(VoteNobodyLearned(TestMutation::kNoVoteRecovery, &first), 0u);
}

// A FILL is bounded work: below chosen_end + alpha.
TEST(StrandedTest, AFillOutsideTheDistanceIsIgnored) {
  Harness h(3, Cluster(3));
  auto fill = [&h](uint64_t instance) {
    PaxosMsg m;
    m.set_type(FILL);
    m.set_cluster_id(9);
    m.set_from(3);
    m.set_instance(instance);
    EXPECT_TRUE(h.Deliver(0, m.SerializeAsString()).ok());
    h.Pump();
  };
  fill(kAlpha);  // at chosen_end + alpha: beyond the bound
  EXPECT_EQ(h.core(0)->stats().prepares_started, 0u);
  EXPECT_EQ(h.core(0)->chosen_end(), 0u);
  fill(kAlpha - 1);
  EXPECT_EQ(h.core(0)->chosen_end(), kAlpha);  // noops at 0..7
  fill(2);  // below chosen_end: decided already
  EXPECT_EQ(h.core(0)->chosen_end(), kAlpha);
}

// Node 3 installs a checkpoint at 4 made by joiner 4, whose history starts
// at the change (in force from 8): without node 3's own genesis it would
// not know At(4).
Membership InstalledFromAJoiner(TestMutation m) {
  Harness h(4, Cluster(3, m));
  h.Isolate(2);
  EXPECT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3), M(4, false, 44)})).ok());
  h.Pump();
  h.Fire(3, TimerKind::kLearn);
  h.Pump();
  EXPECT_GE(h.core(3)->chosen_end(), 5u);
  const Membership at = h.core(3)->MembershipAt(4);
  EXPECT_EQ(at.At(4).VoterCount(), 0u);  // the joiner's view
  std::string bytes;
  EXPECT_TRUE(h.node(0).log.Get(3, &bytes).ok());
  InstanceRecord rec;
  EXPECT_TRUE(rec.ParseFromString(bytes));
  Outputs out;
  EXPECT_TRUE(h.core(2)->InstallCheckpoint(4, rec.checksum(), &at, &out).ok());
  h.Exec(2, &out);
  h.Open(2);  // and it was persisted
  h.Heal(2);
  h.Fire(2, TimerKind::kLearn);
  h.Pump();
  EXPECT_EQ(h.core(2)->chosen_end(), h.core(0)->chosen_end());  // the chain holds
  EXPECT_EQ(h.core(2)->membership().Latest(), h.core(0)->membership().Latest());
  return h.core(2)->membership();
}

TEST(StrandedTest, AnInstallOfAJoinersCheckpointKeepsTheConfigurationGoverningIt) {
  const Membership m = InstalledFromAJoiner(TestMutation::kNone);
  EXPECT_EQ(m.At(4).version, 0u);
  EXPECT_EQ(m.At(4).VoterCount(), 3u);
  EXPECT_EQ(InstalledFromAJoiner(TestMutation::kInstallDropsOlder).At(4).VoterCount(), 0u);
}

}  // namespace
}  // namespace stranded_test
}  // namespace paxos
}  // namespace chorus
