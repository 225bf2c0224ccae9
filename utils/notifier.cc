#include "utils/notifier.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace chorus {

namespace {

// Layout of Notifier::state_ (see notifier.h).
constexpr int kPhaseShift = 32;
constexpr int kGenShift = 34;
constexpr uint64_t kGenMask = (uint64_t{1} << 30) - 1;

enum Phase : uint64_t {
  kIdle = 0,           // nothing armed (fresh, or the result was collected)
  kArmed = 1,          // ticket armed, no result yet, waiter not sleeping
  kArmedSleeping = 2,  // ticket armed, no result yet, waiter sleeps: Send must post
  kSent = 3,           // result delivered, not yet collected
};

constexpr uint64_t Pack(uint64_t gen, Phase phase, int result) {
  return (gen << kGenShift) | (static_cast<uint64_t>(phase) << kPhaseShift) |
         static_cast<uint32_t>(result);
}
constexpr uint64_t GenOf(uint64_t s) { return s >> kGenShift; }
constexpr Phase PhaseOf(uint64_t s) { return static_cast<Phase>((s >> kPhaseShift) & 3); }
constexpr int ResultOf(uint64_t s) { return static_cast<int>(static_cast<uint32_t>(s)); }

static_assert(ResultOf(Pack(kGenMask, kSent, -7)) == -7, "result round trip");
static_assert(GenOf(Pack(kGenMask, kSent, -1)) == kGenMask, "generation round trip");
static_assert(PhaseOf(Pack(5, kArmedSleeping, -1)) == kArmedSleeping, "phase round trip");

// An invariant of the protocol broke: memory corruption or a caller violating
// the one-waiter contract. Continuing could hand out a wrong result; abort.
[[noreturn]] void InvariantBroken(const char* what, uint64_t state) {
  std::fprintf(stderr, "chorus::Notifier invariant broken: %s (state=%#llx)\n", what,
               static_cast<unsigned long long>(state));
  std::abort();
}

}  // namespace

Status Notifier::Create(NotifierBackend wanted, std::unique_ptr<Notifier>* out) {
  std::unique_ptr<WakeChannel> channel;
  Status s = WakeChannel::Create(wanted, &channel);
  if (!s.ok()) return s;
  out->reset(new Notifier(std::move(channel)));
  return Status::OK();
}

Notifier::Notifier(std::unique_ptr<WakeChannel> channel) : channel_(std::move(channel)) {}

Notifier::~Notifier() = default;

uint64_t Notifier::Prepare() {
  // Only the waiter changes the generation, so a relaxed load reads the
  // latest one. A sender may race with us, turning the old ticket's phase
  // into kSent; the plain store below discards that late result, which is
  // exactly what "older tickets become stale" means. (A sender never sees
  // kArmedSleeping here: the waiter is not inside Wait, so no token can be
  // owed.) The release pairs with nothing in this class; it keeps the fresh
  // ticket ordered before any hand-off the caller makes afterwards, even a
  // relaxed one.
  uint64_t gen = (GenOf(state_.load(std::memory_order_relaxed)) + 1) & kGenMask;
  state_.store(Pack(gen, kArmed, 0), std::memory_order_release);
  return gen;
}

Status Notifier::Send(uint64_t ticket, int result) {
  const uint64_t gen = ticket & kGenMask;
  uint64_t s = state_.load(std::memory_order_relaxed);
  for (;;) {
    Phase phase = PhaseOf(s);
    if (GenOf(s) != gen || (phase != kArmed && phase != kArmedSleeping)) {
      return Status::NotFound("notifier: ticket is stale or already answered");
    }
    // Release: everything the sender wrote before Send (e.g. the buffers the
    // result refers to) happens-before the waiter's acquire load that sees
    // kSent. The int itself rides in the same word, so it can never be seen
    // torn or apart from its phase. Relaxed on failure: we only re-check.
    if (state_.compare_exchange_weak(s, Pack(gen, kSent, result), std::memory_order_release,
                                     std::memory_order_relaxed)) {
      break;
    }
  }
  // The CAS replaced `s`. If that value said "the waiter sleeps", the waiter
  // committed to sleeping before our CAS (its announcement is an RMW on the
  // same word, so the word's modification order decides) and we owe it
  // exactly one token. If not, the waiter will find kSent without sleeping.
  if (PhaseOf(s) == kArmedSleeping) return channel_->Post();
  return Status::OK();
}

