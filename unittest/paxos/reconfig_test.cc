// Membership changes through hand-pumped Cores (paxos/reconfig.h,
// membership.h M1..M6): adding and removing voters with pipelining in
// flight, followers, stale changes, restarts, trims, joiners and lost
// disks. Each membership TestMutation makes one of these fail.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "paxos/value.h"
#include "unittest/paxos/harness.h"
#include "unittest/paxos/membership_helpers.h"

namespace chorus {
namespace paxos {
namespace reconfig_test {
namespace {

using testing::Change;
using testing::Cluster;
using testing::Finished;
using testing::Harness;
using testing::kAlpha;
using testing::M;
using testing::ProposeChange;
using testing::PumpNewestFirst;
using testing::PumpUntil;
using testing::Tick;

// The instance node i applied the system value at (UINT64_MAX: none).
uint64_t ChangeInstance(Harness* h, int i, size_t nth = 0) {
  for (const ChosenValue& c : h->node(i).applied) {
    if ((c.proposal_id & kSystemValueBit) != 0 && nth-- == 0) return c.instance;
  }
  return UINT64_MAX;
}

TEST(ReconfigTest, AddingVotersOldQuorumsGovernUntilActiveFrom) {
  // Genesis 1, 2, 3; 4 and 5 join as voters. Only 1 and 2 are up: a
  // majority of the old configuration, not of the new one (3 of 5).
  Harness h(5, Cluster(3));
  h.Isolate(2);
  h.Isolate(3);
  h.Isolate(4);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.Pump();
  ASSERT_EQ(h.core(0)->chosen_end(), 1u);
  // Pipelined: two values, the change (instance 3, in force from 11), more
  // values. With 4 in flight the proposer sends instances 9..12 while
  // chosen_end is 9: 11 and 12 are the new configuration's.
  ASSERT_TRUE(h.Propose(0, 2, "v2").ok());
  ASSERT_TRUE(h.Propose(0, 3, "v3").ok());
  ASSERT_TRUE(ProposeChange(&h, 0, 100, Change(0, {M(1), M(2), M(3), M(4, true, 44),
                                                  M(5, true, 45)})).ok());
  for (uint64_t t = 4; t <= 21; ++t) ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
  // Votes of later instances overtake earlier ones': the proposer must not
  // count them with the configuration of its chosen_end.
  PumpNewestFirst(&h);
  for (int k = 0; k < 5; ++k) Tick(&h, /*newest_first=*/true);
  const uint64_t i = ChangeInstance(&h, 0);
  ASSERT_EQ(i, 3u);
  const uint64_t active = i + kAlpha;
  const Membership& m = h.core(0)->membership();
  EXPECT_EQ(m.At(active - 1).version, 0u);
  EXPECT_EQ(m.At(active).version, 1u);
  // The old majority chose everything below active_from, nothing at or
  // beyond it (the new configuration's majority is not there).
  EXPECT_EQ(h.core(0)->chosen_end(), active);
  EXPECT_EQ(h.core(1)->chosen_end(), active);
  const ProposalResult* r = Finished(&h, 0, 100);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status.ok()) << r->status.ToString();
  EXPECT_EQ(r->instance, i);
  EXPECT_EQ(h.node(0).applied[i].noop, true);  // a noop to the state machines
  // Node 4 comes up, catches up from node 1 and votes: 1, 2, 4 is a majority.
  h.Heal(3);
  h.Fire(3, TimerKind::kLearn);
  h.Fire(3, TimerKind::kLearn);
  h.Pump();
  EXPECT_EQ(h.core(3)->role(), MemberRole::kVoter);
  for (int k = 0; k < 10 && Finished(&h, 0, 21) == nullptr; ++k) Tick(&h, true);
  for (uint64_t t = 2; t <= 21; ++t) {
    const ProposalResult* f = Finished(&h, 0, t);
    ASSERT_NE(f, nullptr) << t;
    EXPECT_TRUE(f->status.ok());
  }
  EXPECT_GT(h.core(0)->chosen_end(), active);
  // It learned the history from the change on (the genesis predates it).
  EXPECT_EQ(h.core(3)->membership().Latest(), h.core(0)->membership().Latest());
}

TEST(ReconfigTest, AnIdleGroupGetsAChangeInForceByItself) {
  Harness h(3, Cluster(3));
  ASSERT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2)})).ok());
  h.Pump();
  const ProposalResult* r = Finished(&h, 0, 7);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status.ok());
  EXPECT_EQ(r->instance, 0u);
  // The proposer filled noops up to active_from.
  EXPECT_GE(h.core(0)->chosen_end(), kAlpha);
  EXPECT_EQ(h.core(0)->stats().membership_changes, 1u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(h.core(i)->membership() == h.core(0)->membership());
  }
  EXPECT_EQ(h.core(2)->role(), MemberRole::kRemoved);
}

