// GroupMaster on its own (no core, no loop): the snapshot and the callback,
// read barriers (answered once the state machines reached the read point,
// failures at once, Timeout at the deadline), transfer callers, FailAll and
// the NotMaster address. Timers are hand-fired; nothing sleeps.
#include "node/group_master.h"

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "node/event_queue.h"
#include "node/group.h"
#include "node/group_timers.h"
#include "node/runtime_env.h"
#include "unittest/node/group_rig.h"
#include "unittest/support/runtime_fakes.h"
#include "unittest/support/test_util.h"
#include "utils/notifier_pool.h"

namespace chorus {
namespace group_master_test {
namespace {

using testing::ManualClock;
using testing::ManualTimerScheduler;

class GroupMasterTest : public ::testing::Test {
 protected:
  GroupMasterTest() {
    options_.nodes = {NodeInfo{"127.0.0.1", 7001}, NodeInfo{"127.0.0.1", 7002},
                      NodeInfo{"127.0.0.1", 7003}};
    options_.self = options_.nodes[0];
    options_.on_master_change = [this](uint32_t group, bool is_master) {
      EXPECT_EQ(group, 3u);
      changes_.push_back(is_master);
    };
    RuntimeHooks hooks;
    hooks.clock = &clock_;
    hooks.timers = &timers_;
    runtime_ = std::make_unique<RuntimeEnv>(nullptr, hooks);
    queue_ = std::make_shared<EventQueue>();
    group_timers_ = std::make_unique<GroupTimers>(runtime_.get(), queue_);
    master_ = std::make_unique<GroupMaster>(&options_, 3, group_timers_.get());
  }
  ~GroupMasterTest() override {
    master_.reset();
    group_timers_.reset();
  }

  std::shared_ptr<CallWaiter> NewWaiter() {
    auto w = std::make_shared<CallWaiter>();
    EXPECT_TRUE(NotifierPool::Default()->Get(&w->notifier).ok());
    w->ticket = w->notifier->Prepare();
    return w;
  }
  uint64_t id(int i) const { return options_.nodes[i].id(); }
  MasterSnapshot MasterIs(int i, bool ready) const {
    MasterSnapshot m;
    m.node = id(i);
    m.epoch_number = 4;
    m.epoch_node = id(i);
    m.self_ready = ready && i == 0;
    m.holds_lease = m.self_ready;
    m.master_chosen_end = 10;
    return m;
  }

