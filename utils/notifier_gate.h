// NotifierGate: many waiters released together by one Open.
//
//   opener (e.g. a group's loop)          each of N waiter threads
//                                         gate->WaitFor(timeout_us)
//   ... fill every waiter's result ...
//   gate->Open();   ----------------->    returns OK; reads its result
//
// It is the one-wake-up-per-batch companion of Notifier (notifier.h): the
// waiters of one BatchPropose batch are all answered by the same loop pass,
// so they can share one gate, and the loop pays one kernel wake-up for the
// whole batch instead of one Notifier::Send per value.
//
// Semantics:
// - A gate starts closed. Open() opens it, once: a second Open does nothing.
// - WaitFor returns OK as soon as the gate is open (at once if it already
//   is), or Timeout after timeout_us without an opening; it never consumes
//   the opening, so every waiter sees it, however many there are and
//   whenever they come.
// - Open() releases (memory order) everything its thread wrote before it to
//   every waiter whose WaitFor returned OK.
// - Reset() closes the gate again for its next use (NotifierPool::GetGate
//   does this when a use ends).
//
// Cost: the state is two atomic words; the kernel is involved only when a
// waiter really sleeps. A waiter that finds the gate open makes no system
// call; a sleeping waiter makes one (ppoll on the eventfd or pipe, or
// FUTEX_WAIT), timed or not. Open makes one (the token write, waking every
// sleeper at once) only when some waiter sleeps, and none otherwise.
//
// Thread safety: Open and WaitFor from any threads, concurrently. Reset only
// when nobody is inside WaitFor or Open and nobody will call Open for the
// previous use.

#ifndef CHORUS_UTILS_NOTIFIER_GATE_H_
#define CHORUS_UTILS_NOTIFIER_GATE_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "utils/notifier_backend.h"
#include "utils/status.h"

namespace chorus {

class NotifierGate {
 public:
  // Creates a closed gate on `wanted` (kAuto: eventfd, pipe fallback). On
  // success sets *out and returns OK; otherwise returns IOError (the kernel's
  // reason) or InvalidArgument (bad enum) and leaves *out untouched.
  static Status Create(NotifierBackend wanted, std::unique_ptr<NotifierGate>* out);

  NotifierGate(const NotifierGate&) = delete;
  NotifierGate& operator=(const NotifierGate&) = delete;

  // kEventfd, kPipe or kFutex (never kAuto).
  NotifierBackend backend() const { return channel_->backend(); }

  // Opens the gate and wakes every sleeping waiter. Returns OK, or IOError
  // when the kernel refused the wake-up (the gate is open anyway; a sleeper
  // then sees it only at its timeout). Thread safe; never blocks.
  Status Open();

  // Returns OK once the gate is open; Timeout if it is still closed after
  // timeout_us microseconds (0 = just check, -1 = no limit); IOError if the
  // kernel fails the wait. REQUIRES: timeout_us >= -1 (InvalidArgument
  // otherwise).
  Status WaitFor(int64_t timeout_us);

  // Whether Open was called since the last Reset.
  bool is_open() const { return open_.load(std::memory_order_acquire) != 0; }

  // Waiters inside WaitFor that announced a sleep: a hint for tests.
  uint32_t sleepers() const { return sleepers_.load(std::memory_order_relaxed); }

  // Closes the gate for a new use, taking the token its last Open posted.
  // Returns OK, or IOError (the gate must then be discarded). Aborts if a
  // waiter is still inside WaitFor: that is a broken contract, not an error.
  Status Reset();

 private:
  explicit NotifierGate(std::unique_ptr<WakeChannel> channel) : channel_(std::move(channel)) {}

  const std::unique_ptr<WakeChannel> channel_;
  // 0 closed, 1 open. Written by Open (0 -> 1) and Reset (-> 0) only.
  std::atomic<uint32_t> open_{0};
  // Waiters that may sleep in the kernel: each adds itself before its last
  // look at open_, and Open looks here after it opened (see the .cc).
  std::atomic<uint32_t> sleepers_{0};
  // Whether Open posted a token this use, for Reset to take it back. Written
  // by Open; read by Reset, which runs after Open by the contract.
  std::atomic<bool> posted_{false};
};

}  // namespace chorus

#endif  // CHORUS_UTILS_NOTIFIER_GATE_H_
