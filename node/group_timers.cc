#include "node/group_timers.h"

#include <thread>

namespace chorus {

void GroupTimers::Fire(void* arg) {
  // Copy what we need first: once the event is in the queue the loop may
  // free the Pending record.
  auto* pending = static_cast<Pending*>(arg);
  std::shared_ptr<EventQueue> queue = pending->queue;
  Event event = pending->event;
  queue->Push(std::move(event));
}

uint64_t GroupTimers::Start(uint64_t delay_ms, Event event) {
  const uint64_t seq = next_seq_++;
  auto pending = std::make_unique<Pending>();
  pending->queue = queue_;
  event.timer_seq = seq;
  pending->event = std::move(event);
  Pending* raw = pending.get();
  pending_.emplace(seq, std::move(pending));
  raw->task = env_->ScheduleAfter(&GroupTimers::Fire, raw, std::chrono::milliseconds(delay_ms));
  if (raw->task == TimerThread::kInvalidTaskId) {
    // Timer thread stopped (process shutting down): deliver at once rather
    // than lose the event; the loop copes with early timeouts.
    queue_->Push(raw->event);
  }
  return seq;
}

void GroupTimers::Cancel(uint64_t handle) {
  auto it = pending_.find(handle);
  if (it == pending_.end()) return;
  const int rc = env_->Unschedule(it->second->task);
  if (rc == 0) {
    pending_.erase(it);  // will never run: nothing else refers to it
  } else {
    // Running or ran: its event is (or is about to be) in the queue. Keep the
    // record until it arrives, and have the loop drop it then.
    it->second->cancelled = true;
  }
}

bool GroupTimers::OnFired(uint64_t timer_seq) {
  auto it = pending_.find(timer_seq);
  if (it == pending_.end()) return false;
  const bool live = !it->second->cancelled;
  pending_.erase(it);
  return live;
}

void GroupTimers::StartCore(const paxos::TimerStart& start) {
  auto it = core_timers_.find(start.id.kind);
  if (it != core_timers_.end()) Cancel(it->second);
  Event event;
  event.kind = Event::Kind::kTimeout;
  event.timer = start.id;
  core_timers_[start.id.kind] = Start(start.delay_ms, std::move(event));
}

void GroupTimers::CancelCore(const paxos::TimerId& id) {
  auto it = core_timers_.find(id.kind);
  if (it == core_timers_.end()) return;
  auto p = pending_.find(it->second);
  // Only the live timer of that kind, and only if it is the one named: a
  // cancel of an older generation leaves the newer timer alone.
  if (p == pending_.end() || !(p->second->event.timer == id)) return;
  Cancel(it->second);
  core_timers_.erase(it);
}

void GroupTimers::CancelAll() {
  for (auto& [seq, pending] : pending_) {
    // Unschedule returns 1 while the callback runs; wait it out so that the
    // record can be freed safely (callbacks are a few instructions long).
    while (env_->Unschedule(pending->task) == 1) std::this_thread::yield();
  }
  pending_.clear();
  core_timers_.clear();
}

}  // namespace chorus
