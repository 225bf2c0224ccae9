// ProposalRequest / ProposalWaiter: how a proposing thread and its group's
// loop hand a proposal and its result to each other.
//
// The proposing thread builds the request, posts it, and blocks on its
// pooled Notifier. The loop is the only one that decides the outcome: it
// answers every waiter exactly once (result, Timeout at the deadline, Busy,
// Stopped...) by filling the waiter's result fields and then Send()ing the
// waiter's ticket, or, for the waiters of one BatchPropose batch, by opening
// the batch's gate once the last of them is answered (one wake-up per batch).
// Notifier::Send/Wait and NotifierGate::Open/WaitFor order those writes
// before the waiter's reads (release/acquire on the notifier's or the gate's
// word).
// An asynchronous waiter (Node::ProposeAsync) has no Notifier: answering it
// calls its on_answer instead, on the answering thread (the loop, or Stop's
// thread once the loop is joined), which hands the fields to the
// application's done. Nobody waits, so nothing needs publishing.
#ifndef CHORUS_NODE_PROPOSAL_H_
#define CHORUS_NODE_PROPOSAL_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/state_machine.h"
#include "chorus/status.h"
#include "node/value_codec.h"
#include "utils/mutex.h"
#include "utils/notifier.h"
#include "utils/notifier_gate.h"

namespace chorus {

// The blocking waiters of one BatchPropose batch wait on one gate, which the
// answer to the last of them opens.
struct BatchRelease {
  std::shared_ptr<NotifierGate> gate;  // from the group's NotifierPool
  // Blocking waiters of the batch not answered yet: set when the batch
  // leaves ProposeBatch (before it is posted), then counted down by whoever
  // answers them: the loop, or the poster for a batch the loop never saw
  // (all of a batch's waiters are answered by one of the two).
  size_t unanswered = 0;
};

struct ProposalWaiter {
  // Set by the proposing thread before the request is posted; then read-only.
  // A blocking proposer's Notifier and ticket; or, for an asynchronous one,
  // on_answer (notifier null), called once by Answer / AnswerStopped.
  Notifier* notifier = nullptr;
  uint64_t ticket = 0;
  std::function<void(ProposalWaiter* waiter)> on_answer;
  // A blocking BatchPropose waiter in a batch: set under ProposeBatch's lock
  // when it joins the batch, never changed afterwards; the waiter then waits
  // on batch->gate, not on its Notifier. Null otherwise (no gate could be
  // made: the waiter keeps its Notifier).
  std::shared_ptr<BatchRelease> batch;
  // The state machine it is for; and for BatchPropose the value itself,
  // until its batch is packed.
  AppValue value;
  // When Propose was called: a batch's queue wait counts from its first
  // waiter's.
  std::chrono::steady_clock::time_point enqueued;
  // When this call gives up (ExecuteContext::timeout_ms or
  // Options::propose_timeout_ms after `enqueued`); a batch's deadline is the
  // earliest of its waiters'.
  std::chrono::steady_clock::time_point deadline;

  // The proposer's context, used by Execute only while the proposer still
  // waits. If the proposer gives up on its own (the loop did not answer by
  // the deadline plus a grace period: a stuck disk), it sets `abandoned`
  // under `mu`; the loop holds `mu` while executing with ctx, so ctx is never
  // touched after Propose returned.
  Mutex mu;
  ExecuteContext* ctx GUARDED_BY(mu) = nullptr;
  bool abandoned GUARDED_BY(mu) = false;
  // An asynchronous waiter's context: ctx points here (it is never
  // abandoned). Written by Execute on the loop; read by on_answer, on the
  // loop or after it was joined.
  ExecuteContext async_ctx;

