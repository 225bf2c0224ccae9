// Copyright (c) chorus authors.
//
// TimerThread: run a callback at (or soon after) a point in time, with cheap
// Schedule/Unschedule from many threads at once. Designed for the RPC-timeout
// pattern: almost every timer is cancelled before it fires, so schedule and
// cancel must be fast and must not contend on one lock.
//
// Design (after brpc's timer thread):
//   * One timer thread runs every callback, one at a time, in time order.
//   * `num_buckets` buckets; a calling thread always uses the same bucket
//     (threads are spread over the buckets round-robin). A bucket is a
//     mutex-protected singly linked list of new tasks plus the nearest run
//     time among them; Schedule holds the bucket lock for an O(1) push.
//   * Schedule takes the global lock only when its task is earlier than its
//     bucket's nearest, and wakes the timer thread (one futex syscall) only
//     when the task is earlier than every task the timer thread knows of.
//   * Unschedule is lock-free: one CAS on the task's version word. The task
//     stays where it is; the timer thread drops it when it next sees it, or
//     the next Schedule into the same bucket recycles it at once if it is
//     still the head of the bucket's list (the schedule-then-cancel pattern
//     of RPC timeouts then never reaches the timer thread at all).
//   * The timer thread alone owns a min-heap. It pulls the bucket lists into
//     it, runs due tasks, and sweeps cancelled tasks out of it once it holds
//     more than `heap_sweep_min_size` tasks. It does not wait for a bucket
//     whose lock is busy (its holder may be preempted) unless that bucket
//     holds due tasks; it just does not sleep past that bucket's nearest.
//   * Time is CLOCK_MONOTONIC (std::chrono::steady_clock): changing the wall
//     clock changes nothing.
//   * Task memory comes from chunks of slots that are never freed while the
//     TimerThread lives, so an id can always be checked against its slot. A
//     TaskId packs (version << 32 | slot index); every reuse of a slot bumps
//     the version, so a stale id never matches (and never cancels) a newer task
//     in the same slot. (Each use advances the 32-bit version by 4, so
//     versions wrap after 2^30 reuses of one slot.)
//
// Thread safety: Schedule*, Unschedule and stats() may be called from any
// thread, including from inside a running callback. Start and Stop must not
// race with each other or with the destructor. No call may race with the
// destructor.

#ifndef CHORUS_UTILS_TIMER_THREAD_H_
#define CHORUS_UTILS_TIMER_THREAD_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "utils/mutex.h"
#include "utils/status.h"

namespace chorus {

struct TimerThreadOptions {
  // Number of buckets that Schedule spreads its callers over. Valid: 1..1024.
  // More buckets mean less contention on each bucket lock, but each bucket is
  // then sparser, so more schedules are "earlier than their bucket's nearest"
  // and take the global lock. 13 works well from 1 to many dozens of threads;
  // there is rarely a reason to change it.
  // Default: 13.
  size_t num_buckets = 13;

  // Upper bound on how long the timer thread sleeps, in milliseconds; <= 0
  // means no bound (it sleeps until the earliest task it knows of, or until a
  // Schedule of an even earlier task wakes it).
  // Why bound it: tasks that are not earlier than the ones already known never
  // wake the timer thread, so when every task is far in the future, scheduled
  // and then cancelled tasks pile up in the buckets (memory) until it wakes.
  // A bound drains the buckets periodically at the cost of that many
  // wake-ups per second.
  // Default: -1 (no bound).
  int64_t max_wakeup_interval_ms = -1;

  // Once the private heap holds more than this many tasks, the timer thread
  // removes cancelled tasks from it (an O(n) pass, then O(n) re-heapify).
  // Smaller: less memory held by cancelled tasks, more frequent sweeps. The
  // next sweep waits until the heap doubles the live tasks left by the last
  // one, so sweeping stays amortized O(1) per task even when nothing is
  // cancelled. Default: 4096.
  size_t heap_sweep_min_size = 4096;
};

class TimerThread {
 public:
  using TaskId = uint64_t;
  static constexpr TaskId kInvalidTaskId = 0;
  using Callback = void (*)(void* arg);
  using Clock = std::chrono::steady_clock;

  struct Stats {
    uint64_t scheduled = 0;  // successful Schedule* calls
    uint64_t triggered = 0;  // callbacks that ran (or are running)
    uint64_t cancelled = 0;  // Unschedule calls that returned 0
    // scheduled - triggered - cancelled: tasks that will still run unless
    // cancelled (approximate while other threads schedule concurrently).
    uint64_t pending = 0;
  };

  TimerThread();
  // Stops (see Stop) and frees every task. Pending tasks never run; the
  // std::function of a pending convenience task is destroyed here.
  ~TimerThread();

  TimerThread(const TimerThread&) = delete;
  TimerThread& operator=(const TimerThread&) = delete;

  // Starts the timer thread.
  // Returns OK; InvalidArgument if options.num_buckets is outside 1..1024;
  // InvalidArgument if Start was already called (a TimerThread starts once,
  // even after Stop); IOError if the thread cannot be created.
  Status Start(const TimerThreadOptions& options);

  // Stops accepting tasks and joins the timer thread. A callback that is
  // running finishes first; pending tasks never run. Idempotent; a no-op
  // before Start. REQUIRES: not called from inside a callback (aborts).
  void Stop();

