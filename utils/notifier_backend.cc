#include "utils/notifier_backend.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <chrono>
#include <cstring>
#include <string>

namespace chorus {

namespace {

// errno injected by the test seams; 0 = no failure. Relaxed is enough: a test
// sets it before it creates the channels that must fail (same thread, or a
// thread it starts afterwards, which orders the store anyway).
std::atomic<int> injected_eventfd_errno{0};
std::atomic<int> injected_pipe_errno{0};

int CreateEventfd() {
  int err = injected_eventfd_errno.load(std::memory_order_relaxed);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return eventfd(0, EFD_CLOEXEC);
}

int CreatePipe(int fds[2]) {
  int err = injected_pipe_errno.load(std::memory_order_relaxed);
  if (err != 0) {
    errno = err;
    return -1;
  }
  return pipe2(fds, O_CLOEXEC);
}

// Monotonic deadline arithmetic for the retries after EINTR.
using Clock = std::chrono::steady_clock;

Clock::time_point DeadlineAfter(int64_t timeout_us) {
  return Clock::now() + std::chrono::microseconds(timeout_us);
}

// Remaining time until `deadline`, never negative.
struct timespec Remaining(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now());
  int64_t ns = left.count() > 0 ? left.count() : 0;
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(ns / 1000000000);
  ts.tv_nsec = static_cast<long>(ns % 1000000000);
  return ts;
}

long Futex(std::atomic<uint32_t>* word, int op, uint32_t val, const struct timespec* timeout) {
  // The kernel reads the word as a plain 32-bit int; std::atomic<uint32_t> has
  // the same size and alignment (checked below) and is lock-free.
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, val, timeout, nullptr, 0);
}

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t), "futex word layout");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex word must be lock-free");

}  // namespace

const char* NotifierBackendName(NotifierBackend backend) {
  switch (backend) {
    case NotifierBackend::kAuto:
      return "auto";
    case NotifierBackend::kEventfd:
      return "eventfd";
    case NotifierBackend::kPipe:
      return "pipe";
    case NotifierBackend::kFutex:
      return "futex";
  }
  return "unknown";
}

Status ParseNotifierBackend(const char* name, NotifierBackend* out) {
  for (NotifierBackend b : {NotifierBackend::kAuto, NotifierBackend::kEventfd,
                            NotifierBackend::kPipe, NotifierBackend::kFutex}) {
    if (std::strcmp(name, NotifierBackendName(b)) == 0) {
      *out = b;
      return Status::OK();
    }
  }
  return Status::InvalidArgument(std::string("unknown notifier backend '") + name +
                                 "' (want auto, eventfd, pipe or futex)");
}

Status WakeChannel::Create(NotifierBackend wanted, std::unique_ptr<WakeChannel>* out) {
  switch (wanted) {
    case NotifierBackend::kAuto:
    case NotifierBackend::kEventfd: {
      int fd = CreateEventfd();
      if (fd >= 0) {
        std::unique_ptr<WakeChannel> ch(new WakeChannel(NotifierBackend::kEventfd));
        ch->read_fd_ = ch->write_fd_ = fd;
        *out = std::move(ch);
        return Status::OK();
      }
      if (wanted == NotifierBackend::kEventfd) return Status::FromErrno("eventfd", errno);
      return Create(NotifierBackend::kPipe, out);  // the automatic fallback
    }
    case NotifierBackend::kPipe: {
      int fds[2];
      if (CreatePipe(fds) != 0) return Status::FromErrno("pipe2", errno);
      std::unique_ptr<WakeChannel> ch(new WakeChannel(NotifierBackend::kPipe));
      ch->read_fd_ = fds[0];
      ch->write_fd_ = fds[1];
      *out = std::move(ch);
      return Status::OK();
    }
    case NotifierBackend::kFutex:
      out->reset(new WakeChannel(NotifierBackend::kFutex));
      return Status::OK();
  }
  return Status::InvalidArgument("unknown notifier backend " +
                                 std::to_string(static_cast<int>(wanted)));
}

WakeChannel::~WakeChannel() {
  // close() is not retried on EINTR: on Linux the fd is released either way.
  if (read_fd_ >= 0) close(read_fd_);
  if (write_fd_ >= 0 && write_fd_ != read_fd_) close(write_fd_);
}

int WakeChannel::fd_count() const {
  switch (backend_) {
    case NotifierBackend::kEventfd:
      return 1;
    case NotifierBackend::kPipe:
      return 2;
    default:
      return 0;
  }
}

Status WakeChannel::Post() {
  if (backend_ == NotifierBackend::kFutex) {
    // Release pairs with the acquire exchange in TakeFromFutex.
    futex_word_.store(1, std::memory_order_release);
    if (Futex(&futex_word_, FUTEX_WAKE_PRIVATE, 1, nullptr) < 0) {
      return Status::FromErrno("futex wake", errno);
    }
    return Status::OK();
  }
  // eventfd wants exactly 8 bytes (adds 1 to the counter); a pipe gets one
  // byte. Neither can fill up: the Notifier posts at most one token per wait.
  uint64_t one = 1;
  size_t len = backend_ == NotifierBackend::kEventfd ? sizeof(one) : 1;
  for (;;) {
    ssize_t n = write(write_fd_, &one, len);
    if (n == static_cast<ssize_t>(len)) return Status::OK();
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno("notifier token write", errno);
    return Status::IOError("notifier token write: short write of " + std::to_string(n));
  }
}

