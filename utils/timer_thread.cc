// Copyright (c) chorus authors.
//
// TimerThread implementation. See timer_thread.h for the design and contract.
//
// Task states live in one 32-bit word, Task::version. A slot's version moves
// through four values per use, so ids and states never collide:
//   v + 0  pending: issued as id (v << 32 | slot); v % 4 == 0
//   v + 1  running: the timer thread is calling the callback
//   v + 2  done: ran, or was cancelled; the slot is free (or about to be)
//   v + 4  the slot's next use (Schedule stores it when it reuses the slot)
// Unschedule CASes v -> v+2; the timer thread CASes v -> v+1 to run. Whoever
// wins decides. A stale id (v' < v) matches no state of a later use, so it can
// neither cancel nor report "running" for the new task.
//
// Slots are freed in two places, both without extra locking:
//  * by the timer thread (ran, or found cancelled): into returns_[bucket], and
//    from there onto that bucket's free list the next time it holds the
//    bucket lock anyway (when it pulls the bucket);
//  * by Schedule, for cancelled tasks still at the head of its bucket's list
//    (RecycleCancelledHead), under the bucket lock it holds anyway.
// So a Schedule takes one lock (its bucket's) for the allocation and the
// insert together, and the usual schedule-cancel cycle stays in one cache.

#include "utils/timer_thread.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <system_error>

#include "utils/thread_name.h"

namespace chorus {

namespace {

#define CHORUS_TIMER_CHECK(cond)                                                   \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                \
    }                                                                              \
  } while (0)

constexpr size_t kMaxBuckets = 1024;
constexpr int64_t kNever = INT64_MAX;
// The pool: kMaxChunks chunks of kChunkSize slots, allocated on demand.
constexpr uint32_t kChunkShift = 12;
constexpr uint32_t kChunkSize = 1u << kChunkShift;  // 4096 slots
constexpr uint32_t kMaxChunks = 1u << 14;           // 2^26 slots at most
// Passes in a row that may skip a busy bucket holding due tasks (yielding in
// between) before the timer thread waits for that bucket's lock.
constexpr int kMaxBusyRetries = 16;
// Fresh slots a bucket takes from the pool at once when its free list is empty.
constexpr uint32_t kRefillBatch = 64;
// First version of a fresh slot: "free" (2 mod 4); its first use is 4.
constexpr uint32_t kFreshVersion = 2;

int64_t ToNanos(TimerThread::Clock::time_point tp) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(tp.time_since_epoch()).count();
}

int64_t NowNanos() { return ToNanos(TimerThread::Clock::now()); }

TimerThread::TaskId MakeId(uint32_t version, uint32_t slot) {
  return (static_cast<uint64_t>(version) << 32) | slot;
}

static_assert(sizeof(std::atomic<int32_t>) == sizeof(int32_t) &&
                  std::atomic<int32_t>::is_always_lock_free,
              "futex word must be a plain 32-bit int");

// steady_clock is CLOCK_MONOTONIC, and a relative FUTEX_WAIT timeout is
// measured on CLOCK_MONOTONIC, so the sleep is immune to wall-clock changes.
void FutexWait(std::atomic<int32_t>* word, int32_t expected, const timespec* timeout) {
  syscall(SYS_futex, reinterpret_cast<int32_t*>(word), FUTEX_WAIT_PRIVATE, expected, timeout,
          nullptr, 0);
}