TEST(ReconfigTest, FollowerVotesNeverCount) {
  Harness h(4, Cluster(3));
  ASSERT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3), M(4, false, 44)})).ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 0, 7), nullptr);
  EXPECT_EQ(h.core(3)->role(), MemberRole::kFollower);
  // A follower proposes nothing on its own.
  EXPECT_TRUE(h.Propose(3, 1, "f").IsInvalidArgument());
  // Voters 2 and 3 down: node 1 and the follower are no majority.
  h.Isolate(1);
  h.Isolate(2);
  const uint64_t end = h.core(0)->chosen_end();
  ASSERT_TRUE(h.Propose(0, 8, "x").ok());
  h.Pump();
  for (int k = 0; k < 4; ++k) Tick(&h);
  EXPECT_EQ(h.core(0)->chosen_end(), end);
  EXPECT_EQ(Finished(&h, 0, 8), nullptr);
  h.Heal(1);
  for (int k = 0; k < 6 && Finished(&h, 0, 8) == nullptr; ++k) Tick(&h);
  ASSERT_NE(Finished(&h, 0, 8), nullptr);
  // The follower executed every value.
  h.Fire(3, TimerKind::kLearn);
  h.Fire(3, TimerKind::kLearn);
  h.Pump();
  EXPECT_EQ(h.core(3)->chosen_end(), h.core(0)->chosen_end());
}

TEST(ReconfigTest, ARemovedVotersVotesStopCountingAndGetNotMember) {
  Harness h(3, Cluster(3));
  h.Isolate(2);  // node 3 misses its removal
  ASSERT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2)})).ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 0, 7), nullptr);
  EXPECT_EQ(h.core(2)->role(), MemberRole::kVoter);  // as far as it knows
  // Node 2 down, node 3 back: its vote does not count for node 1 any more.
  h.Isolate(1);
  h.Heal(2);
  const uint64_t end = h.core(0)->chosen_end();
  ASSERT_TRUE(h.Propose(0, 8, "x").ok());
  h.Pump();
  EXPECT_EQ(h.core(0)->chosen_end(), end);
  EXPECT_GE(h.core(0)->stats().non_member_messages, 1u);
  EXPECT_GE(h.core(0)->stats().not_member_sent, 1u);
  // The NOT_MEMBER made node 3 catch up: it knows it was removed.
  EXPECT_EQ(h.core(2)->role(), MemberRole::kRemoved);
  EXPECT_TRUE(h.core(2)->membership() == h.core(0)->membership());
  Status s = h.Propose(2, 1, "y");
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("removed"), std::string::npos) << s.ToString();
  // It is silent now: still no choice without node 2.
  for (int k = 0; k < 4; ++k) Tick(&h);
  EXPECT_EQ(h.core(0)->chosen_end(), end);
  h.Heal(1);
  for (int k = 0; k < 6 && Finished(&h, 0, 8) == nullptr; ++k) Tick(&h);
  ASSERT_NE(Finished(&h, 0, 8), nullptr);
}

TEST(ReconfigTest, AStaleBaseEndsConflictOnEveryNode) {
  Harness h(3, Cluster(3));
  ASSERT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3, false)})).ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 0, 7), nullptr);
  // Node 2 asks for a change based on the genesis: chosen, not applied.
  ASSERT_TRUE(ProposeChange(&h, 1, 9, Change(0, {M(1), M(2)})).ok());
  h.Pump();
  for (int k = 0; k < 6 && Finished(&h, 1, 9) == nullptr; ++k) Tick(&h);
  const ProposalResult* r = Finished(&h, 1, 9);
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->status.IsConflict()) << r->status.ToString();
  h.Fire(2, TimerKind::kLearn);
  h.Fire(2, TimerKind::kLearn);
  h.Pump();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h.core(i)->stats().membership_changes, 1u) << i;
    EXPECT_EQ(h.core(i)->stats().membership_conflicts, 1u) << i;
    EXPECT_TRUE(h.core(i)->membership() == h.core(0)->membership()) << i;
    EXPECT_EQ(h.core(i)->membership().Latest().version, 1u);
  }
}

