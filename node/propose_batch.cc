#include "node/propose_batch.h"

#include <algorithm>
#include <chrono>

#include "node/value_codec.h"

namespace chorus {

std::shared_ptr<ProposalRequest> ProposeBatch::TakeLocked() {
  if (pending_.empty()) return nullptr;
  auto request = std::make_shared<ProposalRequest>();
  request->batch = true;
  request->waiters.swap(pending_);
  pending_bytes_ = 0;
  if (pending_release_) {
    // Its gate opens when the last of the waiters holding it is answered;
    // nobody answers before the request is posted, which happens after this.
    BatchRelease* const release = pending_release_.get();
    release->unanswered = static_cast<size_t>(std::count_if(
        request->waiters.begin(), request->waiters.end(),
        [release](const std::shared_ptr<ProposalWaiter>& w) { return w->batch.get() == release; }));
    pending_release_.reset();
  }
  std::vector<const AppValue*> values;
  values.reserve(request->waiters.size());
  for (const auto& w : request->waiters) values.push_back(&w->value);
  request->value = EncodeBatchValue(values);
  request->enqueued = request->waiters.front()->enqueued;
  // The values share one paxos instance, and so one fate: the earliest
  // deadline of theirs.
  request->deadline = pending_deadline_;
  return request;
}

void ProposeBatch::Gate(ProposalWaiter* waiter) {
  if (gates_ == nullptr) return;
  if (!pending_release_) {
    auto release = std::make_shared<BatchRelease>();
    // Under mu_: taking a free gate is a short lock of the pool's own; only
    // the first batches after start (or a burst) create one, with a system
    // call. Without a gate the waiter simply keeps its Notifier.
    if (!gates_->GetGate(&release->gate).ok()) return;
    pending_release_ = std::move(release);
  }
  waiter->batch = pending_release_;
}

size_t ProposeBatch::pending_count() {
  MutexLock lock(&mu_);
  return pending_.size();
}

bool ProposeBatch::PendingDeadline(SteadyTime* deadline) {
  MutexLock lock(&mu_);
  if (pending_.empty()) return false;
  *deadline = pending_deadline_;
  return true;
}

std::shared_ptr<ProposalRequest> ProposeBatch::TakePending() {
  MutexLock lock(&mu_);
  return TakeLocked();
}

std::shared_ptr<ProposalRequest> ProposeBatch::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
  return TakeLocked();
}

void ProposeBatch::Post(Event event) {
  std::shared_ptr<ProposalRequest> request = event.request;
  if (queue_->Push(std::move(event)) || !request) return;
  // The group is stopping and will never see this batch: answer it here.
  for (const auto& w : request->waiters) AnswerStopped(w.get());
}

void ProposeBatch::Add(std::shared_ptr<ProposalWaiter> waiter) {
  // Batches to post, and a waiter refused, are handled after mu_ is
  // released: answering an asynchronous waiter runs the application's done,
  // which may call BatchProposeAsync (and so Add) again.
  std::shared_ptr<ProposalRequest> overflow;
  std::shared_ptr<ProposalRequest> full;
  bool first = false;
  {
    MutexLock lock(&mu_);
    if (!closed_) {
      // Never let one value push a batch past batch_max_bytes: send what is
      // pending first, and start a new batch with this value.
      if (!pending_.empty() &&
          pending_bytes_ + waiter->value.payload.size() > options_->batch_max_bytes) {
        overflow = TakeLocked();
      }
      if (waiter->notifier != nullptr) Gate(waiter.get());
      pending_bytes_ += waiter->value.payload.size();
      pending_deadline_ =
          pending_.empty() ? waiter->deadline : std::min(pending_deadline_, waiter->deadline);
      pending_.push_back(std::move(waiter));
      first = pending_.size() == 1;
      if (pending_.size() >= static_cast<size_t>(options_->batch_max_count) ||
          pending_bytes_ >= options_->batch_max_bytes) {
        full = TakeLocked();
      }
    }
  }
  if (waiter) {  // not moved: the batch is closed
    AnswerStopped(waiter.get());
    return;
  }
  // Posted in the order they were taken: the overflow first.
  const bool sent_full = full != nullptr;
  for (std::shared_ptr<ProposalRequest>* r : {&overflow, &full}) {
    if (!*r) continue;
    Event event;
    event.kind = Event::Kind::kPropose;
    event.request = std::move(*r);
    Post(std::move(event));
  }
  if (sent_full) return;
  if (!first) return;  // the first value's flush is already on its way
  Event flush;
  flush.kind = Event::Kind::kFlushBatch;
  if (options_->batch_delay_ms > 0) {
    std::shared_ptr<EventQueue> queue = queue_;
    // Never cancelled: a flush that finds nothing pending is a no-op. The
    // task holds the queue, so it may outlive the group.
    if (env_->ScheduleAfter([queue, flush]() { queue->Push(flush); },
                            std::chrono::milliseconds(options_->batch_delay_ms)) !=
        TimerThread::kInvalidTaskId) {
      return;
    }
  }
  // No delay (or no timer thread): let the loop take whatever gathered by the
  // time it gets to this event.
  Post(std::move(flush));
}

}  // namespace chorus
