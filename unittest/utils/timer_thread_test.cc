// Tests for utils/TimerThread. No test asserts a speed: waits for "it happened"
// have generous deadlines, and ordering is forced by blocking the timer thread
// rather than by assuming how fast anything runs.

#include "utils/timer_thread.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

namespace chorus {
namespace timer_thread_test {
namespace {

using Clock = TimerThread::Clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Generous bound for "eventually": only a broken timer takes this long.
constexpr auto kEventually = seconds(20);
constexpr auto kFarFuture = std::chrono::hours(1);

// A one-shot event a test can wait on.
class Event {
 public:
  void Set() {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
    cv_.notify_all();
  }
  bool WaitFor(Clock::duration timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return set_; });
  }
  bool IsSet() {
    std::lock_guard<std::mutex> lock(mu_);
    return set_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
};

void SetEvent(void* arg) { static_cast<Event*>(arg)->Set(); }

// Schedules a task due now and waits until it ran: afterwards the timer thread
// has pulled every bucket at least once since the call began.
void Flush(TimerThread* timer) {
  Event done;
  ASSERT_NE(TimerThread::kInvalidTaskId, timer->Schedule(&SetEvent, &done, Clock::now()));
  ASSERT_TRUE(done.WaitFor(kEventually));
}

// Polls `pred` until it holds or kEventually passes.
template <typename Pred>
bool Eventually(Pred pred) {
  auto deadline = Clock::now() + kEventually;
  while (!pred()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return true;
}

uint32_t SlotOf(TimerThread::TaskId id) { return static_cast<uint32_t>(id); }

TEST(TimerThreadTest, StartValidatesOptions) {
  for (size_t bad : {size_t{0}, size_t{1025}, size_t{100000}}) {
    TimerThread timer;
    TimerThreadOptions options;
    options.num_buckets = bad;
    Status s = timer.Start(options);
    EXPECT_TRUE(s.IsInvalidArgument()) << bad << ": " << s.ToString();
    // A rejected Start leaves it unstarted.
    EXPECT_EQ(TimerThread::kInvalidTaskId, timer.ScheduleAfter(&SetEvent, nullptr, {}));
  }
  for (size_t good : {size_t{1}, size_t{13}, size_t{1024}}) {
    TimerThread timer;
    TimerThreadOptions options;
    options.num_buckets = good;
    ASSERT_TRUE(timer.Start(options).ok()) << good;
    Flush(&timer);
    EXPECT_TRUE(timer.Start(options).IsInvalidArgument()) << "second Start";
  }
}

TEST(TimerThreadTest, ScheduleBeforeStartAndAfterStopReturnsInvalid) {
  TimerThread timer;
  Event ev;
  timer.Stop();  // no-op before Start
  EXPECT_EQ(TimerThread::kInvalidTaskId, timer.Schedule(&SetEvent, &ev, Clock::now()));
  EXPECT_EQ(TimerThread::kInvalidTaskId, timer.Schedule([] {}, Clock::now()));
  EXPECT_EQ(-1, timer.Unschedule(TimerThread::kInvalidTaskId));
  EXPECT_EQ(-1, timer.Unschedule(12345));
  EXPECT_EQ(0u, timer.stats().scheduled);

  ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
  EXPECT_NE(TimerThread::kInvalidTaskId, timer.Schedule(&SetEvent, &ev, Clock::now()));
  ASSERT_TRUE(ev.WaitFor(kEventually));

  timer.Stop();
  timer.Stop();  // idempotent
  EXPECT_EQ(TimerThread::kInvalidTaskId, timer.Schedule(&SetEvent, &ev, Clock::now()));
  EXPECT_EQ(TimerThread::kInvalidTaskId,
            timer.ScheduleAfter(&SetEvent, &ev, std::chrono::microseconds(1)));
  EXPECT_TRUE(timer.Start(TimerThreadOptions()).IsInvalidArgument()) << "restart after Stop";
  EXPECT_EQ(1u, timer.stats().scheduled);
  EXPECT_EQ(1u, timer.stats().triggered);
}

struct Fired {
  Clock::time_point when;
  std::atomic<int> count{0};
  std::atomic<bool> early{false};
  std::atomic<int64_t> fired_at_ns{0};
};

void RecordFired(void* arg) {
  auto* f = static_cast<Fired*>(arg);
  Clock::time_point now = Clock::now();
  if (now < f->when) f->early.store(true);
  f->fired_at_ns.store(now.time_since_epoch().count());
  f->count.fetch_add(1);
}

TEST(TimerThreadTest, TasksFireNeverEarly) {
  TimerThread timer;
  ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
  // From several threads (so several buckets), in shuffled order of times.
  constexpr int kThreads = 4;
  constexpr int kPerThread = 25;
  std::vector<Fired> fired(kThreads * kPerThread);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int i = 0; i < kPerThread; ++i) {
        Fired& f = fired[t * kPerThread + i];
        f.when = Clock::now() + milliseconds(rng() % 200);
        ASSERT_NE(TimerThread::kInvalidTaskId, timer.Schedule(&RecordFired, &f, f.when));
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(Eventually([&] {
    return std::all_of(fired.begin(), fired.end(), [](const Fired& f) { return f.count > 0; });
  }));
  for (const Fired& f : fired) {
    EXPECT_EQ(1, f.count.load());
    EXPECT_FALSE(f.early.load());
  }
  TimerThread::Stats s = timer.stats();
  EXPECT_EQ(fired.size(), s.scheduled);
  EXPECT_EQ(fired.size(), s.triggered);
  EXPECT_EQ(0u, s.cancelled);
  EXPECT_EQ(0u, s.pending);
}

void BlockUntil(void* arg) {
  auto* events = static_cast<std::pair<Event, Event>*>(arg);
  events->first.Set();                       // "I am running"
  ASSERT_TRUE(events->second.WaitFor(kEventually));  // "you may return"
}

// Holds the timer thread inside a callback for the scope's lifetime.
class TimerThreadBlocker {
 public:
  explicit TimerThreadBlocker(TimerThread* timer) : timer_(timer) {
    id_ = timer->Schedule(&BlockUntil, &events_, Clock::now());
    EXPECT_NE(TimerThread::kInvalidTaskId, id_);
    EXPECT_TRUE(events_.first.WaitFor(kEventually));
  }
  // Lets the callback return and waits until it did: events_ must outlive
  // its last use on the timer thread (Unschedule is 1 while it runs).
  ~TimerThreadBlocker() {
    Release();
    while (timer_->Unschedule(id_) == 1) std::this_thread::yield();
  }
  void Release() { events_.second.Set(); }
  TimerThread::TaskId id() const { return id_; }

 private:
  TimerThread* const timer_;
  std::pair<Event, Event> events_;
  TimerThread::TaskId id_;
};

TEST(TimerThreadTest, TasksRunInTimeOrder) {
  TimerThread timer;
  ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
  std::vector<int> order;  // written by callbacks (one at a time, on the timer thread)
  std::vector<Clock::time_point> whens;
  Clock::time_point base = Clock::now() - seconds(1);
  constexpr int kTasks = 64;
  std::vector<int> shuffled(kTasks);
  for (int i = 0; i < kTasks; ++i) shuffled[i] = i;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(7));
  {
    // All tasks are in the buckets before the timer thread can look: they are
    // due already, so it must run them by their time, not by arrival.
    TimerThreadBlocker blocker(&timer);
    for (int i : shuffled) {
      ASSERT_NE(TimerThread::kInvalidTaskId,
                timer.Schedule([&order, i] { order.push_back(i); }, base + milliseconds(i)));
    }
  }
  Flush(&timer);
  ASSERT_EQ(static_cast<size_t>(kTasks), order.size());
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

TEST(TimerThreadTest, CancelledTasksNeverFire) {
  TimerThread timer;
  ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
  constexpr int kTasks = 40;
  std::vector<Fired> fired(kTasks);
  std::vector<TimerThread::TaskId> ids(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    fired[i].when = Clock::now() + milliseconds(20 + i);
    ids[i] = timer.Schedule(&RecordFired, &fired[i], fired[i].when);
    ASSERT_NE(TimerThread::kInvalidTaskId, ids[i]);
  }
  for (int i = 0; i < kTasks; i += 2) EXPECT_EQ(0, timer.Unschedule(ids[i])) << i;
  for (int i = 0; i < kTasks; i += 2) EXPECT_EQ(-1, timer.Unschedule(ids[i])) << "twice " << i;
  // Tasks run in time order, so once the last one ran all due times passed.
  ASSERT_TRUE(Eventually([&] { return fired[kTasks - 1].count > 0; }));
  Flush(&timer);
  for (int i = 0; i < kTasks; ++i) {
    EXPECT_EQ(i % 2 == 0 ? 0 : 1, fired[i].count.load()) << i;
    EXPECT_FALSE(fired[i].early.load());
    if (i % 2 == 1) {
      EXPECT_EQ(-1, timer.Unschedule(ids[i])) << "already ran " << i;
    }
  }
  TimerThread::Stats s = timer.stats();
  EXPECT_EQ(static_cast<uint64_t>(kTasks + 1), s.scheduled);  // + Flush
  EXPECT_EQ(static_cast<uint64_t>(kTasks / 2 + 1), s.triggered);
  EXPECT_EQ(static_cast<uint64_t>(kTasks / 2), s.cancelled);
  EXPECT_EQ(0u, s.pending);
}

TEST(TimerThreadTest, ScheduleInThePastRunsAtOnce) {
  TimerThread timer;
  ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
  // Park a far task first so the timer thread sleeps "for an hour".
  Fired far;
  far.when = Clock::now() + kFarFuture;
  TimerThread::TaskId far_id = timer.Schedule(&RecordFired, &far, far.when);
  Flush(&timer);
  Event ev;
  ASSERT_NE(TimerThread::kInvalidTaskId,
            timer.Schedule(&SetEvent, &ev, Clock::now() - std::chrono::hours(10)));
  EXPECT_TRUE(ev.WaitFor(kEventually));
  Event ev2;
  ASSERT_NE(TimerThread::kInvalidTaskId,
            timer.ScheduleAfter(&SetEvent, &ev2, std::chrono::microseconds(-5)));
  EXPECT_TRUE(ev2.WaitFor(kEventually));
  EXPECT_EQ(0, timer.Unschedule(far_id));
  EXPECT_EQ(0, far.count.load());
}

struct InTaskCtx {
  TimerThread* timer = nullptr;
  TimerThread::TaskId self = 0;
  TimerThread::TaskId other_pending = 0;
  TimerThread::TaskId other_done = 0;
  int unschedule_self = 99;
  int unschedule_pending = 99;
  int unschedule_done = 99;
  int unschedule_just_scheduled = 99;
  Event child_ran;
  Event done;
  Event self_id_known;
};

void InTask(void* arg) {
  auto* ctx = static_cast<InTaskCtx*>(arg);
  ASSERT_TRUE(ctx->self_id_known.WaitFor(kEventually));
  ctx->unschedule_self = ctx->timer->Unschedule(ctx->self);
  ctx->unschedule_pending = ctx->timer->Unschedule(ctx->other_pending);
  ctx->unschedule_done = ctx->timer->Unschedule(ctx->other_done);
  // Schedule from inside a task: one that must run, one cancelled at once.
  EXPECT_NE(TimerThread::kInvalidTaskId,
            ctx->timer->Schedule(&SetEvent, &ctx->child_ran, Clock::now()));
  TimerThread::TaskId far = ctx->timer->Schedule(&SetEvent, &ctx->done, Clock::now() + kFarFuture);
  ctx->unschedule_just_scheduled = ctx->timer->Unschedule(far);
  ctx->done.Set();
}

TEST(TimerThreadTest, ScheduleAndUnscheduleInsideTask) {
  TimerThread timer;
  ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
  InTaskCtx ctx;
  ctx.timer = &timer;
  Event done_ev;
  ctx.other_done = timer.Schedule(&SetEvent, &done_ev, Clock::now());
  ASSERT_TRUE(done_ev.WaitFor(kEventually));
  Fired pending;
  pending.when = Clock::now() + kFarFuture;
  ctx.other_pending = timer.Schedule(&RecordFired, &pending, pending.when);
  ctx.self = timer.Schedule(&InTask, &ctx, Clock::now());
  ctx.self_id_known.Set();
  ASSERT_TRUE(ctx.done.WaitFor(kEventually));
  ASSERT_TRUE(ctx.child_ran.WaitFor(kEventually));
  EXPECT_EQ(1, ctx.unschedule_self);             // running now
  EXPECT_EQ(0, ctx.unschedule_pending);          // removed
  EXPECT_EQ(-1, ctx.unschedule_done);            // already ran
  EXPECT_EQ(0, ctx.unschedule_just_scheduled);   // removed
  Flush(&timer);  // InTask has returned by now
  EXPECT_EQ(-1, timer.Unschedule(ctx.self));
  EXPECT_EQ(0, pending.count.load());
}

TEST(TimerThreadTest, UnscheduleFromAnotherThreadWhileRunningReturnsOne) {
  TimerThread timer;
  ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
  TimerThread::TaskId id;
  {
    TimerThreadBlocker blocker(&timer);
    id = blocker.id();
    int from_other = 99;
    std::thread other([&] { from_other = timer.Unschedule(id); });
    other.join();
    EXPECT_EQ(1, from_other);
    EXPECT_EQ(1, timer.Unschedule(id));
  }
  Flush(&timer);  // the blocker returned before this ran
  EXPECT_EQ(-1, timer.Unschedule(id));
  EXPECT_EQ(0u, timer.stats().cancelled);
}

// Schedules probes until one lands in `old_id`'s slot (flushing now and then,
// so slots freed by the timer thread go back to the free list); then checks
// that the stale id neither cancels nor reports the new task.
void ExpectStaleIdIsHarmless(TimerThread* timer, TimerThread::TaskId old_id, bool flush) {
  std::vector<TimerThread::TaskId> probes;
  TimerThread::TaskId reused = TimerThread::kInvalidTaskId;
  for (int i = 0; i < 1000 && reused == TimerThread::kInvalidTaskId; ++i) {
    TimerThread::TaskId id = timer->ScheduleAfter(&SetEvent, nullptr, kFarFuture);
    ASSERT_NE(TimerThread::kInvalidTaskId, id);
    if (SlotOf(id) == SlotOf(old_id)) {
      reused = id;
    } else {
      probes.push_back(id);
    }
    if (flush && i % 8 == 7) Flush(timer);
  }
  ASSERT_NE(TimerThread::kInvalidTaskId, reused) << "slot never reused";
  EXPECT_NE(old_id, reused);
  uint64_t cancelled_before = timer->stats().cancelled;
  EXPECT_EQ(-1, timer->Unschedule(old_id));
  EXPECT_EQ(cancelled_before, timer->stats().cancelled);
  EXPECT_EQ(0, timer->Unschedule(reused)) << "the stale id cancelled the new task";
  for (auto id : probes) EXPECT_EQ(0, timer->Unschedule(id));
}

TEST(TimerThreadTest, StaleIdAfterSlotReuseDoesNotCancelNewTask) {
  TimerThread timer;
  TimerThreadOptions options;
  options.num_buckets = 1;  // every slot returns to the one free list we use
  ASSERT_TRUE(timer.Start(options).ok());
  // 1. Cancelled before the timer thread saw it: the next Schedule recycles it.
  TimerThread::TaskId old_id;
  {
    SCOPED_TRACE("cancelled in bucket");
    TimerThreadBlocker blocker(&timer);
    old_id = timer.ScheduleAfter(&SetEvent, nullptr, kFarFuture);
    ASSERT_EQ(0, timer.Unschedule(old_id));
    ExpectStaleIdIsHarmless(&timer, old_id, /*flush=*/false);  // the blocker holds it
  }
  // 2. Ran: freed by the timer thread, back on the free list after a pull.
  SCOPED_TRACE("ran");
  Event ran;
  old_id = timer.Schedule(&SetEvent, &ran, Clock::now());
  ASSERT_TRUE(ran.WaitFor(kEventually));
  ExpectStaleIdIsHarmless(&timer, old_id, /*flush=*/true);
  // 3. Cancelled while in the timer thread's heap: freed when it comes due.
  SCOPED_TRACE("cancelled in heap");
  Fired never;
  // Far enough out that a loaded machine still pulls it into the heap (Flush)
  // and cancels it before it comes due.
  never.when = Clock::now() + milliseconds(500);
  old_id = timer.Schedule(&RecordFired, &never, never.when);
  Flush(&timer);  // pulled into the heap, still pending
  ASSERT_EQ(0, timer.Unschedule(old_id));
  Event after;
  timer.Schedule(&SetEvent, &after, never.when + milliseconds(1));
  ASSERT_TRUE(after.WaitFor(kEventually));  // the cancelled task came due first
  ExpectStaleIdIsHarmless(&timer, old_id, /*flush=*/true);
  EXPECT_EQ(0, never.count.load());
}

TEST(TimerThreadTest, SweepKeepsHeapNearThresholdUnderHeavyCancel) {
  constexpr size_t kThreshold = 64;
  constexpr int kRounds = 40;
  for (bool sweep : {true, false}) {
    TimerThread timer;
    TimerThreadOptions options;
    options.heap_sweep_min_size = sweep ? kThreshold : 1000000;
    ASSERT_TRUE(timer.Start(options).ok());
    size_t max_heap = 0;
    for (int r = 0; r < kRounds; ++r) {
      std::vector<TimerThread::TaskId> ids;
      for (size_t i = 0; i < kThreshold; ++i) {
        ids.push_back(timer.ScheduleAfter(&SetEvent, nullptr, kFarFuture));
      }
      Flush(&timer);  // pulls them into the heap, still live
      max_heap = std::max(max_heap, timer.HeapSizeForTesting());
      for (auto id : ids) ASSERT_EQ(0, timer.Unschedule(id));
    }
    if (sweep) {
      // Each sweep leaves the live tasks (one round's worth) and waits for the
      // heap to double that: it never holds more than 3 rounds' worth.
      EXPECT_LE(max_heap, 3 * kThreshold);
    } else {
      // Every cancelled task stays. (The size is published after each pass's
      // callbacks, so a second Flush makes sure we read the first one's.)
      Flush(&timer);
      Flush(&timer);
      EXPECT_GE(timer.HeapSizeForTesting(), kRounds * kThreshold);
    }
    TimerThread::Stats s = timer.stats();
    EXPECT_EQ(kRounds * kThreshold, s.cancelled);
    EXPECT_EQ(0u, s.pending);
  }
}

TEST(TimerThreadTest, PeriodicWakeupDrainsBuckets) {
  constexpr size_t kLate = 100;
  TimerThread timer;
  TimerThreadOptions options;
  options.max_wakeup_interval_ms = 10;
  ASSERT_TRUE(timer.Start(options).ok());
  // The timer thread learns of a task an hour out, then sleeps.
  timer.ScheduleAfter(&SetEvent, nullptr, kFarFuture);
  Flush(&timer);
  ASSERT_TRUE(Eventually([&] { return timer.HeapSizeForTesting() == 1; }));
  // Later tasks never wake it: they sit in the bucket until it wakes on its
  // own. (Without the cap it would sleep for the hour; that is not asserted,
  // as a futex wait may end spuriously.)
  for (size_t i = 0; i < kLate; ++i) {
    timer.ScheduleAfter(&SetEvent, nullptr, 2 * kFarFuture);
  }
  EXPECT_TRUE(Eventually([&] { return timer.HeapSizeForTesting() == kLate + 1; }));
}

TEST(TimerThreadTest, FunctionTasksReleaseTheirCaptures) {
  auto token = std::make_shared<int>(0);
  {
    TimerThread timer;
    ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
    Event ran;
    ASSERT_NE(TimerThread::kInvalidTaskId,
              timer.Schedule([token, &ran] { ran.Set(); }, Clock::now()));
    ASSERT_TRUE(ran.WaitFor(kEventually));
    Flush(&timer);  // RunFunction has returned
    EXPECT_EQ(1, token.use_count()) << "a task that ran keeps its capture";
    {
      // Cancelled before the timer thread sees it: dropped when pulled. (One
      // cancelled after it was pulled waits for a sweep or for its due time.)
      TimerThreadBlocker blocker(&timer);
      TimerThread::TaskId cancelled = timer.Schedule([token] {}, Clock::now() + kFarFuture);
      ASSERT_EQ(0, timer.Unschedule(cancelled));
    }
    Flush(&timer);
    EXPECT_EQ(1, token.use_count()) << "a cancelled task keeps its capture";
    timer.Schedule([token] {}, Clock::now() + kFarFuture);  // pending at destruction
    Flush(&timer);
    EXPECT_EQ(2, token.use_count());
  }
  EXPECT_EQ(1, token.use_count()) << "~TimerThread leaks a pending task's capture";
}

// Every scheduled task either fires exactly once, or is cancelled (0) and
// never fires; never both, never neither. Each thread works in batches so that
// memory stays bounded: it hammers Schedule/Unschedule over a batch, waits for
// the batch to settle, checks it, and reuses the records.
TEST(TimerThreadTest, ConcurrentScheduleUnscheduleLosesNothing) {
  TimerThread timer;
  ASSERT_TRUE(timer.Start(TimerThreadOptions()).ok());
  constexpr int kThreads = 8;
  constexpr size_t kBatch = 4096;
  const auto run_for = seconds(2);
  struct Record {
    std::atomic<int> fired{0};
    std::atomic<bool> early{false};
    Clock::time_point when;
    int cancel_result = 99;  // 99: never unscheduled
    bool far = false;
  };
  auto fire = [](void* arg) {
    auto* r = static_cast<Record*>(arg);
    if (Clock::now() < r->when) r->early.store(true);
    r->fired.fetch_add(1);
  };
  struct Totals {
    uint64_t scheduled = 0, fired = 0, cancelled = 0;
  };
  std::vector<Totals> totals(kThreads);
  const Clock::time_point stop_at = Clock::now() + run_for;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      std::unique_ptr<Record[]> records(new Record[kBatch]);
      Totals& tot = totals[t];
      while (Clock::now() < stop_at) {
        std::vector<std::pair<TimerThread::TaskId, Record*>> window;  // cancel later
        for (size_t n = 0; n < kBatch; ++n) {
          Record* r = &records[n];
          r->fired.store(0);
          r->early.store(false);
          r->cancel_result = 99;
          unsigned dice = rng() % 8;
          r->far = dice == 0;  // 1/8 an hour out, cancelled at once: must return 0
          r->when = Clock::now() + (r->far ? Clock::duration(kFarFuture)
                                           : Clock::duration(std::chrono::microseconds(rng() % 2000)));
          TimerThread::TaskId id = timer.Schedule(+fire, r, r->when);
          ASSERT_NE(TimerThread::kInvalidTaskId, id);
          if (dice <= 2) {
            r->cancel_result = timer.Unschedule(id);  // at once (usually 0)
          } else if (dice <= 5) {
            window.emplace_back(id, r);  // later, racing with its firing
          }
          if (window.size() > 32) {
            size_t k = rng() % window.size();
            window[k].second->cancel_result = timer.Unschedule(window[k].first);
            window[k] = window.back();
            window.pop_back();
          }
        }
        for (auto& [id, r] : window) r->cancel_result = timer.Unschedule(id);
        // Wait until every task of the batch that was not cancelled has fired.
        ASSERT_TRUE(Eventually([&] {
          for (size_t n = 0; n < kBatch; ++n) {
            if (records[n].cancel_result != 0 && records[n].fired.load() == 0) return false;
          }
          return true;
        }));
        for (size_t n = 0; n < kBatch; ++n) {
          Record& r = records[n];
          int f = r.fired.load();
          ASSERT_FALSE(r.early.load()) << t << "/" << n;
          if (r.cancel_result == 0) {
            ASSERT_EQ(0, f) << "cancelled task fired " << t << "/" << n;
            ++tot.cancelled;
          } else {
            ASSERT_EQ(1, f) << "task fired " << f << " times " << t << "/" << n;
            ASSERT_FALSE(r.far) << "far task ran";
            // 1: it was running; -1: it had run; 99: never unscheduled.
            ASSERT_TRUE(r.cancel_result == 1 || r.cancel_result == -1 || r.cancel_result == 99)
                << r.cancel_result;
            ++tot.fired;
          }
        }
        tot.scheduled += kBatch;
      }
    });
  }
  for (auto& th : threads) th.join();
  Flush(&timer);
  Totals sum;
  for (const Totals& t : totals) {
    sum.scheduled += t.scheduled;
    sum.fired += t.fired;
    sum.cancelled += t.cancelled;
  }
  EXPECT_EQ(sum.scheduled, sum.fired + sum.cancelled);
  TimerThread::Stats s = timer.stats();
  EXPECT_EQ(sum.scheduled + 1, s.scheduled);  // + Flush
  EXPECT_EQ(sum.fired + 1, s.triggered) << "a task fired twice or late";
  EXPECT_EQ(sum.cancelled, s.cancelled);
  EXPECT_EQ(0u, s.pending);
  EXPECT_GT(sum.cancelled, 0u);
  EXPECT_GT(sum.fired, 0u);
}

TEST(TimerThreadTest, GlobalTimerThreadIsStartedAndShared) {
  TimerThread* global = GlobalTimerThread();
  ASSERT_NE(nullptr, global);
  EXPECT_EQ(global, GlobalTimerThread());
  Event ev;
  ASSERT_NE(TimerThread::kInvalidTaskId, global->ScheduleAfter(&SetEvent, &ev, milliseconds(1)));
  EXPECT_TRUE(ev.WaitFor(kEventually));
}

}  // namespace
}  // namespace timer_thread_test
}  // namespace chorus
