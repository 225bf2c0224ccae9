// Proposer: gets this node's proposals chosen.
//
// Phases: kIdle -> kPreparing (PREPARE(b, s) to all, s = the learner's
// chosen_end) -> kPrepared once a majority promised. On success every
// instance in [s, hi] that is not known chosen gets an ACCEPT: the value with
// the highest ballot the promises reported (adoption), else this node's
// proposal waiting there, else a queued proposal, else a noop filler (hi: the
// highest instance anyone reported, or this proposer used). While b stands,
// new proposals go straight to phase 2 at fresh instances (the fast path: one
// round trip, one fsync), up to max_inflight at once.
//
// A rejection or a timeout sends the proposer to kBackoff: a random wait in
// [1, prepare_timeout_ms], then phase 1 again with a higher ballot, so
// duelling proposers drift apart and one wins.
//
// Bounds: the proposer never proposes (a value or a noop filler) at or beyond
// its learner's chosen_end + window, nor at or beyond the ballot's limit: the
// lowest reported_end of the PROMISEs it counted (a truncated PROMISE says
// nothing about higher instances), lowered to the window's end when a PROMISE
// reported an accepted value beyond it. Once chosen_end reaches the limit
// with work left it runs phase 1 again (higher ballot) from there. An
// ACCEPT_BEHIND reply is not a rejection: the ballot stands, and the ACCEPT
// is sent to that acceptor again as soon as one of its messages shows that
// its chosen prefix moved up (it catches up through its learner), instead
// of waiting for the accept timeout.
//
// Membership (membership.h M2, M3; the rules below hold with any history):
//
//   rule                          condition                   effect
//   ----------------------------  --------------------------  -----------------------------
//   M2 bound                      always                      never propose at or beyond
//                                                             chosen_end + min(window, alpha)
//   M3 phase 1 from s             PROMISEs of b               prepared once they hold a
//                                                             majority of the voters of every
//                                                             configuration governing [s,
//                                                             min(s + min(window, alpha),
//                                                             reported_end)); none known
//                                                             there: never
//   M3 lease refusals             some such configuration     phase 1 fails (back off)
//                                 can no longer reach a
//                                 majority outside them
//   M3 after a change             a configuration learned     the ballot is used below its
//                                 later governs from a, its   active_from only; phase 1 again
//                                 voters' majority did not    once chosen_end gets there
//                                 promise b
//   M3 phase 2 at j               ACCEPTED of b               chosen once they hold a
//                                                             majority of At(j)'s voters
//                                                             (followers, removed nodes and
//                                                             non-members never count)
//   change applied (FillTo(a))    this node got it chosen,    noop fillers at free instances
//                                 or is the master            below a, after queued values
//   not a voter (M4)              no configuration governing  queued proposals end
//                                 [chosen_end, inf) names it  InvalidArgument; no ballot
//                                 an eligible voter
//   M3 history unknown            At(chosen_end) unknown here no phase 1 (it could never
//                                 (a joiner: CanPrepareFrom)  succeed)
//   FillWanted (learn tick, no    not a voter, a slot at      FILL(highest slot) to a voter
//   progress: learner.h)          >= chosen_end               of Latest()
//                                 work, At(chosen_end)        FILL(first known active_from
//                                 unknown here                - 1) to a voter of Latest()
//   OnFill(i) (no master          chosen_end <= i <           noop fillers at free instances
//   election; the master: Fill)   chosen_end + alpha,         up to i (phase 1 first: it
//                                 CanPrepareFrom(chosen_end)  adopts what was accepted there)
//
// Ballot numbers never wrap: the next one saturates at kMaxBallotNumber.
//
// Exactly once: a proposal sits at one instance until that instance is
// learned. If its value was chosen there, it is done; if another value was,
// it moves to a later instance. It is never voted on at two instances.
#ifndef CHORUS_PAXOS_PROPOSER_H_
#define CHORUS_PAXOS_PROPOSER_H_

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "paxos/ballot.h"
#include "paxos/core.h"

namespace chorus {
namespace paxos {

class Proposer {
 public:
  Proposer(CoreContext* ctx, Learner* learner, Acceptor* acceptor)
      : ctx_(ctx), learner_(learner), acceptor_(acceptor) {}
  void SetMaster(Master* master) { master_ = master; }

