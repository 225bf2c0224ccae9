// EventQueue: the inbox of a group's event loop. Many producers (transport
// thread, timer callbacks, proposing threads), one consumer (the loop).
#ifndef CHORUS_NODE_EVENT_QUEUE_H_
#define CHORUS_NODE_EVENT_QUEUE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "chorus/status.h"
#include "paxos/outputs.h"
#include "utils/mutex.h"

namespace chorus {

struct ProposalRequest;
struct CallWaiter;

struct Event {
  enum class Kind : uint8_t {
    kPropose,     // request: start a proposal
    kMessage,     // bytes: a paxos message from a peer
    kTimeout,     // timer: a core timer fired
    kDeadline,    // token: a proposal's deadline passed
    kFlushBatch,    // send the pending batch (token 1: its deadline, whatever is in flight)
    kBacklogCheck,  // the oldest waiting proposal may have expired
    kReadBarrier,   // call: a ReadBarrier caller
    kTransfer,      // call, token = target (0: step down): TransferMaster / StepDown
    kBarrierDeadline,  // token: a read barrier's deadline passed
    kCheckpointDone,   // token: instance, status: a checkpoint this group made is stored (or failed)
    kLoadCheckpoint,   // token: instance: load that stored checkpoint (one received from a peer)
    // bytes: a membership request (membership_wire.h, prefix removed) from
    // `from`; call: the local caller's waiter (nullptr for a remote one)
    kMembership,
    kMembershipTick,   // a running membership change checks its progress
  };
  Kind kind = Kind::kMessage;
  std::shared_ptr<ProposalRequest> request;
  std::shared_ptr<CallWaiter> call;  // kReadBarrier, kTransfer, kMembership
  std::string bytes;
  uint64_t from = 0;  // kMessage: the sender the transport verified
  paxos::TimerId timer;
  uint64_t token = 0;
  Status status;  // kCheckpointDone
  // Set on events posted by a GroupTimers timer: the loop hands it back to
  // GroupTimers::OnFired so the timer's bookkeeping is freed.
  uint64_t timer_seq = 0;
};

class EventQueue {
 public:
  // Appends `event`. Returns false (and drops it) once the queue is closed.
  bool Push(Event event) {
    MutexLock lock(&mu_);
    if (closed_) return false;
    PushLocked(std::move(event));
    return true;
  }

  // Appends a peer's message unless the messages already queued hold
  // `max_bytes` or more (a flood while the loop waits on a slow disk):
  // then it is dropped and false returned. Dropping a message is always
  // safe: the protocol tolerates loss and retries.
  bool PushMessage(Event event, size_t max_bytes) {
    MutexLock lock(&mu_);
    if (closed_ || message_bytes_ >= max_bytes) return false;
    message_bytes_ += event.bytes.size();
    PushLocked(std::move(event));
    return true;
  }

  // Blocks until at least one event is queued or the queue is closed, then
  // moves every queued event (at most `max`) to *out. Returns false once the
  // queue is closed.
  bool TakeAll(std::deque<Event>* out, size_t max) {
    MutexLock lock(&mu_);
    while (events_.empty() && !closed_) {
      consumer_waiting_ = true;
      cv_.Wait(&mu_);
      consumer_waiting_ = false;
    }
    if (closed_) return false;
    if (events_.size() <= max) {
      out->swap(events_);
      events_.clear();
      message_bytes_ = 0;
    } else {
      for (size_t i = 0; i < max; ++i) {
        if (events_.front().kind == Event::Kind::kMessage) {
          message_bytes_ -= events_.front().bytes.size();
        }
        out->push_back(std::move(events_.front()));
        events_.pop_front();
      }
    }
    return true;
  }

  // Events queued and not taken yet (for tests).
  size_t size() const {
    MutexLock lock(&mu_);
    return events_.size();
  }
  bool closed() const {
    MutexLock lock(&mu_);
    return closed_;
  }

  // Closes the queue: Push fails from now on, TakeAll returns false, queued
  // events are dropped.
  void Close(std::deque<Event>* dropped = nullptr) {
    MutexLock lock(&mu_);
    closed_ = true;
    if (dropped != nullptr) dropped->swap(events_);
    events_.clear();
    message_bytes_ = 0;
    cv_.SignalAll();
  }

 private:
  void PushLocked(Event event) REQUIRES(mu_) {
    events_.push_back(std::move(event));
    // Wake only a sleeping consumer: a busy loop sees the event on its next take.
    if (consumer_waiting_) cv_.Signal();
  }

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<Event> events_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  bool consumer_waiting_ GUARDED_BY(mu_) = false;
  size_t message_bytes_ GUARDED_BY(mu_) = 0;  // bytes of queued kMessage events
};

}  // namespace chorus

#endif  // CHORUS_NODE_EVENT_QUEUE_H_
