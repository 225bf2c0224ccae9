// Proposer: the operations other roles drive (paxos/proposer.h): the master's
// campaign and fillers, forwarded proposals, yielding, checkpoint skips and
// the learner's unstick.
#include "paxos/proposer.h"

#include <algorithm>

#include "paxos/learner.h"
#include "paxos/master.h"

namespace chorus {
namespace paxos {

void Proposer::HandOver() {
  uint64_t master = 0;
  if (!master_->ShouldForward(&master)) return;  // (just released: wait)
  while (!queue_.empty()) {
    Proposal p = std::move(queue_.front());
    queue_.pop_front();
    if (p.forwarded) {
      // Another node's: never forwarded twice (a copy may already be on its
      // way); its origin's deadline ends it, outcome unknown.
      ctx_->stats()->forwards_dropped++;
      continue;
    }
    // Never voted on (it was only queued), so exactly once holds.
    Status s = master_->Forward(p.token, p.envelope);
    if (!s.ok()) ctx_->out()->finished.push_back({p.token, 0, s});
  }
}

void Proposer::StopProposing() {
  campaign_ = false;
  unstick_ = false;
  noop_wanted_ = false;
  fill_to_ = 0;
  change_fill_to_ = 0;
  while (!queue_.empty()) {
    Proposal p = std::move(queue_.front());
    queue_.pop_front();
    if (p.forwarded) {
      ctx_->stats()->forwards_dropped++;  // its origin's deadline ends it
      continue;
    }
    ctx_->out()->finished.push_back(
        {p.token, 0,
         Status::InvalidArgument("this node is not a voting member of group " +
                                 std::to_string(ctx_->options().group) + " any more")});
  }
  if (phase_ == Phase::kPreparing || phase_ == Phase::kPrepared) Yield();
}

void Proposer::Campaign() {
  if (learner_->halted()) return;
  campaign_ = true;
  if (phase_ != Phase::kPreparing) StartPrepare();
}

bool Proposer::FillsNow() const { return !master_->enabled() || master_->IsMaster(); }

void Proposer::OnFill(uint64_t instance) {
  const uint64_t end = learner_->chosen_end();
  // Within alpha only: one FILL is bounded work (the asker's instance lies
  // there, unless this node is behind: it catches up, and the asker asks
  // again on its next tick). The fillers go out as Bound() lets them, a
  // window at a time.
  if (instance < end || instance >= end + ctx_->activation_distance() ||
      !ctx_->CanPrepareFrom(end)) {
    return;
  }
  Fill(instance);
}

bool Proposer::FillWanted(uint64_t* instance) const {
  if (ctx_->Mutated(TestMutation::kNoFillRequest)) return false;
  const uint64_t end = learner_->chosen_end();
  if (!ctx_->SelfCanVote()) {
    // Removed (or a follower now): no ballot of ours will decide our slots.
    if (slots_.empty() || slots_.rbegin()->first < end) return false;
    *instance = slots_.rbegin()->first;
    return true;
  }
  const Membership& m = ctx_->membership();
  if (!HasWork() || ctx_->CanPrepareFrom(end) || !m.known() ||
      m.configs().front().active_from <= end) {
    return false;
  }
  // A joiner with work below the first configuration it knows: once that
  // is decided, it runs phase 1 itself.
  *instance = m.configs().front().active_from - 1;
  return true;
}

void Proposer::Fill(uint64_t instance) {
  if (instance < learner_->chosen_end()) return;
  fill_to_ = std::max(fill_to_, instance + 1);  // instance < kMaxInstanceId
  Drive();
}

bool Proposer::StrandedSlot(uint64_t* instance) const {
  if (slots_.empty() || phase_ == Phase::kPrepared || phase_ == Phase::kPreparing) return false;
  *instance = slots_.rbegin()->first;
  return true;
}

void Proposer::ProposeForwarded(const std::string& envelope) {
  Proposal p;
  p.envelope = envelope;
  p.forwarded = true;
  queue_.push_back(std::move(p));
  Drive();
}

void Proposer::Yield() {
  if (phase_ != Phase::kPreparing && phase_ != Phase::kPrepared) return;
  phase_ = Phase::kIdle;
  noop_wanted_ = false;
  campaign_ = false;
  behind_.clear();
  ctx_->CancelTimer(TimerKind::kPrepare);
  if (accept_timer_armed_) {
    ctx_->CancelTimer(TimerKind::kAccept);
    accept_timer_armed_ = false;
  }
}

void Proposer::Skip(uint64_t instance) {
  for (auto it = slots_.begin(); it != slots_.end() && it->first < instance;) {
    const Slot& slot = it->second;
    if (slot.has_own && !slot.own.forwarded) {
      ctx_->out()->finished.push_back(
          {slot.own.token, 0,
           Status::Stopped("outcome unknown: instance " + std::to_string(it->first) +
                           " was decided while this node was behind (a checkpoint covers it)")});
    }
    it = slots_.erase(it);
  }
  adopted_.erase(adopted_.begin(), adopted_.lower_bound(instance));
  chosen_reported_.erase(chosen_reported_.begin(), chosen_reported_.lower_bound(instance));
  for (auto& kv : behind_) {
    auto& set = kv.second.instances;
    set.erase(set.begin(), set.lower_bound(instance));
  }
  next_instance_ = std::max(next_instance_, instance);
  if (accept_timer_armed_ && !HasUnchosenSlot()) ArmAcceptTimer();
}

void Proposer::Unstick() {
  unstick_ = true;
  if (phase_ == Phase::kIdle || phase_ == Phase::kPrepared) GoBackoff();
}

}  // namespace paxos
}  // namespace chorus