TEST(ReconfigTest, RestartRecoversTheMembershipFromTheVariableAndTheLog) {
  Harness h(3, Cluster(3));
  ASSERT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3, false)})).ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 0, 7), nullptr);
  const Membership want = h.core(0)->membership();
  ASSERT_EQ(want.configs().size(), 2u);
  h.Open(0);
  EXPECT_TRUE(h.core(0)->membership() == want);
  // A log whose variable holds an older history: the chosen change replays.
  LogWriteBatch b;
  b.variables.emplace_back(kMembershipVariable, Membership::Genesis({M(1), M(2), M(3)}, kAlpha)
                                                    .Encode());
  ASSERT_TRUE(h.node(1).log.Write(b, true).ok());
  h.Open(1);
  EXPECT_TRUE(h.core(1)->membership() == want);
  // ... and is recorded again at Start.
  std::string bytes;
  ASSERT_TRUE(h.node(1).log.GetVariable(kMembershipVariable, &bytes).ok());
  Membership stored;
  ASSERT_TRUE(Membership::Decode(bytes, &stored).ok());
  EXPECT_TRUE(stored == want);
  // A log's alpha wins over the options'.
  h.node(2).core.reset();
  std::unique_ptr<Core> c;
  CoreOptions o = h.Options(2);
  o.activation_distance = 64;
  ASSERT_TRUE(Core::Open(o, &h.node(2).log, &c).ok());
  EXPECT_EQ(c->membership().Latest().activation_distance, kAlpha);
}

TEST(ReconfigTest, TrimKeepsTheConfigurationInForce) {
  Harness h(3, Cluster(3));
  ASSERT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3, false)})).ok());
  h.Pump();
  for (uint64_t t = 10; t < 14; ++t) ASSERT_TRUE(h.Propose(0, t, "v").ok());
  h.Pump();
  const uint64_t end = h.core(0)->chosen_end();
  ASSERT_GT(end, kAlpha);
  const Membership before = h.core(0)->MembershipAt(end);
  EXPECT_EQ(before.configs().size(), 2u);
  Outputs out;
  h.core(0)->OnCheckpoint(end, UINT64_MAX, &out);
  ASSERT_EQ(h.core(0)->log_start(), end);
  // The trim and the history in one synced write.
  EXPECT_TRUE(out.sync);
  bool has_variable = false;
  for (const auto& kv : out.persist.variables) has_variable |= kv.first == kMembershipVariable;
  EXPECT_TRUE(has_variable);
  EXPECT_EQ(out.persist.delete_below, end);
  h.Exec(0, &out);
  ASSERT_EQ(h.core(0)->membership().configs().size(), 1u);
  EXPECT_EQ(h.core(0)->membership().Latest().version, 1u);
  const Membership trimmed = h.core(0)->membership();
  h.Open(0);
  EXPECT_TRUE(h.core(0)->membership() == trimmed);
  EXPECT_EQ(h.core(0)->membership().Latest(), before.Latest());
  EXPECT_EQ(h.core(0)->MembershipAt(end).configs().size(), 1u);
  EXPECT_EQ(h.core(0)->role(), MemberRole::kVoter);
}

TEST(ReconfigTest, AJoinerLearnsItsConfigurationFromTheLog) {
  Harness h(4, Cluster(3));
  h.Isolate(3);
  EXPECT_FALSE(h.core(3)->membership().known());
  EXPECT_EQ(h.core(3)->role(), MemberRole::kNotMember);
  Status s = h.Propose(3, 1, "x");
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.ToString().find("not a member"), std::string::npos) << s.ToString();
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  ASSERT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3), M(4, false, 44)})).ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 0, 7), nullptr);
  h.Heal(3);
  // Its idle learn ticks ask join_peers (node 1) while it knows no members.
  h.Fire(3, TimerKind::kLearn);
  h.Fire(3, TimerKind::kLearn);
  h.Pump();
  EXPECT_EQ(h.core(3)->chosen_end(), h.core(0)->chosen_end());
  EXPECT_TRUE(h.core(3)->membership().known());
  EXPECT_EQ(h.core(3)->membership().Latest(), h.core(0)->membership().Latest());
  EXPECT_EQ(h.core(3)->role(), MemberRole::kFollower);
  ASSERT_FALSE(h.node(3).applied.empty());
  EXPECT_EQ(h.node(3).applied[0].value, "a");
  // It learned the history from the change on: the genesis is unknown to it.
  EXPECT_EQ(h.core(3)->membership().configs().size(), 1u);
}

