// Group: asynchronous proposals (Node::ProposeAsync / BatchProposeAsync).
//
// An asynchronous waiter goes through exactly the path of a blocking one
// (the queue or the pending batch, Admission, the core, Apply, Finish), so
// it gets the same outcomes; only the last step differs: Answer calls its
// on_answer (proposal.h) on the answering thread instead of waking a thread
// on a Notifier. on_answer frees the waiter's slot among
// max_async_proposals, then hands the result to the application's done.
#include <chrono>
#include <utility>

#include "node/group.h"

namespace chorus {

void Group::ProposeAsync(const std::string& value, ProposeCallback done, const ExecuteContext* ctx,
                         bool batch, std::chrono::steady_clock::time_point began) {
  ProposeResult refused;
  int timeout_ms = 0;
  auto waiter = std::make_shared<ProposalWaiter>();
  Status s = CheckProposal(value, ctx, &timeout_ms, &waiter->value.state_machine_id);
  if (s.ok() && async_outstanding_.fetch_add(1, std::memory_order_relaxed) >=
                    env_.options->max_async_proposals) {
    async_outstanding_.fetch_sub(1, std::memory_order_relaxed);
    s = Status::Busy("group " + std::to_string(index_) + " overloaded: it already has " +
                     std::to_string(env_.options->max_async_proposals) +
                     " async proposals outstanding (max_async_proposals); never proposed, safe "
                     "to retry");
  }
  if (!s.ok()) {
    s = metrics_.CountPropose(s, began);
    if (done) done(s, &refused);
    return;
  }
  // From here on the slot is this call's until on_answer runs (exactly once:
  // Answer and AnswerStopped deliver to a waiter once, and drop on_answer).
  if (ctx != nullptr) waiter->async_ctx.user = ctx->user;
  {
    MutexLock lock(&waiter->mu);  // not shared yet: uncontended
    waiter->ctx = &waiter->async_ctx;
  }
  Stamp(waiter.get(), timeout_ms);
  waiter->on_answer = [this, done = std::move(done), began](ProposalWaiter* w) {
    // Free the slot first: a done that proposes again (chaining) finds room.
    async_outstanding_.fetch_sub(1, std::memory_order_relaxed);
    const Status status = metrics_.CountPropose(master_.WithMasterAddress(w->status), began);
    if (!done) return;
    ProposeResult result;
    result.proposal_id = w->value.proposal_id;
    if (status.ok()) {
      // Set by Apply and Finish on the loop; this runs on the loop too.
      result.instance = w->instance;
      result.batch_index = w->batch_index;
      result.output = std::move(w->async_ctx.output);
      result.result = std::move(w->async_ctx.result);
    }
    done(status, &result);
  };
  if (!Post(waiter, value, batch)) AnswerStopped(waiter.get());  // the loop never saw it
}

}  // namespace chorus