  // Recovery: the highest ballot number this node has seen.
  void NoteBallot(const Ballot& b) {
    max_number_ = std::max(max_number_, std::min(b.number, kMaxBallotNumber));
  }

  void Propose(uint64_t token, const std::string& data);
  // Queues a ready envelope (`system`: a membership change, which ends when
  // in force, reconfig.h, not when chosen).
  void ProposeEnvelope(uint64_t token, const std::string& envelope, bool system);
  // A change applied here governs from `instance`: noop fillers at every
  // free instance below it (after the queued values), so it gets in force.
  void FillTo(uint64_t instance);
  void Cancel(uint64_t token);

  void OnPromise(const PaxosMsg& msg);
  void OnReject(const PaxosMsg& msg);
  void OnAccepted(const PaxosMsg& msg);
  // ACCEPT_BEHIND: the acceptor is behind its window; remembered, and the
  // ACCEPT re-sent once it moved up (NotePeer).
  void OnBehind(const PaxosMsg& msg);
  // A message from `peer` says its chosen_end is `peer_chosen_end`.
  void NotePeer(uint64_t peer, uint64_t peer_chosen_end);
  // This node just sent `peer` a catch-up batch ending at `end`.
  void NoteServed(uint64_t peer, uint64_t end);
  void OnTimeout(TimerKind kind);

  // Called by the learner when `instance` is applied with envelope `value`.
  // Returns true (and *token) if it was this proposer's proposal. *own_slot:
  // this proposer got `value` chosen there (its own or a forwarded one).
  bool OnApplied(uint64_t instance, const std::string& value, uint64_t* token,
                 bool* own_slot);

  // The learner is stuck behind a gap: run phase 1 to fill it.
  void Unstick();
  // A checkpoint covers every instance below `instance` (InstallCheckpoint):
  // this node's own proposals in flight there end with Stopped "outcome
  // unknown" (never re-proposed: they may have been chosen), forwarded ones
  // proposed for another node are dropped (their origin's deadline ends
  // them), and the slots and phase 1 results below it are forgotten.
  void Skip(uint64_t instance);

  // Master election (master.h).
  // Run phase 1 now, even with nothing queued (unless already preparing).
  void Campaign();
  // Propose a noop at the next free instance of the prepared ballot (the
  // new master's first commit); Master::NoteNoop says where it went, and
  // whether the ballot's phase 1 saw every vote (no limit: see Bound()).
  void WantNoop() { noop_wanted_ = true; }
  // Master (FILL from a follower), or without master election any voter
  // (OnFill): propose noop fillers at every free instance up to and
  // including `instance` (fast path: each is >= the prepared ballot's next
  // instance, where its phase 1 reported no vote, and below Bound(); an
  // instance with a slot keeps it, adopted values included; phase 1 first
  // when no ballot is prepared).
  void Fill(uint64_t instance);
  // Without master election: FILL(instance) from any node. Fill, when
  // instance lies in [chosen_end, chosen_end + alpha) and this node can
  // run phase 1 from chosen_end (CanPrepareFrom).
  void OnFill(uint64_t instance);
  // The learn tick (no progress): true, and *instance, when this node has
  // work it cannot get decided itself: it votes in no configuration still
  // to govern and holds a slot at or above chosen_end (*instance: the
  // highest), or it has work and does not know the configuration governing
  // chosen_end (*instance: the last instance before the first one it knows).
  bool FillWanted(uint64_t* instance) const;
  // Follower: the highest instance of a slot of this node's that no ballot
  // of its own drives any more (not prepared) while it defers to a live
  // master; false when there is none.
  bool StrandedSlot(uint64_t* instance) const;
  // The master proposes an envelope another node forwarded (no waiter here).
  void ProposeForwarded(const std::string& envelope);
  // Something changed for routing (a master became known): drive on, which
  // forwards the queued proposals when another node is master.
  void Kick() { Drive(); }
  // Mastership handed over: stop using the ballot (the slots stay; a later
  // phase 1, or the new master's, decides their instances).
  void Yield();

