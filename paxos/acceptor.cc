#include "paxos/acceptor.h"

#include "paxos/learner.h"

namespace chorus {
namespace paxos {

const char kPromiseVariable[] = "paxos.promise";

void Acceptor::RestoreAccepted(uint64_t instance, const Ballot& b, const std::string& value) {
  accepted_[instance] = Accepted{b, value};
}

Ballot Acceptor::AcceptedBallot(uint64_t instance) const {
  auto it = accepted_.find(instance);
  return it == accepted_.end() ? Ballot() : it->second.ballot;
}

void Acceptor::Promise(const Ballot& b) {
  if (b == promised_) return;
  promised_ = b;
  // The mutation "forget_promise" skips exactly this write: a restart then
  // loses the promise, which the simulation must catch.
  if (ctx_->options().test_mutation == TestMutation::kForgetPromise) return;
  BallotPb pb;
  b.ToPb(&pb);
  ctx_->PersistVariable(kPromiseVariable, pb.SerializeAsString());
}

void Acceptor::Reject(const PaxosMsg& msg, MsgType type) {
  PaxosMsg reply;
  reply.set_type(type);
  reply.set_instance(msg.instance());
  *reply.mutable_ballot() = msg.ballot();
  promised_.ToPb(reply.mutable_promised());
  ctx_->Send(msg.from(), &reply);
}

void Acceptor::OnPrepare(const PaxosMsg& msg) {
  const Ballot b = Ballot::FromPb(msg.ballot());
  const uint64_t from_instance = msg.instance();
  if (from_instance < learner_->chosen_end() || b < promised_) {
    Reject(msg, PREPARE_REJECT);
    return;
  }
  Promise(b);
  PaxosMsg reply;
  reply.set_type(PROMISE);
  reply.set_instance(from_instance);
  *reply.mutable_ballot() = msg.ballot();
  for (auto it = accepted_.lower_bound(from_instance); it != accepted_.end(); ++it) {
    if (learner_->IsChosen(it->first)) continue;  // reported below as chosen
    AcceptedEntry* e = reply.add_accepted();
    e->set_instance(it->first);
    it->second.ballot.ToPb(e->mutable_ballot());
    e->set_value(it->second.value);
  }
  for (const auto& kv : learner_->pending()) {
    if (kv.first < from_instance) continue;
    AcceptedEntry* e = reply.add_accepted();
    e->set_instance(kv.first);
    e->set_value(kv.second);
    e->set_chosen(true);
  }
  ctx_->Send(msg.from(), &reply);
}

void Acceptor::OnAccept(const PaxosMsg& msg) {
  const uint64_t instance = msg.instance();
  if (learner_->IsChosen(instance)) {
    std::string value;
    if (learner_->ChosenValue(instance, &value).ok()) {
      PaxosMsg reply;
      reply.set_type(CHOSEN);
      reply.set_instance(instance);
      reply.set_value(value);
      ctx_->Send(msg.from(), &reply);
    } else {
      Reject(msg, ACCEPT_REJECT);  // trimmed: chosen_end tells it to catch up
    }
    return;
  }
  const Ballot b = Ballot::FromPb(msg.ballot());
  const bool lower_ok = ctx_->options().test_mutation == TestMutation::kAcceptLowerBallot;
  if (b < promised_ && !lower_ok) {
    Reject(msg, ACCEPT_REJECT);
    return;
  }
  if (b > promised_) Promise(b);
  accepted_[instance] = Accepted{b, msg.value()};
  InstanceRecord rec;
  b.ToPb(rec.mutable_accepted_ballot());
  rec.set_value(msg.value());
  ctx_->PersistRecord(instance, rec.SerializeAsString());
  PaxosMsg reply;
  reply.set_type(ACCEPTED);
  reply.set_instance(instance);
  *reply.mutable_ballot() = msg.ballot();
  ctx_->Send(msg.from(), &reply);
}

}  // namespace paxos
}  // namespace chorus