TEST(ReconfigTest, ACheckpointInstallBringsTheMembership) {
  Harness h(4, Cluster(3));
  h.Isolate(3);
  ASSERT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3), M(4, false, 44)})).ok());
  h.Pump();
  const uint64_t end = h.core(0)->chosen_end();
  const Membership at = h.core(0)->MembershipAt(end);
  Outputs out;
  ASSERT_TRUE(h.core(3)->InstallCheckpoint(end, h.core(0)->chain_checksum(), &at, &out).ok());
  EXPECT_TRUE(out.membership_changed);
  EXPECT_TRUE(out.membership == at);
  h.Exec(3, &out);
  EXPECT_EQ(h.core(3)->role(), MemberRole::kFollower);
  h.Open(3);
  EXPECT_TRUE(h.core(3)->membership() == at);
}

TEST(ReconfigTest, ALostDiskNeverVotesUnderItsGenesisEntry) {
  // Node 3's disk was lost: its new data dir was created to join (M5).
  Harness h(3, Cluster(3, TestMutation::kNone, [](CoreOptions* o) {
              if (o->self == 3) {
                o->joined = true;
                o->incarnation = 555;
              }
            }));
  EXPECT_EQ(h.core(2)->role(), MemberRole::kNotEligible);
  h.Isolate(1);
  ASSERT_TRUE(h.Propose(0, 1, "x").ok());
  h.Pump();
  for (int k = 0; k < 4; ++k) Tick(&h);
  EXPECT_EQ(h.core(0)->chosen_end(), 0u);
  EXPECT_EQ(h.core(2)->promised(), Ballot());  // it promised nothing
  h.Heal(1);
  for (int k = 0; k < 6 && Finished(&h, 0, 1) == nullptr; ++k) Tick(&h);
  ASSERT_NE(Finished(&h, 0, 1), nullptr);
  // Removed and added again under its new data dir, it votes.
  ASSERT_TRUE(ProposeChange(&h, 0, 2, Change(0, {M(1), M(2)})).ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 0, 2), nullptr);
  ASSERT_TRUE(ProposeChange(&h, 0, 3, Change(1, {M(1), M(2), M(3, true, 555)})).ok());
  h.Pump();
  ASSERT_NE(Finished(&h, 0, 3), nullptr);
  h.Fire(2, TimerKind::kLearn);
  h.Fire(2, TimerKind::kLearn);
  h.Pump();
  EXPECT_EQ(h.core(2)->role(), MemberRole::kVoter);
  h.Isolate(1);
  ASSERT_TRUE(h.Propose(0, 4, "y").ok());
  for (int k = 0; k < 6 && Finished(&h, 0, 4) == nullptr; ++k) Tick(&h);
  ASSERT_NE(Finished(&h, 0, 4), nullptr);
  EXPECT_TRUE(Finished(&h, 0, 4)->status.ok());
}

// Drops every queued message from or to node `id` (index id - 1).
void DropInvolving(Harness* h, uint64_t id) {
  auto& net = h->net();
  for (auto it = net.begin(); it != net.end();) {
    PaxosMsg msg;
    const bool parsed = msg.ParseFromString(it->second);
    if (static_cast<uint64_t>(it->first) + 1 == id || (parsed && msg.from() == id)) {
      it = net.erase(it);
    } else {
      ++it;
    }
  }
}

