// NotifierPool: gives each waiting thread its own reusable Notifier.
//
//   Notifier* n;
//   Status s = NotifierPool::Default()->Get(&n);  // this thread's Notifier
//   uint64_t t = n->Prepare();
//   ... hand (n, t) to the thread that answers, then n->WaitFor(...)
//
// The first Get of a thread takes a Notifier from the pool's free list (or
// creates one); later Gets of that thread return the same Notifier from a
// thread-local cache without taking any lock. When the thread exits, its
// Notifier goes back to the free list, so the number of Notifiers (and fds)
// a pool ever creates is bounded by the peak number of threads that used it
// at the same time.
//
// Lifetime: the pool's shared state is reference-counted by the pool and by
// every thread that got a Notifier from it. Destroying the pool closes the
// Notifiers on its free list; a Notifier held by a live thread stays valid
// (the thread may keep using it) until that thread exits, and is closed then.
//
// Thread safety: Get may be called from any number of threads at once.
// A pool must not be destroyed while another thread is inside its Get.

#ifndef CHORUS_UTILS_NOTIFIER_POOL_H_
#define CHORUS_UTILS_NOTIFIER_POOL_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "utils/notifier.h"
#include "utils/notifier_gate.h"
#include "utils/status.h"

namespace chorus {

class NotifierPool {
 public:
  // Notifiers are created with `backend` (kAuto: eventfd, pipe fallback).
  explicit NotifierPool(NotifierBackend backend = NotifierBackend::kAuto);
  ~NotifierPool();
  NotifierPool(const NotifierPool&) = delete;
  NotifierPool& operator=(const NotifierPool&) = delete;

  // The process-wide pool (kAuto backend). Never destroyed, so it is usable
  // from any thread at any time, including during static destruction.
  static NotifierPool* Default();

  // Sets *out to the calling thread's Notifier of this pool. The pointer
  // stays valid until the calling thread exits; only the calling thread may
  // Prepare/Wait on it (any thread may Send to it).
  // Returns OK, or the IOError of Notifier::Create (no Notifier was free and
  // a new one could not be created, e.g. out of fds); *out untouched then.
  Status Get(Notifier** out);

  // Sets *out to a closed NotifierGate for one use: many threads wait on it
  // and one Open releases them all (a BatchPropose batch). The use ends when
  // the last copy of *out is dropped: the gate is then Reset and goes back to
  // the pool's free list (or is closed, past kMaxFreeGates, or when the pool
  // is gone), so gates are reused without a system call to make one.
  // Returns OK, or the IOError of NotifierGate::Create (*out untouched).
  // Thread safe; the shared_ptr may be dropped on any thread.
  Status GetGate(std::shared_ptr<NotifierGate>* out);

  // Free gates kept for reuse, at most; one fd each (two with pipes). The
  // gates in use are bounded by what uses them (BatchPropose: the batches
  // pending and in flight); this only bounds what an idle pool holds after
  // a burst. 256 covers a node of 16 groups with 16 batches in flight each.
  static constexpr size_t kMaxFreeGates = 256;

  // Statistics, for tests and monitoring. Thread safe.
  // Notifiers this pool has created so far (in use + free).
  size_t created() const;
  // Notifiers on the free list now.
  size_t free_count() const;
  // Gates this pool has created so far, and those on its free list now.
  size_t gates_created() const;
  size_t free_gate_count() const;

  // Implementation detail, shared with the thread-local caches.
  struct State;

 private:
  const std::shared_ptr<State> state_;
};

}  // namespace chorus

#endif  // CHORUS_UTILS_NOTIFIER_POOL_H_
