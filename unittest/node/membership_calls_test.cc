// Membership changes across a real cluster in one process over loopback
// TCP: adding a node that joins with an empty data dir (it catches up, then
// votes), removing, replacing, followers (they execute every value and never
// count in a quorum), the refusal of an unsafe removal, and removing the
// master. Every wait polls for a state with a generous deadline; no test
// asserts how long anything took.
#include <thread>

#include <gtest/gtest.h>

#include "unittest/node/membership_cluster.h"

namespace chorus {
namespace membership_calls_test {
namespace {

using testing::MemberCluster;

std::vector<uint64_t> Ids(std::initializer_list<uint64_t> ids) { return ids; }

// A node that joins with an empty data dir catches up, is added as a voter,
// and then counts: with one old member stopped, the group still commits,
// which needs the new one in every majority of the four voters.
TEST(MembershipTest, AddedJoinerCatchesUpAndVotes) {
  MemberCluster c(3, 1);
  c.StartGenesis();
  ASSERT_GE(c.WaitForMaster(), 0);
  ASSERT_EQ(c.ProposeMany(0, 20), 0);
  ASSERT_TRUE(c.Start(3, /*join=*/true).ok());
  EXPECT_TRUE(c.WaitRole(3, MemberRole::kJoining));
  EXPECT_EQ(c.Members(3).members.size(), 0u);  // it knows no membership yet

  // Asked on a node that is not the master: the call goes to the master.
  const int master = c.WaitForMaster({0, 1, 2});
  ASSERT_GE(master, 0);
  const int asker = (master + 1) % 3;
  Status s = c.node(asker)->AddMember(0, c.info(3));
  ASSERT_TRUE(s.ok()) << s.ToString();
  // In force on the master when the call returned (follower add, then promotion).
  MembershipInfo m = c.Members(master);
  EXPECT_EQ(m.version, 2u);
  EXPECT_FALSE(m.pending);
  EXPECT_EQ(c.Ids(master, true), Ids({1, 2, 3, 4}));
  EXPECT_TRUE(c.WaitRole(3, MemberRole::kVoter));
  EXPECT_TRUE(c.WaitVersion(3, 2));
  EXPECT_TRUE(c.log().Has(3, "group 0 membership v2: voters 1,2,3,4 followers -"))
      << c.log().Dump();

  // Stop one old member that is not the master: 3 of 4 voters are left,
  // the new one among them.
  const int stopped = (master + 2) % 3;
  c.Stop(stopped);
  ASSERT_EQ(c.ProposeMany(master, 10), 0);
  std::vector<int> left;
  for (int i = 0; i < 4; ++i) {
    if (i != stopped) left.push_back(i);
  }
  EXPECT_TRUE(c.Converged(left));
  EXPECT_EQ(c.machine(3)->violations(), 0u);
}

TEST(MembershipTest, RemoveMember) {
  MemberCluster c(3, 0);
  c.StartGenesis();
  const int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_EQ(c.ProposeMany(master, 5), 0);
  const int removed = (master + 1) % 3;
  Status s = c.node(master)->RemoveMember(0, c.id(removed));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const int other = (master + 2) % 3;
  std::vector<uint64_t> want;
  for (int i = 0; i < 3; ++i) {
    if (i != removed) want.push_back(c.id(i));
  }
  EXPECT_EQ(c.Ids(master, true), want);
  EXPECT_EQ(c.Members(master).version, 1u);
  // The removed node learns it (NOT_MEMBER, then the change itself).
  EXPECT_TRUE(c.WaitRole(removed, MemberRole::kRemoved));
  GroupStatus st;
  ASSERT_TRUE(c.node(removed)->GetGroupStatus(0, &st).ok());
  EXPECT_EQ(st.membership_version, 1u);
  EXPECT_TRUE(c.log().Has(removed, "is no longer a member")) << c.log().Dump();
  // Removing it again: not a member.
  s = c.node(other)->RemoveMember(0, c.id(removed));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  // The two left commit on their own (a majority of two is both).
  ASSERT_EQ(c.ProposeMany(other, 5), 0);
  EXPECT_TRUE(c.Converged({master, other}));
}

// ChangeMember replaces a dead voter by a new, empty node in one change:
// the number of voters never changes, and the new node counts at once.
TEST(MembershipTest, ReplaceDeadNode) {
  MemberCluster c(3, 1);
  c.StartGenesis();
  int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_EQ(c.ProposeMany(master, 10), 0);
  const int dead = (master + 1) % 3;
  c.Stop(dead);  // for good
  ASSERT_TRUE(c.Start(3, /*join=*/true).ok());
  Status s = c.node(master)->ChangeMember(0, c.id(dead), c.info(3));
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::vector<uint64_t> want;
  for (int i = 0; i < 4; ++i) {
    if (i != dead) want.push_back(c.id(i));
  }
  EXPECT_EQ(c.Ids(master, true), want);
  EXPECT_TRUE(c.Ids(master, false).empty());
  EXPECT_EQ(c.Members(master).version, 2u);  // the follower add, then the swap
  EXPECT_TRUE(c.WaitRole(3, MemberRole::kVoter));
  // The other old voter stops: the master and the new node are a majority.
  const int old = (master + 2) % 3;
  c.Stop(old);
  ASSERT_EQ(c.ProposeMany(master, 5), 0);
  EXPECT_TRUE(c.Converged({master, 3}));
}

// A follower executes every value and never counts: with the voters'
// majority stopped, nothing commits although master + follower are two of
// four nodes. Promoted, it counts.
TEST(MembershipTest, FollowerExecutesAndNeverCounts) {
  MemberCluster c(3, 1);
  c.StartGenesis();
  int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_EQ(c.ProposeMany(master, 10), 0);
  ASSERT_TRUE(c.Start(3, /*join=*/true).ok());
  Status s = c.node(master)->AddFollower(0, c.info(3));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.WaitRole(3, MemberRole::kFollower));
  EXPECT_EQ(c.Ids(master, false), Ids({4}));
  s = c.node(master)->AddFollower(0, c.info(3));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  ASSERT_EQ(c.ProposeMany(master, 10), 0);
  EXPECT_TRUE(c.Converged({0, 1, 2, 3}));
  // A follower serves linearizable reads (read index through the master):
  // once ReadBarrier returns, it executed every value chosen before the call.
  const uint64_t chosen = c.node(master)->GetNowInstanceId(0);
  uint64_t read_at = 0;
  s = Status::Busy("not tried");
  for (int k = 0; k < 50 && !s.ok(); ++k) {
    s = c.node(3)->ReadBarrier(0, &read_at);
    if (!s.ok()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_GE(read_at, chosen);
  EXPECT_GE(c.node(3)->GetNowInstanceId(0), chosen);

  // Stop both other voters.
  const uint64_t before = c.node(master)->GetNowInstanceId(0);
  for (int i = 0; i < 3; ++i) {
    if (i != master) c.Stop(i);
  }
  ExecuteContext ctx;
  ctx.timeout_ms = 1500;
  s = c.node(master)->Propose(0, "never", nullptr, &ctx);
  EXPECT_FALSE(s.ok()) << s.ToString();
  EXPECT_EQ(c.node(master)->GetNowInstanceId(0), before);
  EXPECT_EQ(c.node(3)->GetNowInstanceId(0), before);
}

TEST(MembershipTest, PromoteFollower) {
  MemberCluster c(3, 1);
  c.StartGenesis();
  int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_TRUE(c.Start(3, /*join=*/true).ok());
  ASSERT_TRUE(c.node(master)->AddFollower(0, c.info(3)).ok());
  Status s = c.node(master)->PromoteFollower(0, c.id(3));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.Ids(master, true), Ids({1, 2, 3, 4}));
  EXPECT_TRUE(c.WaitRole(3, MemberRole::kVoter));
  s = c.node(master)->PromoteFollower(0, c.id(3));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = c.node(master)->PromoteFollower(0, 99);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
}

// With one of three voters never started (the master never heard from
// it), removing a live one would leave one live voter of two: refused,
// saying why. Removing the silent one is safe.
TEST(MembershipTest, UnsafeRemovalRefused) {
  MemberCluster c(3, 0);
  ASSERT_TRUE(c.Start(0).ok());
  ASSERT_TRUE(c.Start(1).ok());
  const int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  const int live = 1 - master;
  Status s = c.node(master)->RemoveMember(0, c.id(live));
  ASSERT_TRUE(s.IsBusy()) << s.ToString();
  EXPECT_NE(s.message().find("unsafe"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("only 1"), std::string::npos) << s.ToString();
  EXPECT_EQ(c.Members(master).version, 0u);
  // Asked on the other node: it goes to the master, which removes node 3.
  s = c.node(live)->RemoveMember(0, c.id(2));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.Members(master).members.size(), 2u);
  ASSERT_EQ(c.ProposeMany(master, 3), 0);
}

// Removing the master: the mastership moves to another voter first, which
// then removes it; the call (asked on the master itself) follows it.
TEST(MembershipTest, RemoveTheMaster) {
  MemberCluster c(3, 0);
  c.StartGenesis();
  const int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_EQ(c.ProposeMany(master, 5), 0);
  Status s = c.node(master)->RemoveMember(0, c.id(master));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const int a = (master + 1) % 3;
  const int b = (master + 2) % 3;
  const int now = c.WaitForMaster({a, b});
  ASSERT_TRUE(now == a || now == b) << now;
  EXPECT_EQ(c.Members(now).members.size(), 2u);
  EXPECT_TRUE(c.WaitRole(master, MemberRole::kRemoved));
  ASSERT_EQ(c.ProposeMany(a, 5), 0);
  EXPECT_TRUE(c.Converged({a, b}));
}

TEST(MembershipTest, ArgumentErrors) {
  MemberCluster c(1, 1);
  c.StartGenesis();
  ASSERT_EQ(c.WaitForMaster(), 0);
  Status s = c.node(0)->AddMember(0, NodeInfo());
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = c.node(0)->RemoveMember(0, c.id(0));
  EXPECT_TRUE(s.IsInvalidArgument() && s.message().find("no voter") != std::string::npos)
      << s.ToString();
  s = c.node(0)->RemoveMember(0, 99);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = c.node(0)->ChangeMember(0, 99, c.info(1));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  s = c.node(0)->AddMember(0, c.info(0));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(c.Members(0).version, 0u);
}

// One change at a time: while AddMember waits for a node that never runs
// to catch up, another change is refused with Busy; the first ends with
// Timeout at its deadline (the follower it added stays: GetMembership).
TEST(MembershipTest, OneChangeAtATime) {
  MemberCluster c(2, 1);
  ASSERT_TRUE(c.Start(0, false, [](Options* o) { o->membership_timeout_ms = 3000; }).ok());
  ASSERT_TRUE(c.Start(1).ok());
  const int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  Status first;
  std::thread adder([&] { first = c.node(0)->AddMember(0, c.info(2)); });
  // The follower add is in force: the call now waits for its catch-up.
  EXPECT_TRUE(testing::WaitUntil([&] { return c.Ids(master, false) == Ids({3}); },
                                 testing::kMemberWait));
  Status s = c.node(1 - master)->RemoveMember(0, c.id(2));
  EXPECT_TRUE(s.IsBusy() && s.message().find("in progress") != std::string::npos)
      << s.ToString();
  adder.join();
  EXPECT_TRUE(first.IsTimeout()) << first.ToString();
  EXPECT_EQ(c.Ids(master, false), Ids({3}));
  // Free again: the follower that never came is removed.
  s = c.node(master)->RemoveMember(0, c.id(2));
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(MembershipTest, NotSupportedWithoutElection) {
  MemberCluster c(1, 0);
  ASSERT_TRUE(c.Start(0, false, [](Options* o) { o->master_election = false; }).ok());
  EXPECT_TRUE(c.node(0)->AddMember(0, c.info(0)).IsNotSupported());
  EXPECT_TRUE(c.node(0)->RemoveMember(0, 1).IsNotSupported());
  EXPECT_TRUE(c.node(0)->AddMember(7, c.info(0)).IsInvalidArgument());
  MembershipInfo m;
  ASSERT_TRUE(c.node(0)->GetMembership(0, &m).ok());  // works without election
  EXPECT_EQ(m.members.size(), 1u);
  EXPECT_TRUE(c.node(0)->GetMembership(3, &m).IsInvalidArgument());
}

}  // namespace
}  // namespace membership_calls_test
}  // namespace chorus
