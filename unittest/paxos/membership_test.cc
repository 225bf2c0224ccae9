// Membership (paxos/membership.h): configurations, the history, M1's apply
// rule, trimming and coding; CoreOptions' membership fields; and the core's
// membership queries on a static membership.
#include "paxos/membership.h"

#include <gtest/gtest.h>

#include "paxos/value.h"
#include "unittest/paxos/harness.h"

namespace chorus {
namespace paxos {
namespace membership_test {
namespace {

using testing::Harness;

Member Voter(uint64_t id, uint64_t incarnation = 0) {
  Member m;
  m.id = id;
  m.address = "host" + std::to_string(id) + ":7000";
  m.incarnation = incarnation;
  return m;
}

Member Follower(uint64_t id) {
  Member m = Voter(id);
  m.voter = false;
  return m;
}

MembershipChange Change(uint64_t base, std::vector<Member> members, uint64_t alpha = 8) {
  MembershipChange c;
  c.base_version = base;
  c.members = std::move(members);
  c.activation_distance = alpha;
  return c;
}

TEST(MembershipTest, ConfigCountsVotersOnly) {
  Membership m = Membership::Genesis({Voter(3), Voter(1), Follower(2)}, 8);
  const Config& c = m.Latest();
  ASSERT_EQ(c.members.size(), 3u);
  EXPECT_EQ(c.members[0].id, 1u);  // sorted by id
  EXPECT_EQ(c.VoterCount(), 2u);
  EXPECT_EQ(c.Majority(), 2u);
  EXPECT_TRUE(c.IsVoter(1));
  EXPECT_FALSE(c.IsVoter(2));
  EXPECT_TRUE(c.Contains(2));
  EXPECT_FALSE(c.Contains(4));
  EXPECT_FALSE(c.HasMajority({1, 2}));  // the follower does not count
  EXPECT_TRUE(c.HasMajority({1, 3}));
  EXPECT_FALSE(c.MajorityImpossible({2}));
  EXPECT_TRUE(c.MajorityImpossible({1}));
  EXPECT_TRUE(Config().MajorityImpossible({}));
  EXPECT_FALSE(Config().HasMajority({1, 2, 3}));
}

TEST(MembershipTest, EligibilityFollowsTheIncarnation) {
  Membership m = Membership::Genesis({Voter(1), Voter(2, 77)}, 8);
  const Config& c = m.Latest();
  // M5: a genesis entry (0) is the original data dir's, never a joiner's.
  EXPECT_TRUE(c.IsEligibleVoter(1, 0, false));
  EXPECT_TRUE(c.IsEligibleVoter(1, 55, false));
  EXPECT_FALSE(c.IsEligibleVoter(1, 0, true));
  EXPECT_FALSE(c.IsEligibleVoter(1, 55, true));
  // An added entry names its data dir.
  EXPECT_TRUE(c.IsEligibleVoter(2, 77, true));
  EXPECT_FALSE(c.IsEligibleVoter(2, 78, true));
  EXPECT_FALSE(c.IsEligibleVoter(2, 0, false));
  EXPECT_FALSE(c.IsEligibleVoter(3, 0, false));
}

TEST(MembershipTest, ValidateMembers) {
  EXPECT_TRUE(ValidateMembers({Voter(1)}).ok());
  EXPECT_TRUE(ValidateMembers({}).IsInvalidArgument());
  EXPECT_TRUE(ValidateMembers({Follower(1)}).IsInvalidArgument());
  EXPECT_TRUE(ValidateMembers({Voter(0)}).IsInvalidArgument());
  EXPECT_TRUE(ValidateMembers({Voter(1), Follower(1)}).IsInvalidArgument());
  Member big = Voter(2);
  big.address.assign(kMaxMemberAddressBytes + 1, 'x');
  EXPECT_TRUE(ValidateMembers({Voter(1), big}).IsInvalidArgument());
  std::vector<Member> many;
  for (uint64_t i = 1; i <= kMaxMembers + 1; ++i) many.push_back(Voter(i));
  EXPECT_TRUE(ValidateMembers(many).IsInvalidArgument());
  many.pop_back();
  EXPECT_TRUE(ValidateMembers(many).ok());
}

TEST(MembershipTest, ApplyActivatesAlphaLater) {
  Membership m = Membership::Genesis({Voter(1), Voter(2), Voter(3)}, 8);
  ASSERT_TRUE(m.Apply(10, Change(0, {Voter(1), Voter(2), Voter(3), Voter(4, 9)})).ok());
  EXPECT_EQ(m.Latest().version, 1u);
  EXPECT_EQ(m.Latest().changed_at, 10u);
  EXPECT_EQ(m.Latest().active_from, 18u);
  EXPECT_EQ(m.At(17).version, 0u);
  EXPECT_EQ(m.At(18).version, 1u);
  EXPECT_EQ(m.At(1000).version, 1u);
  EXPECT_EQ(m.Governing(0, 18).size(), 1u);
  EXPECT_EQ(m.Governing(17, 19).size(), 2u);
  EXPECT_EQ(m.Governing(18, UINT64_MAX).size(), 1u);
  // M1: a stale base is chosen but not applied.
  Membership before = m;
  EXPECT_TRUE(m.Apply(12, Change(0, {Voter(1)})).IsConflict());
  EXPECT_TRUE(m == before);
  // An invalid set or another alpha: InvalidArgument, nothing changes.
  EXPECT_TRUE(m.Apply(13, Change(1, {Follower(1)})).IsInvalidArgument());
  EXPECT_TRUE(m.Apply(13, Change(1, {Voter(1)}, 9)).IsInvalidArgument());
  EXPECT_TRUE(m == before);
  // A replay at or below the latest change: OK, nothing changes.
  EXPECT_TRUE(m.Apply(10, Change(0, {Voter(1)})).ok());
  EXPECT_TRUE(m == before);
  // The next one, pipelined before the first is active.
  ASSERT_TRUE(m.Apply(14, Change(1, {Voter(1), Voter(2), Voter(4, 9)})).ok());
  EXPECT_EQ(m.Latest().active_from, 22u);
  EXPECT_EQ(m.At(21).version, 1u);
  EXPECT_EQ(m.Governing(15, 30).size(), 3u);
}

TEST(MembershipTest, ActivateAtOnceIsTheMutation) {
  Membership m = Membership::Genesis({Voter(1), Voter(2), Voter(3)}, 8);
  ASSERT_TRUE(m.Apply(10, Change(0, {Voter(1), Voter(2)}), /*test_activate_at_once=*/true).ok());
  EXPECT_EQ(m.Latest().active_from, 11u);
  EXPECT_EQ(m.At(11).version, 1u);
}

TEST(MembershipTest, UnknownAdoptsTheFirstChange) {
  Membership m;
  EXPECT_FALSE(m.known());
  EXPECT_TRUE(m.At(5).members.empty());
  EXPECT_TRUE(m.Latest().members.empty());
  EXPECT_TRUE(m.Governing(0, UINT64_MAX).empty());
  ASSERT_TRUE(m.Apply(40, Change(3, {Voter(1), Voter(5, 7)})).ok());
  EXPECT_TRUE(m.known());
  EXPECT_EQ(m.Latest().version, 4u);
  EXPECT_EQ(m.Latest().active_from, 48u);
  EXPECT_TRUE(m.At(47).members.empty());  // before anything it knows
}

TEST(MembershipTest, ForgetBelowKeepsTheOneInForce) {
  Membership m = Membership::Genesis({Voter(1), Voter(2), Voter(3)}, 8);
  ASSERT_TRUE(m.Apply(10, Change(0, {Voter(1), Voter(2)})).ok());   // from 18
  ASSERT_TRUE(m.Apply(20, Change(1, {Voter(1), Voter(3)})).ok());   // from 28
  Membership t = m;
  t.ForgetBelow(17);
  EXPECT_EQ(t.configs().size(), 3u);
  t.ForgetBelow(18);
  ASSERT_EQ(t.configs().size(), 2u);
  EXPECT_EQ(t.configs().front().version, 1u);
  EXPECT_EQ(t.At(20).version, 1u);
  t.ForgetBelow(1000);
  ASSERT_EQ(t.configs().size(), 1u);
  EXPECT_EQ(t.Latest().version, 2u);
}

TEST(MembershipTest, BeforeIsTheHistoryOfAPrefix) {
  Membership m = Membership::Genesis({Voter(1), Voter(2), Voter(3)}, 8);
  ASSERT_TRUE(m.Apply(10, Change(0, {Voter(1), Voter(2)})).ok());
  EXPECT_EQ(m.Before(10).configs().size(), 1u);
  EXPECT_EQ(m.Before(11).configs().size(), 2u);  // chosen below 11, active later
  EXPECT_TRUE(m.Before(11) == m);
}

TEST(MembershipTest, PrependOlderKeepsWhatAJoinersHistoryLacks) {
  Membership own = Membership::Genesis({Voter(1), Voter(2), Voter(3)}, 8);
  ASSERT_TRUE(own.Apply(10, Change(0, {Voter(1), Voter(2), Voter(3), Voter(4, 9)})).ok());
  // A joiner's: it learned the change at 10 first (from 18), then one at 20.
  Membership joiner;
  ASSERT_TRUE(joiner.Apply(10, Change(0, {Voter(1), Voter(2), Voter(3), Voter(4, 9)})).ok());
  ASSERT_TRUE(joiner.Apply(20, Change(1, {Voter(1), Voter(4, 9)})).ok());  // from 28
  EXPECT_TRUE(joiner.At(15).members.empty());
  // From 15: the genesis governs there, so it goes in front.
  Membership m = joiner;
  m.PrependOlder(own, 15);
  ASSERT_EQ(m.configs().size(), 3u);
  EXPECT_EQ(m.At(15).version, 0u);
  EXPECT_EQ(m.Latest(), joiner.Latest());
  // From 20: the joiner's history covers it; nothing changes.
  m = joiner;
  m.PrependOlder(own, 20);
  EXPECT_TRUE(m == joiner);
  // Only what governs from `from` on: the genesis of a longer own history
  // that ends before it is left out.
  Membership longer = Membership::Genesis({Voter(1), Voter(2), Voter(3)}, 8);
  ASSERT_TRUE(longer.Apply(2, Change(0, {Voter(1), Voter(2), Voter(5)})).ok());  // from 10
  ASSERT_TRUE(longer.Apply(21, Change(1, {Voter(1), Voter(2)})).ok());           // from 29
  Membership late;  // version 2 first
  ASSERT_TRUE(late.Apply(21, Change(1, {Voter(1), Voter(2)})).ok());
  m = late;
  m.PrependOlder(longer, 12);
  ASSERT_EQ(m.configs().size(), 2u);
  EXPECT_EQ(m.configs().front().version, 1u);
  EXPECT_EQ(m.At(12).version, 1u);
  // A history that does not reach the version right before is no help.
  m = late;
  m.PrependOlder(Membership::Genesis({Voter(1), Voter(2), Voter(3)}, 8), 0);
  EXPECT_TRUE(m == late);
  m = joiner;
  m.PrependOlder(Membership(), 15);
  EXPECT_TRUE(m == joiner);
}

TEST(MembershipTest, EncodeDecodeRoundTrips) {
  Membership m = Membership::Genesis({Voter(1), Voter(2), Follower(3)}, 16);
  ASSERT_TRUE(m.Apply(3, Change(0, {Voter(1), Voter(2, 99), Voter(3)}, 16)).ok());
  Membership d;
  ASSERT_TRUE(Membership::Decode(m.Encode(), &d).ok());
  EXPECT_TRUE(d == m);
  EXPECT_TRUE(Membership::Decode("\xff\xff garbage", &d).IsCorruption());
  // Out of order configurations are Corruption.
  MembershipPb pb;
  ASSERT_TRUE(pb.ParseFromString(m.Encode()));
  pb.mutable_configs()->SwapElements(0, 1);
  EXPECT_TRUE(Membership::Decode(pb.SerializeAsString(), &d).IsCorruption());
  Membership empty;
  ASSERT_TRUE(Membership::Decode(empty.Encode(), &d).ok());
  EXPECT_FALSE(d.known());

  MembershipChange c = Change(4, {Voter(1), Follower(2)}, 32);
  MembershipChange back;
  ASSERT_TRUE(DecodeMembershipChange(EncodeMembershipChange(c), &back));
  EXPECT_EQ(back.base_version, 4u);
  EXPECT_EQ(back.activation_distance, 32u);
  EXPECT_EQ(back.members, c.members);
  EXPECT_FALSE(DecodeMembershipChange("\xff\xff\xff", &back));
}

TEST(MembershipTest, SystemValues) {
  const std::string env = EncodeSystemValue(7, 5, SystemValueKind::kMembershipChange, "abc");
  uint64_t proposer = 0, id = 0;
  std::string data, payload;
  ASSERT_TRUE(DecodeValue(env, &proposer, &id, &data));
  EXPECT_EQ(proposer, 7u);
  EXPECT_EQ(id, 5u | kSystemValueBit);
  SystemValueKind kind;
  ASSERT_TRUE(DecodeSystemValue(id, data, &kind, &payload));
  EXPECT_EQ(kind, SystemValueKind::kMembershipChange);
  EXPECT_EQ(payload, "abc");
  EXPECT_FALSE(DecodeSystemValue(5, data, &kind, &payload));  // an application id
  EXPECT_FALSE(DecodeSystemValue(id, "\x09xyz", &kind, &payload));
  EXPECT_EQ(static_cast<int>(kind), 0);
  EXPECT_STREQ(MemberRoleName(MemberRole::kVoter), "voter");
  EXPECT_STREQ(MemberRoleName(MemberRole::kRemoved), "removed");
}

TEST(MembershipTest, CoreOptionsValidateTheMembershipFields) {
  CoreOptions o;
  o.self = 1;
  o.members = {1, 2, 3};
  EXPECT_TRUE(o.Validate().ok());
  o.member_addresses = {"a:1", "b:2"};
  EXPECT_TRUE(o.Validate().IsInvalidArgument());
  o.member_addresses = {"a:1", "b:2", "c:3"};
  EXPECT_TRUE(o.Validate().ok());
  o.activation_distance = o.max_inflight - 1;
  EXPECT_TRUE(o.Validate().IsInvalidArgument());
  o.activation_distance = kMaxWindow + 1;
  EXPECT_TRUE(o.Validate().IsInvalidArgument());
  o.activation_distance = o.max_inflight;
  EXPECT_TRUE(o.Validate().ok());
  // A joiner: no members, self in none.
  CoreOptions j;
  j.self = 4;
  j.joined = true;
  j.join_peers = {1};
  EXPECT_TRUE(j.Validate().ok());
  j.joined = false;
  EXPECT_TRUE(j.Validate().IsInvalidArgument());
  j.joined = true;
  j.join_peers = {0};
  EXPECT_TRUE(j.Validate().IsInvalidArgument());
  CoreOptions n;
  n.self = 4;
  n.members = {1, 2, 3};
  EXPECT_TRUE(n.Validate().IsInvalidArgument());  // self not a member, not joined
  n.joined = true;
  EXPECT_TRUE(n.Validate().ok());
}

// ---- the core, static membership ----

TEST(CoreMembershipTest, GenesisFromTheOptionsIsPersistedAtStart) {
  Harness h(3, [](CoreOptions* o) {
    o->member_addresses = {"n1:1", "n2:2", "n3:3"};
    o->activation_distance = 16;
  });
  const Membership& m = h.core(0)->membership();
  ASSERT_TRUE(m.known());
  ASSERT_EQ(m.configs().size(), 1u);
  EXPECT_EQ(m.Latest().version, 0u);
  EXPECT_EQ(m.Latest().activation_distance, 16u);
  ASSERT_EQ(m.Latest().members.size(), 3u);
  EXPECT_EQ(m.Latest().members[1].address, "n2:2");
  EXPECT_EQ(h.core(0)->role(), MemberRole::kVoter);
  std::string bytes;
  ASSERT_TRUE(h.node(0).log.GetVariable(kMembershipVariable, &bytes).ok());
  Membership stored;
  ASSERT_TRUE(Membership::Decode(bytes, &stored).ok());
  EXPECT_TRUE(stored == m);
  EXPECT_TRUE(h.core(0)->MembershipAt(0) == m);
}

TEST(CoreMembershipTest, ALogsMembershipWinsOverTheOptions) {
  Harness h(3);
  // The log says alpha 32 and members 1, 2, 3, 4.
  Membership logged = Membership::Genesis({Voter(1), Voter(2), Voter(3), Voter(4)}, 32);
  LogWriteBatch b;
  b.variables.emplace_back(kMembershipVariable, logged.Encode());
  ASSERT_TRUE(h.node(0).log.Write(b, true).ok());
  h.Open(0);
  EXPECT_TRUE(h.core(0)->membership() == logged);
}

TEST(CoreMembershipTest, PeersAndIncarnations) {
  Harness h(3, [](CoreOptions* o) { o->incarnation = 1000 + o->self; });
  h.SetTime(50);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.Pump();
  h.SetTime(60);
  // Node 3 asks a peer for values on its idle ticks: its incarnation comes
  // along.
  h.Fire(2, TimerKind::kLearn);
  h.Fire(2, TimerKind::kLearn);
  h.Pump();
  bool saw3 = false;
  for (const Core::PeerState& p : h.core(0)->peers()) {
    if (p.id != 3) continue;
    saw3 = true;
    EXPECT_GE(p.last_heard_ms, 50u);  // its ACCEPTED at least
    EXPECT_LE(p.chosen_end, 1u);
  }
  EXPECT_TRUE(saw3);
  uint64_t incarnations = 0;
  for (int i = 0; i < 3; ++i) {
    for (const Core::PeerState& p : h.core(i)->peers()) {
      if (p.incarnation != 0) {
        EXPECT_EQ(p.incarnation, 1000 + p.id);
        incarnations++;
      }
    }
  }
  EXPECT_GE(incarnations, 1u);
}

TEST(CoreMembershipTest, ApplicationProposalIdsHaveTheSystemBitClear) {
  Harness h(3);
  for (uint64_t t = 1; t <= 20; ++t) ASSERT_TRUE(h.Propose(0, t, "v").ok());
  h.Pump();
  ASSERT_EQ(h.node(0).applied.size(), 20u);
  for (const ChosenValue& c : h.node(0).applied) {
    EXPECT_EQ(c.proposal_id & kSystemValueBit, 0u);
    EXPECT_FALSE(c.noop);
  }
}

TEST(CoreMembershipTest, ProposeMembershipChecksTheChange) {
  Harness h(3);
  Outputs out;
  EXPECT_TRUE(h.core(0)->ProposeMembership(1, Change(0, {}, 256), &out).IsInvalidArgument());
  EXPECT_TRUE(
      h.core(0)->ProposeMembership(1, Change(0, {Voter(1)}, 17), &out).IsInvalidArgument());
}

}  // namespace
}  // namespace membership_test
}  // namespace paxos
}  // namespace chorus
