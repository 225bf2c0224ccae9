#include "utils/notifier_pool.h"

#include <dirent.h>

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "unittest/support/test_util.h"

namespace chorus {
namespace notifier_pool_test {
namespace {

using testing::CountOpenFds;

Notifier* MustGet(NotifierPool* pool) {
  Notifier* n = nullptr;
  Status s = pool->Get(&n);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return n;
}

TEST(NotifierPoolTest, SameThreadGetsSameNotifier) {
  NotifierPool pool(NotifierBackend::kPipe);
  Notifier* a = MustGet(&pool);
  Notifier* b = MustGet(&pool);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->backend(), NotifierBackend::kPipe);
  EXPECT_EQ(pool.created(), 1u);
}

TEST(NotifierPoolTest, LiveThreadsGetDistinctNotifiers) {
  constexpr int kThreads = 4;
  NotifierPool pool;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  std::vector<Notifier*> got(kThreads, nullptr);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; i++) {
    threads.emplace_back([&, i] {
      got[i] = MustGet(&pool);
      // Stay alive until everyone has one, so none can be recycled.
      std::unique_lock<std::mutex> lock(mu);
      arrived++;
      cv.notify_all();
      cv.wait(lock, [&] { return arrived == kThreads; });
    });
  }
  for (auto& t : threads) t.join();
  std::set<Notifier*> distinct(got.begin(), got.end());
  EXPECT_EQ(distinct.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(distinct.count(nullptr), 0u);
  EXPECT_EQ(pool.created(), static_cast<size_t>(kThreads));
  EXPECT_EQ(pool.free_count(), static_cast<size_t>(kThreads));
}

TEST(NotifierPoolTest, ExitedThreadsNotifierIsReused) {
  NotifierPool pool;
  Notifier* first = nullptr;
  std::thread([&] { first = MustGet(&pool); }).join();
  EXPECT_EQ(pool.free_count(), 1u);
  Notifier* second = nullptr;
  std::thread([&] {
    second = MustGet(&pool);
    // Reused, and usable by its new owner.
    uint64_t t = second->Prepare();
    ASSERT_TRUE(second->Send(t, 6).ok());
    int r = 0;
    ASSERT_TRUE(second->Wait(&r).ok());
    EXPECT_EQ(r, 6);
  }).join();
  EXPECT_EQ(first, second);
  EXPECT_EQ(pool.created(), 1u);
}

TEST(NotifierPoolTest, OneNotifierPerPoolPerThread) {
  NotifierPool p1, p2;
  Notifier* a = MustGet(&p1);
  Notifier* b = MustGet(&p2);
  EXPECT_NE(a, b);
  EXPECT_EQ(MustGet(&p1), a);  // switching pools does not lose the first one
  EXPECT_EQ(MustGet(&p2), b);
}

TEST(NotifierPoolTest, NewPoolNeverAliasesADeadOne) {
  auto p1 = std::make_unique<NotifierPool>();
  Notifier* a = MustGet(p1.get());
  p1.reset();
  // A new pool may well reuse p1's address; it must still hand out its own.
  auto p2 = std::make_unique<NotifierPool>();
  Notifier* b = MustGet(p2.get());
  EXPECT_NE(a, b);
  EXPECT_EQ(p2->created(), 1u);
  // `a` belongs to this thread until it exits: still usable.
  uint64_t t = a->Prepare();
  ASSERT_TRUE(a->Send(t, 1).ok());
  int r = 0;
  ASSERT_TRUE(a->Wait(&r).ok());
  EXPECT_EQ(r, 1);
}

TEST(NotifierPoolTest, PoolDestroyedWhileThreadsHoldNotifiers) {
  const int base_fds = CountOpenFds();
  auto pool = std::make_unique<NotifierPool>(NotifierBackend::kPipe);
  std::thread([&] { MustGet(pool.get()); }).join();  // one on the free list

  std::mutex mu;
  std::condition_variable cv;
  bool got = false, destroyed = false;
  int result = 0;
  std::thread holder([&] {
    Notifier* n = MustGet(pool.get());  // takes the free one
    {
      std::unique_lock<std::mutex> lock(mu);
      got = true;
      cv.notify_all();
      cv.wait(lock, [&] { return destroyed; });
    }
    // The pool is gone; this thread's Notifier still works.
    uint64_t t = n->Prepare();
    std::thread sender([&] { n->Send(t, 99); });
    n->Wait(&result);
    sender.join();
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return got; });
  }
  Notifier* mine = MustGet(pool.get());  // a second one, owned by this thread
  ASSERT_NE(mine, nullptr);
  pool.reset();
  {
    std::lock_guard<std::mutex> lock(mu);
    destroyed = true;
    cv.notify_all();
  }
  holder.join();
  EXPECT_EQ(result, 99);
  // The holder's Notifier was closed at its exit; only this thread's remains.
  EXPECT_EQ(CountOpenFds() - base_fds, mine->fd_count());
}

TEST(NotifierPoolTest, DefaultPoolIsSharedAndWorks) {
  NotifierPool* pool = NotifierPool::Default();
  ASSERT_NE(pool, nullptr);
  EXPECT_EQ(NotifierPool::Default(), pool);
  Notifier* n = MustGet(pool);
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->backend(), NotifierBackend::kEventfd);
  uint64_t t = n->Prepare();
  int r = 0;
  std::thread([&] { n->Send(t, -5); }).join();
  ASSERT_TRUE(n->Wait(&r).ok());
  EXPECT_EQ(r, -5);
}

