// Membership across restarts, lost disks and checkpoints, over a real
// in-process cluster on loopback TCP: the log's membership wins over a
// stale Options::nodes (one warning), a node whose disk was lost comes back
// not eligible and votes again only after a remove and an add, a removed
// node's messages are refused and counted, a joiner learns the membership
// from a checkpoint, and the data dir's IDENTITY file. Every wait polls for
// a state with a generous deadline; no test asserts how long anything took.
#include <unistd.h>

#include <gtest/gtest.h>

#include "node/data_dir_identity.h"
#include "node/fs_util.h"
#include "unittest/node/membership_cluster.h"

namespace chorus {
namespace membership_restart_test {
namespace {

using testing::MemberCluster;
using testing::WaitUntil;

std::vector<uint64_t> Ids(std::initializer_list<uint64_t> ids) { return ids; }

TEST(MembershipRestartTest, LogWinsOverStaleNodes) {
  MemberCluster c(3, 1);
  c.StartGenesis();
  int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_TRUE(c.Start(3, /*join=*/true).ok());
  ASSERT_TRUE(c.node(master)->AddMember(0, c.info(3)).ok());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(c.WaitVersion(i, 2));
  // Every node restarts; the genesis ones with the same (now stale) nodes.
  for (int i = 0; i < 4; ++i) c.Stop(i);
  c.StartGenesis();
  ASSERT_TRUE(c.Start(3, /*join=*/true).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(c.log().Has(i, "group 0: Options::nodes (ids 1,2,3) differs from the membership "
                               "recorded in the log (v2: voters 1,2,3,4 followers -): following "
                               "the log"))
        << c.log().Dump();
  }
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(c.Members(i).version, 2u);
    EXPECT_EQ(c.Ids(i, true), Ids({1, 2, 3, 4}));
    EXPECT_EQ(c.Role(i), MemberRole::kVoter);
  }
  master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_EQ(c.ProposeMany(master, 5), 0);
  EXPECT_TRUE(c.Converged({0, 1, 2, 3}));
}

// A member whose disk was lost restarts with join and an empty dir: its id
// is a voter, but under another incarnation, so it never votes (with it
// and the master alone, nothing commits). Removed and added again, it votes.
TEST(MembershipRestartTest, LostDiskComesBackOnlyThroughRemoveAndAdd) {
  MemberCluster c(3, 0);
  c.StartGenesis();
  const int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_EQ(c.ProposeMany(master, 10), 0);
  const int victim = (master + 1) % 3;
  const int other = (master + 2) % 3;
  c.Stop(victim);
  c.LoseDisk(victim);
  Status started = c.Start(victim, /*join=*/true);
  ASSERT_TRUE(started.ok()) << started.ToString();
  EXPECT_TRUE(c.WaitUntilCaughtUp(victim, master));
  // Never a voter (nor a follower) as its old self. (It reports kJoining,
  // not kNotEligible, while the group never changed: a joiner learns the
  // membership from a change in the log or a checkpoint only.)
  EXPECT_NE(c.Role(victim), MemberRole::kVoter);
  EXPECT_NE(c.Role(victim), MemberRole::kFollower);

  c.Stop(other);
  const uint64_t before = c.node(master)->GetNowInstanceId(0);
  ExecuteContext ctx;
  ctx.timeout_ms = 1500;
  Status s = c.node(master)->Propose(0, "never", nullptr, &ctx);
  EXPECT_FALSE(s.ok()) << s.ToString();
  EXPECT_EQ(c.node(victim)->GetNowInstanceId(0), before);

  ASSERT_TRUE(c.Start(other).ok());
  const int m = c.WaitForMaster({master, other});
  ASSERT_TRUE(m == master || m == other) << m;
  s = c.node(m)->RemoveMember(0, c.id(victim));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.WaitVersion(victim, 1));  // it learned its removal
  EXPECT_NE(c.Role(victim), MemberRole::kVoter);
  s = c.node(m)->AddMember(0, c.info(victim));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.WaitRole(victim, MemberRole::kVoter));
  // Now the master and the new incarnation are a majority of three.
  const int keep = c.WaitForMaster();
  ASSERT_TRUE(keep == master || keep == other) << keep;
  c.Stop(keep == master ? other : master);
  ASSERT_EQ(c.ProposeMany(keep, 5), 0);
  EXPECT_TRUE(c.Converged({keep, victim}));
}

