// The group loop, driven by hand: a manual clock, timers the test fires, and
// peers the test plays (or leaves silent). Every wait is for an event the
// loop must produce (a frame sent, a timer scheduled, an answer); nothing
// sleeps and no assertion depends on how fast anything runs.
#include "node/group.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "paxos/ballot.h"
#include "unittest/node/group_rig.h"

namespace chorus {
namespace group_test {
namespace {

using std::chrono::milliseconds;
using testing::GroupRig;
using testing::ManualTimerScheduler;
using testing::RecordingTransport;

struct Answer {
  Status status;
  uint64_t instance = 0;
};

std::future<Answer> ProposeAsync(Group* group, const std::string& value) {
  return std::async(std::launch::async, [group, value] {
    Answer a;
    a.status = group->Propose(value, nullptr, /*batch=*/false, &a.instance, nullptr);
    return a;
  });
}

bool Ready(const std::future<Answer>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

// Waits until `n` frames of `type` were sent.
bool WaitSent(GroupRig* rig, paxos::MsgType type, size_t n) {
  return rig->transport()->WaitFor([&](const std::vector<RecordingTransport::Sent>& sent) {
    return testing::SentOfType(sent, type).size() >= n;
  });
}

// The deadline timer of a proposal that entered the core.
milliseconds DeadlineDelay(const GroupRig& rig) {
  return milliseconds(rig.options().propose_timeout_ms + 1);
}

// Three proposals into a group of silent peers whose core holds two
// (max_inflight 1): "a" and "b" enter the core (their deadline timers show
// it), "c" waits in the backlog. `check` is the delay of the backlog's expiry
// check; its task id is returned in check_id (0 if it never came).
struct FullCore {
  std::future<Answer> a, b, c;
  ManualTimerScheduler::TaskId check_id = 0;
};
FullCore FillTheCoreAndBacklogOne(GroupRig* rig, milliseconds check) {
  FullCore f;
  f.a = ProposeAsync(rig->group(), "a");
  EXPECT_TRUE(rig->timers()->WaitForCount(DeadlineDelay(*rig), 1));
  f.b = ProposeAsync(rig->group(), "b");
  EXPECT_TRUE(rig->timers()->WaitForCount(DeadlineDelay(*rig), 2));
  ManualTimerScheduler::TaskId last = 0;  // the check comes after every task so far
  for (const auto& t : rig->timers()->Pending()) last = std::max(last, t.id);
  f.c = ProposeAsync(rig->group(), "c");
  f.check_id = rig->timers()->WaitForDelay(check, last);
  return f;
}

// Stops the group; every proposal still waiting is answered Stopped.
void ExpectStopAnswersStopped(GroupRig* rig, std::vector<std::future<Answer>*> waiting) {
  rig->group()->Stop();
  for (auto* f : waiting) EXPECT_TRUE(f->get().status.IsStopped());
}

TEST(GroupLoopTest, ASingleNodeProposalIsWrittenSyncedExecutedAndAnswered) {
  GroupRig rig(1);
  ASSERT_TRUE(rig.Start().ok());
  auto f = ProposeAsync(rig.group(), "hello");
  Answer a = f.get();
  ASSERT_TRUE(a.status.ok()) << a.status.ToString();
  EXPECT_EQ(a.instance, 0u);
  ASSERT_EQ(rig.sm()->executed().size(), 1u);
  EXPECT_EQ(rig.sm()->executed()[0].first, 0u);
  EXPECT_EQ(rig.sm()->executed()[0].second, "hello");
  // The value was chosen through the log: at least one synced write.
  bool synced = false;
  for (const auto& w : rig.log()->writes()) {
    synced = synced || (w.sync && w.ok && !w.batch.records.empty());
  }
  EXPECT_TRUE(synced);
  EXPECT_EQ(rig.group()->now_instance_id(), 1u);
}

TEST(GroupLoopTest, TheDeadlineTimerAnswersTimeout) {
  GroupRig rig(3);  // the peers never answer
  ASSERT_TRUE(rig.Start().ok());
  auto f = ProposeAsync(rig.group(), "lonely");
  ASSERT_TRUE(WaitSent(&rig, paxos::PREPARE, 2));  // one to each peer
  const auto deadline = rig.timers()->WaitForDelay(DeadlineDelay(rig));
  ASSERT_NE(deadline, 0u);
  EXPECT_FALSE(Ready(f));
  ASSERT_TRUE(rig.timers()->Fire(deadline));
  Answer a = f.get();
  EXPECT_TRUE(a.status.IsTimeout()) << a.status.ToString();
}

TEST(GroupLoopTest, CoreTimersRunOnTheInjectedSchedulerAndRetryPhaseOne) {
  GroupRig rig(3, [](Options* o) {
    o->prepare_timeout_ms = 333;  // distinct delays name the timers
    o->learn_interval_ms = 777;
  });
  ASSERT_TRUE(rig.Start().ok());
  // Start armed the learner's periodic timer.
  ASSERT_NE(rig.timers()->WaitForDelay(milliseconds(777)), 0u);
  auto f = ProposeAsync(rig.group(), "v");
  ASSERT_TRUE(WaitSent(&rig, paxos::PREPARE, 2));
  const auto prepare = rig.timers()->WaitForDelay(milliseconds(333));
  ASSERT_NE(prepare, 0u);
  // Phase 1 timed out: the proposer backs off (a timer of its own), then
  // prepares again with a higher ballot.
  ASSERT_TRUE(rig.timers()->Fire(prepare));
  ManualTimerScheduler::TaskId backoff = 0;
  ASSERT_TRUE(rig.timers()->WaitFor([&](const std::vector<ManualTimerScheduler::Task>& pending) {
    for (const auto& t : pending) {
      if (t.id > prepare && t.delay != DeadlineDelay(rig) && t.delay != milliseconds(777)) {
        backoff = t.id;
      }
    }
    return backoff != 0;
  }));
  EXPECT_EQ(testing::SentOfType(rig.transport()->sent(), paxos::PREPARE).size(), 2u);
  ASSERT_TRUE(rig.timers()->Fire(backoff));
  ASSERT_TRUE(WaitSent(&rig, paxos::PREPARE, 4));
  auto prepares = testing::SentOfType(rig.transport()->sent(), paxos::PREPARE);
  EXPECT_GT(paxos::Ballot::FromPb(prepares[2].ballot()),
            paxos::Ballot::FromPb(prepares[0].ballot()));
  ExpectStopAnswersStopped(&rig, {&f});
}

TEST(GroupLoopTest, ABackloggedProposalGetsBusyOnlyOnceItsQueueWaitPassed) {
  GroupRig rig(3, [](Options* o) {
    o->max_inflight = 1;  // the core holds 2 x max_inflight = 2 proposals
    o->max_queue_wait_ms = 100;
  });
  ASSERT_TRUE(rig.Start().ok());
  // "c"'s expiry check is due after max_queue_wait_ms.
  FullCore f = FillTheCoreAndBacklogOne(&rig, milliseconds(101));
  const auto check = f.check_id;
  ASSERT_NE(check, 0u);
  EXPECT_EQ(rig.timers()->PendingWithDelay(DeadlineDelay(rig)).size(), 2u);

  // The check fires early (the clock has not moved): "c" has not waited too
  // long, so it stays queued and the check is armed again.
  ASSERT_TRUE(rig.timers()->Fire(check));
  const auto again = rig.timers()->WaitForDelay(milliseconds(101), check);
  ASSERT_NE(again, 0u);
  EXPECT_FALSE(Ready(f.c));

  rig.clock()->Advance(milliseconds(101));
  ASSERT_TRUE(rig.timers()->Fire(again));
  Answer c = f.c.get();
  EXPECT_TRUE(c.status.IsBusy()) << c.status.ToString();
  EXPECT_FALSE(Ready(f.a));
  EXPECT_FALSE(Ready(f.b));
  ExpectStopAnswersStopped(&rig, {&f.a, &f.b});
}

TEST(GroupLoopTest, ABackloggedProposalStartsOnceADeadlineMakesRoomInTheCore) {
  GroupRig rig(3, [](Options* o) {
    o->max_inflight = 1;            // room for 2 in the core
    o->max_queue_wait_ms = 500000;  // the backlog check: 500001 ms
  });
  ASSERT_TRUE(rig.Start().ok());
  FullCore f = FillTheCoreAndBacklogOne(&rig, milliseconds(500001));
  ASSERT_NE(f.check_id, 0u);
  const auto before = rig.timers()->PendingWithDelay(DeadlineDelay(rig));
  ASSERT_EQ(before.size(), 2u);

  // "a" times out; the core drops it (still in phase 1), and "c" takes its
  // place: a deadline timer of its own appears.
  ASSERT_TRUE(rig.timers()->Fire(before[0].id));
  EXPECT_TRUE(f.a.get().status.IsTimeout());
  ASSERT_NE(rig.timers()->WaitForDelay(DeadlineDelay(rig), before[1].id), 0u);
  EXPECT_FALSE(Ready(f.b));
  EXPECT_FALSE(Ready(f.c));
  ExpectStopAnswersStopped(&rig, {&f.b, &f.c});
}

TEST(GroupLoopTest, ABackloggedProposalWhoseDeadlinePassesGetsTimeoutWithoutStarting) {
  GroupRig rig(3, [](Options* o) {
    o->max_inflight = 1;
    o->propose_timeout_ms = 1000;  // expires before the queue wait does
    o->max_queue_wait_ms = 5000;
  });
  ASSERT_TRUE(rig.Start().ok());
  // The check is due at the earlier of the two: the deadline.
  FullCore f = FillTheCoreAndBacklogOne(&rig, milliseconds(1001));
  ASSERT_NE(f.check_id, 0u);
  rig.clock()->Advance(milliseconds(1001));
  ASSERT_TRUE(rig.timers()->Fire(f.check_id));
  Answer c = f.c.get();
  EXPECT_TRUE(c.status.IsTimeout()) << c.status.ToString();
  // Refused by the group before it was proposed, not given up by the caller.
  EXPECT_NE(c.status.ToString().find("before it was proposed"), std::string::npos)
      << c.status.ToString();
  ExpectStopAnswersStopped(&rig, {&f.a, &f.b});
}

TEST(GroupLoopTest, ASingleNodesProposalsTakeConsecutiveInstancesInOrder) {
  GroupRig rig(1, [](Options* o) { o->max_inflight = 1; });
  ASSERT_TRUE(rig.Start().ok());
  // A single node is its own majority: each proposal, made after the last
  // one returned, is chosen at the next instance and executed in order.
  for (int i = 0; i < 5; ++i) {
    Answer a = ProposeAsync(rig.group(), "v" + std::to_string(i)).get();
    ASSERT_TRUE(a.status.ok()) << a.status.ToString();
    EXPECT_EQ(a.instance, static_cast<uint64_t>(i));
  }
  ASSERT_EQ(rig.sm()->executed().size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rig.sm()->executed()[i].second, "v" + std::to_string(i));
}

// The proposal id in the envelope of the first value a one-node group
// chooses (read back from its log record), with the cores seeded `seed`.
uint64_t FirstProposalId(uint64_t seed) {
  GroupRig rig(1);
  rig.seed = seed;
  EXPECT_TRUE(rig.Start().ok());
  EXPECT_TRUE(ProposeAsync(rig.group(), "x").get().status.ok());
  for (const auto& w : rig.log()->writes()) {
    for (const auto& [instance, bytes] : w.batch.records) {
      paxos::InstanceRecord rec;
      uint64_t proposer = 0, id = 0;
      std::string data;
      if (instance == 0 && rec.ParseFromString(bytes) &&
          paxos::DecodeValue(rec.value(), &proposer, &id, &data)) {
        return id;
      }
    }
  }
  ADD_FAILURE() << "no record of instance 0 was written";
  return 0;
}

TEST(GroupLoopTest, TheSeedHookReachesTheCore) {
  EXPECT_EQ(FirstProposalId(7), FirstProposalId(7));
  EXPECT_NE(FirstProposalId(7), FirstProposalId(8));
}

TEST(AdmissionTest, TimerDelayNeverWrapsForAPastDeadline) {
  const SteadyTime now = SteadyTime() + std::chrono::hours(1);
  EXPECT_EQ(Admission::TimerDelayMs(now, now - milliseconds(5)), 1u);
  EXPECT_EQ(Admission::TimerDelayMs(now, now), 1u);
  EXPECT_EQ(Admission::TimerDelayMs(now, now + milliseconds(5)), 6u);
  EXPECT_EQ(Admission::TimerDelayMs(now, now + std::chrono::microseconds(5500)), 6u);
}

}  // namespace
}  // namespace group_test
}  // namespace chorus
