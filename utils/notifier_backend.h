// WakeChannel: the kernel half of a Notifier. It carries "tokens" (bare
// wake-ups, no data) from senders to the one waiter, over one of three
// backends:
//
//   kEventfd  one fd; the token is the eventfd's 8-byte counter.
//   kPipe     two fds; the token is one byte in the pipe.
//   kFutex    no fd; the token is a 32-bit word the waiter sleeps on.
//
// The data (the result) never travels through the channel: Notifier publishes
// it in an atomic word first and posts a token only when the waiter sleeps.
// See notifier.h for the protocol. This header is internal to utils/.

#ifndef CHORUS_UTILS_NOTIFIER_BACKEND_H_
#define CHORUS_UTILS_NOTIFIER_BACKEND_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "utils/status.h"

namespace chorus {

enum class NotifierBackend : int {
  kAuto = 0,     // eventfd; a pipe when eventfd() fails (e.g. ENOSYS, EMFILE)
  kEventfd = 1,  // eventfd only: Create fails if eventfd() fails
  kPipe = 2,     // pipe only
  kFutex = 3,    // futex only (Linux); no file descriptor at all
};

// "auto", "eventfd", "pipe", "futex".
const char* NotifierBackendName(NotifierBackend backend);
// Parses a name written by NotifierBackendName. Returns InvalidArgument for
// anything else.
Status ParseNotifierBackend(const char* name, NotifierBackend* out);

class WakeChannel {
 public:
  // Creates a channel on `wanted`. kAuto resolves to kEventfd, or to kPipe when
  // eventfd() fails. Returns IOError (with errno text) when the kernel refuses
  // the fd(s); *out is left untouched then.
  static Status Create(NotifierBackend wanted, std::unique_ptr<WakeChannel>* out);

  ~WakeChannel();  // closes the fd(s)
  WakeChannel(const WakeChannel&) = delete;
  WakeChannel& operator=(const WakeChannel&) = delete;

  // kEventfd, kPipe or kFutex (never kAuto).
  NotifierBackend backend() const { return backend_; }
  // File descriptors held: 1 (eventfd), 2 (pipe), 0 (futex).
  int fd_count() const;

  // Posts one token and wakes the waiter if it sleeps in Take().
  // Thread safe. Returns IOError only if the kernel refuses the write.
  Status Post();

  // Takes the pending token(s), sleeping until one is posted or, when
  // timeout_us >= 0, until timeout_us microseconds have passed.
  // Returns OK when a token was taken, Timeout when the time ran out, IOError
  // when the kernel fails. EINTR is retried (with the remaining time).
  // REQUIRES: at most one thread calls Take at a time.
  Status Take(int64_t timeout_us);

  // Broadcast use (NotifierGate): a token that stays pending until Take, with
  // any number of threads waiting for it at once.
  // Posts one token and wakes every thread inside AwaitPosted. Thread safe.
  // Returns IOError only if the kernel refuses the write.
  Status PostToAll();
  // Sleeps until a token is pending, without taking it, or, when
  // timeout_us >= 0, until timeout_us microseconds have passed. Returns OK,
  // Timeout, or IOError when the kernel fails; EINTR is retried. Any number
  // of threads may call it at once (but not while one calls Take).
  Status AwaitPosted(int64_t timeout_us);

 private:
  explicit WakeChannel(NotifierBackend backend) : backend_(backend) {}

  Status TakeFromFd(int64_t timeout_us);
  Status TakeFromFutex(int64_t timeout_us);

  const NotifierBackend backend_;
  int read_fd_ = -1;   // eventfd or pipe read end; -1 for futex
  int write_fd_ = -1;  // eventfd (same as read_fd_) or pipe write end
  // The futex backend's token: 1 posted, 0 none. Post stores 1 with release
  // and wakes; Take exchanges it back to 0 with acquire. (The Notifier does not
  // rely on this pairing for its result; it keeps the word honest anyway.)
  std::atomic<uint32_t> futex_word_{0};
};

// Test seams. While one of these objects is alive, every eventfd() (resp.
// pipe()) that WakeChannel::Create attempts fails with `err`, in every thread.
// Scopes may nest; the innermost wins until it dies.
class ScopedEventfdFailureForTesting {
 public:
  explicit ScopedEventfdFailureForTesting(int err);
  ~ScopedEventfdFailureForTesting();
  ScopedEventfdFailureForTesting(const ScopedEventfdFailureForTesting&) = delete;
  ScopedEventfdFailureForTesting& operator=(const ScopedEventfdFailureForTesting&) = delete;

 private:
  const int previous_;
};

class ScopedPipeFailureForTesting {
 public:
  explicit ScopedPipeFailureForTesting(int err);
  ~ScopedPipeFailureForTesting();
  ScopedPipeFailureForTesting(const ScopedPipeFailureForTesting&) = delete;
  ScopedPipeFailureForTesting& operator=(const ScopedPipeFailureForTesting&) = delete;

 private:
  const int previous_;
};

}  // namespace chorus

#endif  // CHORUS_UTILS_NOTIFIER_BACKEND_H_
