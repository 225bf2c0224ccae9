// Master election (paxos/master.h) through a hand-pumped cluster: election,
// the acceptor-grant lease, reads, forwarding, transfer, and each of the
// master-election test mutations. Time is the harness's clock (SetTime):
// these tests never look at a real clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "paxos/master.h"
#include "paxos/random.h"
#include "unittest/paxos/harness.h"

namespace chorus {
namespace paxos {
namespace master_test {
namespace {

using testing::Harness;

// Defaults: lease 800 ms, heartbeat 100 ms, drift 5%: one heartbeat round
// gives a lease of 800 * 0.95 / 1.05 = 723 ms.
constexpr uint64_t kDriftedLease = 800 * 950000 / 1050000;

std::function<void(CoreOptions*)> Election(TestMutation m = TestMutation::kNone,
                                           bool forward = true) {
  return [m, forward](CoreOptions* o) {
    o->master_election = true;
    o->forward_to_master = forward;
    o->test_mutation = m;
  };
}

// Delivers queued messages, dropping those of type `drop`.
void PumpDropping(Harness* h, MsgType drop) {
  while (!h->net().empty()) {
    auto m = std::move(h->net().front());
    h->net().pop_front();
    PaxosMsg msg;
    ASSERT_TRUE(msg.ParseFromString(m.second));
    if (msg.type() == drop) continue;
    h->Deliver(m.first, m.second);
  }
}

// How many queued messages have type `t`.
size_t Queued(Harness* h, MsgType t) {
  size_t n = 0;
  for (const auto& m : h->net()) {
    PaxosMsg msg;
    if (msg.ParseFromString(m.second) && msg.type() == t) ++n;
  }
  return n;
}

// Past the startup hold (every node started at time 0), node `i` runs for
// master and wins.
void Elect(Harness* h, int i, uint64_t at = 1000) {
  h->SetTime(at);
  h->Fire(i, TimerKind::kElection);
  h->Pump();
}

void Heartbeat(Harness* h, int i, uint64_t at) {
  h->SetTime(at);
  h->Fire(i, TimerKind::kHeartbeat);
  h->Pump();
}

BarrierResult Read(Harness* h, int i, uint64_t token, Outputs* out) {
  h->core(i)->ReadBarrier(token, out);
  Outputs copy = *out;
  h->Exec(i, &copy);
  return out->barriers.empty() ? BarrierResult{token, 0, Status::IOError("pending")}
                               : out->barriers[0];
}

TEST(MasterTest, OffByDefaultAnswersNotSupportedAndStartsNoTimers) {
  Harness h(3);
  EXPECT_EQ(h.node(0).timers.count(TimerKind::kElection), 0u);
  Outputs out;
  BarrierResult r = Read(&h, 0, 1, &out);
  EXPECT_TRUE(r.status.IsNotSupported());
  EXPECT_TRUE(h.core(0)->TransferMaster(2, &out).IsNotSupported());
  EXPECT_EQ(h.core(0)->master().node, 0u);
  EXPECT_FALSE(h.core(0)->HoldsLease());
  ASSERT_TRUE(h.Propose(0, 1, "a").ok());
  h.Pump();
  EXPECT_EQ(h.node(0).finished.size(), 1u);
  EXPECT_EQ(h.core(0)->stats().heartbeats_sent, 0u);
  EXPECT_EQ(h.node(0).timers.count(TimerKind::kHeartbeat), 0u);
}

TEST(MasterTest, ElectsExactlyOneMaster) {
  Harness h(3, Election());
  ASSERT_EQ(h.node(0).timers.count(TimerKind::kElection), 1u);
  Elect(&h, 0);
  EXPECT_TRUE(h.core(0)->HoldsLease());
  EXPECT_FALSE(h.core(1)->HoldsLease());
  EXPECT_FALSE(h.core(2)->HoldsLease());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(h.core(i)->master().node, 1u) << "node " << i;
    ASSERT_FALSE(h.node(i).views.empty()) << "node " << i;
    EXPECT_EQ(h.node(i).views.back().node, 1u);
  }
  EXPECT_TRUE(h.core(0)->master().self_ready);
  EXPECT_TRUE(h.node(0).views.back().self_ready);
  EXPECT_FALSE(h.core(1)->master().self_ready);
  // The noop is the new master's first commit.
  ASSERT_EQ(h.node(1).applied.size(), 1u);
  EXPECT_TRUE(h.node(1).applied[0].noop);
  // The others know a live master: their election timers do nothing.
  h.Fire(1, TimerKind::kElection);
  h.Fire(2, TimerKind::kElection);
  h.Pump();
  EXPECT_EQ(h.core(1)->stats().prepares_started, 0u);
  EXPECT_EQ(h.core(2)->stats().prepares_started, 0u);
  EXPECT_TRUE(h.core(0)->HoldsLease());
}

TEST(MasterTest, LeaseRenewalWritesNothing) {
  Harness h(3, Election());
  Elect(&h, 0);
  size_t writes[3];
  for (int i = 0; i < 3; ++i) writes[i] = h.node(i).writes;
  uint64_t t = 1000;
  for (int k = 0; k < 30; ++k) {  // 3 s of heartbeats: many leases long
    t += 100;
    h.SetTime(t);
    Outputs out;
    h.core(0)->OnTimeout(h.node(0).timers[TimerKind::kHeartbeat], &out);
    EXPECT_TRUE(out.persist.empty());
    EXPECT_FALSE(out.sync);
    h.Exec(0, &out);
    while (!h.net().empty()) {
      auto m = h.net().front();
      h.net().pop_front();
      Outputs step;
      ASSERT_TRUE(h.core(m.first)->OnMessage(m.second, &step).ok());
      EXPECT_TRUE(step.persist.empty()) << "node " << m.first;
      h.Exec(m.first, &step);
    }
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.node(i).writes, writes[i]) << "node " << i;
  EXPECT_TRUE(h.core(0)->HoldsLease());  // t = 4000, long after the first lease
  EXPECT_EQ(h.core(0)->master().node, 1u);
}

TEST(MasterTest, LeaseExpiresWhenHeartbeatsStop) {
  Harness h(3, Election());
  Elect(&h, 0);  // the round of t0 = 1000 was acked
  h.SetTime(1000 + kDriftedLease - 1);
  EXPECT_TRUE(h.core(0)->HoldsLease());
  h.SetTime(1000 + kDriftedLease);
  EXPECT_FALSE(h.core(0)->HoldsLease());
  Outputs out;
  EXPECT_TRUE(Read(&h, 0, 9, &out).status.IsBusy());
  // At lease_ms after it became master without renewal it steps down.
  h.SetTime(1800);
  h.Fire(0, TimerKind::kLearn);
  EXPECT_EQ(h.core(0)->master().node, 0u);
  ASSERT_FALSE(h.node(0).views.empty());
  EXPECT_EQ(h.node(0).views.back().node, 0u);
}

TEST(MasterTest, LeaseIgnoresDriftMutationKeepsTheFullLease) {
  Harness h(3, Election(TestMutation::kLeaseIgnoresDrift));
  Elect(&h, 0);
  h.SetTime(1000 + kDriftedLease + 10);
  EXPECT_TRUE(h.core(0)->HoldsLease());  // correct: over at 1000 + 723
  h.SetTime(1800);
  EXPECT_FALSE(h.core(0)->HoldsLease());
}

TEST(MasterTest, LaggingNodesPrepareIsRefusedWithoutTouchingThePromise) {
  Harness h(3, Election());
  Elect(&h, 0);
  const Ballot promised1 = h.core(1)->promised();
  const size_t writes1 = h.node(1).writes;
  // Node 3 is cut off, then its clock runs past its election timeout: it
  // runs for master while node 1 holds the grants of nodes 1 and 2.
  h.Isolate(2);
  Heartbeat(&h, 0, 1100);
  h.Heal(2);
  h.SetNodeTime(2, 5000);
  h.Fire(2, TimerKind::kElection);
  EXPECT_EQ(h.core(2)->stats().prepares_started, 1u);
  ASSERT_EQ(Queued(&h, PREPARE), 2u);
  h.Pump();
  EXPECT_EQ(h.core(1)->promised(), promised1);
  EXPECT_EQ(h.node(1).writes, writes1);
  EXPECT_GE(h.core(1)->stats().prepares_refused, 1u);
  EXPECT_GE(h.core(0)->stats().prepares_refused, 1u);
  EXPECT_TRUE(h.core(0)->HoldsLease());
  EXPECT_EQ(h.core(1)->master().node, 1u);
}

TEST(MasterTest, PrepareIgnoresGrantMutationPromisesTheLaggingNode) {
  Harness h(3, Election(TestMutation::kPrepareIgnoresGrant));
  Elect(&h, 0);
  const Ballot promised1 = h.core(1)->promised();
  h.Isolate(2);
  Heartbeat(&h, 0, 1100);
  h.Heal(2);
  h.SetNodeTime(2, 5000);
  h.Fire(2, TimerKind::kElection);
  h.Pump(2);  // node 3's PREPARE reaches nodes 1 and 2 (the master, in its
              // lease, then runs phase 1 again above it: not delivered here)
  EXPECT_NE(h.core(1)->promised(), promised1);
  EXPECT_EQ(h.core(1)->promised().node_id, 3u);
}

PaxosMsg PrepareFrom(uint64_t node, uint64_t number, uint64_t instance) {
  PaxosMsg prepare;
  prepare.set_type(PREPARE);
  prepare.set_cluster_id(9);
  prepare.set_from(node);
  prepare.set_instance(instance);
  Ballot(number, node).ToPb(prepare.mutable_ballot());
  return prepare;
}

TEST(MasterTest, StartupHoldRefusesEveryPrepare) {
  Harness h(3, Election());
  h.SetTime(100);  // all started at 0: the hold lasts until 800
  h.Fire(0, TimerKind::kElection);  // no campaign in its own hold
  EXPECT_EQ(h.core(0)->stats().prepares_started, 0u);
  // No master known: phase 1, but not while its own acceptor would refuse
  // it (the ballot would go out unrecorded): it backs off, sending nothing.
  ASSERT_TRUE(h.Propose(0, 1, "v").ok());
  EXPECT_EQ(h.core(0)->stats().prepares_started, 0u);
  EXPECT_EQ(Queued(&h, PREPARE), 0u);
  for (int i = 1; i < 3; ++i) {
    EXPECT_TRUE(h.Deliver(i, PrepareFrom(1, 5, 0).SerializeAsString()).ok());
    EXPECT_TRUE(h.core(i)->promised().IsNull()) << "node " << i;
    EXPECT_EQ(h.core(i)->stats().prepares_refused, 1u) << "node " << i;
  }
  h.net().clear();
  EXPECT_TRUE(h.node(0).finished.empty());
  // After the hold the retry wins.
  h.SetTime(900);
  h.Fire(0, TimerKind::kBackoff);
  h.Pump();
  ASSERT_EQ(h.node(0).finished.size(), 1u);
  EXPECT_TRUE(h.node(0).finished[0].status.ok());
  EXPECT_EQ(h.core(1)->master().node, 1u);
}

TEST(MasterTest, StartupHoldAfterRestart) {
  Harness h(3, Election());
  Elect(&h, 0);
  // Node 2 restarts at 1050: until 1850 it promises nobody, not even the
  // master's new phase 1.
  h.SetTime(1050);
  h.Open(1);
  EXPECT_EQ(h.core(1)->stats().prepares_refused, 0u);
  PaxosMsg prepare = PrepareFrom(3, 100, h.core(1)->chosen_end());
  EXPECT_TRUE(h.Deliver(1, prepare.SerializeAsString()).ok());
  EXPECT_EQ(h.core(1)->stats().prepares_refused, 1u);
  EXPECT_NE(h.core(1)->promised(), Ballot(100, 3));
}

TEST(MasterTest, NoStartupHoldMutationPromisesAtOnce) {
  Harness h(3, Election(TestMutation::kNoStartupHold));
  h.SetTime(100);
  ASSERT_TRUE(h.Propose(0, 1, "v").ok());
  h.Pump();
  ASSERT_EQ(h.node(0).finished.size(), 1u);
  EXPECT_FALSE(h.core(1)->promised().IsNull());
  EXPECT_EQ(h.core(1)->stats().prepares_refused, 0u);
}

TEST(MasterTest, ReadBarrierOnMasterSendsAndWritesNothing) {
  Harness h(3, Election());
  Elect(&h, 0);
  ASSERT_TRUE(h.Propose(0, 1, "x").ok());
  h.Pump();
  Outputs out;
  BarrierResult r = Read(&h, 0, 77, &out);
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.token, 77u);
  EXPECT_EQ(r.instance, h.core(0)->chosen_end());
  EXPECT_EQ(r.instance, 2u);  // the noop and "x"
  EXPECT_TRUE(out.messages.empty());
  EXPECT_TRUE(out.persist.empty());
}

TEST(MasterTest, ReadIndexOnFollower) {
  Harness h(3, Election());
  Elect(&h, 0);
  // Node 3 misses three values, then reads: one round trip to the master,
  // then it catches up to the master's chosen_end before the barrier ends.
  h.Isolate(2);
  for (uint64_t t = 1; t <= 3; ++t) ASSERT_TRUE(h.Propose(0, t, "v" + std::to_string(t)).ok());
  h.Pump();
  h.Heal(2);
  EXPECT_EQ(h.core(2)->chosen_end(), 1u);
  Outputs out;
  h.core(2)->ReadBarrier(5, &out);
  EXPECT_TRUE(out.barriers.empty());
  ASSERT_EQ(out.messages.size(), 1u);
  EXPECT_EQ(out.messages[0].to, 1u);
  h.Exec(2, &out);
  h.Pump();
  ASSERT_EQ(h.node(2).barriers.size(), 1u);
  const BarrierResult& r = h.node(2).barriers[0];
  EXPECT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.token, 5u);
  EXPECT_EQ(r.instance, 4u);
  EXPECT_GE(h.core(2)->chosen_end(), 4u);
  EXPECT_EQ(h.core(2)->stats().read_index_requests, 1u);
}

TEST(MasterTest, ReadBeforeNoopCommitMutationServesReadsEarly) {
  for (bool mutated : {false, true}) {
    Harness h(3, Election(mutated ? TestMutation::kReadBeforeNoopCommit : TestMutation::kNone));
    h.SetTime(1000);
    h.Fire(0, TimerKind::kElection);
    // Heartbeats are acked (the lease holds) but the noop's ACCEPTED replies
    // are lost: the noop is not chosen.
    PumpDropping(&h, ACCEPTED);
    EXPECT_EQ(h.core(0)->master().node, 1u);
    Outputs out;
    BarrierResult r = Read(&h, 0, 3, &out);
    EXPECT_EQ(r.status.ok(), mutated) << r.status.ToString();
    EXPECT_EQ(h.core(0)->HoldsLease(), mutated);
  }
}

// A phase 1 whose PROMISEs were truncated (promise_budget_bytes) does not
// see the votes above its limit: the noop there would not cover them. The
// master gets ready only after a phase 1 that saw everything.
TEST(MasterTest, ReadyOnlyAfterACompletePhaseOne) {
  Harness h(3, [](CoreOptions* o) {
    o->master_election = true;
    o->max_value_bytes = 2;
    o->promise_budget_bytes = o->MaxEnvelopeBytes();  // one value per PROMISE
  });
  h.SetTime(1000);
  h.Isolate(0);
  // Node 2 gets a noop and three values accepted by nodes 2 and 3, but the
  // ACCEPTED replies are lost: nothing is chosen.
  for (uint64_t t = 1; t <= 3; ++t) ASSERT_TRUE(h.Propose(1, t, "v" + std::to_string(t)).ok());
  PumpDropping(&h, ACCEPTED);
  EXPECT_EQ(h.core(1)->chosen_end(), 0u);
  // Node 2's grants ran out; node 1 runs for master.
  h.Heal(0);
  h.SetTime(3000);
  h.Fire(0, TimerKind::kElection);
  h.Pump();
  // Its first ballot is below node 2's: rejected, it retries after a backoff.
  h.Fire(0, TimerKind::kBackoff);
  h.Pump();
  EXPECT_GE(h.core(0)->stats().truncated_promises + h.core(1)->stats().truncated_promises +
                h.core(2)->stats().truncated_promises,
            3u);
  EXPECT_GE(h.core(0)->stats().prepares_started, 5u);  // 1 lost, 4 up the log
  ASSERT_TRUE(h.core(0)->HoldsLease());
  Outputs out;
  BarrierResult r = Read(&h, 0, 1, &out);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.instance, 5u);  // the old noop, v1..v3, the new noop
  ASSERT_EQ(h.node(0).applied.size(), 5u);
  EXPECT_EQ(h.node(0).applied[3].value, "v3");
  EXPECT_TRUE(h.node(0).applied[4].noop);
}

