#include "paxos/proposer.h"

#include <algorithm>

#include "paxos/acceptor.h"
#include "paxos/learner.h"
#include "paxos/master.h"
#include "paxos/value.h"

namespace chorus {
namespace paxos {

void Proposer::Propose(uint64_t token, const std::string& data) {
  ProposeEnvelope(token, EncodeValue(ctx_->options().self, ctx_->NewProposalId(), data),
                  /*system=*/false);
}

void Proposer::ProposeEnvelope(uint64_t token, const std::string& envelope, bool system) {
  Proposal p;
  p.token = token;
  p.envelope = envelope;
  p.system = system;
  queue_.push_back(std::move(p));
  Drive();
}

void Proposer::FillTo(uint64_t instance) {
  if (instance <= learner_->chosen_end()) return;
  change_fill_to_ = std::max(change_fill_to_, instance);
  Drive();
}

void Proposer::Cancel(uint64_t token) {
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->token == token && !it->forwarded) {
      queue_.erase(it);
      ctx_->out()->finished.push_back({token, 0, Status::Stopped("proposal cancelled")});
      return;
    }
  }
  for (auto& kv : slots_) {
    if (kv.second.has_own && !kv.second.own.forwarded && kv.second.own.token == token) {
      kv.second.own.cancelled = true;
    }
  }
}

bool Proposer::HasWork() const {
  return !queue_.empty() || !slots_.empty() || unstick_ || campaign_ || noop_wanted_ ||
         master_->WantsReady() ||
         (fill_to_ > learner_->chosen_end() && FillsNow()) ||
         change_fill_to_ > learner_->chosen_end();
}

bool Proposer::HasUnchosenSlot() const {
  for (const auto& kv : slots_) {
    if (!kv.second.chosen_sent) return true;
  }
  return false;
}

void Proposer::ArmAcceptTimer() {
  if (HasUnchosenSlot()) {
    ctx_->StartTimer(TimerKind::kAccept, ctx_->options().accept_timeout_ms);
    accept_timer_armed_ = true;
  } else if (accept_timer_armed_) {
    ctx_->CancelTimer(TimerKind::kAccept);
    accept_timer_armed_ = false;
  }
}

uint64_t Proposer::Bound() const {
  // M2: below chosen_end + alpha every configuration is known (a change not
  // learned yet is chosen at chosen_end or above, so governs from
  // chosen_end + alpha on).
  return std::min(UsableEnd(), learner_->chosen_end() + ctx_->ProposeDistance());
}

uint64_t Proposer::UsableEnd() const {
  if (phase_ != Phase::kPrepared) return limit_;
  // M3: the ballot is usable only where the configuration governing holds a
  // majority of its promises. A change learned after phase 1 may govern
  // instances it did not cover: phase 1 again once chosen_end gets there.
  const uint64_t end = learner_->chosen_end() + ctx_->ProposeDistance();
  return std::min(limit_, ctx_->QuorumEnd(prepare_from_, end, promised_by_));
}

