// Notifier: one waiter blocks until one int result is sent to it.
//
// A use is one ticket:
//
//   waiter thread                        any sender thread
//   uint64_t t = n->Prepare();
//   hand (n, t) to the sender  -------->  n->Send(t, result);
//   n->WaitFor(timeout_us, &result);
//
// Tickets make reuse safe. Prepare() arms a fresh ticket and makes every older
// ticket stale; Send with a stale ticket delivers nothing and returns
// NotFound. So a sender that answers late (after its waiter timed out and the
// Notifier moved on to its next use, possibly by another thread of a
// NotifierPool) can never plant a result that a later wait misreads.
//
// Semantics, exactly:
// - Prepare() arms ticket t and drops whatever the previous ticket had.
// - Send(t, r) delivers r if t is the armed ticket and nothing was delivered
//   for it yet: OK. Otherwise (stale ticket, second send, nothing armed):
//   NotFound, and nothing changes.
// - Wait/WaitFor return the result delivered for the armed ticket, waiting
//   for it if needed, and then disarm: a second Wait without a new Prepare
//   returns InvalidArgument (never the old result again).
// - WaitFor that times out returns Timeout and leaves the ticket armed: a Send
//   that arrives later is kept until the waiter either waits again (and gets
//   it) or calls Prepare (which discards it).
//
// Cost: the result travels in one atomic 64-bit word; the kernel is involved
// only when the waiter really sleeps. If the result is already there when the
// waiter calls Wait, neither side makes a system call. Otherwise the waiter
// announces that it sleeps and the sender posts one wake-up token over the
// backend (eventfd write / pipe write / FUTEX_WAKE).
//
// Thread safety: Prepare, Wait and WaitFor must be called by one thread at a
// time (the owner of the current use). Send may be called from any thread,
// concurrently with everything, including with other Sends.
//
// Tickets are 30-bit generations: a stale ticket is recognised as long as
// fewer than 2^30 (about a billion) Prepares happened on this Notifier since
// it was issued.

#ifndef CHORUS_UTILS_NOTIFIER_H_
#define CHORUS_UTILS_NOTIFIER_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "utils/notifier_backend.h"
#include "utils/status.h"

namespace chorus {

class Notifier {
 public:
  // Creates a Notifier on `wanted` (see NotifierBackend: kAuto is eventfd with
  // a pipe fallback). On success sets *out and returns OK; on failure returns
  // IOError (the kernel's reason included) or InvalidArgument (bad enum) and
  // leaves *out untouched.
  static Status Create(NotifierBackend wanted, std::unique_ptr<Notifier>* out);

  ~Notifier();
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // The backend in use: kEventfd, kPipe or kFutex (never kAuto).
  NotifierBackend backend() const { return channel_->backend(); }
  // File descriptors this Notifier holds: 1 eventfd, 2 pipe, 0 futex.
  int fd_count() const { return channel_->fd_count(); }

  // Arms a new ticket and returns it; older tickets become stale. Waiter only.
  // REQUIRES: no Wait/WaitFor running on this Notifier.
  uint64_t Prepare();

  // Delivers `result` to ticket `ticket` and wakes the waiter if it sleeps.
  // Returns OK when delivered; NotFound when the ticket is stale, was already
  // answered, or nothing is armed (nothing changes then); IOError if the
  // kernel refused the wake-up (the result is delivered, but a sleeping
  // waiter may only see it at its timeout). Thread safe; never blocks.
  Status Send(uint64_t ticket, int result);

  // Sends to whatever ticket is armed right now. Convenient for ping-pong use
  // where the waiter never times out; with timeouts, prefer Send(ticket, ...),
  // because this one cannot tell a late answer from a timely one.
  // Returns as Send(ticket, result).
  Status Send(int result);

  // Blocks until the result for the armed ticket is there, stores it in
  // *result and disarms. Returns OK; InvalidArgument if no ticket is armed
  // (Prepare was not called, or its result was already collected); IOError if
  // the kernel fails the wait (*result untouched). EINTR is retried.
  Status Wait(int* result);

  // As Wait, but gives up after timeout_us microseconds (0 = just check):
  // returns Timeout then, leaves *result untouched and the ticket armed.
  // REQUIRES: timeout_us >= 0 (InvalidArgument otherwise).
  Status WaitFor(int64_t timeout_us, int* result);

  // A hint for tests and benchmarks: true while the waiter has announced that
  // it sleeps (or is about to sleep) in the kernel for the armed ticket.
  bool waiter_sleeping() const;

 private:
  explicit Notifier(std::unique_ptr<WakeChannel> channel);

  // -1 timeout = no timeout.
  Status DoWait(int64_t timeout_us, int* result);

  const std::unique_ptr<WakeChannel> channel_;

  // The whole shared state in one word, so that "is this ticket current",
  // "was it answered", "does the waiter sleep" and the result itself change
  // together in one CAS:
  //   bits  0..31  the result (meaningful in phase kSent)
  //   bits 32..33  the phase: kIdle, kArmed, kArmedSleeping, kSent
  //   bits 34..63  the generation (the ticket)
  // Written by the waiter (Prepare, sleeping announcements, disarm) and by
  // senders (kArmed* -> kSent, by CAS only). Orderings are explained in the .cc.
  std::atomic<uint64_t> state_{0};
};

}  // namespace chorus

#endif  // CHORUS_UTILS_NOTIFIER_H_