// Sim F2 (seed 600198): a master not yet ready whose phase 1 again (after a
// truncated PROMISE) fails (lost PREPAREs here; refusals there) retries after
// its backoff until it is ready, with nothing queued.
TEST(MasterTest, UnreadyMasterRetriesPhaseOneAfterBackoff) {
  Harness h(3, [](CoreOptions* o) {
    o->master_election = true;
    o->max_value_bytes = 2;
    o->promise_budget_bytes = o->MaxEnvelopeBytes();  // one value per PROMISE
  });
  h.SetTime(1000);
  h.Isolate(0);
  for (uint64_t t = 1; t <= 3; ++t) ASSERT_TRUE(h.Propose(1, t, "v" + std::to_string(t)).ok());
  PumpDropping(&h, ACCEPTED);
  h.Heal(0);
  h.SetTime(3000);
  h.Fire(0, TimerKind::kElection);
  h.Pump();
  h.Fire(0, TimerKind::kBackoff);
  // Once node 1 is master (not ready: its PROMISEs were truncated), its
  // PREPAREs are lost.
  size_t dropped = 0;
  while (!h.net().empty()) {
    auto m = std::move(h.net().front());
    h.net().pop_front();
    PaxosMsg msg;
    ASSERT_TRUE(msg.ParseFromString(m.second));
    if (msg.type() == PREPARE && msg.from() == 1 && h.core(0)->master().node == 1u) {
      ++dropped;
      continue;
    }
    h.Deliver(m.first, m.second);
  }
  ASSERT_GT(dropped, 0u);
  ASSERT_EQ(h.core(0)->master().node, 1u);
  ASSERT_FALSE(h.core(0)->HoldsLease());
  h.Fire(0, TimerKind::kPrepare);  // no answer: back off
  h.Fire(0, TimerKind::kBackoff);  // and try again
  h.Pump();
  for (int k = 0; k < 8 && !h.core(0)->HoldsLease(); ++k) {
    if (h.node(0).timers.count(TimerKind::kBackoff)) h.Fire(0, TimerKind::kBackoff);
    h.Pump();
  }
  EXPECT_TRUE(h.core(0)->HoldsLease());
  EXPECT_EQ(h.core(0)->master().node, 1u);
}