void Proposer::Drive() {
  if (learner_->halted()) return;
  next_instance_ = std::max(next_instance_, learner_->chosen_end());
  if (!ctx_->SelfCanVote()) {
    // Not a voter of any configuration still to govern (removed, a
    // follower, or not added yet): its ballots would find no acceptor that
    // takes them. Queued proposals end; slots in flight end when decided.
    StopProposing();
    return;
  }
  if (master_->Defers()) {
    // Another node is a live master: no phase 1 and no fresh values here
    // (proposers no longer duel); the queue goes to the master. A phase 1
    // under way is given up (its late promises would only make a rival).
    campaign_ = false;
    if (phase_ == Phase::kPreparing) Yield();
    HandOver();
    return;
  }
  // Phase 1 from chosen_end needs a majority of the configuration
  // governing it (M3); a node that does not know it (a joiner, whose history
  // starts at the first change it learned) never gets one, and its PREPAREs
  // would only outbid the voter that fills the gap for it (FillWanted).
  const bool can_prepare = ctx_->CanPrepareFrom(learner_->chosen_end());
  if (phase_ == Phase::kIdle) {
    if (HasWork() && can_prepare) StartPrepare();
    return;
  }
  const bool early = phase_ == Phase::kPreparing &&
                     ctx_->Mutated(TestMutation::kFastPathWhilePreparing);
  if (phase_ != Phase::kPrepared && !early) return;
  if (learner_->chosen_end() >= UsableEnd()) {
    // Everything this ballot may touch is decided; its promises say nothing
    // about what lies beyond (or no majority of the configuration there
    // promised). Phase 1 again to go on.
    if (HasWork() && can_prepare) StartPrepare();
    return;
  }
  const bool was_armed = accept_timer_armed_ && HasUnchosenSlot();
  bool sent = false;
  // A new master's noop first, above everything phase 1 filled.
  while (noop_wanted_ && slots_.size() < ctx_->options().max_inflight &&
         next_instance_ < Bound()) {
    const uint64_t instance = next_instance_++;
    if (learner_->IsChosen(instance) || slots_.count(instance) != 0) continue;
    Slot& slot = slots_[instance];
    slot.value = EncodeValue(ctx_->options().self, ctx_->NewProposalId(), std::string());
    noop_wanted_ = false;
    master_->NoteNoop(instance, slot.value, /*complete=*/limit_ == UINT64_MAX);
    SendAccept(instance, &slot);
    sent = true;
  }
  // Fillers another node asked for (FILL), after the noop and before fresh
  // values: a stranded slot of the asker's gets decided.
  if (fill_to_ <= learner_->chosen_end() || !FillsNow()) fill_to_ = 0;
  while (fill_to_ != 0 && next_instance_ < fill_to_ &&
         slots_.size() < ctx_->options().max_inflight && next_instance_ < Bound()) {
    const uint64_t instance = next_instance_++;
    if (learner_->IsChosen(instance) || slots_.count(instance) != 0) continue;
    Slot& slot = slots_[instance];
    slot.value = EncodeValue(ctx_->options().self, ctx_->NewProposalId(), std::string());
    SendAccept(instance, &slot);
    ctx_->stats()->fills_proposed++;
    sent = true;
  }
  while (!queue_.empty() && slots_.size() < ctx_->options().max_inflight &&
         next_instance_ < Bound()) {
    const uint64_t instance = next_instance_++;
    if (learner_->IsChosen(instance) || slots_.count(instance) != 0) continue;
    Slot& slot = slots_[instance];
    slot.own = std::move(queue_.front());
    queue_.pop_front();
    slot.has_own = true;
    slot.value = slot.own.envelope;
    SendAccept(instance, &slot);
    ctx_->stats()->fast_accepts++;
    sent = true;
  }
  // Noop fillers up to a change's active_from, after the fresh values
  // (which move chosen_end just as well): the change gets in force.
  if (change_fill_to_ <= learner_->chosen_end()) change_fill_to_ = 0;
  while (change_fill_to_ != 0 && next_instance_ < change_fill_to_ &&
         slots_.size() < ctx_->options().max_inflight && next_instance_ < Bound()) {
    const uint64_t instance = next_instance_++;
    if (learner_->IsChosen(instance) || slots_.count(instance) != 0) continue;
    Slot& slot = slots_[instance];
    slot.value = EncodeValue(ctx_->options().self, ctx_->NewProposalId(), std::string());
    SendAccept(instance, &slot);
    sent = true;
  }
  if (sent && !was_armed) ArmAcceptTimer();
}

void Proposer::StartPrepare() {
  if (master_->RefusesOwnPrepare()) {
    // Master election: our own acceptor is in its startup hold or grants
    // another node. A PREPARE it does not promise would leave this ballot
    // unrecorded here, and a restart could use it again. Retry later.
    GoBackoff();
    return;
  }
  phase_ = Phase::kPreparing;
  NoteBallot(acceptor_->promised());
  if (max_number_ < kMaxBallotNumber) ++max_number_;  // saturates, never wraps
  ballot_ = Ballot(max_number_, ctx_->options().self);
  prepare_from_ = learner_->chosen_end();
  promise_limit_ = UINT64_MAX;
  limit_ = UINT64_MAX;
  promised_by_.clear();
  refused_by_.clear();
  noop_wanted_ = false;
  adopted_.clear();
  chosen_reported_.clear();
  behind_.clear();
  ctx_->stats()->prepares_started++;
  if (accept_timer_armed_) {
    ctx_->CancelTimer(TimerKind::kAccept);
    accept_timer_armed_ = false;
  }
  ctx_->StartTimer(TimerKind::kPrepare, ctx_->options().prepare_timeout_ms);
  PaxosMsg msg;
  msg.set_type(PREPARE);
  msg.set_instance(prepare_from_);
  ballot_.ToPb(msg.mutable_ballot());
  ctx_->Send(kBroadcast, &msg);
}

