#include "paxos/acceptor.h"

#include <algorithm>

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

void Acceptor::Promise(const Ballot& b, bool by_accept) {
  if (b == promised_) return;
  promised_ = b;
  // The mutations skip exactly this write: a restart then loses the promise,
  // which the simulation must catch.
  if (ctx_->Mutated(by_accept ? TestMutation::kAcceptPromiseNotPersisted
                              : TestMutation::kForgetPromise)) {
    return;
  }
  BallotPb pb;
  b.ToPb(&pb);
  ctx_->PersistVariable(kPromiseVariable, pb.SerializeAsString());
}

bool Acceptor::DropFromPromise(uint64_t from_instance, uint64_t instance, bool chosen) const {
  if (ctx_->Mutated(TestMutation::kPromiseDropsChosen)) return chosen;
  if (ctx_->Mutated(TestMutation::kPromiseDropsFar)) {
    return instance >= from_instance + ctx_->options().max_inflight;
  }
  return false;
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
  Promise(b, /*by_accept=*/false);
  PaxosMsg reply;
  reply.set_type(PROMISE);
  reply.set_instance(from_instance);
  *reply.mutable_ballot() = msg.ballot();
  // Accepted values and chosen-but-unapplied ones, merged in instance order
  // (a pending chosen value supersedes this acceptor's vote there).
  const size_t budget = ctx_->options().promise_budget_bytes;
  const auto& pending = learner_->pending();
  auto a = accepted_.lower_bound(from_instance);
  auto p = pending.lower_bound(from_instance);
  size_t bytes = 0;
  while (a != accepted_.end() || p != pending.end()) {
    const bool chosen = a == accepted_.end() || (p != pending.end() && p->first <= a->first);
    if (!chosen && learner_->IsChosen(a->first)) {
      ++a;  // reported as chosen
      continue;
    }
    const uint64_t instance = chosen ? p->first : a->first;
    if (DropFromPromise(from_instance, instance, chosen)) {
      if (chosen) {
        ++p;
      } else {
        ++a;
      }
      continue;
    }
    const std::string& value = chosen ? p->second : a->second.value;
    // At most `window` entries: after a restart with a smaller window this
    // acceptor may hold votes beyond it, and MaxMessageBytes() counts
    // `window` entries.
    const size_t entries = static_cast<size_t>(reply.accepted_size());
    if (entries > 0 && (bytes + value.size() > budget || entries >= ctx_->options().window)) {
      reply.set_reported_end(instance);  // the rest does not fit
      ctx_->stats()->truncated_promises++;
      break;
    }
    bytes += value.size();
    AcceptedEntry* e = reply.add_accepted();
    e->set_instance(instance);
    e->set_value(value);
    if (chosen) {
      e->set_chosen(true);
      ++p;
    } else {
      a->second.ballot.ToPb(e->mutable_ballot());
      ++a;
    }
  }
  if (ctx_->Mutated(TestMutation::kPromiseDropsLast) && reply.reported_end() == 0 &&
      reply.accepted_size() > 0) {
    reply.mutable_accepted()->RemoveLast();
  }
  ctx_->Send(msg.from(), &reply);
}

bool Acceptor::OnAccept(const PaxosMsg& msg) {
  const uint64_t instance = msg.instance();
  if (learner_->IsChosen(instance)) {
    std::string value;
    if (learner_->ChosenEnvelope(instance, &value).ok()) {
      PaxosMsg reply;
      reply.set_type(CHOSEN);
      reply.set_instance(instance);
      reply.set_value(value);
      ctx_->Send(msg.from(), &reply);
    } else {
      Reject(msg, ACCEPT_REJECT);  // trimmed: chosen_end tells it to catch up
    }
    return false;
  }
  const Ballot b = Ballot::FromPb(msg.ballot());
  const bool lower_ok = ctx_->Mutated(TestMutation::kAcceptLowerBallot);
  if (b < promised_ && !lower_ok) {
    Reject(msg, ACCEPT_REJECT);
    return false;
  }
  // The window, and alpha (M4): this node knows the configuration of every
  // instance below chosen_end + alpha, not beyond.
  const uint64_t reach = std::min<uint64_t>(ctx_->options().window, ctx_->activation_distance());
  if (instance >= learner_->chosen_end() + reach) {
    // Behind, not outbid: vote nothing, promise nothing; catch up now.
    ctx_->stats()->accepts_behind++;
    Reject(msg, ACCEPT_BEHIND);
    learner_->NotePeer(msg.from(), msg.chosen_end(), /*urgent=*/true);
    return false;
  }
  if (b > promised_) Promise(b, /*by_accept=*/true);
  accepted_[instance] = Accepted{b, msg.value()};
  InstanceRecord rec;
  b.ToPb(rec.mutable_accepted_ballot());
  rec.set_value(msg.value());
  if (!ctx_->Mutated(TestMutation::kAcceptNotPersisted)) {
    ctx_->PersistRecord(instance, rec.SerializeAsString(), /*vote=*/true);
  }
  PaxosMsg reply;
  reply.set_type(ACCEPTED);
  reply.set_instance(instance);
  *reply.mutable_ballot() = msg.ballot();
  ctx_->Send(msg.from(), &reply);
  return true;
}

}  // namespace paxos
}  // namespace chorus