// Sim F3 (seeds 600180, 697): a follower's own proposal in a slot under a
// ballot that lost is stranded once another node is master (the follower
// defers, the master has nothing to propose there). Its FILL hint makes the
// master decide that instance; the proposal is then re-queued and handed
// over (here: forwarding is off, so it ends NotMaster, never Stopped).
TEST(MasterTest, StrandedSlotOfAFollowerIsFilledByTheMaster) {
  Harness h(3, Election(TestMutation::kNone, /*forward=*/false));
  Elect(&h, 1);  // node 2, noop at 0
  ASSERT_TRUE(h.core(1)->HoldsLease());
  ASSERT_TRUE(h.Propose(1, 7, "x").ok());  // instance 1
  ASSERT_TRUE(h.Propose(1, 8, "y").ok());  // instance 2
  h.net().clear();                         // every ACCEPT is lost
  // Node 2's grants ran out; node 1 wins with node 3 (node 2 cut off): its
  // noop goes at 1, nobody reported a vote at 2.
  h.Isolate(1);
  h.SetTime(3000);
  h.Fire(0, TimerKind::kElection);
  h.Pump();
  ASSERT_TRUE(h.core(0)->HoldsLease());
  h.Heal(1);
  h.Fire(1, TimerKind::kAccept);  // node 2's ballot gets no answer
  for (uint64_t t = 3100; t <= 3500; t += 100) {
    Heartbeat(&h, 0, t);
    if (h.node(1).timers.count(TimerKind::kLearn)) h.Fire(1, TimerKind::kLearn);  // catch up
    h.Pump();
  }
  EXPECT_EQ(h.core(1)->master().node, 1u);
  std::map<uint64_t, Status> done;
  for (const auto& f : h.node(1).finished) done[f.token] = f.status;
  ASSERT_EQ(done.count(7), 1u);
  EXPECT_TRUE(done[7].IsNotMaster()) << done[7].ToString();
  ASSERT_EQ(done.count(8), 1u) << "the proposal at instance 2 is stranded";
  EXPECT_TRUE(done[8].IsNotMaster()) << done[8].ToString();
  EXPECT_GE(h.core(1)->stats().fills_sent, 1u);
  EXPECT_EQ(h.core(0)->stats().fills_proposed, 1u);
  EXPECT_EQ(h.core(0)->chosen_end(), 3u);
  EXPECT_EQ(h.core(1)->chosen_end(), 3u);
}

