// Acceptor: the voting rules of Paxos Made Simple, Multi-Paxos style.
//
// The promised ballot belongs to the whole group: a PREPARE(b, i) that is
// granted promises b for instance i AND every later one, and the PROMISE
// reports every value this acceptor accepted (or knows chosen) at >= i. This
// is what lets a proposer skip phase 1 for later instances while b stands.
// Accepted (ballot, value) is per instance.
//
// The acceptance window: an ACCEPT at or beyond chosen_end + window is
// refused with ACCEPT_BEHIND and changes nothing (this node catches up first),
// so accepted-but-unapplied values exist only in [chosen_end, chosen_end +
// window) and a PROMISE reports at most `window` entries. The PROMISE also
// stops at promise_budget_bytes of values (always reporting at least one),
// and then names the first instance it left out (reported_end).
//
//   PREPARE(b, i):  i < chosen_end         -> PREPARE_REJECT (the proposer is
//                                             behind and must catch up first;
//                                             this covers i < log_start, the
//                                             trimmed log: trim.h)
//                   b >= promised          -> promised = b (persisted), PROMISE
//                   otherwise              -> PREPARE_REJECT(promised)
//   ACCEPT(b, i, v): i known chosen        -> CHOSEN(i, chosen value); when
//                                             trimmed (i < log_start):
//                                             ACCEPT_REJECT (chosen_end tells
//                                             the proposer it is behind)
//                   b < promised           -> ACCEPT_REJECT(promised)
//                   i >= chosen_end +      -> ACCEPT_BEHIND (nothing changes)
//                     min(window, alpha)
//                   otherwise              -> promised = b, accepted[i] = (b, v)
//                                             (persisted), ACCEPTED
//
// Membership (membership.h M4, M5; CoreContext::MayAccept / MayPromise):
// the core hands the acceptor a PREPARE only while this node is an eligible
// voter (M5: its data dir is the one its entry names) of some configuration
// governing [chosen_end, infinity), and an ACCEPT at i only as an eligible
// voter of At(i) (or, for an i below the history this node knows, a joiner's,
// while it votes at all). Otherwise it stays silent (no promise, no vote, no
// refusal): followers, removed nodes, joiners that know no configuration
// naming them, and a node whose disk was lost. Every reply carries this
// node's incarnation and joined flag: a proposer counts it only as this
// data dir's eligible entry (so a re-added lost disk never counts under its
// old entry, which may still govern instances). A PREPARE from below
// chosen_end is refused by anyone (a refusal is no vote). An ACCEPT at or
// beyond chosen_end + min(window, alpha) is ACCEPT_BEHIND: beyond alpha
// this node may not know the configuration yet.
//
// Every state change is handed to CoreContext for persistence in the same
// step as the reply, so the reply leaves only after it is durable.
#ifndef CHORUS_PAXOS_ACCEPTOR_H_
#define CHORUS_PAXOS_ACCEPTOR_H_

#include <cstdint>
#include <map>
#include <string>

#include "paxos/ballot.h"
#include "paxos/core.h"

namespace chorus {
namespace paxos {

// Name of the LogStorage variable that holds the group promise (a BallotPb).
extern const char kPromiseVariable[];

class Acceptor {
 public:
  Acceptor(CoreContext* ctx, Learner* learner) : ctx_(ctx), learner_(learner) {}

  // Recovery: the persisted promise, and the accepted state of an instance
  // that is not chosen yet.
  void RestorePromise(const Ballot& b) { promised_ = b; }
  void RestoreAccepted(uint64_t instance, const Ballot& b, const std::string& value);

  void OnPrepare(const PaxosMsg& msg);
  // Returns true when it accepted (voted for) the value.
  bool OnAccept(const PaxosMsg& msg);

  // `instance` was applied: its state now lives in the log only.
  void Forget(uint64_t instance) { accepted_.erase(instance); }
  // A checkpoint covers every instance below `instance` (InstallCheckpoint).
  void ForgetBelow(uint64_t instance) {
    accepted_.erase(accepted_.begin(), accepted_.lower_bound(instance));
  }

  const Ballot& promised() const { return promised_; }
  // This acceptor voted at an instance that is not applied yet (at or above
  // chosen_end: applied ones are forgotten).
  bool HoldsVote() const { return !accepted_.empty(); }
  // The ballot this acceptor accepted at `instance` (null if none / forgotten).
  Ballot AcceptedBallot(uint64_t instance) const;

 private:
  // `by_accept`: implied by accepting a higher ballot (not a PREPARE).
  void Promise(const Ballot& b, bool by_accept);
  // Test mutations only: true when the PROMISE should leave out `instance`.
  bool DropFromPromise(uint64_t from_instance, uint64_t instance, bool chosen) const;
  void Reject(const PaxosMsg& msg, MsgType type);

  CoreContext* const ctx_;
  Learner* const learner_;
  Ballot promised_;
  struct Accepted {
    Ballot ballot;
    std::string value;
  };
  std::map<uint64_t, Accepted> accepted_;  // instances not applied yet
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_ACCEPTOR_H_
