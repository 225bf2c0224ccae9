// Admission: decides when each proposal of a group enters the protocol core,
// and answers the proposals that never enter it or that run out of time in it.
//
// Contract:
//  - The core holds at most Capacity() = 2 x max_inflight proposals:
//    max_inflight in phase 2, and as many queued in the core behind them, so
//    that the core refills a freed slot in the same step that freed it.
//  - The others wait in the backlog, in arrival order: a request never starts
//    before one that arrived earlier.
//  - A request that waited longer than max_queue_wait_ms before it could
//    start is answered Busy ("overloaded", or "stalled" when the loop itself
//    took it late: see CheckNotStarted); one whose deadline (its call's own)
//    passed before it started is answered Timeout, wherever it waits in the
//    backlog. Neither was proposed: both are definite failures.
//  - A request in the core is answered Timeout at its deadline and cancelled
//    in the core; it stays known to Find until the core ends it (Finish),
//    because its value may still be chosen and must then execute (without
//    the proposer's ctx).
//  - Every waiter is answered at most once (see Answer in proposal.h).
//
// Time comes from the RuntimeEnv. The deadline and backlog timers go through
// GroupTimers and come back as kDeadline / kBacklogCheck events, which the
// loop hands to OnDeadline / OnBacklogTimer.
//
// Thread safety: none; the group's loop thread alone uses an Admission (and
// Stop, once the loop is joined).
#ifndef CHORUS_NODE_ADMISSION_H_
#define CHORUS_NODE_ADMISSION_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <unordered_map>

#include "chorus/options.h"
#include "node/group_timers.h"
#include "node/proposal.h"
#include "node/runtime_env.h"
#include "paxos/core.h"

namespace chorus {

class Admission {
 public:
  // Takes the outputs of one core input, for the round being built.
  using MergeFn = std::function<void(paxos::Outputs* step)>;

  // REQUIRES: options, env, timers and core outlive this. `group`: for messages.
  Admission(const Options* options, uint32_t group, const RuntimeEnv* env, GroupTimers* timers,
            paxos::Core* core, MergeFn merge);

  Admission(const Admission&) = delete;
  Admission& operator=(const Admission&) = delete;

  // How many requests the core holds at most (2 x max_inflight).
  size_t Capacity() const;

  // A proposer's request: starts it in the core (its outputs in *step),
  // queues it behind the backlog, or answers it (expired).
  void Admit(const std::shared_ptr<ProposalRequest>& request, paxos::Outputs* step);
  // Answers expired requests at the front of the backlog and starts as many
  // as fit in the core; hands each start's outputs to the MergeFn. Call it
  // whenever proposals may have ended.
  void Drain();
  // The backlog timer fired: answers every expired request of the backlog
  // (deadlines differ per call), then drains.
  void OnBacklogTimer();
  // The deadline timer of `token` fired: answers its waiters Timeout and
  // cancels the proposal in the core (its outputs in *step).
  void OnDeadline(uint64_t token, paxos::Outputs* step);

  // The request the core knows as `token`, or nullptr.
  ProposalRequest* Find(uint64_t token) const;
  // The core ended `token`: forgets it and cancels its deadline timer.
  // Returns the request for the caller to answer; nullptr if unknown.
  std::shared_ptr<ProposalRequest> Finish(uint64_t token);
  // Answers every request, in the core and in the backlog, with `why`;
  // cancels their deadline timers and forgets them.
  void FailAll(const Status& why);

  size_t in_core() const { return in_core_.size(); }
  size_t backlogged() const { return backlog_.size(); }
  // BatchPropose batches held, in the core or the backlog: the batches in
  // flight that Options::batch_max_inflight counts; and their values.
  size_t batches_held() const { return batches_held_; }
  size_t batch_values_held() const { return batch_values_held_; }

  // Delay in ms, from `now`, of a timer that must not fire before `when`:
  // the whole milliseconds to it plus one. A `when` already past gives 1,
  // never a negative count cast to a huge unsigned delay.
  static uint64_t TimerDelayMs(SteadyTime now, SteadyTime when);

 private:
  // Answers `request` with Busy or Timeout and returns true, or returns
  // false if it may still start.
  bool Expired(ProposalRequest* request, SteadyTime now);
  // When a request that has not started must fail (queue wait or deadline).
  SteadyTime Expiry(const ProposalRequest& request) const;
  // Answers every expired request of the backlog, wherever it is.
  void ExpireBacklog();
  void StartInCore(const std::shared_ptr<ProposalRequest>& request, paxos::Outputs* step);
  // Arms the backlog check for the earliest expiry in the backlog, unless it
  // is armed; the second form (re-)arms it for `expiry` if that is earlier.
  void ArmBacklogTimer();
  void ArmBacklogTimer(SteadyTime expiry);
  // batches_held_ bookkeeping: `request` was taken into, or let go from,
  // in_core_ or backlog_.
  void Held(const ProposalRequest& request) {
    if (!request.batch) return;
    ++batches_held_;
    batch_values_held_ += request.waiters.size();
  }
  void LetGo(const ProposalRequest& request) {
    if (!request.batch) return;
    --batches_held_;
    batch_values_held_ -= request.waiters.size();
  }

  const Options* const options_;
  const uint32_t group_;
  const RuntimeEnv* const env_;
  GroupTimers* const timers_;
  paxos::Core* const core_;
  const MergeFn merge_;

  uint64_t next_token_ = 1;
  struct InCore {
    std::shared_ptr<ProposalRequest> request;
    uint64_t deadline_timer = 0;  // GroupTimers handle, 0: fired or none
  };
  std::unordered_map<uint64_t, InCore> in_core_;  // by core token; at most Capacity()
  std::deque<std::shared_ptr<ProposalRequest>> backlog_;
  uint64_t backlog_timer_ = 0;  // GroupTimers handle of the expiry check, 0: none
  size_t batches_held_ = 0;  // requests with `batch` set in in_core_ and backlog_
  size_t batch_values_held_ = 0;  // their waiters
  SteadyTime backlog_timer_due_;  // when it fires (valid while armed)
};

}  // namespace chorus

#endif  // CHORUS_NODE_ADMISSION_H_