void FutexWake(std::atomic<int32_t>* word, int count) {
  syscall(SYS_futex, reinterpret_cast<int32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

// Threads are numbered in the order they first schedule or cancel; thread k
// uses bucket k % num_buckets, so up to num_buckets threads never share one.
std::atomic<uint32_t> g_next_thread_seq{0};
thread_local uint32_t tls_thread_seq = UINT32_MAX;

uint32_t ThreadSeq() {
  if (tls_thread_seq == UINT32_MAX) {
    tls_thread_seq = g_next_thread_seq.fetch_add(1, std::memory_order_relaxed) & 0x7fffffff;
  }
  return tls_thread_seq;
}

// Every TimerThread gets a distinct serial, so a thread-local cache keyed by
// it can never hit for a destroyed TimerThread whose address was reused.
std::atomic<uint64_t> g_next_serial{1};

// What the calling thread uses in the TimerThread it used last: its bucket,
// and its cancel counter (null until its first successful Unschedule). Saves
// the division and the counter lookup on every call in the common
// one-TimerThread process.
struct BucketCache {
  uint64_t serial = 0;
  void* bucket = nullptr;
  void* cancel_counter = nullptr;
};
thread_local BucketCache tls_bucket_cache;

}  // namespace

struct TimerThread::Task {
  // The state word (see top of file). Written by Schedule (store), Unschedule
  // (CAS) and the timer thread (CAS, store); read by all three.
  std::atomic<uint32_t> version{kFreshVersion};
  // The rest is written by Schedule under the bucket lock and read by the
  // timer thread after it pulled the task under the same lock; or written by
  // the timer thread while the slot is free and published to the next
  // Schedule through the bucket lock.
  uint32_t id_version = 0;  // version of the id this use was issued with
  uint32_t slot = 0;        // constant: index of this slot in the pool
  uint32_t bucket = 0;      // bucket whose free list this slot returns to
  int64_t run_ns = 0;       // when to run, steady-clock nanoseconds
  Callback fn = nullptr;
  void* arg = nullptr;
  // Called instead of fn if the task never runs (owns arg; may be null).
  Callback drop = nullptr;
  Task* next = nullptr;  // link in a bucket list, a free list or returns_
};

// Heap order: the earliest run time on top.
struct TimerThread::TaskLater {
  bool operator()(const TimerThread::Task* a, const TimerThread::Task* b) const {
    return a->run_ns > b->run_ns;
  }
};

// Chunks of task slots with stable addresses, never freed before the pool.
class TimerThread::TaskPool {
 public:
  TaskPool() : chunks_(new std::atomic<Task*>[kMaxChunks]) {
    for (uint32_t i = 0; i < kMaxChunks; ++i) chunks_[i].store(nullptr, std::memory_order_relaxed);
  }
  ~TaskPool() {
    for (uint32_t i = 0; i < kMaxChunks; ++i) delete[] chunks_[i].load(std::memory_order_relaxed);
  }

  // Takes up to `n` never-used slots, linked through `next`. Returns the head,
  // or nullptr when all 2^26 slots are in use. Thread-safe.
  Task* TakeFresh(uint32_t n) {
    MutexLock lock(&mu_);
    Task* head = nullptr;
    for (uint32_t i = 0; i < n; ++i) {
      if (next_fresh_ >= kChunkSize * kMaxChunks) break;
      uint32_t slot = next_fresh_;
      uint32_t c = slot >> kChunkShift;
      Task* chunk = chunks_[c].load(std::memory_order_relaxed);
      if (chunk == nullptr) {
        chunk = new Task[kChunkSize];
        for (uint32_t j = 0; j < kChunkSize; ++j) chunk[j].slot = (c << kChunkShift) | j;
        // release: pairs with the acquire in Find, so a thread that finds the
        // chunk sees its slots constructed.
        chunks_[c].store(chunk, std::memory_order_release);
      }
      Task* t = &chunk[slot & (kChunkSize - 1)];
      t->next = head;
      head = t;
      ++next_fresh_;
    }
    return head;
  }

  // The slot `slot`, or nullptr if its chunk was never allocated. Lock-free.
  Task* Find(uint32_t slot) const {
    uint32_t c = slot >> kChunkShift;
    if (c >= kMaxChunks) return nullptr;
    Task* chunk = chunks_[c].load(std::memory_order_acquire);
    return chunk == nullptr ? nullptr : &chunk[slot & (kChunkSize - 1)];
  }

 private:
  Mutex mu_;
  // Slot 0 is never used, so no id is 0 (kInvalidTaskId).
  uint32_t next_fresh_ GUARDED_BY(mu_) = 1;
  std::unique_ptr<std::atomic<Task*>[]> chunks_;
};

// A bucket sits on its own cache lines: the threads hashed to different
// buckets never write the same line.
struct alignas(64) TimerThread::Bucket {
  Mutex mu;
  Task* head GUARDED_BY(mu) = nullptr;  // tasks not yet pulled
  // Min run_ns in `head` (or earlier). Written under mu; the timer thread may
  // also peek at it without mu (see PullBuckets), hence atomic (relaxed).
  std::atomic<int64_t> nearest_run_ns{kNever};
  Task* free_list GUARDED_BY(mu) = nullptr;
  // For stats(). Written under mu only, so a plain load+store (no locked
  // RMW). Relaxed: it orders nothing.
  std::atomic<uint64_t> scheduled{0};
};

// Successful Unschedule calls of one thread: written by that thread alone, so
// a relaxed load+store (no locked RMW) counts, on a line no one else writes.
struct alignas(64) TimerThread::CancelCounter {
  std::atomic<uint64_t> value{0};
};

TimerThread::TimerThread()
    : serial_(g_next_serial.fetch_add(1, std::memory_order_relaxed)),
      pool_(new TaskPool),
      nearest_run_ns_(kNever) {}

TimerThread::~TimerThread() {
  Stop();
  // The timer thread is joined and no call may race with us: every task still
  // in a bucket or in the heap never ran; release what it owns.
  auto drop = [](Task* t) {
    if (t->drop != nullptr) t->drop(t->arg);
    t->drop = nullptr;
  };
  for (Task* t : heap_) drop(t);
  size_t n = published_buckets_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    for (Task* t = buckets_[i].head; t != nullptr; t = t->next) drop(t);
  }
}