void Proposer::OnPromise(const PaxosMsg& msg) {
  if (phase_ != Phase::kPreparing || Ballot::FromPb(msg.ballot()) != ballot_ ||
      msg.instance() != prepare_from_) {
    return;  // a stale reply
  }
  if (!promised_by_.emplace(msg.from(), VoterOf(msg)).second) return;  // duplicate
  if (msg.reported_end() != 0 && !ctx_->Mutated(TestMutation::kIgnoreReportedEnd)) {
    promise_limit_ = std::min(promise_limit_, msg.reported_end());
  }
  for (const AcceptedEntry& e : msg.accepted()) {
    if (e.chosen()) {
      chosen_reported_[e.instance()] = e.value();
      continue;
    }
    const Ballot b = Ballot::FromPb(e.ballot());
    NoteBallot(b);
    auto it = adopted_.find(e.instance());
    const bool lowest = ctx_->Mutated(TestMutation::kAdoptLowestBallot);
    if (it == adopted_.end() || (lowest ? b < it->second.ballot : it->second.ballot < b)) {
      adopted_[e.instance()] = {b, e.value()};
    }
  }
  // M3: a majority of every configuration the ballot may be used under.
  if (ctx_->QuorumOver(prepare_from_, PrepareEnd(), promised_by_)) OnPrepared();
}

uint64_t Proposer::PrepareEnd() const {
  // At least the configuration of prepare_from_ itself; at most as far as
  // the ballot may go (the window and alpha, the promises' reported_end).
  const uint64_t end = std::min(prepare_from_ + ctx_->ProposeDistance(), promise_limit_);
  return std::max(end, prepare_from_ + 1);
}

void Proposer::OnPrepared() {
  ctx_->CancelTimer(TimerKind::kPrepare);
  // Values a promise reported as chosen need no vote: learn them. (Copied
  // first: learning applies values, which calls back into OnApplied. The
  // phase is still kPreparing, so Drive() sends nothing meanwhile: no
  // instance may get an ACCEPT before adoption below decided its value.)
  std::map<uint64_t, std::string> chosen;
  chosen.swap(chosen_reported_);
  for (const auto& kv : chosen) learner_->Learn(kv.first, kv.second);
  if (learner_->halted() || phase_ != Phase::kPreparing) return;
  phase_ = Phase::kPrepared;
  unstick_ = false;
  campaign_ = false;

  // The ballot is usable below the lowest reported_end only, and below every
  // reported value this node cannot keep: a peer with a larger window may
  // report a vote or a chosen value beyond ours, which the learner ignores.
  // Proposing there later, once our chosen prefix has moved up, would
  // overwrite a value this ballot was told about (a chosen one included: the
  // acceptor that reported it left its own vote out). So this ballot stops
  // short of them; phase 1 again, from closer, reports them anew.
  limit_ = promise_limit_;
  for (const auto& kv : chosen) {
    if (ctx_->Mutated(TestMutation::kFarChosenUnbounded)) break;
    if (!learner_->IsChosen(kv.first)) {
      limit_ = std::min(limit_, kv.first);  // ignored: beyond our window
      break;
    }
  }
  // (The distance, not only the window: M2 may keep the proposer nearer
  // than its window, and a vote reported beyond the bound gets no slot now,
  // so this ballot must never reach it later.)
  const uint64_t window_end = learner_->chosen_end() + ctx_->ProposeDistance();
  if (!adopted_.empty() && adopted_.rbegin()->first >= window_end) {
    limit_ = std::min(limit_, window_end);
  }
  if (ctx_->Mutated(TestMutation::kAdoptFirstOnly) && adopted_.size() > 1) {
    adopted_.erase(std::next(adopted_.begin()), adopted_.end());
  }
  // Every id below is < kMaxInstanceId (malformed messages are dropped), so
  // the + 1s cannot wrap.
  uint64_t end = std::max(next_instance_, prepare_from_);
  if (!adopted_.empty()) end = std::max(end, adopted_.rbegin()->first + 1);
  if (!slots_.empty()) end = std::max(end, slots_.rbegin()->first + 1);
  if (!learner_->pending().empty()) end = std::max(end, learner_->pending().rbegin()->first + 1);
  end = std::min(end, Bound());  // at most `window` ACCEPTs (noops included)
  // A reported vote that gets no slot now must never get a fresh value
  // later, when the bound has moved: the ballot stops short of it.
  auto beyond = adopted_.lower_bound(end);
  if (beyond != adopted_.end()) limit_ = std::min(limit_, beyond->first);
  const uint64_t begin = std::max(prepare_from_, learner_->chosen_end());
  for (uint64_t i = begin; i < end; ++i) {
    if (learner_->IsChosen(i)) continue;
    Slot& slot = slots_[i];
    auto a = adopted_.find(i);
    if (a != adopted_.end()) {
      slot.value = a->second.value;
    } else if (slot.has_own) {
      slot.value = slot.own.envelope;
    } else if (!queue_.empty()) {
      slot.own = std::move(queue_.front());
      queue_.pop_front();
      slot.has_own = true;
      slot.value = slot.own.envelope;
    } else {
      slot.value = EncodeValue(ctx_->options().self, ctx_->NewProposalId(), std::string());
    }
    SendAccept(i, &slot);
  }
  adopted_.clear();
  next_instance_ = std::max(next_instance_, end);
  ArmAcceptTimer();
  master_->OnPrepared(ballot_);  // master election: this node is master now
  Drive();
}

