// Group: the calls that wait for the loop's answer (ReadBarrier,
// TransferMaster / StepDown) and the master snapshot after each round. The
// rules are the core's, the waiting is GroupMaster's: see group.h.
#include <chrono>

#include "node/group.h"
#include "node/membership_wire.h"

namespace chorus {

void Group::UpdateMaster() {
  if (!env_.options->master_election) return;
  const paxos::MasterView view = core_->master();
  MasterSnapshot m;
  m.node = view.node;
  m.epoch_number = view.epoch.number;
  m.epoch_node = view.epoch.node_id;
  m.self_ready = view.node == env_.options->self.id() && view.self_ready;
  m.holds_lease = m.self_ready && core_->HoldsLease();
  // On the master, its own chosen end is the master's.
  m.master_chosen_end = m.self_ready ? core_->chosen_end() : view.master_chosen_end;
  if (m.node == 0) m.master_chosen_end = 0;
  master_.Update(m);
}

Status Group::Call(Event event, int timeout_ms, uint64_t* instance) {
  if (stopped_.load(std::memory_order_acquire)) return Status::Stopped("the node is stopping");
  if (std::this_thread::get_id() == loop_thread_id_.load(std::memory_order_acquire)) {
    return Status::InvalidArgument("called from inside Execute (or on_master_change) of group " +
                                   std::to_string(index_) + ": it would wait for itself");
  }
  auto call = std::make_shared<CallWaiter>();
  Status s = env_.notifier_pool->Get(&call->notifier);
  if (!s.ok()) return s;
  call->ticket = call->notifier->Prepare();
  event.call = call;
  if (!queue_->Push(std::move(event))) return Status::Stopped("the node is stopping");
  int ignored = 0;
  const auto limit = std::chrono::milliseconds(timeout_ms) + kAnswerGrace;
  s = call->notifier->WaitFor(
      std::chrono::duration_cast<std::chrono::microseconds>(limit).count(), &ignored);
  if (s.IsTimeout()) {
    // The loop is stuck: it answers a stale ticket later, and nobody reads it.
    return Status::Timeout("no answer from group " + std::to_string(index_) + " in time");
  }
  if (!s.ok()) return s;
  if (instance != nullptr) *instance = call->instance;
  return call->status;
}

Status Group::ReadBarrier(uint64_t* instance) {
  if (instance != nullptr) *instance = 0;
  Event event;
  event.kind = Event::Kind::kReadBarrier;
  return Call(std::move(event), env_.options->propose_timeout_ms, instance);
}

Status Group::TransferMaster(uint64_t target) {
  Event event;
  event.kind = Event::Kind::kTransfer;
  event.token = target;
  Status s = Call(std::move(event), env_.options->propose_timeout_ms, nullptr);
  return master_.WithMasterAddress(s);
}

void Group::HandleReadBarrier(const std::shared_ptr<CallWaiter>& call, paxos::Outputs* step) {
  if (!halted_.ok()) {
    AnswerCall(call.get(), halted_);
    return;
  }
  const uint64_t token = master_.AddBarrier(call, env_.options->propose_timeout_ms);
  core_->ReadBarrier(token, step);  // the answer comes as step->barriers, now or later
}

void Group::HandleTransfer(const std::shared_ptr<CallWaiter>& call, uint64_t target,
                           paxos::Outputs* step) {
  if (!halted_.ok()) {
    AnswerCall(call.get(), halted_);
    return;
  }
  Status s = core_->TransferMaster(target, step);
  if (!s.ok()) {
    AnswerCall(call.get(), s);
    return;
  }
  master_.AddSentWaiter(call);  // answered once this round's sends went out
}

}  // namespace chorus

namespace chorus {

uint64_t Group::CoreNowMs() const {
  const auto now = env_.runtime->Now().time_since_epoch();
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(now).count());
}

Status Group::MembershipCall(const MembershipMessage& request, int timeout_ms) {
  std::string frame = EncodeMembershipMessage(request);
  Event event;
  event.kind = Event::Kind::kMembership;
  event.bytes = frame.substr(4);  // as a peer's request arrives: without the prefix
  event.from = env_.options->self.id();
  return Call(std::move(event), timeout_ms, nullptr);
}

void Group::PostMembershipRequest(uint64_t from, std::string bytes) {
  Event event;
  event.kind = Event::Kind::kMembership;
  event.bytes = std::move(bytes);
  event.from = from;
  queue_->Push(std::move(event));  // dropped once stopped: the caller retries or times out
}

void Group::HandleMembership(Event* event, paxos::Outputs* step) {
  MembershipMessage request;
  Status s = DecodeMembershipMessage(event->bytes.data(), event->bytes.size(), &request);
  if (s.ok() && (request.cluster_id != env_.options->cluster_id || request.group != index_ ||
                 request.from != event->from || request.type != kMembershipRequestType)) {
    s = Status::InvalidArgument("membership request of another cluster, group or sender");
  }
  if (!s.ok()) {
    CHORUS_LOG(env_.logger, kWarning, "group %u: membership request from node %llu dropped: %s",
               index_, static_cast<unsigned long long>(event->from), s.ToString().c_str());
    if (event->call) AnswerCall(event->call.get(), s);
    return;
  }
  if (!halted_.ok()) {
    if (event->call) AnswerCall(event->call.get(), halted_);
    return;
  }
  changer_->OnRequest(core_.get(), CoreNowMs(), request, event->call, step);
}

}  // namespace chorus
