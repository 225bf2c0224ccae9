// Copyright (c) chorus authors.
//
// MutexHeapTimer: the baseline for bench/timer_bench. The classic timer thread
// that brpc's bucketed TimerThread replaced: one mutex guards one binary
// min-heap; Schedule pushes under the mutex and signals a condition variable
// when its task becomes the earliest; Unschedule takes the mutex and removes
// the task from the heap at once (each task knows its heap index), so the heap
// holds live tasks only. Same API shape as chorus::TimerThread. Bench only.

#ifndef CHORUS_BENCH_MUTEX_HEAP_TIMER_H_
#define CHORUS_BENCH_MUTEX_HEAP_TIMER_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "utils/status.h"
#include "utils/timer_thread.h"

namespace chorus {
namespace bench {

class MutexHeapTimer {
 public:
  using TaskId = uint64_t;
  using Callback = void (*)(void* arg);
  using Clock = std::chrono::steady_clock;
  static constexpr TaskId kInvalidTaskId = 0;

  MutexHeapTimer() = default;
  ~MutexHeapTimer() { Stop(); }
  MutexHeapTimer(const MutexHeapTimer&) = delete;
  MutexHeapTimer& operator=(const MutexHeapTimer&) = delete;

  // Options are accepted for API parity and ignored.
  Status Start(const TimerThreadOptions& /*options*/) {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return Status::InvalidArgument("MutexHeapTimer: Start called twice");
    started_ = true;
    thread_ = std::thread(&MutexHeapTimer::Run, this);
    return Status::OK();
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!started_ || stop_) return;
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

  TaskId Schedule(Callback fn, void* arg, Clock::time_point when) {
    bool earliest;
    TaskId id;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!started_ || stop_) return kInvalidTaskId;
      Task* t = free_;
      if (t != nullptr) {
        free_ = t->next_free;
      } else {
        slots_.emplace_back();
        t = &slots_.back();
        t->slot = static_cast<uint32_t>(slots_.size());  // 1-based: no id is 0
      }
      t->version += 2;
      t->when = when;
      t->fn = fn;
      t->arg = arg;
      t->heap_index = heap_.size();
      heap_.push_back(t);
      SiftUp(t->heap_index);
      earliest = t->heap_index == 0;
      id = (static_cast<uint64_t>(t->version) << 32) | t->slot;
    }
    if (earliest) cv_.notify_one();
    return id;
  }

  TaskId ScheduleAfter(Callback fn, void* arg, std::chrono::microseconds delay) {
    return Schedule(fn, arg, Clock::now() + delay);
  }

  // 0 removed, 1 running now, -1 no such task.
  int Unschedule(TaskId id) {
    const uint32_t slot = static_cast<uint32_t>(id);
    const uint32_t version = static_cast<uint32_t>(id >> 32);
    std::lock_guard<std::mutex> lock(mu_);
    if (slot == 0 || slot > slots_.size()) return -1;
    Task* t = &slots_[slot - 1];
    if (t->version != version) return -1;
    if (t == running_) return 1;
    if (t->heap_index == kNotInHeap) return -1;
    RemoveAt(t->heap_index);
    Free(t);
    return 0;
  }

 private:
  static constexpr size_t kNotInHeap = SIZE_MAX;

  struct Task {
    Clock::time_point when;
    Callback fn = nullptr;
    void* arg = nullptr;
    uint32_t version = 0;  // bumped by 2 on every use
    uint32_t slot = 0;
    size_t heap_index = kNotInHeap;
    Task* next_free = nullptr;
  };

  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      if (heap_.empty()) {
        cv_.wait(lock);
        continue;
      }
      Task* top = heap_[0];
      if (top->when > Clock::now()) {
        cv_.wait_until(lock, top->when);
        continue;
      }
      RemoveAt(0);
      running_ = top;
      lock.unlock();
      top->fn(top->arg);
      lock.lock();
      running_ = nullptr;
      Free(top);
    }
  }

  void Free(Task* t) {  // REQUIRES: mu_ held
    t->version += 1;     // stale ids stop matching at once
    t->heap_index = kNotInHeap;
    t->next_free = free_;
    free_ = t;
  }

  void Place(size_t i, Task* t) {
    heap_[i] = t;
    t->heap_index = i;
  }
  void SiftUp(size_t i) {
    Task* t = heap_[i];
    while (i > 0) {
      size_t parent = (i - 1) / 2;
      if (!(t->when < heap_[parent]->when)) break;
      Place(i, heap_[parent]);
      i = parent;
    }
    Place(i, t);
  }
  void SiftDown(size_t i) {
    Task* t = heap_[i];
    const size_t n = heap_.size();
    while (true) {
      size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && heap_[child + 1]->when < heap_[child]->when) ++child;
      if (!(heap_[child]->when < t->when)) break;
      Place(i, heap_[child]);
      i = child;
    }
    Place(i, t);
  }
  void RemoveAt(size_t i) {  // REQUIRES: mu_ held
    Task* last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    Place(i, last);
    SiftUp(i);
    SiftDown(last->heap_index);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool started_ = false;         // GUARDED_BY(mu_)
  bool stop_ = false;            // GUARDED_BY(mu_)
  std::vector<Task*> heap_;      // GUARDED_BY(mu_)
  std::deque<Task> slots_;       // GUARDED_BY(mu_): stable addresses
  Task* free_ = nullptr;         // GUARDED_BY(mu_)
  Task* running_ = nullptr;      // GUARDED_BY(mu_)
  std::thread thread_;
};

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_MUTEX_HEAP_TIMER_H_