// Node F1: a restarted node that campaigned while cut off (its PREPAREs lost)
// holds its own promise of a ballot above the master's. The master's ACCEPT
// (and heartbeat) refused by it for that stale promise must not depose a
// master whose lease (majority grants) is live: it runs phase 1 again above
// the promise and keeps serving (the epoch may move up; the node does not).
TEST(MasterTest, StalePromiseOfARestartedNodeDoesNotDeposeTheMaster) {
  Harness h(3, Election());
  Elect(&h, 0);
  ASSERT_TRUE(h.core(0)->HoldsLease());
  h.SetTime(1100);
  h.Open(1);  // node 2 restarts (startup hold until 1900) and hears nothing
  h.Isolate(1);
  for (uint64_t t = 1200; t <= 2000; t += 100) Heartbeat(&h, 0, t);
  h.Fire(1, TimerKind::kElection);  // after its hold: it campaigns, unheard
  h.net().clear();
  ASSERT_GT(h.core(1)->stats().prepares_started, 0u);
  h.Heal(1);
  const size_t views = h.node(0).views.size();
  ASSERT_TRUE(h.core(0)->HoldsLease());
  ASSERT_TRUE(h.Propose(0, 5, "w").ok());  // its ACCEPT meets node 2's promise
  h.Pump();
  Heartbeat(&h, 0, 2100);  // and so does the heartbeat
  Heartbeat(&h, 0, 2200);
  EXPECT_TRUE(h.core(0)->HoldsLease());
  for (size_t i = views; i < h.node(0).views.size(); ++i) {
    EXPECT_EQ(h.node(0).views[i].node, 1u) << "view " << i;
    EXPECT_TRUE(h.node(0).views[i].self_ready) << "view " << i;
  }
  ASSERT_FALSE(h.node(0).finished.empty());
  EXPECT_TRUE(h.node(0).finished.back().status.ok());
  EXPECT_EQ(h.core(1)->master().node, 1u);
  EXPECT_EQ(h.core(2)->master().node, 1u);
}