TEST(ReconfigTest, AReaddedLostDiskVotesOnlyWhereItsNewEntryGoverns) {
  // Node 3 lost its disk; it is removed and added back under its new data
  // dir by two changes chosen back to back (instances 0 and 1): instances
  // 2..8 are still the genesis', where its old entry is a voter.
  Harness h(3, Cluster(3, TestMutation::kNone, [](CoreOptions* o) {
              if (o->self == 3) {
                o->joined = true;
                o->incarnation = 555;
              }
            }));
  ASSERT_TRUE(ProposeChange(&h, 0, 1, Change(0, {M(1), M(2)})).ok());
  ASSERT_TRUE(ProposeChange(&h, 0, 2, Change(1, {M(1), M(2), M(3, true, 555)})).ok());
  PumpUntil(&h, [&h] { return h.core(0)->chosen_end() >= 2 && h.core(2)->chosen_end() >= 2; });
  ASSERT_EQ(h.core(0)->membership().Latest().version, 2u);
  EXPECT_EQ(h.core(0)->membership().Latest().active_from, 1 + kAlpha);
  EXPECT_EQ(h.core(2)->role(), MemberRole::kVoter);
  // Node 2 goes down: at 2..8 (the genesis') node 3's new dir must not vote.
  h.Isolate(1);
  DropInvolving(&h, 2);
  h.Pump();
  for (int k = 0; k < 4; ++k) Tick(&h);
  EXPECT_EQ(h.core(0)->chosen_end(), 2u);
  h.Heal(1);
  for (int k = 0; k < 8 && (Finished(&h, 0, 2) == nullptr); ++k) Tick(&h);
  ASSERT_NE(Finished(&h, 0, 2), nullptr);
  EXPECT_TRUE(Finished(&h, 0, 2)->status.ok());
  // In force: 1 and 3 are a majority of {1, 2, 3#555}.
  h.Isolate(1);
  ASSERT_TRUE(h.Propose(0, 9, "z").ok());
  for (int k = 0; k < 8 && Finished(&h, 0, 9) == nullptr; ++k) Tick(&h);
  ASSERT_NE(Finished(&h, 0, 9), nullptr);
}

// The first part of AddingVotersOldQuorumsGovernUntilActiveFrom: where node
// 1's chosen prefix stops with only nodes 1 and 2 up (correct: 11, the
// change's active_from).
uint64_t AddVotersStop(TestMutation m) {
  Harness h(5, Cluster(3, m));
  h.Isolate(2);
  h.Isolate(3);
  h.Isolate(4);
  for (uint64_t t = 1; t <= 3; ++t) EXPECT_TRUE(h.Propose(0, t, "v").ok());
  EXPECT_TRUE(ProposeChange(&h, 0, 100, Change(0, {M(1), M(2), M(3), M(4, true, 44),
                                                  M(5, true, 45)})).ok());
  for (uint64_t t = 4; t <= 21; ++t) EXPECT_TRUE(h.Propose(0, t, "v").ok());
  PumpNewestFirst(&h);
  for (int k = 0; k < 5; ++k) Tick(&h, /*newest_first=*/true);
  return h.core(0)->chosen_end();
}

// FollowerVotesNeverCount's question: does voter 1 with follower 4 (voters 2
// and 3 down) get a value chosen?
bool FollowerMakesAQuorum(TestMutation m) {
  Harness h(4, Cluster(3, m));
  EXPECT_TRUE(ProposeChange(&h, 0, 7, Change(0, {M(1), M(2), M(3), M(4, false, 44)})).ok());
  h.Pump();
  h.Isolate(1);
  h.Isolate(2);
  const uint64_t end = h.core(0)->chosen_end();
  EXPECT_TRUE(h.Propose(0, 8, "x").ok());
  h.Pump();
  for (int k = 0; k < 4; ++k) Tick(&h);
  return h.core(0)->chosen_end() != end;
}

TEST(ReconfigMutationTest, EachMembershipMutationBreaksARule) {
  EXPECT_EQ(AddVotersStop(TestMutation::kNone), 3 + kAlpha);
  EXPECT_NE(AddVotersStop(TestMutation::kActivateAtOnce), 3 + kAlpha);
  EXPECT_NE(AddVotersStop(TestMutation::kQuorumOfCurrentOnly), 3 + kAlpha);
  EXPECT_FALSE(FollowerMakesAQuorum(TestMutation::kNone));
  EXPECT_TRUE(FollowerMakesAQuorum(TestMutation::kFollowerVotes));
}

}  // namespace
}  // namespace reconfig_test
}  // namespace paxos
}  // namespace chorus
