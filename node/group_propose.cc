// Group: the proposing side of Propose / BatchPropose: the checks every
// proposal passes, the waiter, and the blocking wait for the loop's answer
// (ProposeAsync, which shares the checks and the posting, is
// group_async.cc). See group.h.
#include <chrono>
#include <string>
#include <thread>

#include "node/group.h"
#include "node/value_codec.h"

namespace chorus {

Status Group::ResolveStateMachine(const ExecuteContext* ctx, int* id) const {
  const int wanted = ctx != nullptr ? ctx->state_machine_id : 0;
  if (wanted != 0) {
    if (state_machines_.count(wanted) == 0) {
      return Status::InvalidArgument("group " + std::to_string(index_) +
                                     " has no state machine with id " + std::to_string(wanted));
    }
    *id = wanted;
    return Status::OK();
  }
  if (state_machines_.size() > 1) {
    return Status::InvalidArgument("group " + std::to_string(index_) +
                                   " has several state machines: set ctx->state_machine_id");
  }
  *id = state_machines_.empty() ? 0 : state_machines_.begin()->first;
  return Status::OK();
}

Status Group::CheckProposal(const std::string& value, const ExecuteContext* ctx, int* timeout_ms,
                            int* state_machine_id) const {
  const Options& o = *env_.options;
  *timeout_ms = o.propose_timeout_ms;
  if (ctx != nullptr && ctx->timeout_ms != 0) {
    if (ctx->timeout_ms < 0) {
      return Status::InvalidArgument("ExecuteContext::timeout_ms must be >= 0, got " +
                                     std::to_string(ctx->timeout_ms));
    }
    *timeout_ms = ctx->timeout_ms;
  }
  if (stopped_.load(std::memory_order_acquire)) return Status::Stopped("the node is stopping");
  if (value.size() > o.max_value_bytes) {
    return Status::TooLarge("value of " + std::to_string(value.size()) +
                            " bytes exceeds max_value_bytes " + std::to_string(o.max_value_bytes));
  }
  return ResolveStateMachine(ctx, state_machine_id);
}

void Group::Stamp(ProposalWaiter* waiter, int timeout_ms) {
  waiter->enqueued = env_.runtime->Now();
  waiter->deadline = waiter->enqueued + std::chrono::milliseconds(timeout_ms);
  waiter->value.proposal_id = NextProposalId();
}

bool Group::Post(const std::shared_ptr<ProposalWaiter>& waiter, const std::string& value,
                 bool batch) {
  if (batch) {
    waiter->value.payload = value;  // packed with the others when the batch leaves
    batch_.Add(waiter);             // answers it Stopped itself once closed
    return true;
  }
  auto request = std::make_shared<ProposalRequest>();
  request->value =
      EncodeSingleValue(waiter->value.state_machine_id, waiter->value.proposal_id, value);
  request->waiters.push_back(waiter);
  request->enqueued = waiter->enqueued;
  request->deadline = waiter->deadline;
  Event event;
  event.kind = Event::Kind::kPropose;
  event.request = std::move(request);
  return queue_->Push(std::move(event));
}

Status Group::Propose(const std::string& value, ExecuteContext* ctx, bool batch,
                      uint64_t* instance_id, uint32_t* batch_index) {
  const Options& o = *env_.options;
  int timeout_ms = 0;
  auto waiter = std::make_shared<ProposalWaiter>();
  Status s = CheckProposal(value, ctx, &timeout_ms, &waiter->value.state_machine_id);
  if (!s.ok()) return s;
  if (std::this_thread::get_id() == loop_thread_id_.load(std::memory_order_acquire)) {
    return Status::InvalidArgument("Propose called from inside Execute of group " +
                                   std::to_string(index_) + ": it would wait for itself");
  }
  // Overload protection: refuse at once rather than queue without bound.
  if (waiting_.fetch_add(1, std::memory_order_relaxed) >= o.max_waiting_proposals) {
    waiting_.fetch_sub(1, std::memory_order_relaxed);
    return Status::Busy("group " + std::to_string(index_) + " overloaded: it already has " +
                        std::to_string(o.max_waiting_proposals) +
                        " proposals waiting (max_waiting_proposals); never proposed, safe to retry");
  }
  struct Release {
    std::atomic<int>* n;
    ~Release() { n->fetch_sub(1, std::memory_order_relaxed); }
  } release{&waiting_};

  s = env_.notifier_pool->Get(&waiter->notifier);
  if (!s.ok()) return s;
  waiter->ticket = waiter->notifier->Prepare();
  if (ctx != nullptr) ctx->result = Status::OK();  // a reused ctx holds no stale result
  {
    MutexLock lock(&waiter->mu);  // not shared yet: uncontended
    waiter->ctx = ctx;
  }
  Stamp(waiter.get(), timeout_ms);
  if (ctx != nullptr) ctx->proposal_id = waiter->value.proposal_id;
  if (!Post(waiter, value, batch)) return Status::Stopped("the node is stopping");

  // A batched waiter waits on its batch's gate (one wake-up for the whole
  // batch), any other on its own Notifier. The loop answers Timeout at the
  // deadline itself; this limit only guards against a stuck loop.
  int ignored = 0;
  const int64_t limit_us = std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::milliseconds(timeout_ms) + kAnswerGrace)
                               .count();
  // waiter->batch was set by batch_.Add, on this thread inside Post, and is
  // never changed; the gate lives as long as the waiter holds it.
  NotifierGate* gate = waiter->batch ? waiter->batch->gate.get() : nullptr;
  auto wait_for = [&](int64_t us) {
    return gate != nullptr ? gate->WaitFor(us) : waiter->notifier->WaitFor(us, &ignored);
  };
  s = wait_for(limit_us);
  if (s.IsTimeout()) {
    // The loop did not answer in time: stop it from using ctx from now on,
    // then take an answer that may have raced in.
    {
      MutexLock lock(&waiter->mu);
      waiter->abandoned = true;
    }
    s = wait_for(0);
    if (!s.ok()) {
      return Status::Timeout("no answer from group " + std::to_string(index_) +
                             " by the call's deadline; the value may still be chosen later "
                             "(Execute then sees its proposal id)");
    }
  }
  if (!s.ok()) return s;
  if (instance_id != nullptr) *instance_id = waiter->instance;
  if (batch_index != nullptr) *batch_index = waiter->batch_index;
  return master_.WithMasterAddress(waiter->status);
}

}  // namespace chorus