TEST(MasterTest, ForwardedProposalFinishesTheOriginsToken) {
  Harness h(3, Election());
  Elect(&h, 0);
  ASSERT_TRUE(h.Propose(1, 42, "fwd").ok());
  EXPECT_EQ(h.core(1)->stats().prepares_started, 0u);  // no duel
  EXPECT_EQ(h.core(1)->stats().forwards_sent, 1u);
  h.Pump();
  ASSERT_EQ(h.node(1).finished.size(), 1u);
  EXPECT_EQ(h.node(1).finished[0].token, 42u);
  EXPECT_TRUE(h.node(1).finished[0].status.ok());
  EXPECT_EQ(h.node(1).finished[0].instance, 1u);
  ASSERT_EQ(h.node(1).applied.size(), 2u);
  EXPECT_EQ(h.node(1).applied[1].value, "fwd");
  EXPECT_TRUE(h.node(1).applied[1].ours);
  EXPECT_EQ(h.node(1).applied[1].token, 42u);
  EXPECT_FALSE(h.node(0).applied[1].ours);
  EXPECT_TRUE(h.node(0).finished.empty());
  EXPECT_EQ(h.core(0)->stats().forwards_proposed, 1u);
  EXPECT_EQ(h.core(1)->stats().prepares_started, 0u);
}