// 10,000 short-lived threads each wait once for a result from a sender
// thread. Their Notifiers must be recycled: open fds stay bounded by the
// number of threads alive at once, not by the number of threads ever run.
TEST(NotifierPoolTest, ShortLivedThreadsDoNotLeakFds) {
  constexpr int kThreads = 10000;
  constexpr int kWave = 16;  // threads alive at once
  const int base_fds = CountOpenFds();
  auto pool = std::make_unique<NotifierPool>(NotifierBackend::kAuto);

  struct Request {
    Notifier* n;
    uint64_t ticket;
    int value;
  };
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Request> requests;  // GUARDED_BY(mu)
  bool stop = false;             // GUARDED_BY(mu)
  std::thread sender([&] {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || !requests.empty(); });
      if (requests.empty()) return;
      Request req = requests.front();
      requests.pop_front();
      lock.unlock();
      req.n->Send(req.ticket, req.value);
      lock.lock();
    }
  });

  std::atomic<int> correct{0};
  int peak_fds = 0;
  for (int started = 0; started < kThreads; started += kWave) {
    std::vector<std::thread> wave;
    for (int i = started; i < started + kWave && i < kThreads; i++) {
      wave.emplace_back([&, i] {
        Notifier* n = nullptr;
        if (!pool->Get(&n).ok()) return;
        uint64_t t = n->Prepare();
        {
          std::lock_guard<std::mutex> lock(mu);
          requests.push_back(Request{n, t, i});
        }
        cv.notify_all();
        int r = -1;
        if (n->Wait(&r).ok() && r == i) correct++;
      });
    }
    for (auto& t : wave) t.join();
    peak_fds = std::max(peak_fds, CountOpenFds() - base_fds);
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    stop = true;
  }
  cv.notify_all();
  sender.join();

  EXPECT_EQ(correct.load(), kThreads);
  EXPECT_LE(pool->created(), static_cast<size_t>(kWave));
  EXPECT_EQ(pool->free_count(), pool->created());
  EXPECT_LE(peak_fds, 2 * kWave);  // at most a pipe per concurrent thread
  pool.reset();
  EXPECT_EQ(CountOpenFds(), base_fds);  // destroying the pool closed them all
}

}  // namespace
}  // namespace notifier_pool_test
}  // namespace chorus
