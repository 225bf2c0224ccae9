// NotifierGate (one Open releases every waiter) on each backend, and the
// gates of NotifierPool (reuse, the free-list bound, outliving the pool).
#include "utils/notifier_gate.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "unittest/support/test_util.h"
#include "utils/notifier_pool.h"

namespace chorus {
namespace notifier_gate_test {
namespace {

using testing::CountOpenFds;
using testing::WaitUntil;

std::unique_ptr<NotifierGate> MustCreate(NotifierBackend backend) {
  std::unique_ptr<NotifierGate> gate;
  Status s = NotifierGate::Create(backend, &gate);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return gate;
}

class NotifierGateTest : public ::testing::TestWithParam<NotifierBackend> {};

TEST_P(NotifierGateTest, AClosedGateTimesOutAndAnOpenOneReturnsAtOnce) {
  auto gate = MustCreate(GetParam());
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->backend(), GetParam());
  EXPECT_FALSE(gate->is_open());
  EXPECT_TRUE(gate->WaitFor(0).IsTimeout());
  EXPECT_TRUE(gate->WaitFor(2000).IsTimeout());
  EXPECT_TRUE(gate->WaitFor(-2).IsInvalidArgument());
  EXPECT_EQ(gate->sleepers(), 0u);
  ASSERT_TRUE(gate->Open().ok());
  EXPECT_TRUE(gate->is_open());
  EXPECT_TRUE(gate->WaitFor(0).ok());
  EXPECT_TRUE(gate->WaitFor(-1).ok());
  ASSERT_TRUE(gate->Open().ok());  // a second Open changes nothing
  EXPECT_TRUE(gate->WaitFor(0).ok());
}

TEST_P(NotifierGateTest, OneOpenReleasesEverySleeperWithWhatWasWrittenBeforeIt) {
  constexpr int kWaiters = 8;
  auto gate = MustCreate(GetParam());
  ASSERT_NE(gate, nullptr);
  std::vector<int> answers(kWaiters, 0);  // written before Open, read after the wait
  std::vector<int> seen(kWaiters, -1);
  std::vector<Status> results(kWaiters);
  std::vector<std::thread> waiters;
  for (int i = 0; i < kWaiters; i++) {
    waiters.emplace_back([&, i] {
      // Half without a limit, half with a long one: both sleep in the kernel.
      results[i] = gate->WaitFor(i % 2 == 0 ? -1 : 60 * 1000 * 1000);
      if (results[i].ok()) seen[i] = answers[i];
    });
  }
  ASSERT_TRUE(WaitUntil([&] { return gate->sleepers() == kWaiters; }));
  for (int i = 0; i < kWaiters; i++) answers[i] = 100 + i;
  ASSERT_TRUE(gate->Open().ok());
  for (auto& t : waiters) t.join();
  for (int i = 0; i < kWaiters; i++) {
    EXPECT_TRUE(results[i].ok()) << i << ": " << results[i].ToString();
    EXPECT_EQ(seen[i], 100 + i);
  }
  EXPECT_EQ(gate->sleepers(), 0u);
}

TEST_P(NotifierGateTest, ResetClosesTheGateAndTakesItsTokenForTheNextUse) {
  auto gate = MustCreate(GetParam());
  ASSERT_NE(gate, nullptr);
  for (int use = 0; use < 3; use++) {
    // A sleeper makes Open post a token; after Reset a wait must sleep again
    // (a token left behind would end every later sleep at once).
    std::thread waiter([&] { EXPECT_TRUE(gate->WaitFor(-1).ok()); });
    ASSERT_TRUE(WaitUntil([&] { return gate->sleepers() == 1u; }));
    ASSERT_TRUE(gate->Open().ok());
    waiter.join();
    ASSERT_TRUE(gate->Reset().ok());
    EXPECT_FALSE(gate->is_open());
    EXPECT_TRUE(gate->WaitFor(0).IsTimeout());
    EXPECT_TRUE(gate->WaitFor(3000).IsTimeout());
  }
  // Opened with nobody asleep: no token, and Reset still closes it.
  ASSERT_TRUE(gate->Open().ok());
  ASSERT_TRUE(gate->Reset().ok());
  EXPECT_TRUE(gate->WaitFor(1000).IsTimeout());
}

TEST_P(NotifierGateTest, RacingOpensAndTimeoutsNeverLoseAnOpening) {
  // Waiters with short limits and without one, an opener at a random moment:
  // a waiter without a limit always gets the opening; one that timed out
  // did so while the gate was still closed, or got it on its last look.
  constexpr int kRounds = 200;
  constexpr int kWaiters = 4;
  auto gate = MustCreate(GetParam());
  ASSERT_NE(gate, nullptr);
  std::mt19937 rng(7);
  for (int round = 0; round < kRounds; round++) {
    std::atomic<bool> opened{false};
    std::vector<Status> results(kWaiters);
    // One byte each (not vector<bool>, whose bits share words): every
    // waiter writes its own.
    std::vector<char> opened_before_return(kWaiters, 0);
    std::vector<std::thread> waiters;
    const int delay_us = static_cast<int>(rng() % 300);
    for (int i = 0; i < kWaiters; i++) {
      const int64_t limit = i == 0 ? -1 : static_cast<int64_t>(rng() % 400);
      waiters.emplace_back([&, i, limit] {
        results[i] = gate->WaitFor(limit);
        opened_before_return[i] = opened.load();
      });
    }
    std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
    opened.store(true);
    ASSERT_TRUE(gate->Open().ok());
    for (auto& t : waiters) t.join();
    ASSERT_TRUE(results[0].ok()) << "round " << round << ": " << results[0].ToString();
    for (int i = 0; i < kWaiters; i++) {
      ASSERT_TRUE(results[i].ok() || results[i].IsTimeout()) << results[i].ToString();
      // OK only once the gate opened (the flag is set before Open).
      if (results[i].ok()) {
        EXPECT_TRUE(opened_before_return[i]) << "round " << round;
      }
    }
    ASSERT_EQ(gate->sleepers(), 0u);
    ASSERT_TRUE(gate->Reset().ok());
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, NotifierGateTest,
                         ::testing::Values(NotifierBackend::kEventfd, NotifierBackend::kPipe,
                                           NotifierBackend::kFutex),
                         [](const ::testing::TestParamInfo<NotifierBackend>& info) {
                           return std::string(NotifierBackendName(info.param));
                         });

TEST(NotifierGateCreateTest, AutoFallsBackToAPipeWhenEventfdFails) {
  ScopedEventfdFailureForTesting no_eventfd(EMFILE);
  auto gate = MustCreate(NotifierBackend::kAuto);
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->backend(), NotifierBackend::kPipe);
  std::unique_ptr<NotifierGate> none;
  Status s = NotifierGate::Create(NotifierBackend::kEventfd, &none);
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_EQ(none, nullptr);
}

TEST(NotifierPoolGateTest, AUsedGateComesBackClosedAndIsReused) {
  NotifierPool pool(NotifierBackend::kEventfd);
  std::shared_ptr<NotifierGate> gate;
  ASSERT_TRUE(pool.GetGate(&gate).ok());
  NotifierGate* first = gate.get();
  std::shared_ptr<NotifierGate> copy = gate;  // a second holder (another waiter)
  std::thread waiter([copy] { EXPECT_TRUE(copy->WaitFor(-1).ok()); });
  ASSERT_TRUE(WaitUntil([&] { return gate->sleepers() == 1u; }));
  ASSERT_TRUE(gate->Open().ok());
  waiter.join();
  copy.reset();
  EXPECT_EQ(pool.free_gate_count(), 0u);  // still held
  gate.reset();
  EXPECT_EQ(pool.free_gate_count(), 1u);
  ASSERT_TRUE(pool.GetGate(&gate).ok());
  EXPECT_EQ(gate.get(), first);
  EXPECT_EQ(pool.gates_created(), 1u);
  EXPECT_FALSE(gate->is_open());
  EXPECT_TRUE(gate->WaitFor(2000).IsTimeout());
}

TEST(NotifierPoolGateTest, TheFreeListIsBoundedAndTheRestAreClosed) {
  const int fds_before = CountOpenFds();
  {
    NotifierPool pool(NotifierBackend::kEventfd);
    const size_t n = NotifierPool::kMaxFreeGates + 5;
    std::vector<std::shared_ptr<NotifierGate>> held(n);
    for (auto& g : held) ASSERT_TRUE(pool.GetGate(&g).ok());
    EXPECT_EQ(pool.gates_created(), n);
    EXPECT_EQ(CountOpenFds(), fds_before + static_cast<int>(n));
    held.clear();
    EXPECT_EQ(pool.free_gate_count(), NotifierPool::kMaxFreeGates);
    EXPECT_EQ(CountOpenFds(), fds_before + static_cast<int>(NotifierPool::kMaxFreeGates));
  }
  EXPECT_EQ(CountOpenFds(), fds_before);  // the pool closed its free gates
}

TEST(NotifierPoolGateTest, AGateOutlivesItsPool) {
  const int fds_before = CountOpenFds();
  std::shared_ptr<NotifierGate> gate;
  {
    NotifierPool pool(NotifierBackend::kPipe);
    ASSERT_TRUE(pool.GetGate(&gate).ok());
  }
  ASSERT_TRUE(gate->Open().ok());
  EXPECT_TRUE(gate->WaitFor(0).ok());
  EXPECT_EQ(CountOpenFds(), fds_before + 2);
  gate.reset();  // closed, not returned to the dead pool
  EXPECT_EQ(CountOpenFds(), fds_before);
}

}  // namespace
}  // namespace notifier_gate_test
}  // namespace chorus