  Options options_;
  ManualClock clock_;
  ManualTimerScheduler timers_{&clock_};
  std::unique_ptr<RuntimeEnv> runtime_;
  std::shared_ptr<EventQueue> queue_;
  std::unique_ptr<GroupTimers> group_timers_;
  std::unique_ptr<GroupMaster> master_;
  std::vector<bool> changes_;
};

TEST_F(GroupMasterTest, TheCallbackFiresWhenTheMasterChangesOnly) {
  EXPECT_EQ(master_->snapshot().node, 0u);
  master_->Update(MasterIs(1, false));  // another node became master
  EXPECT_EQ(changes_, std::vector<bool>({false}));
  EXPECT_EQ(master_->snapshot().node, id(1));
  MasterSnapshot later = MasterIs(1, false);
  later.master_chosen_end = 20;  // only its chosen end moved
  master_->Update(later);
  EXPECT_EQ(changes_.size(), 1u);
  EXPECT_EQ(master_->snapshot().master_chosen_end, 20u);
  later.epoch_number = 5;  // the same master ran phase 1 again: no change
  master_->Update(later);
  EXPECT_EQ(changes_.size(), 1u);
  EXPECT_EQ(master_->snapshot().epoch_number, 5u);
  master_->Update(MasterIs(0, false));  // this node won, not ready yet
  master_->Update(MasterIs(0, true));   // ready
  EXPECT_EQ(changes_, std::vector<bool>({false, false, true}));
  master_->Update(MasterSnapshot());  // lost it, no master known
  EXPECT_EQ(changes_, std::vector<bool>({false, false, true, false}));
}

TEST_F(GroupMasterTest, NotMasterGetsTheMastersAddress) {
  const Status core = Status::NotMaster("master is node 12");
  EXPECT_EQ(master_->WithMasterAddress(core).message(), core.message());  // none known
  master_->Update(MasterIs(2, false));
  Status s = master_->WithMasterAddress(core);
  EXPECT_TRUE(s.IsNotMaster());
  EXPECT_NE(s.message().find("127.0.0.1:7003"), std::string::npos) << s.ToString();
  EXPECT_TRUE(master_->WithMasterAddress(Status::OK()).ok());
  EXPECT_TRUE(master_->WithMasterAddress(Status::Busy("x")).IsBusy());
  NodeInfo found;
  ASSERT_TRUE(master_->FindMember(id(1), &found));
  EXPECT_EQ(found, options_.nodes[1]);
  EXPECT_FALSE(master_->FindMember(99, &found));
}

TEST_F(GroupMasterTest, ABarrierWaitsUntilTheReadPointIsExecuted) {
  auto reached = NewWaiter();
  auto behind = NewWaiter();
  auto refused = NewWaiter();
  const uint64_t t1 = master_->AddBarrier(reached, 1000);
  const uint64_t t2 = master_->AddBarrier(behind, 1000);
  const uint64_t t3 = master_->AddBarrier(refused, 1000);
  EXPECT_EQ(timers_.Pending().size(), 3u);  // their deadlines
  master_->OnBarrierResult(t1, 5, Status::OK(), /*executed=*/5);
  EXPECT_TRUE(reached->answered);
  EXPECT_TRUE(reached->status.ok());
  EXPECT_EQ(reached->instance, 5u);
  master_->OnBarrierResult(t3, 0, Status::Busy("no master"), 5);
  EXPECT_TRUE(refused->answered);
  EXPECT_TRUE(refused->status.IsBusy());
  master_->OnBarrierResult(t2, 9, Status::OK(), 5);
  EXPECT_FALSE(behind->answered);
  master_->OnExecuted(8);
  EXPECT_FALSE(behind->answered);
  master_->OnExecuted(9);
  EXPECT_TRUE(behind->answered);
  EXPECT_EQ(behind->instance, 9u);
  EXPECT_EQ(master_->barriers_waiting(), 0u);
  EXPECT_TRUE(timers_.Pending().empty());  // every deadline cancelled
  // A late answer for a token already answered changes nothing.
  master_->OnBarrierResult(t2, 12, Status::OK(), 12);
  EXPECT_EQ(behind->instance, 9u);
}

TEST_F(GroupMasterTest, ABarrierTimesOutAtItsDeadline) {
  auto w = NewWaiter();
  const uint64_t t = master_->AddBarrier(w, 1000);
  auto pending = timers_.Pending();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].delay, std::chrono::milliseconds(1000));
  ASSERT_TRUE(timers_.Fire(pending[0].id));
  std::deque<Event> events;
  ASSERT_TRUE(queue_->TakeAll(&events, 10));
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, Event::Kind::kBarrierDeadline);
  EXPECT_EQ(events[0].token, t);
  ASSERT_TRUE(group_timers_->OnFired(events[0].timer_seq));
  master_->OnBarrierDeadline(t);
  EXPECT_TRUE(w->answered);
  EXPECT_TRUE(w->status.IsTimeout()) << w->status.ToString();
  master_->OnBarrierResult(t, 3, Status::OK(), 3);  // too late: ignored
  EXPECT_TRUE(w->status.IsTimeout());
}

TEST_F(GroupMasterTest, TransfersAreAnsweredOnceSentAndFailAllAnswersEveryone) {
  auto transfer = NewWaiter();
  master_->AddSentWaiter(transfer);
  EXPECT_FALSE(transfer->answered);
  master_->AnswerSent();
  EXPECT_TRUE(transfer->answered);
  EXPECT_TRUE(transfer->status.ok());

  auto barrier = NewWaiter();
  auto waiting_transfer = NewWaiter();
  master_->AddBarrier(barrier, 1000);
  master_->AddSentWaiter(waiting_transfer);
  master_->FailAll(Status::Stopped("the node is stopping"));
  EXPECT_TRUE(barrier->status.IsStopped());
  EXPECT_TRUE(waiting_transfer->status.IsStopped());
  EXPECT_EQ(master_->barriers_waiting(), 0u);
  EXPECT_TRUE(timers_.Pending().empty());
}

// The group hands the core the RuntimeEnv's clock (the manual one here),
// never the steady clock: while the manual clock stands still, the startup
// hold (lease_ms after Start) never ends, however much real time passes and
// however often the election timer fires; once the clock moves past it, the
// single member elects itself.
TEST(GroupClockTest, TheCoreRunsOnTheRuntimeClock) {
  testing::GroupRig rig(1, [](Options* o) {
    o->master_election = true;
    o->lease_ms = 100;
    o->heartbeat_interval_ms = 10;
    o->election_timeout_ms = 100;
    o->election_jitter_ms = 10;
  });
  ASSERT_TRUE(rig.Start().ok());
  Group* g = rig.group();
  auto fire_all = [&] {
    for (const auto& t : rig.timers()->Pending()) rig.timers()->Fire(t.id);
  };
  for (int i = 0; i < 20; ++i) {
    fire_all();
    // Real time passes (a steady-clock core would be past its hold by now).
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(testing::WaitUntil([&] { return g->queued_events() == 0; }));
  EXPECT_EQ(g->master().node, 0u);
  rig.clock()->Advance(std::chrono::seconds(1));
  EXPECT_TRUE(testing::WaitUntil([&] {
    rig.clock()->Advance(std::chrono::milliseconds(1));
    fire_all();
    return g->master().self_ready;
  }));
  EXPECT_EQ(g->master().node, rig.self());
}

}  // namespace
}  // namespace group_master_test
}  // namespace chorus
