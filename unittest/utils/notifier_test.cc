#include "utils/notifier.h"

#include <dirent.h>
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "unittest/support/test_util.h"

namespace chorus {
namespace notifier_test {
namespace {

using testing::CountOpenFds;

std::unique_ptr<Notifier> MustCreate(NotifierBackend backend) {
  std::unique_ptr<Notifier> n;
  Status s = Notifier::Create(backend, &n);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return n;
}

// Spins (politely) until `cond` holds.
template <typename Cond>
void SpinUntil(Cond cond) {
  while (!cond()) std::this_thread::yield();
}

class NotifierBackendTest : public ::testing::TestWithParam<NotifierBackend> {};

INSTANTIATE_TEST_SUITE_P(AllBackends, NotifierBackendTest,
                         ::testing::Values(NotifierBackend::kEventfd, NotifierBackend::kPipe,
                                           NotifierBackend::kFutex),
                         [](const ::testing::TestParamInfo<NotifierBackend>& info) {
                           return std::string(NotifierBackendName(info.param));
                         });

TEST_P(NotifierBackendTest, CreateHoldsExactlyItsFds) {
  int before = CountOpenFds();
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->backend(), GetParam());
  int expected = GetParam() == NotifierBackend::kEventfd ? 1
                 : GetParam() == NotifierBackend::kPipe  ? 2
                                                         : 0;
  EXPECT_EQ(n->fd_count(), expected);
  EXPECT_EQ(CountOpenFds() - before, expected);
  n.reset();
  EXPECT_EQ(CountOpenFds(), before);
}

TEST_P(NotifierBackendTest, SendBeforeWaitIsReceived) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  uint64_t t = n->Prepare();
  ASSERT_TRUE(n->Send(t, -42).ok());
  int r = 0;
  ASSERT_TRUE(n->Wait(&r).ok());
  EXPECT_EQ(r, -42);
}

TEST_P(NotifierBackendTest, WaiterSleepsUntilSend) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  uint64_t t = n->Prepare();
  int r = 0;
  Status waited;
  std::thread waiter([&] { waited = n->Wait(&r); });
  SpinUntil([&] { return n->waiter_sleeping(); });
  ASSERT_TRUE(n->Send(t, 123456).ok());
  waiter.join();
  ASSERT_TRUE(waited.ok()) << waited.ToString();
  EXPECT_EQ(r, 123456);
  EXPECT_FALSE(n->waiter_sleeping());
}

TEST_P(NotifierBackendTest, WaitForSleepsUntilSend) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  uint64_t t = n->Prepare();
  int r = 0;
  Status waited;
  std::thread waiter([&] { waited = n->WaitFor(60 * 1000 * 1000, &r); });
  SpinUntil([&] { return n->waiter_sleeping(); });
  ASSERT_TRUE(n->Send(t, 77).ok());
  waiter.join();
  ASSERT_TRUE(waited.ok()) << waited.ToString();
  EXPECT_EQ(r, 77);
}

TEST_P(NotifierBackendTest, WaitNeedsAnArmedTicket) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  int r = 5;
  EXPECT_TRUE(n->Wait(&r).IsInvalidArgument());
  EXPECT_TRUE(n->WaitFor(0, &r).IsInvalidArgument());
  uint64_t t = n->Prepare();
  ASSERT_TRUE(n->Send(t, 9).ok());
  ASSERT_TRUE(n->Wait(&r).ok());
  EXPECT_EQ(r, 9);
  // Collected: the same result is never handed out twice.
  r = 5;
  EXPECT_TRUE(n->Wait(&r).IsInvalidArgument());
  EXPECT_EQ(r, 5);
}

TEST_P(NotifierBackendTest, TimeoutLeavesResultUntouchedAndTicketArmed) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  uint64_t t = n->Prepare();
  int r = 5;
  EXPECT_TRUE(n->WaitFor(0, &r).IsTimeout());
  EXPECT_TRUE(n->WaitFor(2000, &r).IsTimeout());  // sleeps, then gives up
  EXPECT_EQ(r, 5);
  EXPECT_FALSE(n->waiter_sleeping());
  // Still armed: a Send now is kept for the next wait on this ticket.
  ASSERT_TRUE(n->Send(t, 8).ok());
  ASSERT_TRUE(n->WaitFor(0, &r).ok());
  EXPECT_EQ(r, 8);
}

TEST_P(NotifierBackendTest, LateSendToStaleTicketIsRejected) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  uint64_t old_ticket = n->Prepare();
  int r = 0;
  ASSERT_TRUE(n->WaitFor(1000, &r).IsTimeout());
  // The Notifier moves on to its next use before the old answer arrives.
  uint64_t ticket = n->Prepare();
  EXPECT_NE(ticket, old_ticket);
  EXPECT_TRUE(n->Send(old_ticket, 111).IsNotFound());
  EXPECT_TRUE(n->WaitFor(0, &r).IsTimeout());
  ASSERT_TRUE(n->Send(ticket, 222).ok());
  ASSERT_TRUE(n->Wait(&r).ok());
  EXPECT_EQ(r, 222);
}

