// Group: applying chosen values to the state machines, and answering the
// proposals (and membership changes) the core ended. See group.h.
#include <algorithm>

#include "node/group.h"
#include "node/value_codec.h"

namespace chorus {

void Group::Apply(const paxos::ChosenValue& chosen) {
  ProposalRequest* request = chosen.ours ? admission_->Find(chosen.token) : nullptr;
  std::vector<AppValue> values;
  if (!chosen.noop) {
    Status s = DecodeAppValues(chosen.value, &values);
    if (!s.ok()) {
      // Every replica decodes the same bytes the same way: skipping keeps them
      // equal (each state machine hears of the instance as a noop).
      CHORUS_LOG(env_.logger, kError, "group %u: instance %llu holds a value chorus cannot decode: %s",
                 index_, static_cast<unsigned long long>(chosen.instance), s.ToString().c_str());
    }
  }
  ExecuteInfo info;
  info.group = index_;
  info.instance = chosen.instance;
  info.batch_size = static_cast<uint32_t>(values.size());
  // State machines that got a value of this instance; the others get ExecuteNoop.
  std::vector<int> executed;
  for (size_t i = 0; i < values.size(); ++i) {
    // The waiter of this value, unless it was already answered (deadline):
    // then it may have returned, and neither its ctx nor its fields are ours.
    ProposalWaiter* waiter = nullptr;
    if (request != nullptr && i < request->waiters.size() && !request->waiters[i]->answered) {
      waiter = request->waiters[i].get();
    }
    auto sm = state_machines_.find(values[i].state_machine_id);
    if (sm != state_machines_.end() && chosen.instance < checkpoints_[sm->first]) {
      // Already reflected in this state machine's own durable state.
    } else if (sm != state_machines_.end()) {
      info.batch_index = static_cast<uint32_t>(i);
      info.proposal_id = values[i].proposal_id;
      if (std::find(executed.begin(), executed.end(), sm->first) == executed.end()) {
        executed.push_back(sm->first);
      }
      if (waiter != nullptr) {
        MutexLock lock(&waiter->mu);
        ExecuteContext* ctx = waiter->abandoned ? nullptr : waiter->ctx;
        // The application's result goes to its ctx, never into the Status
        // Propose returns (that one carries chorus's codes only).
        Status result = sm->second->Execute(info, values[i].payload, ctx);
        if (ctx != nullptr) ctx->result = std::move(result);
      } else {
        sm->second->Execute(info, values[i].payload, nullptr);
      }
    } else if (values[i].state_machine_id != 0) {
      CHORUS_LOG(env_.logger, kWarning, "group %u: instance %llu is for unknown state machine %d",
                 index_, static_cast<unsigned long long>(chosen.instance),
                 values[i].state_machine_id);
    }
    if (waiter != nullptr) {
      waiter->instance = chosen.instance;
      waiter->batch_index = static_cast<uint32_t>(i);
    }
  }
  for (const auto& [id, sm] : state_machines_) {
    if (chosen.instance < checkpoints_[id]) continue;
    if (std::find(executed.begin(), executed.end(), id) == executed.end()) {
      sm->ExecuteNoop(index_, chosen.instance);
    }
  }
  checkpoint_->OnApplied(chosen.instance, chosen.value.size());
  metrics_.OnApplied(values.size());
  next_execute_.store(chosen.instance + 1, std::memory_order_release);
}

void Group::Finish(const paxos::ProposalResult& result) {
  if (MembershipChanger::IsToken(result.token)) {
    paxos::Outputs step;
    changer_->OnFinished(core_.get(), CoreNowMs(), result, &step);
    Merge(&step);  // (the next round's)
    return;
  }
  std::shared_ptr<ProposalRequest> request = admission_->Finish(result.token);
  if (!request) return;
  for (const auto& w : request->waiters) {
    if (w->answered) continue;
    if (result.status.ok()) {
      w->instance = result.instance;
      Answer(w.get(), Status::OK());  // Execute's own result is in its ctx (Apply)
    } else {
      Answer(w.get(), result.status);
    }
  }
}

}  // namespace chorus
