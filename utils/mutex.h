// Mutex, SharedMutex, MutexLock, ReaderMutexLock, WriterMutexLock, CondVar:
// std::mutex / std::shared_mutex / std::condition_variable with clang's
// thread-safety annotations, so that which lock guards which field is checked
// by the compiler (configure with -DCHORUS_THREAD_SAFETY=ON, clang only: it
// adds -Wthread-safety -Werror=thread-safety).
//
//   class Queue {
//    public:
//     void Push(int v) EXCLUDES(mu_) {
//       MutexLock lock(&mu_);
//       items_.push_back(v);
//       wake_.Signal();
//     }
//     int Pop() EXCLUDES(mu_) {
//       MutexLock lock(&mu_);
//       while (items_.empty()) wake_.Wait(&mu_);
//       return PopLocked();
//     }
//    private:
//     int PopLocked() REQUIRES(mu_);
//     Mutex mu_;
//     CondVar wake_;                      // items_ non-empty
//     std::deque<int> items_ GUARDED_BY(mu_);
//   };
//
// The annotations are attributes the analysis reads; they generate no code
// and expand to nothing on compilers other than clang. The wrappers cost
// nothing over the std types they hold.
//
// Predicate waits: the predicate runs with the mutex held, but the analysis
// checks a lambda's body as a function of its own, so a predicate that reads
// guarded fields says so:
//   wake_.Wait(&mu_, [this]() REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
// (or the equivalent loop: while (!stopping_ && queue_.empty()) wake_.Wait(&mu_);).
//
// Thread safety: every type here is for use by many threads at once, as its
// std counterpart is; a MutexLock belongs to the thread that made it.

#ifndef CHORUS_UTILS_MUTEX_H_
#define CHORUS_UTILS_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

// ---- the attributes (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html) ----
#if defined(__clang__)
#define CHORUS_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define CHORUS_THREAD_ANNOTATION(x)  // GCC has no thread-safety analysis
#endif

// A class that is a lock (Mutex, SharedMutex).
#define CAPABILITY(x) CHORUS_THREAD_ANNOTATION(capability(x))
// A class whose object holds a lock for its lifetime (MutexLock).
#define SCOPED_CAPABILITY CHORUS_THREAD_ANNOTATION(scoped_lockable)
// A field read and written only with the lock held.
#define GUARDED_BY(x) CHORUS_THREAD_ANNOTATION(guarded_by(x))
// A pointer field whose pointee is read and written only with the lock held.
#define PT_GUARDED_BY(x) CHORUS_THREAD_ANNOTATION(pt_guarded_by(x))
// This lock is always taken after / before those (deadlock order).
#define ACQUIRED_AFTER(...) CHORUS_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define ACQUIRED_BEFORE(...) CHORUS_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
// The caller holds the lock (exclusively / at least shared) on entry and exit.
#define REQUIRES(...) CHORUS_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) CHORUS_THREAD_ANNOTATION(requires_shared_capability(__VA_ARGS__))
// The function takes / gives back the lock (the caller does not / does hold it).
#define ACQUIRE(...) CHORUS_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) CHORUS_THREAD_ANNOTATION(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) CHORUS_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) CHORUS_THREAD_ANNOTATION(release_shared_capability(__VA_ARGS__))
#define RELEASE_GENERIC(...) CHORUS_THREAD_ANNOTATION(release_generic_capability(__VA_ARGS__))
// Takes the lock when it returns the first argument (true / false).
#define TRY_ACQUIRE(...) CHORUS_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define TRY_ACQUIRE_SHARED(...) CHORUS_THREAD_ANNOTATION(try_acquire_shared_capability(__VA_ARGS__))
// The caller must not hold the lock (the function takes it itself).
#define EXCLUDES(...) CHORUS_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// Tells the analysis the lock is held here (what it cannot see for itself).
#define ASSERT_CAPABILITY(x) CHORUS_THREAD_ANNOTATION(assert_capability(x))
#define ASSERT_SHARED_CAPABILITY(x) CHORUS_THREAD_ANNOTATION(assert_shared_capability(x))
// The function returns a reference to this lock.
#define RETURN_CAPABILITY(x) CHORUS_THREAD_ANNOTATION(lock_returned(x))
// The analysis skips this function (say why next to it).
#define NO_THREAD_SAFETY_ANALYSIS CHORUS_THREAD_ANNOTATION(no_thread_safety_analysis)

namespace chorus {

class CondVar;

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Takes the lock if it is free; true when it did.
  bool TryLock() TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the calling thread holds this lock (it is not
  // checked at run time: std::mutex does not know its owner). For code the
  // analysis cannot follow, e.g. a callback the owner runs under its lock.
  void AssertHeld() const ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// A readers-writer lock: many holders in shared mode, or one in exclusive mode.
class CAPABILITY("shared_mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void ReaderLock() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void ReaderUnlock() RELEASE_SHARED() { mu_.unlock_shared(); }
  void AssertHeld() const ASSERT_CAPABILITY(this) {}
  void AssertReaderHeld() const ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds `mu` from construction to destruction. Unlock() / Lock() give it up
// and take it again in between (the destructor releases it only if held).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() {
    if (locked_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    locked_ = false;
    mu_->Unlock();
  }
  void Lock() ACQUIRE() {
    mu_->Lock();
    locked_ = true;
  }

 private:
  Mutex* const mu_;
  bool locked_ = true;
};

// Holds `mu` exclusively for its lifetime.
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() { mu_->Unlock(); }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds `mu` in shared mode for its lifetime.
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->ReaderLock(); }
  ~ReaderMutexLock() RELEASE() { mu_->ReaderUnlock(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// A condition variable for a Mutex. Every wait takes the Mutex the caller
// holds (the analysis checks that it is held); it is released while waiting
// and held again when the wait returns. Waits may wake spuriously: wait in a
// loop on the condition, or pass it as the predicate.
class CondVar {
 public:
  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // the caller's lock: still held, and the caller's to release
  }
  // Waits until ready() (run with `mu` held) is true.
  //
  // The predicate waits are not analysed inside: ready() requires the
  // caller's lock under the caller's name for it, which the analysis cannot
  // match with `mu` here. Their callers are checked (REQUIRES(mu)), and so is
  // the predicate's own body when it is annotated REQUIRES.
  template <class Predicate>
  void Wait(Mutex* mu, Predicate ready) REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    while (!ready()) Wait(mu);
  }
  // Waits until signalled or `timeout` passed: false when it timed out.
  template <class Rep, class Period>
  bool WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_for(lock, timeout) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  // Waits until ready() or `timeout` passed; returns ready().
  template <class Rep, class Period, class Predicate>
  bool WaitFor(Mutex* mu, const std::chrono::duration<Rep, Period>& timeout, Predicate ready)
      REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    return WaitUntil(mu, std::chrono::steady_clock::now() + timeout, ready);
  }
  // Waits until ready() or the clock reads `deadline`; returns ready().
  template <class Clock, class Duration, class Predicate>
  bool WaitUntil(Mutex* mu, const std::chrono::time_point<Clock, Duration>& deadline,
                 Predicate ready) REQUIRES(mu) NO_THREAD_SAFETY_ANALYSIS {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    while (!ready()) {
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout) break;
    }
    const bool result = ready();
    lock.release();
    return result;
  }

  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace chorus

#endif  // CHORUS_UTILS_MUTEX_H_
