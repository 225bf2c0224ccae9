// GroupTimers: puts a group's timers on the process-wide TimerThread (or,
// in tests, on the TimerScheduler of the RuntimeEnv's hooks).
//
// A timer callback does no protocol work: it only posts an Event into the
// group's queue, so the core stays single-threaded. A GroupTimers is owned
// and used by its group's loop thread only (not thread-safe). The callbacks
// run on the timer thread and only read their own Pending record (which the
// loop frees only once the callback can no longer touch it) and post into the
// thread-safe queue.
#ifndef CHORUS_NODE_GROUP_TIMERS_H_
#define CHORUS_NODE_GROUP_TIMERS_H_

#include <cstdint>
#include <map>
#include <memory>

#include "node/event_queue.h"
#include "node/runtime_env.h"

namespace chorus {

class GroupTimers {
 public:
  // REQUIRES: env outlives this.
  GroupTimers(const RuntimeEnv* env, std::shared_ptr<EventQueue> queue)
      : env_(env), queue_(std::move(queue)) {}
  // Cancels every timer and waits for a callback that is running right now.
  ~GroupTimers() { CancelAll(); }

  GroupTimers(const GroupTimers&) = delete;
  GroupTimers& operator=(const GroupTimers&) = delete;

  // Posts `event` into the queue after `delay_ms`; returns a handle for
  // Cancel. If the timer thread refuses the task, the event is posted now.
  uint64_t Start(uint64_t delay_ms, Event event);
  // Cancels a handle from Start. Harmless if it already fired or is unknown.
  void Cancel(uint64_t handle);
  // The loop calls this for every event that carries a timer_seq, before
  // acting on it. Returns false if the event is stale (its timer was
  // cancelled after it fired) — the loop then drops it.
  bool OnFired(uint64_t timer_seq);

  // The core's timers: one live timer per kind; starting a kind again
  // cancels the previous one of that kind.
  void StartCore(const paxos::TimerStart& start);
  void CancelCore(const paxos::TimerId& id);

  // Cancels every timer started here. On return no callback is running.
  void CancelAll();

  size_t pending() const { return pending_.size(); }

 private:
  struct Pending {
    TimerThread::TaskId task = TimerThread::kInvalidTaskId;
    std::shared_ptr<EventQueue> queue;
    Event event;
    bool cancelled = false;  // Cancel lost the race: the event is stale
  };
  static void Fire(void* arg);

  const RuntimeEnv* const env_;
  const std::shared_ptr<EventQueue> queue_;
  uint64_t next_seq_ = 1;
  // Every timer whose callback may still run or whose event may still
  // arrive, by handle. Freed when Unschedule wins, or when its event arrives.
  std::map<uint64_t, std::unique_ptr<Pending>> pending_;
  // The live handle of each core timer kind.
  std::map<paxos::TimerKind, uint64_t> core_timers_;
};

}  // namespace chorus

#endif  // CHORUS_NODE_GROUP_TIMERS_H_