void Proposer::SendAccept(uint64_t instance, Slot* slot) {
  slot->ballot = ballot_;
  slot->accepted_by.clear();
  slot->chosen_sent = false;
  SendAcceptTo(kBroadcast, instance, *slot);
}

void Proposer::SendAcceptTo(uint64_t to, uint64_t instance, const Slot& slot) {
  PaxosMsg msg;
  msg.set_type(ACCEPT);
  msg.set_instance(instance);
  ballot_.ToPb(msg.mutable_ballot());
  msg.set_value(slot.value);
  // No vote of ours: it may leave while our own vote is being synced.
  ctx_->SendRequest(to, &msg);
}

void Proposer::OnAccepted(const PaxosMsg& msg) {
  const bool early = phase_ == Phase::kPreparing &&
                     ctx_->Mutated(TestMutation::kFastPathWhilePreparing);
  if ((phase_ != Phase::kPrepared && !early) || Ballot::FromPb(msg.ballot()) != ballot_) return;
  auto it = slots_.find(msg.instance());
  if (it == slots_.end()) return;
  Slot& slot = it->second;
  if (slot.ballot != ballot_ || slot.chosen_sent) return;
  slot.accepted_by.emplace(msg.from(), VoterOf(msg));
  // M3: only the voters of the configuration governing this instance.
  if (!ctx_->Phase2Quorum(msg.instance(), slot.accepted_by)) return;
  slot.chosen_sent = true;
  PaxosMsg notice;
  notice.set_type(CHOSEN);
  notice.set_instance(msg.instance());
  ballot_.ToPb(notice.mutable_ballot());
  notice.set_value(slot.value);
  ctx_->Send(kBroadcast, &notice);  // reaches our own learner this step too
  ArmAcceptTimer();                 // progress: restart (or stop) the clock
}

void Proposer::OnBehind(const PaxosMsg& msg) {
  ctx_->stats()->behind_replies++;
  if (phase_ != Phase::kPrepared || Ballot::FromPb(msg.ballot()) != ballot_) return;
  auto it = slots_.find(msg.instance());
  if (it == slots_.end() || it->second.ballot != ballot_ || it->second.chosen_sent) return;
  auto served = served_.find(msg.from());
  if (served != served_.end() && served->second > msg.chosen_end()) {
    // A catch-up batch this node sent is on its way there (the acceptor
    // asked before it answered): send again now, behind the batch. Once
    // per batch, so a reordering network cannot make this a loop.
    served_.erase(served);
    ResendAccept(msg.from(), msg.instance());
    return;
  }
  Behind& b = behind_[msg.from()];
  b.chosen_end = std::max(b.chosen_end, msg.chosen_end());
  b.instances.insert(msg.instance());
}

void Proposer::NoteServed(uint64_t peer, uint64_t end) {
  served_[peer] = std::max(served_[peer], end);
  NotePeer(peer, end);
}

