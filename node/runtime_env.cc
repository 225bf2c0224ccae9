#include "node/runtime_env.h"

#include <random>
#include <utility>

namespace chorus {

Clock::~Clock() = default;
TimerScheduler::~TimerScheduler() = default;

RuntimeEnv::RuntimeEnv(TimerThread* timer_thread, const RuntimeHooks& hooks)
    : timer_thread_(timer_thread),
      clock_(hooks.clock),
      timers_(hooks.timers),
      fixed_seed_(hooks.fixed_seed),
      seed_(hooks.seed) {}

TimerThread::TaskId RuntimeEnv::ScheduleAfter(std::function<void()> fn,
                                              std::chrono::milliseconds delay) const {
  if (timers_ != nullptr) return timers_->ScheduleAfter(std::move(fn), delay);
  return timer_thread_->Schedule(std::move(fn), std::chrono::steady_clock::now() + delay);
}

uint64_t RuntimeEnv::CoreSeed(uint32_t group) const {
  if (fixed_seed_) return seed_ + group;
  // Fresh for every start of a core: proposal ids come from it, and a
  // restarted node must not repeat the ids of its previous life.
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace chorus
