// Membership changes with master election (paxos/master.h, reconfig.h): a
// change asked on a node that is not the master is forwarded and finishes
// on its origin once in force; the master's removal makes it step down; only
// eligible voters of the newest configuration run for master; heartbeat
// acks of non-voters give no lease.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "paxos/value.h"
#include "unittest/paxos/harness.h"
#include "unittest/paxos/membership_helpers.h"

namespace chorus {
namespace paxos {
namespace reconfig_master_test {
namespace {

using testing::Change;
using testing::Finished;
using testing::Harness;
using testing::kAlpha;
using testing::M;
using testing::ProposeChange;

// Nodes 1..3 are the genesis, node 4 (if any) joins with incarnation 44.
void Options(CoreOptions* o) {
  o->master_election = true;
  o->activation_distance = kAlpha;
  o->max_inflight = 4;
  if (o->self == 4) {
    o->members.clear();
    o->joined = true;
    o->join_peers = {1};
    o->incarnation = 44;
  } else {
    o->members = {1, 2, 3};
  }
}

void Elect(Harness* h, int i, uint64_t at) {
  h->SetTime(at);
  h->Fire(i, TimerKind::kElection);
  h->Pump();
}

TEST(ReconfigMasterTest, AForwardedChangeFinishesOnItsOriginOnceInForce) {
  Harness h(3, Options);
  Elect(&h, 0, 1000);
  ASSERT_TRUE(h.core(0)->HoldsLease());
  ASSERT_TRUE(ProposeChange(&h, 1, 5, Change(0, {M(1), M(2), M(3, false)})).ok());
  EXPECT_EQ(h.core(1)->stats().forwards_sent, 1u);
  h.Pump();
  const ProposalResult* r = Finished(&h, 1, 5);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status.ok()) << r->status.ToString();
  // In force on the origin: the master filled the instances up to there.
  const uint64_t active = h.core(1)->membership().Latest().active_from;
  EXPECT_EQ(active, r->instance + kAlpha);
  EXPECT_GE(h.core(1)->chosen_end(), active);
  EXPECT_TRUE(h.node(0).finished.empty());  // the master has no waiter
  EXPECT_EQ(h.core(2)->role(), MemberRole::kFollower);
  // A follower forwards to the live master.
  ASSERT_TRUE(h.Propose(2, 9, "from a follower").ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 2, 9), nullptr);
  EXPECT_TRUE(Finished(&h, 2, 9)->status.ok());
  // The lease needs a majority of the voters 1 and 2: node 2 down, the
  // follower's acks give none.
  h.Isolate(1);
  h.SetTime(1600);  // inside the lease of the round at 1000 (until 1723)
  h.Fire(0, TimerKind::kHeartbeat);
  h.Pump();
  EXPECT_TRUE(h.core(0)->HoldsLease());
  h.SetTime(1800);  // the round at 1600 renewed nothing
  EXPECT_FALSE(h.core(0)->HoldsLease());
}

TEST(ReconfigMasterTest, ARemovedMasterStepsDownAndNeverRunsAgain) {
  Harness h(3, Options);
  Elect(&h, 0, 1000);
  ASSERT_TRUE(h.core(0)->HoldsLease());
  ASSERT_TRUE(ProposeChange(&h, 0, 5, Change(0, {M(2), M(3)})).ok());
  h.Pump();
  const ProposalResult* r = Finished(&h, 0, 5);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status.ok()) << r->status.ToString();
  // Its removal is in force: it released to nobody.
  EXPECT_FALSE(h.core(0)->HoldsLease());
  EXPECT_NE(h.core(0)->master().node, 1u);
  EXPECT_EQ(h.core(0)->role(), MemberRole::kRemoved);
  for (int i = 1; i < 3; ++i) EXPECT_EQ(h.core(i)->master().node, 0u) << i;
  // It does not campaign; node 2 does, and wins with the new voters.
  const uint64_t before = h.core(0)->stats().elections_started;
  h.SetTime(5000);
  h.Fire(0, TimerKind::kElection);
  h.Pump();
  EXPECT_EQ(h.core(0)->stats().elections_started, before);
  EXPECT_TRUE(h.Propose(0, 6, "x").IsInvalidArgument());
  h.Fire(1, TimerKind::kElection);
  h.Pump();
  EXPECT_TRUE(h.core(1)->HoldsLease());
  ASSERT_TRUE(h.Propose(2, 7, "y").ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 2, 7), nullptr);
  EXPECT_TRUE(Finished(&h, 2, 7)->status.ok());
  // Node 1 learns every value (learning is open to anyone) and refuses
  // TransferMaster to itself as a target elsewhere.
  Outputs out;
  EXPECT_TRUE(h.core(1)->TransferMaster(1, &out).IsInvalidArgument());
  h.Exec(1, &out);
}

TEST(ReconfigMasterTest, AJoinerAddedAsAVoterCatchesUpAndCounts) {
  Harness h(4, Options);
  h.Isolate(3);
  Elect(&h, 0, 1000);
  ASSERT_TRUE(ProposeChange(&h, 0, 5, Change(0, {M(1), M(2), M(3), M(4, true, 44)})).ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 0, 5), nullptr);
  EXPECT_EQ(h.core(3)->role(), MemberRole::kNotMember);
  h.Heal(3);
  h.Fire(3, TimerKind::kLearn);
  h.Fire(3, TimerKind::kLearn);
  h.Pump();
  EXPECT_EQ(h.core(3)->role(), MemberRole::kVoter);
  // Its incarnation reached the master with its catch-up requests.
  bool seen = false;
  for (const Core::PeerState& p : h.core(0)->peers()) seen |= p.id == 4 && p.incarnation == 44;
  EXPECT_TRUE(seen);
  // Voters 2 and 3 down: 1 and 4 are no majority of four, 1, 2, 4 are.
  h.Isolate(2);
  h.Isolate(1);
  ASSERT_TRUE(h.Propose(0, 6, "x").ok());
  h.Pump();
  EXPECT_EQ(Finished(&h, 0, 6), nullptr);
  // (Its ballot's promises lacked a majority of the new configuration:
  // phase 1 again, which 1 and 4 alone cannot win.)
  h.Heal(1);
  h.SetTime(1200);
  for (int k = 0; k < 4 && Finished(&h, 0, 6) == nullptr; ++k) {
    for (TimerKind t : {TimerKind::kPrepare, TimerKind::kAccept, TimerKind::kBackoff}) {
      if (h.node(0).timers.count(t)) h.Fire(0, t);
      h.Pump();
    }
  }
  ASSERT_NE(Finished(&h, 0, 6), nullptr)
      << h.core(0)->stats().prepares_started << " " << h.core(0)->chosen_end() << " "
      << h.core(3)->chosen_end() << " " << h.core(0)->stats().non_member_messages << " "
      << h.core(3)->stats().non_member_messages << " " << h.core(0)->HoldsLease() << " p2="
      << h.core(1)->promised().ToString() << " p4=" << h.core(3)->promised().ToString()
      << " p1=" << h.core(0)->promised().ToString() << " r2=" << h.core(1)->stats().prepares_refused
      << " r4=" << h.core(3)->stats().prepares_refused << " e2=" << h.core(1)->chosen_end();
  EXPECT_TRUE(Finished(&h, 0, 6)->status.ok());
}

}  // namespace
}  // namespace reconfig_master_test
}  // namespace paxos
}  // namespace chorus