TEST(MasterTest, DuplicatedForwardIsProposedOnce) {
  Harness h(3, Election());
  Elect(&h, 0);
  ASSERT_TRUE(h.Propose(1, 42, "once").ok());
  ASSERT_EQ(h.net().size(), 1u);
  h.net().push_back(h.net().front());  // the network duplicates it
  h.Pump();
  size_t copies = 0;
  for (const ChosenValue& c : h.node(0).applied) copies += c.value == "once";
  EXPECT_EQ(copies, 1u);
  EXPECT_EQ(h.core(0)->stats().forwards_dropped, 1u);
}

TEST(MasterTest, CancelOfAForwardedProposal) {
  Harness h(3, Election());
  Elect(&h, 0);
  ASSERT_TRUE(h.Propose(1, 8, "c").ok());
  h.net().clear();  // the FORWARD is lost
  Outputs out;
  h.core(1)->Cancel(8, &out);
  ASSERT_EQ(out.finished.size(), 1u);
  EXPECT_TRUE(out.finished[0].status.IsStopped());
}

TEST(MasterTest, NotMasterWhenForwardingIsOff) {
  Harness h(3, Election(TestMutation::kNone, /*forward=*/false));
  Elect(&h, 0);
  Outputs out;
  Status s = h.core(1)->Propose(1, "v", &out);
  EXPECT_TRUE(s.IsNotMaster()) << s.ToString();
  EXPECT_NE(s.message().find("node 1"), std::string::npos) << s.ToString();
  EXPECT_TRUE(out.messages.empty());
  EXPECT_EQ(h.core(1)->stats().prepares_started, 0u);
  EXPECT_EQ(Status::CodeName(s.code()), std::string("NotMaster"));
  // The master itself takes proposals.
  ASSERT_TRUE(h.Propose(0, 2, "m").ok());
  h.Pump();
  EXPECT_EQ(h.node(0).finished.size(), 1u);
}

TEST(MasterTest, QueuedProposalsGoToAMasterThatBecomesKnown) {
  Harness h(3, Election());
  h.SetTime(1000);
  // Node 2 queues a value while no master is known; its phase 1 is lost.
  ASSERT_TRUE(h.Propose(1, 5, "queued").ok());
  h.net().clear();
  // Node 1's first ballot is below node 2's lost one (which node 2's own
  // acceptor promised): rejected there, it backs off and wins the retry.
  Elect(&h, 0, 1001);
  for (int k = 0; k < 5 && h.core(0)->master().node != 1; ++k) {
    h.Fire(0, TimerKind::kBackoff);
    h.Pump();
  }
  // The heartbeat made node 1 known: node 2 forwarded instead of retrying.
  ASSERT_EQ(h.node(1).finished.size(), 1u);
  EXPECT_TRUE(h.node(1).finished[0].status.ok());
  EXPECT_EQ(h.core(1)->stats().prepares_started, 1u);
}