Status Notifier::Send(int result) {
  uint64_t s = state_.load(std::memory_order_relaxed);
  Phase phase = PhaseOf(s);
  if (phase != kArmed && phase != kArmedSleeping) {
    return Status::NotFound("notifier: no ticket armed");
  }
  return Send(GenOf(s), result);
}

Status Notifier::Wait(int* result) { return DoWait(-1, result); }

Status Notifier::WaitFor(int64_t timeout_us, int* result) {
  if (timeout_us < 0) return Status::InvalidArgument("notifier: negative timeout");
  return DoWait(timeout_us, result);
}

bool Notifier::waiter_sleeping() const {
  return PhaseOf(state_.load(std::memory_order_relaxed)) == kArmedSleeping;
}

Status Notifier::DoWait(int64_t timeout_us, int* result) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();

  // Acquire pairs with the release CAS in Send (see there).
  uint64_t s = state_.load(std::memory_order_acquire);
  const uint64_t gen = GenOf(s);
  for (;;) {
    Phase phase = PhaseOf(s);
    if (phase == kIdle) return Status::InvalidArgument("notifier: Wait without a Prepare");
    if (phase == kSent) {
      *result = ResultOf(s);
      // Disarm. No sender writes the word in phase kSent (they CAS from an
      // armed phase only), so a plain store cannot lose anyone's update.
      state_.store(Pack(gen, kIdle, 0), std::memory_order_relaxed);
      return Status::OK();
    }
    if (phase == kArmedSleeping) break;  // not reachable by the contract; harmless
    if (timeout_us == 0) return Status::Timeout("notifier: no result yet");
    // Announce that we sleep. If a Send wins the race, the CAS fails, `s`
    // holds kSent (acquire, for the same reason as above) and we loop. (C++17
    // forbids a failure order stronger than the success order, hence acquire
    // on both; on success it orders nothing we need.)
    if (state_.compare_exchange_weak(s, Pack(gen, kArmedSleeping, 0),
                                     std::memory_order_acquire, std::memory_order_acquire)) {
      break;
    }
  }

  // We announced sleeping: a Send from now on posts one token.
  for (;;) {
    int64_t left_us = -1;
    if (timeout_us > 0) {
      auto spent = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
      left_us = timeout_us - spent.count();
      if (left_us < 0) left_us = 0;
    }
    Status taken = channel_->Take(left_us);
    if (taken.ok()) {
      s = state_.load(std::memory_order_acquire);  // pairs with Send's release CAS
      if (PhaseOf(s) == kSent) {
        *result = ResultOf(s);
        state_.store(Pack(gen, kIdle, 0), std::memory_order_relaxed);
        return Status::OK();
      }
      // A stray token (left by an earlier failed wait): sleep again. Tokens
      // are hints; the word is the truth.
      if (PhaseOf(s) != kArmedSleeping || GenOf(s) != gen) {
        InvariantBroken("state changed under a sleeping waiter", s);
      }
      if (left_us == 0) taken = Status::Timeout("notifier: no result within the timeout");
      else continue;
    }
    // Timeout or a kernel error: withdraw the announcement. If that fails, a
    // Send got in first and saw us sleeping: the result is ours after all.
    // Its token is posted (or about to be); we do not wait for it, since a
    // sender whose Post failed would leave us blocked forever. The token
    // stays behind and costs the next wait one spurious wake-up, which the
    // loop above tolerates.
    uint64_t expected = Pack(gen, kArmedSleeping, 0);
    if (state_.compare_exchange_strong(expected, Pack(gen, kArmed, 0),
                                       std::memory_order_acquire, std::memory_order_acquire)) {
      return taken;
    }
    if (PhaseOf(expected) != kSent || GenOf(expected) != gen) {
      InvariantBroken("withdrawing a sleep found a foreign state", expected);
    }
    *result = ResultOf(expected);
    state_.store(Pack(gen, kIdle, 0), std::memory_order_relaxed);
    return Status::OK();
  }
}

}  // namespace chorus