  // Runs fn(arg) on the timer thread at `when` or soon after (immediately if
  // `when` is in the past). Callbacks run one at a time: keep them short.
  // Returns the task's id, or kInvalidTaskId if the TimerThread is not started
  // or already stopped (a Schedule racing with Stop may still return an id;
  // that task never runs), or if it holds 2^26 tasks already.
  TaskId Schedule(Callback fn, void* arg, Clock::time_point when);
  // Same with when = now + delay.
  TaskId ScheduleAfter(Callback fn, void* arg, std::chrono::microseconds delay);
  // Convenience: runs a std::function (allocates one; the raw-pointer form
  // above does not allocate). fn is destroyed on the timer thread: after it
  // ran; or, if cancelled, when the timer thread drops the task (at once if it
  // had not pulled it yet, else at the next heap sweep or at its due time);
  // a task still pending at destruction is destroyed by ~TimerThread.
  TaskId Schedule(std::function<void()> fn, Clock::time_point when);

  // Cancels task `id`. Lock-free; never blocks.
  // Returns 0 if the task was pending and now will never run;
  //         1 if its callback is running right now (it is not interrupted;
  //           this is what a callback gets when it unschedules itself);
  //        -1 if there is no such task: it already ran, it was already
  //           cancelled, or the id was never issued (kInvalidTaskId included).
  // When it returns 0 or -1 for an id issued by this TimerThread, the callback
  // is not running and will not run again, and whatever it did is visible to
  // the caller, so the caller may free `arg`.
  int Unschedule(TaskId id);

  Stats stats() const;

  // Test-only: tasks in the timer thread's private heap after its latest pass
  // (cancelled ones not yet swept included).
  size_t HeapSizeForTesting() const;

 private:
  struct Task;
  struct TaskLater;
  struct Bucket;
  struct CancelCounter;
  class TaskPool;

  TaskId ScheduleTask(Callback fn, void* arg, Callback drop, int64_t run_ns);
  void Run();
  Bucket* CallerBucket();
  CancelCounter* CallerCancelCounter();
  // Moves cancelled tasks at the head of bucket's list to its free list.
  // REQUIRES: bucket->mu held.
  void RecycleCancelledHead(Bucket* bucket);
  // Moves every bucket's list into heap_ (dropping cancelled tasks) and gives
  // the buckets back the slots freed since the last pull. A bucket whose lock
  // is busy is skipped if it holds no task due at `now`, or if skip_busy_due
  // (then *skipped_due tells whether it did so). Returns the earliest run
  // time among skipped buckets (INT64_MAX if none).
  int64_t PullBuckets(int64_t now, bool skip_busy_due, bool* skipped_due);
  void SweepHeap();
  // Runs `task` unless it was cancelled, then frees it.
  void RunTask(Task* task);
  // Releases what a task that never ran owns (Task::drop), then frees it.
  void DropTask(Task* task);
  // Puts `task` on returns_ for its bucket (timer thread only).
  void FreeTask(Task* task);

  const uint64_t serial_;  // distinct per TimerThread in this process
  TimerThreadOptions options_;
  std::unique_ptr<TaskPool> pool_;
  std::unique_ptr<Bucket[]> buckets_;  // options_.num_buckets of them
  size_t num_buckets_ = 0;             // set by Start, read after `accepting_`
  // num_buckets_ once buckets_ exists (0 before Start), for stats().
  std::atomic<size_t> published_buckets_{0};

  // True between Start and Stop. Schedule loads it with acquire, pairing with
  // the release store in Start so that buckets_/pool_ are visible.
  std::atomic<bool> accepting_{false};
  bool started_ = false;  // Start was called (Start/Stop are not concurrent)

  mutable Mutex counters_mu_;
  // One per thread that ever cancelled a task.
  std::vector<std::pair<std::thread::id, std::unique_ptr<CancelCounter>>> cancel_counters_
      GUARDED_BY(counters_mu_);

  // Everything above is read-mostly (read on every Schedule/Unschedule); what
  // follows is written by the timer thread, so it starts on its own cache line.
  alignas(64) Mutex mu_;
  // Earliest run time (ns on the steady clock) the timer thread will wake up
  // for without being signalled. Written under mu_; read under mu_, except for
  // one relaxed peek per due task by the timer thread (see Run).
  std::atomic<int64_t> nearest_run_ns_;
  std::atomic<bool> stop_{false};  // written under mu_; peeked like nearest_run_ns_
  bool sleeping_ GUARDED_BY(mu_) = false;  // the timer thread is (about to be) in FutexWait
  // Futex word: bumped under mu_ whenever the timer thread must wake early.
  std::atomic<int32_t> nsignals_{0};

  // Owned by the timer thread alone (and by the destructor after the join).
  std::vector<Task*> heap_;
  size_t sweep_threshold_ = 0;
  int busy_retries_ = 0;  // passes in a row that skipped a busy bucket with due tasks
  // Per bucket: slots freed since the bucket was last pulled (head, tail).
  std::vector<std::pair<Task*, Task*>> returns_;

  alignas(64) std::atomic<uint64_t> triggered_{0};  // written by the timer thread only
  std::atomic<size_t> heap_size_{0};      // written by the timer thread only

  std::thread thread_;
};

// A process-wide TimerThread, started on first use with default options.
// Never destroyed (it outlives static destructors of its users). Thread-safe.
TimerThread* GlobalTimerThread();

}  // namespace chorus

#endif  // CHORUS_UTILS_TIMER_THREAD_H_