void Proposer::NotePeer(uint64_t peer, uint64_t peer_chosen_end) {
  auto it = behind_.find(peer);
  if (it == behind_.end() || peer_chosen_end <= it->second.chosen_end) return;
  // It moved up: try again (if still too far, it answers BEHIND again).
  std::set<uint64_t> instances;
  instances.swap(it->second.instances);
  behind_.erase(it);
  for (uint64_t instance : instances) ResendAccept(peer, instance);
}

void Proposer::ResendAccept(uint64_t peer, uint64_t instance) {
  auto it = slots_.find(instance);
  if (phase_ != Phase::kPrepared || it == slots_.end()) return;
  const Slot& slot = it->second;
  if (slot.ballot != ballot_ || slot.chosen_sent || slot.accepted_by.count(peer) != 0) return;
  SendAcceptTo(peer, instance, slot);
  ctx_->stats()->behind_resends++;
}

void Proposer::OnReject(const PaxosMsg& msg) {
  const Ballot promised = Ballot::FromPb(msg.promised());
  NoteBallot(promised);
  master_->OnHigherBallot(promised);
  if (Ballot::FromPb(msg.ballot()) != ballot_) return;
  if (msg.type() == PREPARE_REJECT && msg.lease_holder() != 0 && phase_ == Phase::kPreparing &&
      msg.instance() == prepare_from_) {
    // Refused for a lease grant (or a startup hold), the promise untouched:
    // no sign of a higher ballot. Go on while a majority may still promise.
    refused_by_.insert(msg.from());
    if (!ctx_->QuorumImpossible(prepare_from_, PrepareEnd(), refused_by_)) return;
  }
  if (phase_ == Phase::kPreparing || phase_ == Phase::kPrepared) GoBackoff();
}

void Proposer::GoBackoff() {
  phase_ = Phase::kBackoff;
  behind_.clear();
  ctx_->CancelTimer(TimerKind::kPrepare);
  if (accept_timer_armed_) {
    ctx_->CancelTimer(TimerKind::kAccept);
    accept_timer_armed_ = false;
  }
  const uint64_t delay = 1 + ctx_->rng()->Uniform(ctx_->options().prepare_timeout_ms);
  ctx_->StartTimer(TimerKind::kBackoff, delay);
}

void Proposer::OnTimeout(TimerKind kind) {
  switch (kind) {
    case TimerKind::kPrepare:
      if (phase_ == Phase::kPreparing) GoBackoff();
      break;
    case TimerKind::kAccept:
      accept_timer_armed_ = false;
      if (phase_ == Phase::kPrepared && HasUnchosenSlot()) GoBackoff();
      break;
    case TimerKind::kBackoff:
      if (phase_ != Phase::kBackoff) break;
      phase_ = Phase::kIdle;
      Drive();
      break;
    case TimerKind::kLearn:
    case TimerKind::kHeartbeat:
    case TimerKind::kElection:
      break;
  }
}

bool Proposer::OnApplied(uint64_t instance, const std::string& value, uint64_t* token,
                         bool* own_slot) {
  bool ours = false;
  *own_slot = false;
  auto it = slots_.find(instance);
  if (it != slots_.end()) {
    Slot slot = std::move(it->second);
    slots_.erase(it);
    *own_slot = slot.value == value;
    if (slot.has_own && slot.own.forwarded) {
      // Proposed for another node: its origin reports it. Lost here: next
      // instance, like our own.
      if (slot.own.envelope != value) queue_.push_front(std::move(slot.own));
    } else if (slot.has_own) {
      if (slot.own.envelope == value) {
        ours = true;
        *token = slot.own.token;
        // A membership change ends once in force (reconfig.h), not here.
        if (!slot.own.system) {
          ctx_->out()->finished.push_back({slot.own.token, instance, Status::OK()});
        }
      } else if (slot.own.cancelled) {
        ctx_->out()->finished.push_back(
            {slot.own.token, 0, Status::Stopped("proposal cancelled")});
      } else {
        queue_.push_front(std::move(slot.own));  // another value won: next instance
      }
    }
    if (accept_timer_armed_ && !HasUnchosenSlot()) ArmAcceptTimer();
  }
  Drive();
  return ours;
}

}  // namespace paxos
}  // namespace chorus
