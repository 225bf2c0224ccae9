// Master (paxos/master.h): routing (forwarding to the master), leases and
// read barriers, read index, transfer, and the master view.
#include "paxos/master.h"

#include "paxos/learner.h"
#include "paxos/proposer.h"
#include "paxos/value.h"

namespace chorus {
namespace paxos {

// ---- routing ----

bool Master::Defers() const {
  if (!enabled() || is_master_) return false;
  const uint64_t now = ctx_->now();
  return Live(now) || now < no_campaign_until_;
}

bool Master::ShouldForward(uint64_t* master) const {
  if (!enabled() || is_master_ || !Live(ctx_->now())) return false;
  *master = known_node_;
  return true;
}

Status Master::Forward(uint64_t token, const std::string& envelope) {
  uint64_t master = 0;
  if (!ShouldForward(&master)) return Status::NotMaster("paxos: not the master; none known");
  if (!ctx_->options().forward_to_master) {
    return Status::NotMaster("paxos: not the master; the master is node " +
                             std::to_string(master));
  }
  uint64_t proposer = 0, id = 0;
  std::string data;
  DecodeValue(envelope, &proposer, &id, &data);
  forwarded_[id] = token;
  ctx_->stats()->forwards_sent++;
  PaxosMsg msg;
  msg.set_type(FORWARD);
  msg.set_value(envelope);
  known_ballot_.ToPb(msg.mutable_ballot());
  ctx_->Send(master, &msg);
  return Status::OK();
}

bool Master::CancelForwarded(uint64_t token) {
  for (auto it = forwarded_.begin(); it != forwarded_.end(); ++it) {
    if (it->second == token) {
      forwarded_.erase(it);
      ctx_->out()->finished.push_back({token, 0, Status::Stopped("proposal cancelled")});
      return true;
    }
  }
  return false;
}

// ---- reads ----

bool Master::HoldsLease() const {
  if (!enabled() || !is_master_) return false;
  const bool ready = ready_ || ctx_->Mutated(TestMutation::kReadBeforeNoopCommit);
  return ready && ctx_->now() < lease_until_;
}

void Master::ReadBarrier(uint64_t token) {
  if (!enabled()) {
    Barrier(token, 0, Status::NotSupported("master election is off"));
    return;
  }
  if (is_master_) {
    if (HoldsLease()) {
      // Every value chosen so far is below chosen_end: only this master
      // gets values chosen during its lease, it learns each the moment it
      // is chosen, and its noop put every older one below it.
      Barrier(token, learner_->chosen_end(), Status::OK());
    } else {
      Barrier(token, 0, Status::Busy("master not ready or lease not held"));
    }
    return;
  }
  uint64_t master = 0;
  if (!ShouldForward(&master)) {
    Barrier(token, 0, Status::Busy("no master known"));
    return;
  }
  const uint64_t seq = ++read_seq_;
  reads_[seq] = {token, master, 0, ctx_->now()};
  ctx_->stats()->read_index_requests++;
  PaxosMsg msg;
  msg.set_type(READ_INDEX);
  msg.set_instance(seq);
  ctx_->Send(master, &msg);
}

void Master::OnReadIndex(const PaxosMsg& msg) {
  if (!enabled()) return;
  PaxosMsg reply;
  reply.set_type(READ_INDEX_REPLY);
  reply.set_instance(msg.instance());
  // A ready master's chosen_end is at least 1 (its noop): 0 is the refusal.
  reply.set_read_index(HoldsLease() ? learner_->chosen_end() : 0);
  ctx_->Send(msg.from(), &reply);
}

void Master::OnReadIndexReply(const PaxosMsg& msg) {
  if (!enabled()) return;
  auto it = reads_.find(msg.instance());
  if (it == reads_.end() || it->second.master != msg.from()) return;
  PendingRead r = it->second;
  reads_.erase(it);
  const uint64_t index = msg.read_index();
  if (index == 0) {
    Barrier(r.token, 0, Status::Busy("read index: master " + std::to_string(r.master) +
                                     " refused (not ready or not in its lease)"));
    return;
  }
  r.index = index;
  waits_.push_back(r);
  // Behind the master: ask it for the values at once (EndStep completes the
  // barrier once chosen_end reaches the index).
  learner_->NotePeer(msg.from(), index, /*urgent=*/true);
}

void Master::FailReads(const std::string& why) {
  for (const auto& kv : reads_) Barrier(kv.second.token, 0, Status::Busy("read index: " + why));
  reads_.clear();
}

// ---- transfer ----

Status Master::Transfer(uint64_t target) {
  if (!enabled()) return Status::NotSupported("master election is off");
  const uint64_t self = ctx_->options().self;
  if (!is_master_ || released_) {
    return Status::NotMaster(known_node_ != 0 && Live(ctx_->now())
                                 ? "paxos: not the master; the master is node " +
                                       std::to_string(known_node_)
                                 : std::string("paxos: not the master; none known"));
  }
  if (target != 0 && !ctx_->membership().Latest().IsVoter(target)) {
    return Status::InvalidArgument("TransferMaster: node " + std::to_string(target) +
                                   " is not a voter of the newest configuration");
  }
  if (target == self) return Status::OK();
  const Ballot ballot = ballot_;
  if (ctx_->Mutated(TestMutation::kTransferKeepsLease)) {
    released_ = true;  // keeps claiming its lease until it runs out
    ctx_->CancelTimer(TimerKind::kHeartbeat);
  } else {
    // The lease goes first, in this very step: no lease read is served
    // after this returns, and the RELEASE below (which lets the target win
    // phase 1 before our lease would have ended) leaves only after it.
    StepDown();
  }
  // Not campaigning for a while lets another node take over. A transfer's
  // target campaigns at once; after a step-down the others campaign on
  // their election timers, which fire within election_timeout_ms +
  // election_jitter_ms of any instant, so wait past that (twice the
  // timeout): otherwise this node often won its own step-down back.
  const CoreOptions& o = ctx_->options();
  no_campaign_until_ = ctx_->now() + (target == 0 ? 2 * o.election_timeout_ms + o.election_jitter_ms
                                                  : o.election_timeout_ms);
  proposer_->Yield();
  PaxosMsg msg;
  msg.set_type(RELEASE);
  msg.set_instance(target);
  ballot.ToPb(msg.mutable_ballot());
  ctx_->Send(kBroadcast, &msg);  // our own acceptor moves its grant too
  return Status::OK();
}

MasterView Master::View() const {
  MasterView v;
  if (!enabled()) return v;
  if (is_master_) {
    v.node = ctx_->options().self;
    v.epoch = ballot_;
    v.self_ready = HoldsLease();
    v.master_chosen_end = learner_->chosen_end();
  } else if (Live(ctx_->now())) {
    v.node = known_node_;
    v.epoch = known_ballot_;
    v.master_chosen_end = known_chosen_end_;
  }
  return v;
}

}  // namespace paxos
}  // namespace chorus
