// Recovery from the log, and input validation of the core.
#include <gtest/gtest.h>

#include "paxos/acceptor.h"
#include "unittest/paxos/harness.h"

namespace chorus {
namespace paxos {
namespace recovery_test {
namespace {

using testing::Harness;

TEST(RecoveryTest, RestoresPromiseAcceptedAndChosen) {
  Harness h(3);
  for (uint64_t t = 1; t <= 5; ++t) ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
  h.Pump();
  ASSERT_EQ(h.core(1)->chosen_end(), 5u);
  const Ballot promised = h.core(1)->promised();
  std::unique_ptr<Core> again;
  ASSERT_TRUE(Core::Open(h.Options(1), &h.node(1).log, &again).ok());
  EXPECT_EQ(again->chosen_end(), 5u);
  EXPECT_EQ(again->promised(), promised);
  for (uint64_t k = 0; k < 5; ++k) {
    ChosenValue v;
    ASSERT_TRUE(again->ReadChosen(k, &v).ok());
    EXPECT_EQ(v.value, h.node(1).applied[k].value);
  }
  ChosenValue v;
  EXPECT_TRUE(again->ReadChosen(5, &v).IsNotFound());
}

TEST(RecoveryTest, RestartedNodeKeepsWorking) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.Pump();
  h.Open(0);  // restart node 0 from its log
  ASSERT_TRUE(h.Propose(0, 2, "b").ok());
  h.Pump();
  // The restarted proposer picks a ballot above its recovered promise, so
  // its first phase 1 already succeeds.
  EXPECT_EQ(h.core(0)->stats().prepares_started, 1u);
  EXPECT_EQ(h.node(0).timers.count(TimerKind::kBackoff), 0u);
  ASSERT_EQ(h.node(1).applied.size(), 2u);
  EXPECT_EQ(h.node(1).applied[1].value, "b");
}

TEST(RecoveryTest, AcceptedButNotChosenValueIsReportedAfterRestart) {
  Harness h(3);
  h.Isolate(0);
  ASSERT_TRUE(h.Propose(1, 1, "pending").ok());
  // Deliver only until node 2 accepted; drop the replies.
  while (!h.net().empty()) {
    auto m = h.net().front();
    h.net().pop_front();
    PaxosMsg msg;
    ASSERT_TRUE(msg.ParseFromString(m.second));
    if (msg.type() == ACCEPTED || msg.type() == CHOSEN) continue;
    h.Deliver(m.first, m.second);
  }
  h.Open(2);
  h.Heal(0);
  h.Isolate(1);
  // Node 0 and the restarted node 2 form a majority: node 2 reports the
  // value it accepted before the restart, so it is the one chosen.
  ASSERT_TRUE(h.Propose(0, 2, "other").ok());
  h.Pump();
  h.Fire(0, TimerKind::kBackoff);
  h.Pump();
  ASSERT_GE(h.node(0).applied.size(), 2u);
  EXPECT_EQ(h.node(0).applied[0].value, "pending");
  EXPECT_EQ(h.node(0).applied[1].value, "other");
}

TEST(RecoveryTest, CorruptRecordRefusesToStart) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  ASSERT_TRUE(h.Propose(0, 2, "b").ok());
  h.Pump();
  h.node(1).log.Write(LogWriteBatch(), /*sync=*/true);  // chosen records are written unsynced
  h.node(1).log.CorruptRecord(1);
  std::unique_ptr<Core> c;
  Status s = Core::Open(h.Options(1), &h.node(1).log, &c);
  EXPECT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.ToString().find("instance 1"), std::string::npos) << s.ToString();
  EXPECT_EQ(c, nullptr);
}

TEST(RecoveryTest, UnparsableRecordOrPromiseRefusesToStart) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.Pump();
  std::unique_ptr<Core> c;
  h.node(2).log.Write(LogWriteBatch(), /*sync=*/true);  // chosen records are written unsynced
  h.node(2).log.OverwriteRecord(0, std::string("\xff\xff\xff", 3));
  EXPECT_TRUE(Core::Open(h.Options(2), &h.node(2).log, &c).IsCorruption());
  h.node(1).log.CorruptVariable(kPromiseVariable);
  EXPECT_TRUE(Core::Open(h.Options(1), &h.node(1).log, &c).IsCorruption());
}