Status TimerThread::Start(const TimerThreadOptions& options) {
  if (started_) return Status::InvalidArgument("TimerThread: Start called twice");
  if (options.num_buckets < 1 || options.num_buckets > kMaxBuckets) {
    return Status::InvalidArgument("TimerThread: num_buckets must be in 1..1024, got " +
                                   std::to_string(options.num_buckets));
  }
  options_ = options;
  num_buckets_ = options.num_buckets;
  buckets_.reset(new Bucket[num_buckets_]);
  returns_.assign(num_buckets_, {nullptr, nullptr});
  sweep_threshold_ = options.heap_sweep_min_size;
  // release: pairs with the acquire in stats() and ~TimerThread.
  published_buckets_.store(num_buckets_, std::memory_order_release);
  started_ = true;
  // release: pairs with the acquire in Schedule, which then sees buckets_.
  accepting_.store(true, std::memory_order_release);
  try {
    thread_ = std::thread(&TimerThread::Run, this);
  } catch (const std::system_error& e) {
    accepting_.store(false, std::memory_order_relaxed);
    return Status::IOError(std::string("TimerThread: cannot create thread: ") + e.what());
  }
  return Status::OK();
}

void TimerThread::Stop() {
  if (!started_) return;
  // Joining ourselves would hang forever: fail loudly instead.
  CHORUS_TIMER_CHECK(std::this_thread::get_id() != thread_.get_id());
  accepting_.store(false, std::memory_order_relaxed);
  {
    MutexLock lock(&mu_);
    stop_.store(true, std::memory_order_relaxed);
    nsignals_.fetch_add(1, std::memory_order_relaxed);
  }
  FutexWake(&nsignals_, INT_MAX);
  if (thread_.joinable()) thread_.join();
}

TimerThread::Bucket* TimerThread::CallerBucket() {
  BucketCache& cache = tls_bucket_cache;
  if (cache.serial != serial_) {
    cache.bucket = &buckets_[ThreadSeq() % num_buckets_];
    cache.cancel_counter = nullptr;
    cache.serial = serial_;
  }
  return static_cast<Bucket*>(cache.bucket);
}

TimerThread::CancelCounter* TimerThread::CallerCancelCounter() {
  CallerBucket();  // makes the cache ours
  BucketCache& cache = tls_bucket_cache;
  if (cache.cancel_counter == nullptr) {
    // One counter per thread id. A thread that exited left its counter to the
    // next thread that gets its id: still a single writer at any time.
    const std::thread::id me = std::this_thread::get_id();
    MutexLock lock(&counters_mu_);
    CancelCounter* found = nullptr;
    for (auto& [id, counter] : cancel_counters_) {
      if (id == me) found = counter.get();
    }
    if (found == nullptr) {
      cancel_counters_.emplace_back(me, std::make_unique<CancelCounter>());
      found = cancel_counters_.back().second.get();
    }
    cache.cancel_counter = found;
  }
  return static_cast<CancelCounter*>(cache.cancel_counter);
}

TimerThread::TaskId TimerThread::Schedule(Callback fn, void* arg, Clock::time_point when) {
  return ScheduleTask(fn, arg, nullptr, ToNanos(when));
}

TimerThread::TaskId TimerThread::ScheduleAfter(Callback fn, void* arg,
                                               std::chrono::microseconds delay) {
  return ScheduleTask(fn, arg, nullptr, ToNanos(Clock::now() + delay));
}

namespace {
void RunFunction(void* arg) {
  auto* fn = static_cast<std::function<void()>*>(arg);
  (*fn)();
  delete fn;
}
void DeleteFunction(void* arg) { delete static_cast<std::function<void()>*>(arg); }
}  // namespace