  enum class Phase { kIdle, kPreparing, kPrepared, kBackoff };
  Phase phase() const { return phase_; }
  const Ballot& ballot() const { return ballot_; }
  // Instances this proposer may propose at now: below this (M2:
  // chosen_end + min(window, alpha); M3: where the prepared ballot holds a
  // majority of the governing configuration's promises; the ballot's limit).
  uint64_t Bound() const;

 private:
  struct Proposal {
    uint64_t token = 0;
    std::string envelope;
    bool cancelled = false;
    bool forwarded = false;  // another node's, proposed for it (no waiter)
    bool system = false;     // a membership change (ends in force, reconfig.h)
  };
  struct Slot {
    std::string value;  // what this proposer asks acceptors to accept here
    Ballot ballot;
    Votes accepted_by;
    bool chosen_sent = false;
    bool has_own = false;
    Proposal own;  // this node's proposal waiting on this instance
  };

  // Anything to do: proposals, slots, a gap, a campaign, a noop, or (master
  // election) a master that is not ready yet: its phase 1 is retried after
  // every failure until a complete one places its readiness noop.
  bool HasWork() const;
  void Drive();
  void StartPrepare();
  void OnPrepared();
  void GoBackoff();
  // Starts phase 2 of `slot` under the current ballot (to every member).
  void SendAccept(uint64_t instance, Slot* slot);
  // The ACCEPT of `slot` under the current ballot, to `to` (kBroadcast: all).
  void SendAcceptTo(uint64_t to, uint64_t instance, const Slot& slot);
  void ResendAccept(uint64_t peer, uint64_t instance);
  void ArmAcceptTimer();
  bool HasUnchosenSlot() const;
  // Queued proposals go to the live master (or end NotMaster).
  void HandOver();
  // fill_to_ is in use: without master election, or as the master.
  bool FillsNow() const;
  // Not a voter any more (M4): queued proposals end, the ballot is dropped.
  void StopProposing();
  // The end of the range phase 1 must cover with majorities (M3).
  uint64_t PrepareEnd() const;
  // limit_, lowered (kPrepared) to where the promises lack a majority of
  // the governing configuration.
  uint64_t UsableEnd() const;

  CoreContext* const ctx_;
  Learner* const learner_;
  Acceptor* const acceptor_;
  Master* master_ = nullptr;
  Phase phase_ = Phase::kIdle;
  Ballot ballot_;
  uint64_t max_number_ = 0;
  uint64_t prepare_from_ = 0;
  uint64_t promise_limit_ = UINT64_MAX;  // kPreparing: min reported_end so far
  uint64_t limit_ = UINT64_MAX;          // kPrepared: the ballot is usable below
  Votes promised_by_;
  // kPreparing: acceptors that refused for a lease grant or startup hold.
  std::set<uint64_t> refused_by_;
  bool noop_wanted_ = false;
  // Fillers wanted below this (FILL: the master, or any voter without
  // master election); 0: none.
  uint64_t fill_to_ = 0;
  // Fillers wanted below a change's active_from (FillTo); 0: none.
  uint64_t change_fill_to_ = 0;
  // Running for master (Campaign): phase 1 is retried after a backoff until
  // it succeeds or another node is known as master.
  bool campaign_ = false;
  struct Adopted {
    Ballot ballot;
    std::string value;
  };
  std::map<uint64_t, Adopted> adopted_;
  std::map<uint64_t, std::string> chosen_reported_;
  std::map<uint64_t, Slot> slots_;
  std::deque<Proposal> queue_;
  uint64_t next_instance_ = 0;
  bool accept_timer_armed_ = false;
  bool unstick_ = false;
  // Acceptors that answered ACCEPT_BEHIND under the current ballot: their
  // chosen_end then, and the instances to re-send. At most one entry per
  // member, each with at most one instance per slot.
  struct Behind {
    uint64_t chosen_end = 0;
    std::set<uint64_t> instances;
  };
  std::map<uint64_t, Behind> behind_;
  // The end of the last catch-up batch sent to each peer, until an
  // ACCEPT_BEHIND from it uses it (one entry per member at most).
  std::map<uint64_t, uint64_t> served_;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_PROPOSER_H_