TEST_P(NotifierBackendTest, PrepareDiscardsAnUncollectedResult) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  uint64_t old_ticket = n->Prepare();
  int r = 0;
  ASSERT_TRUE(n->WaitFor(1000, &r).IsTimeout());
  ASSERT_TRUE(n->Send(old_ticket, 111).ok());  // late, but the ticket was still armed
  uint64_t ticket = n->Prepare();              // next use: the late result must vanish
  EXPECT_TRUE(n->WaitFor(1000, &r).IsTimeout());
  ASSERT_TRUE(n->Send(ticket, 222).ok());
  ASSERT_TRUE(n->Wait(&r).ok());
  EXPECT_EQ(r, 222);
}

TEST_P(NotifierBackendTest, OnlyTheFirstSendOfATicketCounts) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  uint64_t t = n->Prepare();
  ASSERT_TRUE(n->Send(t, 1).ok());
  EXPECT_TRUE(n->Send(t, 2).IsNotFound());
  EXPECT_TRUE(n->Send(2).IsNotFound());
  int r = 0;
  ASSERT_TRUE(n->Wait(&r).ok());
  EXPECT_EQ(r, 1);
}

TEST_P(NotifierBackendTest, SendWithoutTicketTargetsTheArmedOne) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  EXPECT_TRUE(n->Send(3).IsNotFound());  // nothing armed
  n->Prepare();
  ASSERT_TRUE(n->Send(3).ok());
  int r = 0;
  ASSERT_TRUE(n->Wait(&r).ok());
  EXPECT_EQ(r, 3);
}

TEST_P(NotifierBackendTest, NegativeTimeoutIsInvalid) {
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  n->Prepare();
  int r = 0;
  EXPECT_TRUE(n->WaitFor(-1, &r).IsInvalidArgument());
}

// 100,000 distinct results, in order, between two threads. The consumer arms
// a ticket and posts it in a mailbox; the producer answers with the round's
// value. Whether the consumer sleeps or finds the result ready varies.
TEST_P(NotifierBackendTest, PingPongCarriesDistinctResultsInOrder) {
  constexpr int kRounds = 100000;
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  auto value_of = [](int i) { return i % 2 == 0 ? i * 3 + 1 : -i; };

  // round << 32 | ticket; 0 = empty.
  std::atomic<uint64_t> mailbox{0};
  std::atomic<int> send_failures{0};
  std::thread producer([&] {
    for (int i = 1; i <= kRounds; i++) {
      uint64_t m;
      SpinUntil([&] {
        m = mailbox.load(std::memory_order_acquire);
        return (m >> 32) == static_cast<uint64_t>(i);
      });
      if (!n->Send(m & 0xffffffffu, value_of(i)).ok()) send_failures++;
    }
  });
  int wrong = 0;
  for (int i = 1; i <= kRounds; i++) {
    uint64_t t = n->Prepare();
    mailbox.store((static_cast<uint64_t>(i) << 32) | t, std::memory_order_release);
    int r = 0;
    Status s = n->Wait(&r);
    if (!s.ok() || r != value_of(i)) {
      if (wrong++ == 0) ADD_FAILURE() << "round " << i << ": " << s.ToString() << " r=" << r;
    }
  }
  producer.join();
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(send_failures.load(), 0);
}

// Short timeouts racing with Sends: every result a waiter accepts must be
// the answer to its own current ticket, never to an older one.
TEST_P(NotifierBackendTest, RacingTimeoutsNeverYieldAStaleResult) {
  constexpr int kRounds = 3000;
  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  auto answer_to = [](uint64_t ticket) { return -static_cast<int>(ticket) - 1; };

  std::atomic<uint64_t> mailbox{0};  // latest ticket + 1; 0 = none yet
  std::atomic<bool> done{false};
  std::thread sender([&] {
    std::mt19937 rng(1);
    uint64_t last = 0;
    while (!done.load(std::memory_order_acquire)) {
      uint64_t m = mailbox.load(std::memory_order_acquire);
      if (m == 0 || m == last) {
        std::this_thread::yield();
        continue;
      }
      last = m;
      if (rng() % 4 == 0) std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      n->Send(m - 1, answer_to(m - 1));  // may be stale by now: that is the point
    }
  });
  std::mt19937 rng(2);
  int wrong = 0;
  for (int i = 0; i < kRounds; i++) {
    uint64_t t = n->Prepare();
    mailbox.store(t + 1, std::memory_order_release);
    int r = 0;
    Status s = n->WaitFor(rng() % 200, &r);
    if (s.ok() && r != answer_to(t)) wrong++;
    if (!s.ok() && !s.IsTimeout()) ADD_FAILURE() << s.ToString();
  }
  done.store(true, std::memory_order_release);
  sender.join();
  EXPECT_EQ(wrong, 0);
}