TEST(RecoveryTest, BrokenChecksumChainRefusesToStart) {
  Harness h(3);
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  ASSERT_TRUE(h.Propose(0, 2, "b").ok());
  h.Pump();
  std::string bytes;
  ASSERT_TRUE(h.node(1).log.Get(1, &bytes).ok());
  InstanceRecord rec;
  ASSERT_TRUE(rec.ParseFromString(bytes));
  rec.set_checksum(rec.checksum() ^ 1);
  h.node(1).log.Write(LogWriteBatch(), /*sync=*/true);  // chosen records are written unsynced
  h.node(1).log.OverwriteRecord(1, rec.SerializeAsString());
  std::unique_ptr<Core> c;
  EXPECT_TRUE(Core::Open(h.Options(1), &h.node(1).log, &c).IsCorruption());
}

TEST(CoreTest, DropsAndCountsGarbageAndForeignMessages) {
  Harness h(3);
  Outputs out;
  EXPECT_TRUE(h.core(0)->OnMessage("\x01\x02garbage", &out).IsCorruption());
  EXPECT_EQ(h.core(0)->stats().garbage_messages, 1u);
  PaxosMsg m;
  m.set_type(PREPARE);
  m.set_cluster_id(10);  // another cluster
  m.set_from(2);
  EXPECT_TRUE(h.core(0)->OnMessage(m.SerializeAsString(), &out).IsInvalidArgument());
  m.set_cluster_id(9);
  m.set_from(77);  // not a member
  EXPECT_TRUE(h.core(0)->OnMessage(m.SerializeAsString(), &out).IsInvalidArgument());
  m.set_from(2);
  m.set_group(3);  // another group
  EXPECT_TRUE(h.core(0)->OnMessage(m.SerializeAsString(), &out).IsInvalidArgument());
  EXPECT_EQ(h.core(0)->stats().foreign_messages, 3u);
  EXPECT_TRUE(out.messages.empty());
  EXPECT_TRUE(out.persist.empty());
}

TEST(CoreTest, DropsAndCountsAMessageWhoseFromIsNotTheVerifiedSender) {
  Harness h(3);
  Outputs out;
  PaxosMsg m;
  m.set_type(PREPARE);
  m.set_cluster_id(9);
  m.set_from(2);
  Ballot(5, 2).ToPb(m.mutable_ballot());
  // Node 3 sends a PREPARE in node 2's name: dropped, nothing promised.
  EXPECT_TRUE(h.core(0)->OnMessage(m.SerializeAsString(), &out, /*sender=*/3).IsInvalidArgument());
  EXPECT_EQ(h.core(0)->stats().sender_mismatches, 1u);
  EXPECT_EQ(h.core(0)->stats().foreign_messages, 0u);
  EXPECT_TRUE(out.messages.empty());
  EXPECT_TRUE(out.persist.empty());
  EXPECT_EQ(h.core(0)->promised(), Ballot());
  // The same bytes from node 2 itself are answered.
  ASSERT_TRUE(h.core(0)->OnMessage(m.SerializeAsString(), &out, /*sender=*/2).ok());
  EXPECT_EQ(h.core(0)->promised(), Ballot(5, 2));
  EXPECT_EQ(out.messages.size(), 1u);
  EXPECT_EQ(h.core(0)->stats().sender_mismatches, 1u);
}

TEST(CoreTest, OpenValidatesOptions) {
  sim::MemLogStorage log;
  std::unique_ptr<Core> c;
  CoreOptions o;
  EXPECT_TRUE(Core::Open(o, &log, &c).IsInvalidArgument());
  o.self = 1;
  o.members = {1};
  EXPECT_TRUE(Core::Open(o, nullptr, &c).IsInvalidArgument());
  EXPECT_TRUE(Core::Open(o, &log, &c).ok());
}

TEST(CoreTest, SingleNodeGroupChoosesAlone) {
  Harness h(1);
  ASSERT_TRUE(h.Propose(0, 1, "solo").ok());
  ASSERT_EQ(h.node(0).applied.size(), 1u);
  EXPECT_EQ(h.node(0).applied[0].value, "solo");
}

TEST(CoreTest, StaleTimerIsIgnored) {
  Harness h(3);
  TimerId stale = h.node(0).timers[TimerKind::kLearn];
  h.Fire(0, TimerKind::kLearn);  // re-arms with a new generation
  Outputs out;
  h.core(0)->OnTimeout(stale, &out);
  EXPECT_TRUE(out.timers.empty());
  EXPECT_TRUE(out.messages.empty());
}

}  // namespace
}  // namespace recovery_test
}  // namespace paxos
}  // namespace chorus
