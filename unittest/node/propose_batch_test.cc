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
#include "utils/notifier_pool.h"

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
  // `gates_` null (the default here): every waiter is answered on its own
  // Notifier; a test that sets it sees the batches' gates.
  ProposeBatch& batch() {
    if (!batch_) batch_ = std::make_unique<ProposeBatch>(&options_, &runtime_, queue_, gates_);
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
  NotifierPool* gates_ = nullptr;
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

class ProposeBatchGateTest : public ProposeBatchTest {
 protected:
  ProposeBatchGateTest() { gates_ = &pool_; }
  NotifierPool pool_{NotifierBackend::kEventfd};
};

TEST_F(ProposeBatchGateTest, ABatchsWaitersShareOneGateThatTheLastAnswerOpens) {
  std::vector<std::shared_ptr<ProposalWaiter>> waiters = {Waiter("a"), Waiter("b"), Waiter("c")};
  for (auto& w : waiters) batch().Add(w);  // 3 = batch_max_count: it leaves
  std::deque<Event> events = Queued();
  ASSERT_EQ(events.size(), 1u);
  ASSERT_NE(waiters[0]->batch, nullptr);
  for (auto& w : waiters) EXPECT_EQ(w->batch, waiters[0]->batch);
  NotifierGate* gate = waiters[0]->batch->gate.get();
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(waiters[0]->batch->unanswered, 3u);

  waiters[1]->instance = 41;
  Answer(waiters[1].get(), Status::OK());
  Answer(waiters[1].get(), Status::Busy("twice"));  // a second answer is ignored
  Answer(waiters[0].get(), Status::OK());
  EXPECT_FALSE(gate->is_open());  // one of them is still unanswered
  AnswerAll(events[0].request.get(), Status::Timeout("the rest"));
  EXPECT_TRUE(gate->is_open());
  EXPECT_TRUE(waiters[1]->status.ok());
  EXPECT_EQ(waiters[1]->instance, 41u);
  EXPECT_TRUE(waiters[2]->status.IsTimeout());
  // Their own Notifiers got nothing: the gate was the only wake-up.
  int ignored = 0;
  for (auto& w : waiters) EXPECT_TRUE(w->notifier->WaitFor(0, &ignored).IsTimeout());
}

TEST_F(ProposeBatchGateTest, EachBatchHasItsOwnGateAndUsedGatesAreReused) {
  for (int round = 0; round < 3; round++) {
    std::vector<std::shared_ptr<ProposalWaiter>> first = {Waiter("a"), Waiter("b"), Waiter("c")};
    std::vector<std::shared_ptr<ProposalWaiter>> second = {Waiter("d"), Waiter("e")};
    for (auto& w : first) batch().Add(w);
    for (auto& w : second) batch().Add(w);
    auto partial = batch().TakePending();
    ASSERT_NE(partial, nullptr);
    ASSERT_NE(first[0]->batch, second[0]->batch);
    EXPECT_EQ(second[0]->batch->unanswered, 2u);
    std::deque<Event> events = Queued();
    ASSERT_EQ(events.size(), 1u);  // the full batch (the flushes wait on the timer)
    AnswerAll(events[0].request.get(), Status::OK());
    AnswerAll(partial.get(), Status::OK());
    EXPECT_TRUE(first[0]->batch->gate->is_open());
    EXPECT_TRUE(second[0]->batch->gate->is_open());
  }
  // Every round's gates went back to the pool once the round let go of them.
  EXPECT_EQ(pool_.gates_created(), 2u);
}

TEST_F(ProposeBatchGateTest, AsynchronousWaitersAreNotGated) {
  auto blocking = Waiter("a");
  auto async = Waiter("b");
  async->notifier = nullptr;  // as BatchProposeAsync makes it
  int called = 0;
  async->on_answer = [&called](ProposalWaiter*) { called++; };
  batch().Add(blocking);
  batch().Add(async);
  auto request = batch().TakePending();
  ASSERT_NE(request, nullptr);
  EXPECT_EQ(async->batch, nullptr);
  ASSERT_NE(blocking->batch, nullptr);
  EXPECT_EQ(blocking->batch->unanswered, 1u);
  AnswerAll(request.get(), Status::OK());
  EXPECT_EQ(called, 1);
  EXPECT_TRUE(blocking->batch->gate->is_open());
}

TEST_F(ProposeBatchGateTest, ABatchThatCannotBeQueuedOpensItsGateWithStopped) {
  queue_->Close();
  std::vector<std::shared_ptr<ProposalWaiter>> waiters = {Waiter("a"), Waiter("b"), Waiter("c")};
  for (auto& w : waiters) batch().Add(w);
  ASSERT_NE(waiters[0]->batch, nullptr);
  EXPECT_TRUE(waiters[0]->batch->gate->WaitFor(0).ok());
  for (auto& w : waiters) EXPECT_TRUE(w->status.IsStopped());
}

}  // namespace
}  // namespace propose_batch_test
}  // namespace chorus