Status WakeChannel::Take(int64_t timeout_us) {
  return backend_ == NotifierBackend::kFutex ? TakeFromFutex(timeout_us)
                                             : TakeFromFd(timeout_us);
}

Status WakeChannel::TakeFromFd(int64_t timeout_us) {
  Clock::time_point deadline;
  if (timeout_us >= 0) {
    deadline = DeadlineAfter(timeout_us);
    // With a deadline, wait for readability first; the read below then
    // cannot block because only this thread reads and tokens are never
    // withdrawn.
    for (;;) {
      struct pollfd pfd;
      pfd.fd = read_fd_;
      pfd.events = POLLIN;
      pfd.revents = 0;
      struct timespec left = Remaining(deadline);
      int rc = ppoll(&pfd, 1, &left, nullptr);
      if (rc > 0) break;
      if (rc == 0) return Status::Timeout("notifier: no result within the timeout");
      if (errno == EINTR) continue;
      return Status::FromErrno("notifier ppoll", errno);
    }
  }
  // eventfd: one 8-byte read takes the whole counter. Pipe: read up to 8
  // bytes, which takes every pending token at once (a stray token left over
  // from an error path then costs one spurious wake-up, not a wrong result).
  uint64_t buf = 0;
  for (;;) {
    ssize_t n = read(read_fd_, &buf, sizeof(buf));
    if (n > 0) return Status::OK();
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) return Status::IOError("notifier token read: unexpected end of file");
    return Status::FromErrno("notifier token read", errno);
  }
}

Status WakeChannel::TakeFromFutex(int64_t timeout_us) {
  Clock::time_point deadline;
  if (timeout_us >= 0) deadline = DeadlineAfter(timeout_us);
  for (;;) {
    // Acquire pairs with the release store in Post.
    if (futex_word_.exchange(0, std::memory_order_acquire) != 0) return Status::OK();
    struct timespec left;
    const struct timespec* timeout = nullptr;
    if (timeout_us >= 0) {
      left = Remaining(deadline);
      if (left.tv_sec == 0 && left.tv_nsec == 0) {
        return Status::Timeout("notifier: no result within the timeout");
      }
      timeout = &left;
    }
    // Sleeps only while the word is still 0, so a Post between the exchange
    // above and this call is never missed (the kernel re-checks the value).
    if (Futex(&futex_word_, FUTEX_WAIT_PRIVATE, 0, timeout) < 0) {
      // EAGAIN: the word changed before we slept. EINTR: a signal. ETIMEDOUT:
      // the loop re-checks the word once more, then reports the timeout.
      if (errno != EAGAIN && errno != EINTR && errno != ETIMEDOUT) {
        return Status::FromErrno("notifier futex wait", errno);
      }
    }
  }
}

Status WakeChannel::PostToAll() {
  if (backend_ != NotifierBackend::kFutex) return Post();  // every poller sees it readable
  // Release pairs with the acquire load in AwaitPosted.
  futex_word_.store(1, std::memory_order_release);
  if (Futex(&futex_word_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr) < 0) {
    return Status::FromErrno("futex wake", errno);
  }
  return Status::OK();
}

Status WakeChannel::AwaitPosted(int64_t timeout_us) {
  Clock::time_point deadline;
  if (timeout_us >= 0) deadline = DeadlineAfter(timeout_us);
  for (;;) {
    struct timespec left;
    const struct timespec* timeout = nullptr;
    if (timeout_us >= 0) {
      left = Remaining(deadline);
      timeout = &left;
    }
    if (backend_ == NotifierBackend::kFutex) {
      if (futex_word_.load(std::memory_order_acquire) != 0) return Status::OK();
      if (timeout != nullptr && left.tv_sec == 0 && left.tv_nsec == 0) {
        return Status::Timeout("notifier: not posted within the timeout");
      }
      // Sleeps only while the word is still 0 (the kernel re-checks it).
      if (Futex(&futex_word_, FUTEX_WAIT_PRIVATE, 0, timeout) < 0 && errno != EAGAIN &&
          errno != EINTR && errno != ETIMEDOUT) {
        return Status::FromErrno("notifier futex wait", errno);
      }
      continue;  // re-check the word (and the time) after any return
    }
    // Level-triggered: a pending token keeps the fd readable for every
    // poller until someone takes it, so one write releases them all.
    struct pollfd pfd;
    pfd.fd = read_fd_;
    pfd.events = POLLIN;
    pfd.revents = 0;
    int rc = ppoll(&pfd, 1, timeout, nullptr);
    if (rc > 0) return Status::OK();
    if (rc == 0) return Status::Timeout("notifier: not posted within the timeout");
    if (errno == EINTR) continue;
    return Status::FromErrno("notifier ppoll", errno);
  }
}

ScopedEventfdFailureForTesting::ScopedEventfdFailureForTesting(int err)
    : previous_(injected_eventfd_errno.exchange(err)) {}
ScopedEventfdFailureForTesting::~ScopedEventfdFailureForTesting() {
  injected_eventfd_errno.store(previous_);
}

ScopedPipeFailureForTesting::ScopedPipeFailureForTesting(int err)
    : previous_(injected_pipe_errno.exchange(err)) {}
ScopedPipeFailureForTesting::~ScopedPipeFailureForTesting() {
  injected_pipe_errno.store(previous_);
}

}  // namespace chorus