TEST(MasterTest, TransferWithinOneRoundTrip) {
  for (bool mutated : {false, true}) {
    Harness h(3, Election(mutated ? TestMutation::kTransferKeepsLease : TestMutation::kNone));
    Elect(&h, 0);
    ASSERT_TRUE(h.core(0)->HoldsLease());
    Outputs out;
    ASSERT_TRUE(h.core(0)->TransferMaster(3, &out).ok());
    // Dropped in the very step, before the RELEASE is even sent.
    EXPECT_EQ(h.core(0)->HoldsLease(), mutated);
    h.Exec(0, &out);
    // No timer fires and no time passes: the RELEASE, the target's phase 1
    // and its noop are all it takes.
    h.Pump();
    EXPECT_TRUE(h.core(2)->HoldsLease());
    EXPECT_EQ(h.core(2)->master().node, 3u);
    EXPECT_EQ(h.core(1)->master().node, 3u);
    EXPECT_EQ(h.core(0)->master().node, 3u);  // (the mutation: on its heartbeat)
    // The old master does not campaign right away.
    const uint64_t prepares = h.core(0)->stats().prepares_started;
    h.Fire(0, TimerKind::kElection);
    EXPECT_EQ(h.core(0)->stats().prepares_started, prepares);
  }
}

// The old master's lease must end before the new one's begins: with the
// mutation, an old master that hears nothing more keeps its lease while the
// target already holds one.
TEST(MasterTest, TransferKeepsLeaseMutationOverlapsTwoLeases) {
  for (bool mutated : {false, true}) {
    Harness h(3, Election(mutated ? TestMutation::kTransferKeepsLease : TestMutation::kNone));
    Elect(&h, 0);
    Outputs out;
    ASSERT_TRUE(h.core(0)->TransferMaster(3, &out).ok());
    h.Exec(0, &out);
    h.Isolate(0);  // its RELEASE is queued already; it hears nothing more
    h.Pump();
    EXPECT_TRUE(h.core(2)->HoldsLease());
    EXPECT_EQ(h.core(0)->HoldsLease(), mutated);
  }
}

TEST(MasterTest, TransferRequiresTheMaster) {
  Harness h(3, Election());
  Elect(&h, 0);
  Outputs out;
  EXPECT_TRUE(h.core(1)->TransferMaster(3, &out).IsNotMaster());
  EXPECT_TRUE(h.core(0)->TransferMaster(7, &out).IsInvalidArgument());
  EXPECT_TRUE(h.core(0)->HoldsLease());
}

TEST(MasterTest, StepDownLetsAnotherNodeWin) {
  Harness h(3, Election());
  Elect(&h, 0);
  Outputs out;
  ASSERT_TRUE(h.core(0)->TransferMaster(0, &out).ok());
  EXPECT_FALSE(h.core(0)->HoldsLease());
  h.Exec(0, &out);
  h.Pump();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(h.core(i)->master().node, 0u) << "node " << i;
  // The grants are released: node 2's election wins at once.
  h.SetTime(1100);
  h.Fire(1, TimerKind::kElection);
  h.Pump();
  EXPECT_TRUE(h.core(1)->HoldsLease());
  EXPECT_EQ(h.core(0)->master().node, 2u);
}

TEST(MasterTest, MasterStepsDownOnAHigherBallot) {
  Harness h(3, Election());
  Elect(&h, 0);
  // Node 1 is cut off (and its clock stops); the others' grants run out
  // and node 2 wins with a higher ballot.
  h.Isolate(0);
  h.SetNodeTime(1, 3000);
  h.SetNodeTime(2, 3000);
  h.Fire(1, TimerKind::kElection);
  h.Pump();
  ASSERT_TRUE(h.core(1)->HoldsLease());
  h.Heal(0);
  h.Fire(1, TimerKind::kHeartbeat);
  h.Pump();
  EXPECT_EQ(h.core(0)->master().node, 2u);
  EXPECT_FALSE(h.core(0)->HoldsLease());
}

TEST(MasterTest, OptionsAreValidated) {
  CoreOptions o;
  o.self = 1;
  o.members = {1, 2, 3};
  EXPECT_TRUE(o.Validate().ok());
  CoreOptions bad = o;
  bad.heartbeat_interval_ms = 400;  // not < 800 / 2
  EXPECT_TRUE(bad.Validate().IsInvalidArgument());
  bad = o;
  bad.election_timeout_ms = 799;
  EXPECT_TRUE(bad.Validate().IsInvalidArgument());
  bad = o;
  bad.max_clock_drift_ppm = 500000;
  EXPECT_TRUE(bad.Validate().IsInvalidArgument());
  bad = o;
  bad.lease_ms = 0;
  EXPECT_TRUE(bad.Validate().IsInvalidArgument());
}

