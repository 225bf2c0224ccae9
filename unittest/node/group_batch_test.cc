// Batch shape in the group loop (Options::batch_max_inflight): a batch that
// is not full stays pending while enough batches, big enough, are in
// flight, keeps filling, and leaves when one of them ends, when it fills
// up, or at its earliest deadline. Driven by hand like group_test.cc: silent peers, a
// manual clock, timers the test fires; nothing sleeps for a result.
//
// The test names timers by their delay. A deadline timer's delay is the
// call's timeout + 1 ms (the clock never moves unless the test moves it), so
// "b" is given its own timeout: the timer that holds the deferred batch to
// b's deadline, and the deadline timer of the batch once it is in the core,
// both have kShortDelay; which of the two a task is, the test tells by what
// firing it does.
#include <chrono>
#include <functional>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "node/group.h"
#include "unittest/node/group_rig.h"

namespace chorus {
namespace group_batch_test {
namespace {

using std::chrono::milliseconds;
using testing::GroupRig;
using testing::ManualTimerScheduler;
using testing::RecordingTransport;

constexpr int kShortTimeoutMs = 300000;  // below GroupRig's propose_timeout_ms
const milliseconds kShortDelay(kShortTimeoutMs + 1);

struct Answer {
  Status status;
  uint64_t instance = 0;
};

// BatchPropose of `value` on its own thread; timeout_ms 0: the default.
std::future<Answer> BatchProposeAsync(Group* group, const std::string& value, int timeout_ms = 0) {
  return std::async(std::launch::async, [group, value, timeout_ms] {
    Answer a;
    ExecuteContext ctx;
    ctx.timeout_ms = timeout_ms;
    a.status = group->Propose(value, &ctx, /*batch=*/true, &a.instance, nullptr);
    return a;
  });
}

bool Ready(const std::future<Answer>& f) {
  return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

milliseconds DefaultDelay(const GroupRig& rig) {
  return milliseconds(rig.options().propose_timeout_ms + 1);
}

bool IsPending(GroupRig* rig, ManualTimerScheduler::TaskId id) {
  for (const auto& t : rig->timers()->Pending()) {
    if (t.id == id) return true;
  }
  return false;
}

// One batch ("a", alone) in the core of a group whose peers never answer;
// returns its deadline timer (0: it never entered the core).
ManualTimerScheduler::TaskId OneBatchInFlight(GroupRig* rig, std::future<Answer>* a) {
  *a = BatchProposeAsync(rig->group(), "a");
  const bool prepared = rig->transport()->WaitFor([](const std::vector<RecordingTransport::Sent>& s) {
    return testing::SentOfType(s, paxos::PREPARE).size() >= 2;
  });
  EXPECT_TRUE(prepared);
  return rig->timers()->WaitForDelay(DefaultDelay(*rig));
}

// Options for the held-batch tests: at most one batch in flight, and
// batches of `count` values at most (count / 3 below 2: a batch of 1 is big
// enough to wait behind).
std::function<void(Options*)> OneInFlight(int count) {
  return [count](Options* o) {
    o->batch_max_inflight = 1;
    o->batch_max_count = count;
  };
}

// "a" in flight (its deadline timer in *a_deadline), then "b", with its own
// timeout, flushed and held behind it: returns the timer that holds b's
// batch to its deadline (0: none came).
ManualTimerScheduler::TaskId HoldABatch(GroupRig* rig, std::future<Answer>* a,
                                        ManualTimerScheduler::TaskId* a_deadline,
                                        std::future<Answer>* b) {
  *a_deadline = OneBatchInFlight(rig, a);
  if (*a_deadline == 0) return 0;
  *b = BatchProposeAsync(rig->group(), "b", kShortTimeoutMs);
  return rig->timers()->WaitForDelay(kShortDelay);
}

void ExpectStopAnswersStopped(GroupRig* rig, std::vector<std::future<Answer>*> waiting) {
  rig->group()->Stop();
  for (auto* f : waiting) EXPECT_TRUE(f->get().status.IsStopped());
}

TEST(GroupBatchTest, APartialBatchWaitsWhileTheLimitIsInFlightAndLeavesWhenOneEnds) {
  GroupRig rig(3, OneInFlight(3));
  ASSERT_TRUE(rig.Start().ok());
  // "b" flushes its batch at once, but one batch is in flight: it stays
  // pending, held only to its deadline; "c" joins it.
  std::future<Answer> a, b;
  ManualTimerScheduler::TaskId a_deadline = 0;
  const auto held = HoldABatch(&rig, &a, &a_deadline, &b);
  ASSERT_NE(held, 0u);
  auto c = BatchProposeAsync(rig.group(), "c");
  ASSERT_TRUE(testing::WaitUntil([&] { return rig.group()->batch_pending() == 2; }));

  // "a" times out and the core drops it (it never left phase 1): the batch
  // of b and c leaves as one request; its own deadline timer replaces the
  // one that held it.
  ASSERT_TRUE(rig.timers()->Fire(a_deadline));
  EXPECT_TRUE(a.get().status.IsTimeout());
  const auto started = rig.timers()->WaitForDelay(kShortDelay, held);
  ASSERT_NE(started, 0u);
  EXPECT_EQ(rig.group()->batch_pending(), 0u);
  EXPECT_TRUE(testing::WaitUntil([&] { return !IsPending(&rig, held); }));
  EXPECT_FALSE(Ready(b));
  EXPECT_FALSE(Ready(c));

  // That timer is the batch's deadline in the core: both values time out.
  ASSERT_TRUE(rig.timers()->Fire(started));
  EXPECT_TRUE(b.get().status.IsTimeout());
  EXPECT_TRUE(c.get().status.IsTimeout());
  rig.group()->Stop();
}

TEST(GroupBatchTest, AFullBatchLeavesWhateverIsInFlight) {
  GroupRig rig(3, OneInFlight(2));
  ASSERT_TRUE(rig.Start().ok());
  std::future<Answer> a, b;
  ManualTimerScheduler::TaskId a_deadline = 0;
  const auto held = HoldABatch(&rig, &a, &a_deadline, &b);
  ASSERT_NE(held, 0u);

  // "c" fills the batch: it leaves at once, over the limit; the timer that
  // held it goes.
  auto c = BatchProposeAsync(rig.group(), "c");
  const auto started = rig.timers()->WaitForDelay(kShortDelay, held);
  ASSERT_NE(started, 0u);
  EXPECT_EQ(rig.group()->batch_pending(), 0u);
  EXPECT_TRUE(testing::WaitUntil([&] { return !IsPending(&rig, held); }));
  ASSERT_TRUE(rig.timers()->Fire(started));
  EXPECT_TRUE(b.get().status.IsTimeout());
  EXPECT_TRUE(c.get().status.IsTimeout());
  EXPECT_FALSE(Ready(a));
  ExpectStopAnswersStopped(&rig, {&a});
}

TEST(GroupBatchTest, AHeldBatchIsAnsweredTimeoutAtItsDeadlineWithoutStarting) {
  GroupRig rig(3, OneInFlight(3));
  ASSERT_TRUE(rig.Start().ok());
  std::future<Answer> a, b;
  ManualTimerScheduler::TaskId a_deadline = 0;
  const auto held = HoldABatch(&rig, &a, &a_deadline, &b);
  ASSERT_NE(held, 0u);

  // Nothing ahead ends, but b's deadline comes: its batch is answered
  // Timeout and never proposed (no deadline timer of its own appears).
  rig.clock()->Advance(kShortDelay);
  ASSERT_TRUE(rig.timers()->Fire(held));
  EXPECT_TRUE(b.get().status.IsTimeout());
  EXPECT_EQ(rig.group()->batch_pending(), 0u);
  EXPECT_EQ(rig.timers()->PendingWithDelay(kShortDelay).size(), 0u);
  EXPECT_FALSE(Ready(a));
  ExpectStopAnswersStopped(&rig, {&a});
}

// With one batch ("a", of 1 value) in flight, "b" leaves alone at its flush:
// the timer it brings is its deadline in the core (firing it answers Timeout).
void ExpectTheNextBatchLeavesAtOnce(const std::function<void(Options*)>& tweak) {
  GroupRig rig(3, tweak);
  ASSERT_TRUE(rig.Start().ok());
  std::future<Answer> a;
  ASSERT_NE(OneBatchInFlight(&rig, &a), 0u);
  auto b = BatchProposeAsync(rig.group(), "b", kShortTimeoutMs);
  const auto started = rig.timers()->WaitForDelay(kShortDelay);
  ASSERT_NE(started, 0u);
  EXPECT_EQ(rig.group()->batch_pending(), 0u);
  ASSERT_TRUE(rig.timers()->Fire(started));
  EXPECT_TRUE(b.get().status.IsTimeout());
  ExpectStopAnswersStopped(&rig, {&a});
}

TEST(GroupBatchTest, BatchesOfAFewValuesInFlightHoldNothingBack) {
  // Waiting pays behind batches of 6 / 3 = 2 values or more.
  ExpectTheNextBatchLeavesAtOnce(OneInFlight(6));
}

TEST(GroupBatchTest, WithoutALimitEveryFlushLeaves) {
  ExpectTheNextBatchLeavesAtOnce([](Options* o) { o->batch_max_inflight = 0; });
}

}  // namespace
}  // namespace group_batch_test
}  // namespace chorus