TimerThread::TaskId TimerThread::Schedule(std::function<void()> fn, Clock::time_point when) {
  auto* owned = new std::function<void()>(std::move(fn));
  TaskId id = ScheduleTask(&RunFunction, owned, &DeleteFunction, ToNanos(when));
  if (id == kInvalidTaskId) delete owned;
  return id;
}

TimerThread::TaskId TimerThread::ScheduleTask(Callback fn, void* arg, Callback drop,
                                              int64_t run_ns) {
  // acquire: pairs with the release in Start (buckets_ and num_buckets_).
  if (!accepting_.load(std::memory_order_acquire)) return kInvalidTaskId;
  Bucket* bucket = CallerBucket();
  TaskId id;
  bool earliest_in_bucket;
  {
    MutexLock lock(&bucket->mu);
    RecycleCancelledHead(bucket);
    Task* t = bucket->free_list;
    if (t == nullptr) {
      t = pool_->TakeFresh(kRefillBatch);
      if (t == nullptr) return kInvalidTaskId;
    }
    bucket->free_list = t->next;
    // The slot is free, so its version is "done" (2 mod 4) and nobody but a
    // stale Unschedule (whose CAS fails) touches it. release: pairs with the
    // acquire of a failed CAS in Unschedule: one that reads this new version
    // after the slot's previous task ran also sees that callback's effects
    // (which happened before the timer thread freed the slot to us).
    uint32_t v = t->version.load(std::memory_order_relaxed) + 2;
    t->version.store(v, std::memory_order_release);
    t->id_version = v;
    t->bucket = static_cast<uint32_t>(bucket - buckets_.get());
    t->run_ns = run_ns;
    t->fn = fn;
    t->arg = arg;
    t->drop = drop;
    t->next = bucket->head;
    bucket->head = t;
    earliest_in_bucket = run_ns < bucket->nearest_run_ns.load(std::memory_order_relaxed);
    if (earliest_in_bucket) bucket->nearest_run_ns.store(run_ns, std::memory_order_relaxed);
    bucket->scheduled.store(bucket->scheduled.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
    id = MakeId(v, t->slot);
  }
  // Not earlier than its bucket's nearest: the timer thread already knows of a
  // time no later than ours (it either pulls this bucket before it sleeps, or
  // it was told the bucket's nearest), so it needs no news from us.
  if (earliest_in_bucket) {
    bool wake = false;
    {
      MutexLock lock(&mu_);
      if (run_ns < nearest_run_ns_.load(std::memory_order_relaxed)) {
        nearest_run_ns_.store(run_ns, std::memory_order_relaxed);
        nsignals_.fetch_add(1, std::memory_order_relaxed);
        // Only a sleeping timer thread needs the syscall; an awake one checks
        // nearest_run_ns_ under mu_ before it sleeps.
        wake = sleeping_;
      }
    }
    if (wake) FutexWake(&nsignals_, 1);
  }
  return id;
}

// The RPC-timeout pattern is "schedule, cancel, schedule, cancel...", so the
// head of the caller's bucket is usually a task the caller just cancelled.
// Unlinking it here costs nothing (the line is in our cache and we hold the
// lock), puts the slot straight back on the free list, and spares the timer
// thread from visiting it. Only tasks without a `drop` are taken: a drop runs
// user destructors, which must not run under the bucket lock (they might call
// Schedule). bucket->nearest_run_ns may now be earlier than any listed task;
// that is harmless: it only makes the timer thread wake up early once.
void TimerThread::RecycleCancelledHead(Bucket* bucket) {
  // Its caller holds the lock (Bucket is incomplete where this is declared,
  // so the declaration cannot say REQUIRES(bucket->mu)).
  bucket->mu.AssertHeld();
  Task* t = bucket->head;
  while (t != nullptr && t->drop == nullptr &&
         // Relaxed: the winning CAS in Unschedule left nothing else to read;
         // seeing "pending" by mistake just leaves the task to the timer thread.
         t->version.load(std::memory_order_relaxed) != t->id_version) {
    Task* next = t->next;
    t->fn = nullptr;
    t->arg = nullptr;
    t->next = bucket->free_list;
    bucket->free_list = t;
    t = next;
  }
  bucket->head = t;
}

int TimerThread::Unschedule(TaskId id) {
  const uint32_t v = static_cast<uint32_t>(id >> 32);
  const uint32_t slot = static_cast<uint32_t>(id);
  if (slot == 0 || (v & 3) != 0) return -1;  // never an issued id
  Task* t = pool_->Find(slot);
  if (t == nullptr) return -1;
  uint32_t expected = v;
  // Success needs no ordering (the timer thread reads nothing we wrote; it
  // just drops the task). Failure is acquire: it pairs with the release store
  // after the callback in RunTask (or the one in ScheduleTask for a reused
  // slot), so "already ran" (-1) also means "its effects are visible to you".
  if (t->version.compare_exchange_strong(expected, v + 2, std::memory_order_acquire,
                                         std::memory_order_acquire)) {
    CancelCounter* c = CallerCancelCounter();
    c->value.store(c->value.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    return 0;
  }
  return expected == v + 1 ? 1 : -1;
}

TimerThread::Stats TimerThread::stats() const {
  Stats s;
  size_t n = published_buckets_.load(std::memory_order_acquire);
  s.triggered = triggered_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) {
    s.scheduled += buckets_[i].scheduled.load(std::memory_order_relaxed);
  }
  {
    MutexLock lock(&counters_mu_);
    for (const auto& entry : cancel_counters_) {
      s.cancelled += entry.second->value.load(std::memory_order_relaxed);
    }
  }
  uint64_t done = s.triggered + s.cancelled;
  s.pending = s.scheduled > done ? s.scheduled - done : 0;
  return s;
}

size_t TimerThread::HeapSizeForTesting() const {
  return heap_size_.load(std::memory_order_relaxed);
}

void TimerThread::FreeTask(Task* t) {
  t->fn = nullptr;
  t->arg = nullptr;
  t->drop = nullptr;
  auto& ret = returns_[t->bucket];
  t->next = ret.first;
  ret.first = t;
  if (ret.second == nullptr) ret.second = t;
}

void TimerThread::DropTask(Task* t) {
  if (t->drop != nullptr) t->drop(t->arg);
  FreeTask(t);
}

void TimerThread::RunTask(Task* t) {
  uint32_t expected = t->id_version;
  // Relaxed is enough to win the race against Unschedule: what the callback
  // reads was published by Schedule through the bucket lock.
  if (t->version.compare_exchange_strong(expected, expected + 1, std::memory_order_relaxed)) {
    triggered_.fetch_add(1, std::memory_order_relaxed);
    t->fn(t->arg);
    // release: pairs with the acquire of a failed CAS in Unschedule.
    t->version.store(expected + 2, std::memory_order_release);
    FreeTask(t);
  } else {
    DropTask(t);  // cancelled
  }
}

int64_t TimerThread::PullBuckets(int64_t now, bool skip_busy_due, bool* skipped_due) {
  int64_t skipped_nearest = kNever;
  *skipped_due = false;
  for (size_t i = 0; i < num_buckets_; ++i) {
    Bucket& b = buckets_[i];
    if (!b.mu.TryLock()) {
      // A scheduler holds it, maybe preempted inside (more busy threads than
      // cores): waiting for it would stall every other bucket for a time
      // slice. Skip it, and remember its nearest so that we do not sleep past
      // it. If it holds due tasks, Run retries soon (and after a few tries
      // waits for the lock). Relaxed is enough: any nearest set before this
      // pass began was followed by that Schedule's check of the global
      // nearest under mu_, which our pass (begun under mu_) happens after, so
      // we see it or a later, lower value; a Schedule still in flight does its
      // global check after it unlocks.
      const int64_t nearest = b.nearest_run_ns.load(std::memory_order_relaxed);
      if (nearest > now || skip_busy_due) {
        if (nearest <= now) *skipped_due = true;
        skipped_nearest = std::min(skipped_nearest, nearest);
        continue;
      }
      b.mu.Lock();
    }
    Task* list = b.head;
    b.head = nullptr;
    b.nearest_run_ns.store(kNever, std::memory_order_relaxed);
    std::pair<Task*, Task*>& ret = returns_[i];
    if (ret.first != nullptr) {
      ret.second->next = b.free_list;
      b.free_list = ret.first;
    }
    b.mu.Unlock();
    ret = {nullptr, nullptr};
    while (list != nullptr) {
      Task* next = list->next;
      // Relaxed: a stale "pending" only sends a cancelled task to the heap,
      // where RunTask's CAS or a sweep settles it.
      if (list->version.load(std::memory_order_relaxed) != list->id_version) {
        DropTask(list);
      } else {
        heap_.push_back(list);
        std::push_heap(heap_.begin(), heap_.end(), TaskLater{});
      }
      list = next;
    }
  }
  return skipped_nearest;
}

void TimerThread::SweepHeap() {
  size_t kept = 0;
  for (Task* t : heap_) {
    if (t->version.load(std::memory_order_relaxed) == t->id_version) {
      heap_[kept++] = t;
    } else {
      DropTask(t);
    }
  }
  heap_.resize(kept);
  std::make_heap(heap_.begin(), heap_.end(), TaskLater{});
  sweep_threshold_ = std::max(options_.heap_sweep_min_size, 2 * kept);
}

// All of the timer thread's decisions that matter for correctness (may I
// sleep, until when) are taken under mu_, so the atomics below are relaxed:
// mu_ orders them. Only the per-task peek in the run loop reads them without
// the lock; a stale value there just runs a task a moment before a just
// scheduled earlier one (as if that Schedule came a moment later) or runs one
// more task before noticing Stop.
void TimerThread::Run() {
  SetThreadName("chorus-timer");
  while (true) {
    {
      MutexLock lock(&mu_);
      sleeping_ = false;
      if (stop_.load(std::memory_order_relaxed)) break;
      // From now on every Schedule earlier than its bucket's nearest lowers
      // this, so none is missed while we pull (see the check before sleeping).
      nearest_run_ns_.store(kNever, std::memory_order_relaxed);
    }
    int64_t now = NowNanos();
    bool skipped_due = false;
    const int64_t skipped_nearest =
        PullBuckets(now, busy_retries_ < kMaxBusyRetries, &skipped_due);
    busy_retries_ = skipped_due ? busy_retries_ + 1 : 0;
    if (heap_.size() > sweep_threshold_) SweepHeap();

    bool pull_again = false;
    bool stopping = false;
    while (!heap_.empty()) {
      Task* t = heap_.front();
      if (t->run_ns > now) {
        now = NowNanos();
        if (t->run_ns > now) break;
      }
      stopping = stop_.load(std::memory_order_relaxed);
      // An earlier task was scheduled since we pulled: run it first.
      pull_again = t->run_ns > nearest_run_ns_.load(std::memory_order_relaxed);
      if (stopping || pull_again) break;
      std::pop_heap(heap_.begin(), heap_.end(), TaskLater{});
      heap_.pop_back();
      RunTask(t);
    }
    heap_size_.store(heap_.size(), std::memory_order_relaxed);
    if (stopping) break;
    if (pull_again) continue;

    const int64_t next_run =
        std::min(skipped_nearest, heap_.empty() ? kNever : heap_.front()->run_ns);
    int32_t expected_signals;
    {
      MutexLock lock(&mu_);
      if (stop_.load(std::memory_order_relaxed)) break;
      // Something earlier is in a bucket: pull it.
      if (next_run > nearest_run_ns_.load(std::memory_order_relaxed)) continue;
      nearest_run_ns_.store(next_run, std::memory_order_relaxed);
      expected_signals = nsignals_.load(std::memory_order_relaxed);
      sleeping_ = true;
    }
    // Sleep until next_run, capped by max_wakeup_interval_ms. A Schedule that
    // bumped nsignals_ after we read it makes FutexWait return at once.
    now = NowNanos();
    int64_t sleep_ns = next_run == kNever ? kNever : next_run - now;
    if (options_.max_wakeup_interval_ms > 0) {
      sleep_ns = std::min(sleep_ns, options_.max_wakeup_interval_ms * 1000000);
    }
    if (sleep_ns <= 0) {
      // Due tasks wait in a busy bucket: let its holder run, then retry.
      if (skipped_due) std::this_thread::yield();
      continue;
    }
    if (sleep_ns == kNever) {
      FutexWait(&nsignals_, expected_signals, nullptr);
    } else {
      timespec ts;
      ts.tv_sec = static_cast<time_t>(sleep_ns / 1000000000);
      ts.tv_nsec = static_cast<long>(sleep_ns % 1000000000);
      FutexWait(&nsignals_, expected_signals, &ts);
    }
  }
}

TimerThread* GlobalTimerThread() {
  static TimerThread* const global = [] {
    auto* t = new TimerThread();
    Status s = t->Start(TimerThreadOptions());
    CHORUS_TIMER_CHECK(s.ok());
    return t;
  }();
  return global;
}

}  // namespace chorus