// Random schedules on one clock (so "at the same time" means something):
// lost, duplicated and reordered messages, timers firing when due, restarts,
// transfers and step-downs. After every step at most one node holds a
// lease, every instance has one chosen value, and every read barrier covers
// every proposal that had finished before the barrier was asked for.
TEST(MasterTest, RandomSchedulesKeepOneLeaseAndLinearizableReads) {
  const TimerKind kinds[] = {TimerKind::kPrepare, TimerKind::kAccept, TimerKind::kBackoff,
                             TimerKind::kLearn, TimerKind::kHeartbeat, TimerKind::kElection};
  uint64_t total_reads = 0, total_leases = 0, total_forwards = 0;
  // CHORUS_MASTER_SEEDS=N runs N seeds per cluster size (default 100).
  const char* env = std::getenv("CHORUS_MASTER_SEEDS");
  const uint64_t seeds = env != nullptr ? std::strtoull(env, nullptr, 10) : 100;
  for (uint64_t run = 0; run < 2 * seeds; ++run) {
    const int size = run < seeds ? 3 : 5;
    const uint64_t seed = run + 1;
    SCOPED_TRACE("seed " + std::to_string(seed) + " nodes " + std::to_string(size));
    // Every start of a node gets its own seed (CoreOptions::seed).
    std::map<uint64_t, uint64_t> starts;
    Harness h(size, [&starts, seed](CoreOptions* o) {
      o->master_election = true;
      o->seed = seed * 1000003 + o->self * 1000 + starts[o->self]++;
    });
    Rng rng(seed);
    uint64_t now = 0, token = 1;
    uint64_t completed_end = 0;  // 1 + the highest instance a proposal finished at
    std::map<std::pair<int, uint64_t>, uint64_t> need;  // barrier -> completed_end then
    std::map<uint64_t, std::string> chosen;
    std::vector<size_t> finished(size), barriers(size), applied(size);
    for (int step = 0; step < 3000; ++step) {
      now += rng.Uniform(15);
      h.SetTime(now);
      const uint64_t r = rng.Uniform(100);
      const int i = static_cast<int>(rng.Uniform(static_cast<uint64_t>(size)));
      if (r < 55) {
        if (!h.net().empty()) {
          const size_t k = rng.Uniform(h.net().size());
          const auto m = h.net()[k];
          if (rng.Uniform(100) >= 5) h.net().erase(h.net().begin() + static_cast<long>(k));
          if (rng.Uniform(100) >= 10) h.Deliver(m.first, m.second);
        }
      } else if (r < 80) {
        for (TimerKind kind : kinds) {
          if (h.node(i).timers.count(kind) != 0 && h.node(i).due[kind] <= now) h.Fire(i, kind);
        }
      } else if (r < 88) {
        h.Propose(i, token, "v" + std::to_string(token));
        ++token;
      } else if (r < 96) {
        need[std::make_pair(i, token)] = completed_end;
        Outputs out;
        h.core(i)->ReadBarrier(token++, &out);
        h.Exec(i, &out);
      } else if (r < 98 && rng.Uniform(8) == 0) {
        Outputs out;
        (void)h.core(i)->TransferMaster(rng.Uniform(static_cast<uint64_t>(size) + 1), &out);
        h.Exec(i, &out);
      } else if (r < 99 && rng.Uniform(4) == 0) {
        h.node(i).timers.clear();
        h.node(i).due.clear();
        h.Open(i);
      }
      int holders = 0;
      for (int j = 0; j < size; ++j) holders += h.core(j)->HoldsLease() ? 1 : 0;
      ASSERT_LE(holders, 1) << "step " << step;
      total_leases += static_cast<uint64_t>(holders);
      for (int j = 0; j < size; ++j) {
        Harness::Node& n = h.node(j);
        for (; finished[j] < n.finished.size(); ++finished[j]) {
          const ProposalResult& f = n.finished[finished[j]];
          if (f.status.ok()) completed_end = std::max(completed_end, f.instance + 1);
        }
        for (; barriers[j] < n.barriers.size(); ++barriers[j]) {
          const BarrierResult& b = n.barriers[barriers[j]];
          if (!b.status.ok()) continue;
          const uint64_t required = need[std::make_pair(j, b.token)];
          ASSERT_GE(b.instance, required) << "node " << j << " step " << step;
          ++total_reads;
        }
        for (; applied[j] < n.applied.size(); ++applied[j]) {
          const ChosenValue& c = n.applied[applied[j]];
          const std::string v = std::to_string(c.proposer) + ":" +
                                std::to_string(c.proposal_id) + ":" + c.value;
          auto it = chosen.emplace(c.instance, v).first;
          ASSERT_EQ(it->second, v) << "instance " << c.instance;
        }
      }
    }
    for (int j = 0; j < size; ++j) total_forwards += h.core(j)->stats().forwards_sent;
  }
  // The schedules did exercise leases, reads and forwarding.
  EXPECT_GT(total_leases, 0u);
  EXPECT_GT(total_reads, 0u);
  EXPECT_GT(total_forwards, 0u);
  std::fprintf(stderr, "lease-steps %llu reads %llu forwards %llu\n",
               static_cast<unsigned long long>(total_leases),
               static_cast<unsigned long long>(total_reads),
               static_cast<unsigned long long>(total_forwards));
}

}  // namespace
}  // namespace master_test
}  // namespace paxos
}  // namespace chorus
