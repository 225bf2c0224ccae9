#include "utils/notifier_gate.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace chorus {

// Why no wake-up is lost. A waiter does
//   sleepers_ += 1;  if (open_) return;  sleep until a token is pending
// and Open does
//   open_ = 1;  if (sleepers_ > 0) post a token
// with every one of those four accesses seq_cst, so they fall in one total
// order: either the waiter's look at open_ comes after Open's store (it sees
// the gate open and never sleeps), or Open's look at sleepers_ comes after
// the waiter's increment (Open posts, and the token stays pending, so the
// waiter's sleep ends at once however late it starts). The token is never
// taken while waiters may come (only Reset takes it), which is what lets one
// token release any number of them.
//
// Why the waiters see the opener's writes: Open's store to open_ is seq_cst,
// so a release, and every path by which WaitFor returns OK has read open_ as
// 1 with (at least) acquire.

Status NotifierGate::Create(NotifierBackend wanted, std::unique_ptr<NotifierGate>* out) {
  std::unique_ptr<WakeChannel> channel;
  Status s = WakeChannel::Create(wanted, &channel);
  if (!s.ok()) return s;
  out->reset(new NotifierGate(std::move(channel)));
  return Status::OK();
}

Status NotifierGate::Open() {
  if (open_.exchange(1, std::memory_order_seq_cst) != 0) return Status::OK();
  if (sleepers_.load(std::memory_order_seq_cst) == 0) return Status::OK();
  posted_.store(true, std::memory_order_relaxed);
  return channel_->PostToAll();
}

Status NotifierGate::WaitFor(int64_t timeout_us) {
  if (timeout_us < -1) return Status::InvalidArgument("notifier gate: negative timeout");
  if (is_open()) return Status::OK();
  if (timeout_us == 0) return Status::Timeout("notifier gate: not open yet");

  using Clock = std::chrono::steady_clock;
  const Clock::time_point deadline =
      timeout_us > 0 ? Clock::now() + std::chrono::microseconds(timeout_us) : Clock::time_point();
  sleepers_.fetch_add(1, std::memory_order_seq_cst);
  Status s;
  for (;;) {
    if (open_.load(std::memory_order_seq_cst) != 0) {
      s = Status::OK();
      break;
    }
    int64_t left_us = -1;
    if (timeout_us > 0) {
      left_us = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now())
                    .count();
      if (left_us < 0) left_us = 0;
    }
    s = channel_->AwaitPosted(left_us);
    if (!s.ok()) {
      // Out of time (or a kernel error): the gate may still have opened in
      // the meantime, in which case the answer is there.
      if (is_open()) s = Status::OK();
      else if (s.IsTimeout()) s = Status::Timeout("notifier gate: not open within the timeout");
      break;
    }
    // A token is pending; it is only ever posted after the gate opened, so
    // the next look finds it open.
  }
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
  return s;
}

Status NotifierGate::Reset() {
  const uint32_t inside = sleepers_.load(std::memory_order_relaxed);
  if (inside != 0) {
    std::fprintf(stderr, "chorus::NotifierGate: Reset with %u waiter(s) inside WaitFor\n", inside);
    std::abort();
  }
  if (posted_.exchange(false, std::memory_order_relaxed)) {
    // The token is pending (Open wrote it before this use ended), so this
    // read returns at once.
    Status s = channel_->Take(-1);
    if (!s.ok()) return s;
  }
  open_.store(0, std::memory_order_relaxed);
  return Status::OK();
}

}  // namespace chorus