// A removed node's proposals get nowhere; its voting-type messages are
// refused by the members and counted (CoreStats::non_member_messages).
TEST(MembershipRestartTest, RemovedNodeIsRefusedAndCounted) {
  MemberCluster c(3, 0);
  c.StartGenesis();
  const int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  const int removed = (master + 1) % 3;
  const int other = (master + 2) % 3;
  ASSERT_TRUE(c.node(master)->RemoveMember(0, c.id(removed)).ok());
  EXPECT_TRUE(c.WaitRole(removed, MemberRole::kRemoved));
  for (int k = 0; k < 3; ++k) {
    ExecuteContext ctx;
    ctx.timeout_ms = 500;
    Status s = c.node(removed)->Propose(0, "from-removed", nullptr, &ctx);
    EXPECT_FALSE(s.ok()) << s.ToString();
    c.node(removed)->ReadBarrier(0, nullptr);
  }
  ASSERT_EQ(c.ProposeMany(master, 3), 0);
  EXPECT_TRUE(c.Converged({master, other}));
  EXPECT_EQ(c.machine(master)->state(), c.machine(other)->state());
  c.Stop(removed);
  const uint64_t refused =
      c.StopAndStats(master).non_member_messages + c.StopAndStats(other).non_member_messages;
  EXPECT_GT(refused, 0u);
}

// The joiner is added as a follower before it runs, the logs are trimmed
// above that change, and then it starts: it learns every configuration from
// the checkpoint it loads (Core::MembershipAt), not from the log.
TEST(MembershipRestartTest, MembershipComesWithCheckpoint) {
  MemberCluster c(3, 1);
  c.checkpoint_interval = 40;
  c.log_keep = 10;
  c.StartGenesis();
  const int master = c.WaitForMaster();
  ASSERT_GE(master, 0);
  ASSERT_EQ(c.ProposeMany(master, 10), 0);
  Status s = c.node(master)->AddFollower(0, c.info(3));
  ASSERT_TRUE(s.ok()) << s.ToString();
  const MembershipInfo want = c.Members(master);
  ASSERT_EQ(want.version, 1u);
  // Every log starts above the change (at want.active_from - 256).
  ASSERT_TRUE(WaitUntil(
      [&] {
        if (c.ProposeMany(master, 5) != 0) return false;
        for (int i = 0; i < 3; ++i) {
          if (c.node(i)->GetMinChosenInstanceId(0) <= want.active_from) return false;
        }
        return true;
      },
      testing::kMemberWait));
  ASSERT_TRUE(c.Start(3, /*join=*/true).ok());
  EXPECT_TRUE(c.WaitRole(3, MemberRole::kFollower));
  EXPECT_TRUE(c.Converged({0, 1, 2, 3}));
  GroupStatus st;
  ASSERT_TRUE(c.node(3)->GetGroupStatus(0, &st).ok());
  EXPECT_GE(st.checkpoints_loaded, 1u);
  const MembershipInfo got = c.Members(3);
  EXPECT_EQ(got.version, want.version);
  EXPECT_EQ(got.active_from, want.active_from);
  EXPECT_EQ(c.Ids(3, true), Ids({1, 2, 3}));
  EXPECT_EQ(c.Ids(3, false), Ids({4}));
  // And it keeps it across its own restart (its log recorded it).
  c.Stop(3);
  ASSERT_TRUE(c.Start(3, /*join=*/true).ok());
  EXPECT_EQ(c.Members(3).version, want.version);
  EXPECT_EQ(c.Role(3), MemberRole::kFollower);
}

// An application's transport that keeps its own book (no SetPeers): the
// node says so once and carries on, membership changes included.
class OwnBookTransport : public Transport {
 public:
  Status Start(Receiver) override { return Status::OK(); }
  Status Send(uint64_t, std::string) override { return Status::OK(); }
  void Stop() override {}
};

TEST(MembershipRestartTest, TransportWithoutSetPeers) {
  OwnBookTransport transport;  // outlives the cluster's nodes, which borrow it
  MemberCluster c(1, 1);
  ASSERT_TRUE(c.Start(0, false, [&](Options* o) { o->transport = &transport; }).ok());
  ASSERT_EQ(c.WaitForMaster(), 0);
  Status s = c.node(0)->AddFollower(0, c.info(1));
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.Ids(0, false), Ids({2}));
  int warnings = 0;
  for (const auto& line : c.log().lines()) {
    if (line.text.find("does not support SetPeers") != std::string::npos) ++warnings;
  }
  EXPECT_EQ(warnings, 1) << c.log().Dump();
}

