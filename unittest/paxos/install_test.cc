// Core::InstallCheckpoint (paxos/trim.h): the chosen prefix jumps to a
// checkpoint's instance; pending values above it are applied, in-flight
// proposals below it end "outcome unknown", and the jump is persisted.
#include <gtest/gtest.h>

#include "paxos/trim.h"
#include "unittest/paxos/harness.h"

namespace chorus {
namespace paxos {
namespace install_test {
namespace {

using testing::Harness;

void NoMargin(CoreOptions* o) { o->log_keep_instances = 0; }

// Nodes 0 and 1 choose values 1..n while node 2 is cut off, then both trim
// right at n. Returns the chain checksum at n (what a checkpoint at n carries).
uint32_t LeaveNode2Behind(Harness* h, uint64_t n) {
  h->Isolate(2);
  for (uint64_t t = 1; t <= n; ++t) {
    EXPECT_TRUE(h->Propose(0, t, "v" + std::to_string(t)).ok());
    h->Pump();
  }
  EXPECT_EQ(h->core(0)->chosen_end(), n);
  const uint32_t chain = h->core(0)->chain_checksum();
  EXPECT_EQ(h->core(1)->chain_checksum(), chain);
  for (int i = 0; i < 2; ++i) {
    Outputs out;
    h->core(i)->OnCheckpoint(n, UINT64_MAX, &out);
    h->Exec(i, &out);
    EXPECT_EQ(h->core(i)->log_start(), n);
  }
  return chain;
}

bool Variable(const LogWriteBatch& b, const std::string& name, std::string* value) {
  for (const auto& v : b.variables) {
    if (v.first == name) {
      *value = v.second;
      return true;
    }
  }
  return false;
}

TEST(InstallTest, JumpsPersistsAndAppliesThePendingValuesAbove) {
  Harness h(3, NoMargin);
  const uint32_t chain = LeaveNode2Behind(&h, 10);
  h.Heal(2);
  // Node 2 learns instance 10 is chosen (pending: beyond its gap) and is
  // told to use a checkpoint for the rest.
  ASSERT_TRUE(h.Propose(0, 11, "v11").ok());
  h.Pump();
  ASSERT_FALSE(h.node(2).checkpoints_needed.empty());
  ASSERT_EQ(h.core(2)->chosen_end(), 0u);

  Outputs out;
  ASSERT_TRUE(h.core(2)->InstallCheckpoint(10, chain, &out).ok());
  // One synced write: the trim and the log start (10, chain).
  EXPECT_TRUE(out.sync);
  EXPECT_EQ(out.persist.delete_below, 10u);
  std::string bytes;
  ASSERT_TRUE(Variable(out.persist, kLogStartVariable, &bytes));
  LogStartPb pb;
  ASSERT_TRUE(pb.ParseFromString(bytes));
  EXPECT_EQ(pb.instance(), 10u);
  EXPECT_EQ(pb.checksum(), chain);
  // The pending value above the checkpoint is applied in the same step.
  ASSERT_EQ(out.chosen.size(), 1u);
  EXPECT_EQ(out.chosen[0].instance, 10u);
  EXPECT_EQ(out.chosen[0].value, "v11");
  h.Exec(2, &out);
  EXPECT_EQ(h.core(2)->chosen_end(), 11u);
  EXPECT_EQ(h.core(2)->log_start(), 10u);
  EXPECT_EQ(h.core(2)->chain_checksum(), h.core(0)->chain_checksum());
  EXPECT_EQ(h.core(2)->stats().checkpoints_installed, 1u);

  // A stale install changes nothing.
  ASSERT_TRUE(h.core(2)->InstallCheckpoint(7, 123, &out).ok());
  EXPECT_TRUE(out.persist.empty());
  EXPECT_TRUE(out.chosen.empty());
  EXPECT_EQ(h.core(2)->chosen_end(), 11u);

  // Catch-up goes on from there, and a restart recovers the jump.
  for (uint64_t t = 12; t <= 14; ++t) ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
  h.Pump();
  EXPECT_EQ(h.core(2)->chosen_end(), 14u);
  h.Open(2);
  EXPECT_EQ(h.core(2)->chosen_end(), 14u);
  EXPECT_EQ(h.core(2)->log_start(), 10u);
  ChosenValue v;
  EXPECT_TRUE(h.core(2)->ReadChosen(9, &v).IsNotFound());
  ASSERT_TRUE(h.core(2)->ReadChosen(13, &v).ok());
  EXPECT_EQ(v.value, "v14");
  EXPECT_TRUE(h.node(2).errors.empty());
}

TEST(InstallTest, RestartRightAfterAnInstallHasNoRecordButTheJump) {
  Harness h(3, NoMargin);
  const uint32_t chain = LeaveNode2Behind(&h, 6);
  Outputs out;
  ASSERT_TRUE(h.core(2)->InstallCheckpoint(6, chain, &out).ok());
  h.Exec(2, &out);
  h.Open(2);
  EXPECT_EQ(h.core(2)->chosen_end(), 6u);
  EXPECT_EQ(h.core(2)->chain_checksum(), chain);
  h.Heal(2);
  ASSERT_TRUE(h.Propose(2, 50, "from2").ok());
  h.Pump();
  for (int k = 0; k < 3 && h.node(2).finished.empty(); ++k) {
    if (h.node(2).timers.count(TimerKind::kBackoff)) h.Fire(2, TimerKind::kBackoff);
    h.Pump();
  }
  ASSERT_EQ(h.node(2).finished.size(), 1u);
  EXPECT_TRUE(h.node(2).finished[0].status.ok());
  EXPECT_EQ(h.node(2).finished[0].instance, 6u);
  EXPECT_EQ(h.core(0)->chosen_end(), 7u);
}

TEST(InstallTest, ProposalsInFlightBelowTheCheckpointEndOutcomeUnknown) {
  Harness h(3, NoMargin);
  // Node 2 gets its ballot prepared and sends an ACCEPT for instance 0
  // that nobody receives.
  ASSERT_TRUE(h.Propose(2, 77, "mine").ok());
  while (!h.net().empty()) {
    auto m = h.net().front();
    h.net().pop_front();
    PaxosMsg msg;
    ASSERT_TRUE(msg.ParseFromString(m.second));
    if (msg.type() == ACCEPT) continue;
    h.Deliver(m.first, m.second);
  }
  ASSERT_TRUE(h.node(2).finished.empty());
  const uint32_t chain = LeaveNode2Behind(&h, 5);
  // Its prepared ballot takes a second one at instance 1: in flight too.
  ASSERT_TRUE(h.Propose(2, 78, "mine too").ok());
  Outputs out;
  ASSERT_TRUE(h.core(2)->InstallCheckpoint(5, chain, &out).ok());
  h.Exec(2, &out);
  ASSERT_EQ(h.node(2).finished.size(), 2u);
  for (const ProposalResult& f : h.node(2).finished) {
    EXPECT_TRUE(f.token == 77u || f.token == 78u) << f.token;
    EXPECT_TRUE(f.status.IsStopped());
    EXPECT_NE(f.status.ToString().find("outcome unknown"), std::string::npos)
        << f.status.ToString();
  }
  // A new proposal goes on above the checkpoint.
  h.Heal(2);
  ASSERT_TRUE(h.Propose(2, 79, "after").ok());
  h.Pump();
  for (int k = 0; k < 10 && h.node(2).finished.size() < 3; ++k) {
    for (TimerKind kind : {TimerKind::kAccept, TimerKind::kBackoff, TimerKind::kPrepare}) {
      if (h.node(2).timers.count(kind) == 0) continue;
      h.Fire(2, kind);
      break;
    }
    h.Pump();
  }
  ASSERT_EQ(h.node(2).finished.size(), 3u);
  EXPECT_EQ(h.node(2).finished[2].token, 79u);
  EXPECT_TRUE(h.node(2).finished[2].status.ok()) << h.node(2).finished[2].status.ToString();
  EXPECT_GE(h.node(2).finished[2].instance, 5u);
  // Never re-proposed: "mine" was chosen nowhere.
  for (const ChosenValue& v : h.node(0).applied) {
    EXPECT_NE(v.value, "mine");
    EXPECT_NE(v.value, "mine too");
  }
}

TEST(InstallTest, AWrongChecksumHaltsAtTheNextValuesFromAPeer) {
  Harness h(3, NoMargin);
  const uint32_t chain = LeaveNode2Behind(&h, 8);
  Outputs out;
  ASSERT_TRUE(h.core(2)->InstallCheckpoint(8, chain ^ 1, &out).ok());
  h.Exec(2, &out);
  // CHOSEN notices carry no checksum; catch-up batches do: node 2 learns the
  // next values from a peer's log.
  for (uint64_t t = 20; t < 30; ++t) {
    ASSERT_TRUE(h.Propose(0, t, "w" + std::to_string(t)).ok());
    h.Pump();
  }
  h.Heal(2);
  for (int k = 0; k < 3 && !h.core(2)->halted(); ++k) {
    h.Fire(2, TimerKind::kLearn);
    h.Pump();
  }
  ASSERT_TRUE(h.core(2)->halted());
  ASSERT_FALSE(h.node(2).errors.empty());
  EXPECT_NE(h.node(2).errors[0].ToString().find("chained checksum mismatch"), std::string::npos)
      << h.node(2).errors[0].ToString();
  EXPECT_TRUE(h.core(2)->InstallCheckpoint(20, chain, &out).IsStopped());
}

TEST(InstallTest, RefusesAnInstanceAtTheCeiling) {
  Harness h(1);
  Outputs out;
  EXPECT_TRUE(h.core(0)->InstallCheckpoint(kMaxInstanceId, 0, &out).IsInvalidArgument());
  EXPECT_EQ(h.core(0)->chosen_end(), 0u);
}

}  // namespace
}  // namespace install_test
}  // namespace paxos
}  // namespace chorus
