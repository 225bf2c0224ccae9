// GroupTimers on a hand-fired scheduler: what each timer posts, and what a
// cancel does before, during and after the firing.
#include "node/group_timers.h"

#include <chrono>
#include <deque>
#include <memory>

#include <gtest/gtest.h>

#include "unittest/support/runtime_fakes.h"

namespace chorus {
namespace group_timers_test {
namespace {

using std::chrono::milliseconds;

class GroupTimersTest : public ::testing::Test {
 protected:
  GroupTimersTest() : runtime_(nullptr, Hooks()) {}

  RuntimeHooks Hooks() {
    RuntimeHooks h;
    h.clock = &clock_;
    h.timers = &scheduler_;
    return h;
  }
  // Everything queued so far (never blocks: checks the size first).
  std::deque<Event> Queued() {
    std::deque<Event> events;
    if (queue_->size() > 0) queue_->TakeAll(&events, 1000);
    return events;
  }
  static Event Deadline(uint64_t token) {
    Event e;
    e.kind = Event::Kind::kDeadline;
    e.token = token;
    return e;
  }

  testing::ManualClock clock_;
  testing::ManualTimerScheduler scheduler_{&clock_};
  RuntimeEnv runtime_;
  std::shared_ptr<EventQueue> queue_ = std::make_shared<EventQueue>();
  GroupTimers timers_{&runtime_, queue_};
};

TEST_F(GroupTimersTest, AFiredTimerPostsItsEventOnce) {
  const uint64_t handle = timers_.Start(50, Deadline(7));
  auto pending = scheduler_.Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].delay, milliseconds(50));
  EXPECT_TRUE(Queued().empty());
  ASSERT_TRUE(scheduler_.Fire(pending[0].id));
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Event::Kind::kDeadline);
  EXPECT_EQ(events[0].token, 7u);
  EXPECT_EQ(events[0].timer_seq, handle);
  EXPECT_TRUE(timers_.OnFired(events[0].timer_seq));
  EXPECT_EQ(timers_.pending(), 0u);
  EXPECT_FALSE(timers_.OnFired(handle));  // unknown from now on
}

TEST_F(GroupTimersTest, CancelBeforeItFiresPostsNothing) {
  const uint64_t handle = timers_.Start(50, Deadline(1));
  timers_.Cancel(handle);
  EXPECT_TRUE(scheduler_.Pending().empty());
  EXPECT_EQ(timers_.pending(), 0u);
  clock_.Advance(milliseconds(100));
  EXPECT_EQ(scheduler_.FireDue(), 0);
  EXPECT_TRUE(Queued().empty());
  timers_.Cancel(handle);  // harmless twice
}

TEST_F(GroupTimersTest, CancelAfterItFiredMakesItsQueuedEventStale) {
  const uint64_t handle = timers_.Start(50, Deadline(1));
  clock_.Advance(milliseconds(50));
  ASSERT_EQ(scheduler_.FireDue(), 1);
  timers_.Cancel(handle);  // too late to unschedule: the event is queued
  EXPECT_EQ(timers_.pending(), 1u);
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(timers_.OnFired(events[0].timer_seq));  // the loop drops it
  EXPECT_EQ(timers_.pending(), 0u);
}

TEST_F(GroupTimersTest, ATimerDueLaterDoesNotFireEarlier) {
  timers_.Start(50, Deadline(1));
  timers_.Start(10, Deadline(2));
  clock_.Advance(milliseconds(10));
  EXPECT_EQ(scheduler_.FireDue(), 1);
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].token, 2u);
}

TEST_F(GroupTimersTest, StartingACoreKindAgainSupersedesTheRunningOne) {
  paxos::TimerStart first{{paxos::TimerKind::kPrepare, 1}, 100};
  paxos::TimerStart second{{paxos::TimerKind::kPrepare, 2}, 200};
  timers_.StartCore(first);
  timers_.StartCore(second);
  auto pending = scheduler_.Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].delay, milliseconds(200));
  ASSERT_TRUE(scheduler_.Fire(pending[0].id));
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Event::Kind::kTimeout);
  EXPECT_TRUE(events[0].timer == second.id);
}

TEST_F(GroupTimersTest, CancellingAnOlderGenerationLeavesTheNewerTimer) {
  timers_.StartCore({{paxos::TimerKind::kAccept, 2}, 100});
  timers_.CancelCore({paxos::TimerKind::kAccept, 1});
  EXPECT_EQ(scheduler_.Pending().size(), 1u);
  timers_.CancelCore({paxos::TimerKind::kLearn, 2});  // another kind
  EXPECT_EQ(scheduler_.Pending().size(), 1u);
  timers_.CancelCore({paxos::TimerKind::kAccept, 2});
  EXPECT_TRUE(scheduler_.Pending().empty());
}

TEST_F(GroupTimersTest, ARefusedScheduleDeliversTheEventAtOnce) {
  scheduler_.Stop();  // as a stopped TimerThread: every schedule is refused
  const uint64_t handle = timers_.Start(50, Deadline(3));
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].token, 3u);
  EXPECT_TRUE(timers_.OnFired(handle));
}

TEST_F(GroupTimersTest, CancelAllLeavesNoTimerBehind) {
  timers_.Start(50, Deadline(1));
  timers_.StartCore({{paxos::TimerKind::kLearn, 1}, 500});
  timers_.CancelAll();
  EXPECT_TRUE(scheduler_.Pending().empty());
  EXPECT_EQ(timers_.pending(), 0u);
}

}  // namespace
}  // namespace group_timers_test
}  // namespace chorus
