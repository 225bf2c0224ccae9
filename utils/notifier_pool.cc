#include "utils/mutex.h"
#include "utils/notifier_pool.h"

#include <atomic>
#include <utility>
#include <vector>

namespace chorus {

struct NotifierPool::State {
  State(NotifierBackend b, uint64_t pool_id) : backend(b), id(pool_id) {}

  const NotifierBackend backend;
  // Unique per pool for the life of the process (never reused, unlike an
  // address), so a thread's cache can never mistake a new pool for a dead one.
  const uint64_t id;

  mutable Mutex mu;
  std::vector<std::unique_ptr<Notifier>> free_list GUARDED_BY(mu);
  size_t created GUARDED_BY(mu) = 0;
  std::vector<std::unique_ptr<NotifierGate>> free_gates GUARDED_BY(mu);
  size_t gates_created GUARDED_BY(mu) = 0;
  bool pool_alive GUARDED_BY(mu) = true;
};

namespace {

std::atomic<uint64_t> next_pool_id{1};

// One thread's Notifiers, one per pool it called Get on. Destroyed at thread
// exit, which hands each Notifier back to its pool (or closes it when the
// pool is gone). Only its own thread touches it: no lock.
class ThreadCache {
 public:
  struct Slot {
    uint64_t pool_id;
    std::shared_ptr<NotifierPool::State> state;  // keeps the free list alive
    std::unique_ptr<Notifier> notifier;
  };

  ThreadCache() = default;
  ~ThreadCache();
  ThreadCache(const ThreadCache&) = delete;
  ThreadCache& operator=(const ThreadCache&) = delete;

  Notifier* Find(uint64_t pool_id) const {
    for (const Slot& slot : slots_) {
      if (slot.pool_id == pool_id) return slot.notifier.get();
    }
    return nullptr;
  }
  void Add(Slot slot) { slots_.push_back(std::move(slot)); }

 private:
  std::vector<Slot> slots_;  // usually one entry
};

// The hot path: the last pool this thread used and its Notifier. Trivially
// destructible, so reading them costs no TLS init guard.
thread_local uint64_t last_pool_id = 0;
thread_local Notifier* last_notifier = nullptr;
// Set once the ThreadCache of this thread is gone (thread exit), so a Get from
// a later thread-local destructor cannot touch it.
thread_local bool cache_destroyed = false;
thread_local ThreadCache cache;

ThreadCache::~ThreadCache() {
  last_pool_id = 0;
  last_notifier = nullptr;
  cache_destroyed = true;
  for (Slot& slot : slots_) {
    std::unique_ptr<Notifier> doomed;
    {
      MutexLock lock(&slot.state->mu);
      if (slot.state->pool_alive) {
        slot.state->free_list.push_back(std::move(slot.notifier));
      } else {
        doomed = std::move(slot.notifier);  // closed below, outside the lock
      }
    }
  }
}

}  // namespace

NotifierPool::NotifierPool(NotifierBackend backend)
    : state_(std::make_shared<State>(backend, next_pool_id.fetch_add(1))) {}

NotifierPool::~NotifierPool() {
  std::vector<std::unique_ptr<Notifier>> doomed;
  std::vector<std::unique_ptr<NotifierGate>> doomed_gates;
  {
    MutexLock lock(&state_->mu);
    state_->pool_alive = false;
    doomed.swap(state_->free_list);
    doomed_gates.swap(state_->free_gates);
  }
  // `doomed` closes the free Notifiers here. Threads still holding one keep
  // the state alive through their cache and close theirs when they exit.
}

NotifierPool* NotifierPool::Default() {
  static NotifierPool* const pool = new NotifierPool(NotifierBackend::kAuto);
  return pool;
}

Status NotifierPool::Get(Notifier** out) {
  const uint64_t id = state_->id;
  if (last_pool_id == id) {
    *out = last_notifier;
    return Status::OK();
  }
  if (cache_destroyed) return Status::Stopped("notifier pool: the calling thread is exiting");

  Notifier* n = cache.Find(id);
  if (n == nullptr) {
    std::unique_ptr<Notifier> fresh;
    {
      MutexLock lock(&state_->mu);
      if (!state_->free_list.empty()) {
        fresh = std::move(state_->free_list.back());
        state_->free_list.pop_back();
      }
    }
    if (fresh == nullptr) {
      // Created outside the lock: eventfd()/pipe() are system calls.
      Status s = Notifier::Create(state_->backend, &fresh);
      if (!s.ok()) return s;
      MutexLock lock(&state_->mu);
      state_->created++;
    }
    n = fresh.get();
    cache.Add(ThreadCache::Slot{id, state_, std::move(fresh)});
  }
  last_pool_id = id;
  last_notifier = n;
  *out = n;
  return Status::OK();
}

Status NotifierPool::GetGate(std::shared_ptr<NotifierGate>* out) {
  std::unique_ptr<NotifierGate> gate;
  {
    MutexLock lock(&state_->mu);
    if (!state_->free_gates.empty()) {
      gate = std::move(state_->free_gates.back());
      state_->free_gates.pop_back();
    }
  }
  if (gate == nullptr) {
    Status s = NotifierGate::Create(state_->backend, &gate);  // a system call: outside the lock
    if (!s.ok()) return s;
    MutexLock lock(&state_->mu);
    state_->gates_created++;
  }
  // The deleter holds the pool's state, so a gate outliving its pool is
  // simply closed.
  std::shared_ptr<State> state = state_;
  out->reset(gate.release(), [state](NotifierGate* used) {
    std::unique_ptr<NotifierGate> owned(used);
    if (!owned->Reset().ok()) return;  // a gate the kernel failed is not reused
    MutexLock lock(&state->mu);
    if (state->pool_alive && state->free_gates.size() < kMaxFreeGates) {
      state->free_gates.push_back(std::move(owned));
    }
    // Otherwise `owned` closes it, after the lock is released (declared
    // first, destroyed last).
  });
  return Status::OK();
}

size_t NotifierPool::gates_created() const {
  MutexLock lock(&state_->mu);
  return state_->gates_created;
}

size_t NotifierPool::free_gate_count() const {
  MutexLock lock(&state_->mu);
  return state_->free_gates.size();
}

size_t NotifierPool::created() const {
  MutexLock lock(&state_->mu);
  return state_->created;
}

size_t NotifierPool::free_count() const {
  MutexLock lock(&state_->mu);
  return state_->free_list.size();
}

}  // namespace chorus
