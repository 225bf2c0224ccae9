// RuntimeEnv: the clock, the timers and the randomness that a group's runtime
// (the loop, its timers, its batcher) uses, in one place so that a test can
// replace them (as leveldb's Env replaces the OS): a manual clock, timers
// fired by hand, a fixed seed. Internal to the runtime; not a public API.
//
// Production leaves every hook null: RuntimeEnv then calls
// std::chrono::steady_clock and the TimerThread directly, so the hot path
// pays one predictable branch per call, not a virtual call.
//
// Thread safety: RuntimeEnv is immutable after construction and may be used
// from any thread; the hooks it borrows must be thread-safe themselves (the
// clock is read by proposing threads and the loop; timers are scheduled by
// proposing threads and the loop, and cancelled by the loop).
#ifndef CHORUS_NODE_RUNTIME_ENV_H_
#define CHORUS_NODE_RUNTIME_ENV_H_

#include <chrono>
#include <cstdint>
#include <functional>

#include "utils/timer_thread.h"

namespace chorus {

using SteadyTime = std::chrono::steady_clock::time_point;

// TEST HOOK. A monotonic clock: Now() never goes back.
class Clock {
 public:
  virtual ~Clock();
  virtual SteadyTime Now() = 0;
};

// TEST HOOK. Runs callbacks later, with TimerThread's contract.
class TimerScheduler {
 public:
  using TaskId = TimerThread::TaskId;  // TimerThread::kInvalidTaskId (0): refused

  virtual ~TimerScheduler();
  // Runs fn(arg) once, `delay` after now (on the scheduler's own clock),
  // from some thread other than the caller's stack. Returns the task's id,
  // or kInvalidTaskId if the scheduler refuses (stopped): the task never runs.
  virtual TaskId ScheduleAfter(TimerThread::Callback fn, void* arg,
                               std::chrono::milliseconds delay) = 0;
  // Same for a std::function; it is destroyed once it ran or was cancelled.
  virtual TaskId ScheduleAfter(std::function<void()> fn, std::chrono::milliseconds delay) = 0;
  // As TimerThread::Unschedule: 0 cancelled (will never run), 1 running
  // right now, -1 unknown / already ran / already cancelled. On 0 and -1 the
  // callback is not running and will not run.
  virtual int Unschedule(TaskId id) = 0;
};

// What a test may replace. Every field defaults to production behaviour.
struct RuntimeHooks {
  Clock* clock = nullptr;              // nullptr: std::chrono::steady_clock
  TimerScheduler* timers = nullptr;    // nullptr: the TimerThread given to RuntimeEnv
  // Seed the cores from `seed` (group g gets seed + g) instead of the OS, so
  // proposal ids and backoffs repeat from run to run. A restarted core must
  // not reuse its predecessor's proposal ids: use only where nothing restarts.
  bool fixed_seed = false;
  uint64_t seed = 0;
};

class RuntimeEnv {
 public:
  // REQUIRES: timer_thread outlives this unless hooks.timers is set (then
  // timer_thread may be null). Every hook outlives this.
  explicit RuntimeEnv(TimerThread* timer_thread, const RuntimeHooks& hooks = RuntimeHooks());

  SteadyTime Now() const {
    return clock_ == nullptr ? std::chrono::steady_clock::now() : clock_->Now();
  }

  TimerThread::TaskId ScheduleAfter(TimerThread::Callback fn, void* arg,
                                    std::chrono::milliseconds delay) const {
    return timers_ == nullptr ? timer_thread_->ScheduleAfter(fn, arg, delay)
                              : timers_->ScheduleAfter(fn, arg, delay);
  }
  TimerThread::TaskId ScheduleAfter(std::function<void()> fn,
                                    std::chrono::milliseconds delay) const;
  int Unschedule(TimerThread::TaskId id) const {
    return timers_ == nullptr ? timer_thread_->Unschedule(id) : timers_->Unschedule(id);
  }

  // The seed for a fresh start of `group`'s core (see CoreOptions::seed):
  // from the OS, unless the hooks fix it.
  uint64_t CoreSeed(uint32_t group) const;

 private:
  TimerThread* const timer_thread_;
  Clock* const clock_;
  TimerScheduler* const timers_;
  const bool fixed_seed_;
  const uint64_t seed_;
};

}  // namespace chorus

#endif  // CHORUS_NODE_RUNTIME_ENV_H_