std::atomic<int> signals_seen{0};
void CountSignal(int) { signals_seen.fetch_add(1, std::memory_order_relaxed); }

// Signals interrupt the sleeping waiter (no SA_RESTART, so the kernel
// returns EINTR); Wait must retry and still deliver the result.
TEST_P(NotifierBackendTest, SignalsDuringWaitAreRetried) {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof(sa));
  sa.sa_handler = CountSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART
  struct sigaction old;
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);

  std::unique_ptr<Notifier> n = MustCreate(GetParam());
  for (bool with_timeout : {false, true}) {
    uint64_t t = n->Prepare();
    int r = 0;
    Status waited;
    std::thread waiter([&] {
      waited = with_timeout ? n->WaitFor(60 * 1000 * 1000, &r) : n->Wait(&r);
    });
    SpinUntil([&] { return n->waiter_sleeping(); });
    int before = signals_seen.load();
    for (int i = 0; i < 3; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      pthread_kill(waiter.native_handle(), SIGUSR1);
    }
    SpinUntil([&] { return signals_seen.load() >= before + 1; });
    ASSERT_TRUE(n->Send(t, 31337).ok());
    waiter.join();
    EXPECT_TRUE(waited.ok()) << waited.ToString();
    EXPECT_EQ(r, 31337);
  }
  sigaction(SIGUSR1, &old, nullptr);
}

TEST(NotifierTest, AutoPrefersEventfd) {
  std::unique_ptr<Notifier> n = MustCreate(NotifierBackend::kAuto);
  EXPECT_EQ(n->backend(), NotifierBackend::kEventfd);
  EXPECT_EQ(n->fd_count(), 1);
}

TEST(NotifierTest, FallsBackToPipeWhenEventfdFails) {
  ScopedEventfdFailureForTesting no_eventfd(ENOSYS);
  std::unique_ptr<Notifier> n = MustCreate(NotifierBackend::kAuto);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->backend(), NotifierBackend::kPipe);
  EXPECT_EQ(n->fd_count(), 2);

  // And it works, across threads, sleeping or not.
  uint64_t t = n->Prepare();
  int r = 0;
  Status waited;
  std::thread waiter([&] { waited = n->Wait(&r); });
  SpinUntil([&] { return n->waiter_sleeping(); });
  ASSERT_TRUE(n->Send(t, 4242).ok());
  waiter.join();
  ASSERT_TRUE(waited.ok());
  EXPECT_EQ(r, 4242);
  t = n->Prepare();
  ASSERT_TRUE(n->Send(t, 4343).ok());
  ASSERT_TRUE(n->Wait(&r).ok());
  EXPECT_EQ(r, 4343);
}

TEST(NotifierTest, ForcedEventfdReportsTheFailure) {
  ScopedEventfdFailureForTesting no_eventfd(EMFILE);
  std::unique_ptr<Notifier> n;
  Status s = Notifier::Create(NotifierBackend::kEventfd, &n);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_NE(s.message().find("eventfd"), std::string::npos) << s.ToString();
  EXPECT_EQ(n, nullptr);
}

TEST(NotifierTest, NoFdBackendAvailableIsAnErrorNotACrash) {
  ScopedEventfdFailureForTesting no_eventfd(EMFILE);
  ScopedPipeFailureForTesting no_pipe(EMFILE);
  std::unique_ptr<Notifier> n;
  Status s = Notifier::Create(NotifierBackend::kAuto, &n);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(n, nullptr);
  // The futex backend needs no fd.
  EXPECT_TRUE(Notifier::Create(NotifierBackend::kFutex, &n).ok());
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->fd_count(), 0);
}

TEST(NotifierTest, SeamScopeEnds) {
  {
    ScopedEventfdFailureForTesting no_eventfd(ENOSYS);
  }
  std::unique_ptr<Notifier> n = MustCreate(NotifierBackend::kAuto);
  EXPECT_EQ(n->backend(), NotifierBackend::kEventfd);
}

TEST(NotifierTest, BackendNamesRoundTrip) {
  for (NotifierBackend b : {NotifierBackend::kAuto, NotifierBackend::kEventfd,
                            NotifierBackend::kPipe, NotifierBackend::kFutex}) {
    NotifierBackend parsed = NotifierBackend::kAuto;
    ASSERT_TRUE(ParseNotifierBackend(NotifierBackendName(b), &parsed).ok());
    EXPECT_EQ(parsed, b);
  }
  NotifierBackend parsed;
  EXPECT_TRUE(ParseNotifierBackend("carrier-pigeon", &parsed).IsInvalidArgument());
}

}  // namespace
}  // namespace notifier_test
}  // namespace chorus
