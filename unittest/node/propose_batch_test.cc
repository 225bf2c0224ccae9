// ProposeBatch on a manual clock and a hand-fired scheduler: when a batch
// leaves (count, bytes, delay), what it carries, and who answers Stopped.
#include "node/propose_batch.h"

#include <chrono>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "node/value_codec.h"
#include "unittest/support/runtime_fakes.h"
#include "utils/notifier.h"

namespace chorus {
namespace propose_batch_test {
namespace {

using std::chrono::milliseconds;

class ProposeBatchTest : public ::testing::Test {
 protected:
  ProposeBatchTest() : runtime_(nullptr, Hooks()) {
    options_.batch_max_count = 3;
    options_.batch_max_bytes = 100;
    options_.batch_delay_ms = 7;
    options_.propose_timeout_ms = 1000;
  }
  RuntimeHooks Hooks() {
    RuntimeHooks h;
    h.clock = &clock_;
    h.timers = &scheduler_;
    return h;
  }
  ProposeBatch& batch() {
    if (!batch_) batch_ = std::make_unique<ProposeBatch>(&options_, &runtime_, queue_);
    return *batch_;
  }
  // A waiter as Group::Propose makes it, but with a Notifier of its own (a
  // pooled one is per thread, and this thread plays every proposer).
  std::shared_ptr<ProposalWaiter> Waiter(const std::string& payload) {
    auto w = std::make_shared<ProposalWaiter>();
    std::unique_ptr<Notifier> n;
    EXPECT_TRUE(Notifier::Create(NotifierBackend::kAuto, &n).ok());
    w->notifier = n.get();
    notifiers_.push_back(std::move(n));
    w->ticket = w->notifier->Prepare();
    w->value.state_machine_id = 1;
    w->value.payload = payload;
    w->enqueued = clock_.Now();
    w->deadline = w->enqueued + std::chrono::milliseconds(options_.propose_timeout_ms);
    return w;
  }
  std::deque<Event> Queued() {
    std::deque<Event> events;
    if (queue_->size() > 0) queue_->TakeAll(&events, 1000);
    return events;
  }
  static std::vector<std::string> Payloads(const ProposalRequest& r) {
    std::vector<AppValue> values;
    EXPECT_TRUE(DecodeAppValues(r.value, &values).ok());
    std::vector<std::string> out;
    for (const AppValue& v : values) out.push_back(v.payload);
    return out;
  }

  std::vector<std::unique_ptr<Notifier>> notifiers_;  // outlive every waiter below
  Options options_;
  testing::ManualClock clock_;
  testing::ManualTimerScheduler scheduler_{&clock_};
  RuntimeEnv runtime_;
  std::shared_ptr<EventQueue> queue_ = std::make_shared<EventQueue>();
  std::unique_ptr<ProposeBatch> batch_;
};

TEST_F(ProposeBatchTest, AFullCountLeavesAtOnceAsOneValue) {
  const SteadyTime first = clock_.Now();
  batch().Add(Waiter("a"));
  clock_.Advance(milliseconds(2));
  batch().Add(Waiter("b"));
  EXPECT_TRUE(Queued().empty());
  batch().Add(Waiter("c"));
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_EQ(events[0].kind, Event::Kind::kPropose);
  const ProposalRequest& r = *events[0].request;
  EXPECT_EQ(r.waiters.size(), 3u);
  EXPECT_EQ(Payloads(r), (std::vector<std::string>{"a", "b", "c"}));
  // Queue wait and deadline count from the first value.
  EXPECT_EQ(r.enqueued, first);
  EXPECT_EQ(r.deadline, first + milliseconds(1000));
  EXPECT_EQ(batch().pending_count(), 0u);
}

TEST_F(ProposeBatchTest, TheDelayFlushesAPartialBatch) {
  batch().Add(Waiter("a"));
  batch().Add(Waiter("b"));
  // Only the first value armed the flush.
  auto pending = scheduler_.Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].delay, milliseconds(7));
  EXPECT_TRUE(Queued().empty());
  clock_.Advance(milliseconds(7));
  ASSERT_EQ(scheduler_.FireDue(), 1);
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Event::Kind::kFlushBatch);
  // The loop then takes whatever is pending, once.
  auto request = batch().TakePending();
  ASSERT_NE(request, nullptr);
  EXPECT_EQ(Payloads(*request), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(batch().TakePending(), nullptr);
}

TEST_F(ProposeBatchTest, WithoutADelayTheFlushIsPostedAtOnce) {
  options_.batch_delay_ms = 0;
  batch().Add(Waiter("a"));
  EXPECT_TRUE(scheduler_.Pending().empty());
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Event::Kind::kFlushBatch);
  EXPECT_EQ(batch().pending_count(), 1u);
}

TEST_F(ProposeBatchTest, AValueThatWouldPassTheByteLimitStartsTheNextBatch) {
  batch().Add(Waiter(std::string(60, 'a')));
  batch().Add(Waiter(std::string(60, 'b')));  // 120 > 100: "a" leaves alone
  auto events = Queued();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_EQ(events[0].kind, Event::Kind::kPropose);
  EXPECT_EQ(Payloads(*events[0].request), std::vector<std::string>{std::string(60, 'a')});
  EXPECT_EQ(batch().pending_count(), 1u);
  batch().Add(Waiter(std::string(40, 'c')));  // 60 + 40 reaches the limit: leaves at once
  events = Queued();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(Payloads(*events[0].request),
            (std::vector<std::string>{std::string(60, 'b'), std::string(40, 'c')}));
}

TEST_F(ProposeBatchTest, AddAfterCloseIsAnsweredStopped) {
  batch().Add(Waiter("a"));
  auto pending = batch().Close();
  ASSERT_NE(pending, nullptr);
  EXPECT_EQ(pending->waiters.size(), 1u);
  auto late = Waiter("late");
  batch().Add(late);
  int ignored = 0;
  ASSERT_TRUE(late->notifier->WaitFor(0, &ignored).ok());  // answered already
  EXPECT_TRUE(late->status.IsStopped());
}

TEST_F(ProposeBatchTest, ABatchThatCannotBeQueuedIsAnsweredStopped) {
  queue_->Close();  // the group is stopping
  std::vector<std::shared_ptr<ProposalWaiter>> waiters = {Waiter("a"), Waiter("b"), Waiter("c")};
  for (auto& w : waiters) batch().Add(w);
  for (auto& w : waiters) {
    int ignored = 0;
    ASSERT_TRUE(w->notifier->WaitFor(0, &ignored).ok());
    EXPECT_TRUE(w->status.IsStopped());
  }
}

}  // namespace
}  // namespace propose_batch_test
}  // namespace chorus