  // Written by the loop only, before Send(ticket); read by the proposer after
  // its Wait returned ok.
  Status status;
  uint64_t instance = 0;
  uint32_t batch_index = 0;
  // Loop-private (AnswerStopped's for a waiter the loop never saw): answered.
  bool answered = false;
};

// Hands the filled fields to the waiter: Sends its ticket, opens its batch's
// gate if it was the batch's last unanswered waiter, or calls an
// asynchronous waiter's on_answer (then dropped, with what it holds).
inline void Deliver(ProposalWaiter* waiter) {
  if (waiter->batch) {
    if (--waiter->batch->unanswered == 0) waiter->batch->gate->Open();
    return;
  }
  if (waiter->notifier == nullptr) {
    std::function<void(ProposalWaiter*)> on_answer = std::move(waiter->on_answer);
    waiter->on_answer = nullptr;
    if (on_answer) on_answer(waiter);
    return;
  }
  waiter->notifier->Send(waiter->ticket, 0);
}

// Loop thread only. Answers `waiter` with `status` unless it was answered
// already: Send publishes the fields to the waiter (release), or tells the
// loop the waiter gave up (stale ticket): then nobody reads them. An
// asynchronous waiter's done runs here, on this thread.
inline void Answer(ProposalWaiter* waiter, const Status& status) {
  if (waiter->answered) return;
  waiter->answered = true;
  waiter->status = status;
  Deliver(waiter);
}

// Answers a waiter with Stopped from a thread other than the loop; only for
// waiters the loop never saw (their request could not be queued). Never
// called with a lock held that an asynchronous waiter's done may take.
inline void AnswerStopped(ProposalWaiter* waiter) {
  waiter->answered = true;
  waiter->status = Status::Stopped("the node is stopping");
  Deliver(waiter);
}

struct ProposalRequest {
  // One waiter for Propose; one per value for a batch.
  std::vector<std::shared_ptr<ProposalWaiter>> waiters;
  // The paxos value (see value_codec.h), built by whoever posts the request.
  std::string value;
  std::chrono::steady_clock::time_point enqueued;
  std::chrono::steady_clock::time_point deadline;
  // Loop only: when the loop first took the request from its queue (unset
  // until then).
  std::chrono::steady_clock::time_point taken;
  // A BatchPropose batch (set by ProposeBatch): Admission counts the ones
  // it holds, which Options::batch_max_inflight limits.
  bool batch = false;
};

// Whether a request that has not started in the core must fail at `now`:
// returns OK while it may still start, otherwise the definite failure to
// answer it with (its value was never proposed):
//   Busy "overloaded"  it waited longer than `max_queue_wait` for room in the
//                      group (too many proposals in flight before it);
//   Busy "stalled"     the group's loop took it from its queue only after
//                      `max_queue_wait`: the loop did not run (the process
//                      was paused, e.g. SIGSTOP) or was blocked (a slow
//                      disk, a slow Execute), not an overload;
//   Timeout            its deadline passed before it started.
// REQUIRES: request.taken is set.
Status CheckNotStarted(const ProposalRequest& request, std::chrono::steady_clock::time_point now,
                       std::chrono::milliseconds max_queue_wait, uint32_t group);

// A caller of ReadBarrier / TransferMaster / StepDown waiting for the loop,
// with the same hand-over as ProposalWaiter: the caller sets notifier and
// ticket before posting; the loop fills the result and then Send()s, once.
// A caller that gave up (its wait timed out) reads nothing.
struct CallWaiter {
  Notifier* notifier = nullptr;
  uint64_t ticket = 0;
  // Written by the loop only, before Send(ticket).
  Status status;
  uint64_t instance = 0;   // ReadBarrier: the read point
  bool answered = false;   // loop-private: Send was called
};

// Loop thread only (or Stop, once the loop is joined). Answers `waiter`
// unless it was answered already.
inline void AnswerCall(CallWaiter* waiter, const Status& status, uint64_t instance = 0) {
  if (waiter->answered) return;
  waiter->answered = true;
  waiter->status = status;
  waiter->instance = instance;
  waiter->notifier->Send(waiter->ticket, 0);
}

// Loop thread only. Answers every waiter of `request` not answered yet.
inline void AnswerAll(ProposalRequest* request, const Status& status) {
  for (const auto& w : request->waiters) Answer(w.get(), status);
}

}  // namespace chorus

#endif  // CHORUS_NODE_PROPOSAL_H_