TEST(MembershipRestartTest, IdentityFile) {
  MemberCluster c(1, 1);
  ASSERT_TRUE(c.Start(0).ok());
  const DataDirIdentity first = c.impl(0)->identity_for_testing();
  EXPECT_NE(first.incarnation, 0u);
  EXPECT_FALSE(first.joined);
  EXPECT_EQ(first.node_id, c.id(0));
  EXPECT_TRUE(PathExists(c.data_dir(0) + "/IDENTITY"));
  ASSERT_TRUE(c.Start(1, /*join=*/true).ok());
  EXPECT_TRUE(c.impl(1)->identity_for_testing().joined);
  EXPECT_NE(c.impl(1)->identity_for_testing().incarnation, first.incarnation);
  c.Stop(0);
  c.Stop(1);

  // The same dir, restarted: the same identity.
  ASSERT_TRUE(c.Start(0).ok());
  EXPECT_EQ(c.impl(0)->identity_for_testing().incarnation, first.incarnation);
  c.Stop(0);
  // Another node's data dir is refused, naming both.
  Options o = c.OptionsFor(1, /*join=*/true);
  o.data_dir = c.data_dir(0);
  std::unique_ptr<Node> n;
  Status s = Node::Open(o, &n);
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("node 1"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("node 2"), std::string::npos) << s.ToString();
  // A data dir of an older chorus (no IDENTITY) gets one, not joined.
  ASSERT_EQ(unlink((c.data_dir(0) + "/IDENTITY").c_str()), 0);
  ASSERT_TRUE(c.Start(0).ok());
  EXPECT_FALSE(c.impl(0)->identity_for_testing().joined);
  EXPECT_NE(c.impl(0)->identity_for_testing().incarnation, 0u);
  EXPECT_TRUE(PathExists(c.data_dir(0) + "/IDENTITY"));

  // Files of the application's own in a fresh data dir make it no older
  // data dir: a joiner stays a joiner.
  c.Stop(0);
  c.LoseDisk(1);
  ASSERT_TRUE(CreateDirs(c.data_dir(1) + "/app").ok());
  ASSERT_TRUE(WriteWholeFile(c.data_dir(1) + "/app/state", "x").ok());
  ASSERT_TRUE(c.Start(1, /*join=*/true).ok());
  EXPECT_TRUE(c.impl(1)->identity_for_testing().joined);
  c.Stop(1);

  DataDirIdentity bad;
  std::string text;
  ASSERT_TRUE(ReadWholeFile(c.data_dir(0) + "/IDENTITY", &text).ok());
  EXPECT_TRUE(DataDirIdentity::Decode(text, &bad).ok());
  text[text.find("node_id") + 8] = '9';
  EXPECT_TRUE(DataDirIdentity::Decode(text, &bad).IsCorruption());
}

TEST(MembershipRestartTest, OptionsValidation) {
  MemberCluster c(2, 1);
  auto open = [&](const std::function<void(Options*)>& f) {
    Options o = c.OptionsFor(2, /*join=*/true);
    f(&o);
    std::unique_ptr<Node> n;
    return Node::Open(o, &n);
  };
  Status s = open([&](Options* o) { o->nodes = c.genesis(); });
  EXPECT_TRUE(s.IsInvalidArgument() && s.message().find("join") != std::string::npos) << s.ToString();
  s = open([&](Options* o) { o->join.clear(); });
  EXPECT_TRUE(s.IsInvalidArgument() && s.message().find("nodes") != std::string::npos) << s.ToString();
  s = open([&](Options* o) { o->join = {c.info(2)}; });
  EXPECT_TRUE(s.IsInvalidArgument() && s.message().find("self") != std::string::npos) << s.ToString();
  s = open([&](Options* o) { o->join.push_back(o->join[0]); });
  EXPECT_TRUE(s.IsInvalidArgument() && s.message().find("twice") != std::string::npos) << s.ToString();
  s = open([](Options* o) { o->max_inflight = 257; });
  EXPECT_TRUE(s.IsInvalidArgument() && s.message().find("max_inflight") != std::string::npos)
      << s.ToString();
  s = open([](Options* o) { o->membership_timeout_ms = 0; });
  EXPECT_TRUE(s.IsInvalidArgument() && s.message().find("membership_timeout_ms") != std::string::npos)
      << s.ToString();
  s = open([](Options* o) { o->member_live_ms = -1; });
  EXPECT_TRUE(s.IsInvalidArgument() && s.message().find("member_live_ms") != std::string::npos)
      << s.ToString();
  s = open([](Options* o) { o->catch_up_margin_instances = uint64_t{1} << 50; });
  EXPECT_TRUE(s.IsInvalidArgument() &&
              s.message().find("catch_up_margin_instances") != std::string::npos)
      << s.ToString();
}

}  // namespace
}  // namespace membership_restart_test
}  // namespace chorus
