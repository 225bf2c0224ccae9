// Reconfig: the core's side of membership changes (membership.h has the
// rules M1..M6): it applies chosen changes, keeps the history durable,
// filters messages by membership, ends ProposeMembership calls, and keeps
// what this node heard from its peers.
//
//   input                           condition                    action
//   ------------------------------  ---------------------------  -------------------------------
//   Open (recovery)                 kMembershipVariable set      history = it (its alpha wins)
//                                   else members non-empty       history = Genesis(members,
//                                                                addresses, alpha); persisted
//                                                                by Start
//                                   else (joined)                unknown
//   chosen record at i (recovery)   a change, i > Latest().      Apply (M1) again: the log's
//                                   changed_at                   changes after the stored
//                                                                history; persisted by Start
//   system value applied at i       a change (kind 1)            Apply(i) (M1) BEFORE the
//   (learner, in order)                                          proposer drives on (Bound()
//                                                                then covers i + alpha); the
//                                                                history is persisted (synced)
//                                                                in this step;
//                                                                Outputs::membership_changed;
//                                                                the value goes out as a noop
//                                   ours (this node's call)      applied: wait for chosen_end
//                                                                >= active_from, then OK;
//                                                                Conflict / InvalidArgument:
//                                                                end at once
//                                   applied, and this node       proposer fills noops up to
//                                   proposed it or is master     active_from (an idle group gets
//                                                                the change in force by itself)
//   end of every step               a waiting change in force    finished OK (instance: the
//                                                                change's)
//   Cancel(token)                   a waiting change             finished Stopped ("chosen at
//                                                                i, in force from a": it goes on)
//   message from N (Core)           learn-type (ASK_LEARN,       accepted from any N != 0
//                                   CONFIRM_LEARN, LEARN_VALUES,
//                                   CHOSEN, NOT_MEMBER), RELEASE,
//                                   FILL (a removed node's slot:
//                                   learner.h)
//                                   otherwise, N a member of a   accepted
//                                   configuration governing
//                                   [chosen_end, inf)
//                                   otherwise                    dropped, non_member_messages,
//                                                                NOT_MEMBER to N
//   accepted message from N         -                            peers()[N]: last_heard_ms, its
//                                                                chosen_end; incarnation from
//                                                                ASK_LEARN / CONFIRM_LEARN
//   trim below T (trim.h)           -                            ForgetBelow(T), persisted in
//                                                                the trim's synced write
//   checkpoint install at S with    S > chosen_end, history      history = it, persisted with
//   a history                       known                        the install's write; preceded
//                                                                by this node's configurations
//                                                                before its first one that
//                                                                govern from S on, when they
//                                                                connect (PrependOlder: a
//                                                                joiner's checkpoint may lack
//                                                                At(S))
//   role()                          Latest() names self as an    kVoter (kNotEligible when M5
//                                   eligible voter / follower    refuses its entry) / kFollower
//                                   some configuration ever      kRemoved
//                                   named it, Latest() does not
//                                   otherwise                    kNotMember
#ifndef CHORUS_PAXOS_RECONFIG_H_
#define CHORUS_PAXOS_RECONFIG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "paxos/core.h"

namespace chorus {
namespace paxos {

class Reconfig {
 public:
  Reconfig(CoreContext* ctx, Learner* learner) : ctx_(ctx), learner_(learner) {}
  void SetRoles(Proposer* proposer, Master* master) {
    proposer_ = proposer;
    master_ = master;
  }

  // Recovery, before the records: the stored history, else the genesis.
  Status Recover();
  // Recovery, per chosen record in order: re-applies a change the stored
  // history does not hold yet.
  void Replay(uint64_t instance, const std::string& envelope);
  // First step: persists the history when the log holds none (or replay
  // moved it).
  void Start();

  // The learner applies the system value `payload` of `kind` at `instance`
  // (`known_kind`: false for an unknown kind, a noop). Returns the outcome
  // of Membership::Apply (OK for an unknown kind).
  Status Apply(uint64_t instance, bool known_kind, const std::string& payload);
  // After Apply at `instance` (outcome `s`): `ours` / `token` of the value
  // (this node's ProposeMembership, direct or forwarded), `own_proposer`:
  // this node's proposer got it chosen (not as a forward for another node).
  void Track(uint64_t instance, const Status& s, bool ours, uint64_t token, bool own_proposer);
  // End of a step: ends the changes now in force.
  void EndStep();
  // Core::Cancel of a change that is chosen and applied but not in force
  // yet: true when `token` was one; it ends with Stopped (it stays chosen:
  // the message says so).
  bool Cancel(uint64_t token);

  // The envelope of `change` for ProposeMembership, or why it is refused.
  Status Envelope(const MembershipChange& change, std::string* envelope);

  // The message filter; true when `msg` may be handled. Otherwise it was
  // counted and answered with NOT_MEMBER.
  bool Admit(const PaxosMsg& msg);
  // Peer bookkeeping for an admitted message.
  void NotePeer(const PaxosMsg& msg);
  std::vector<Core::PeerState> peers() const;

  // trim.h: the log is trimmed below `below` in this step.
  void OnTrim(uint64_t below);
  // A checkpoint at `instance` > chosen_end brought `membership`.
  void Install(uint64_t instance, const Membership* membership);

  MemberRole role() const;

 private:
  CoreContext* const ctx_;
  Learner* const learner_;
  Proposer* proposer_ = nullptr;
  Master* master_ = nullptr;
  bool persist_at_start_ = false;
  // Some configuration this node knew named it (role: kRemoved, not
  // kNotMember, once Latest() drops it).
  bool was_member_ = false;
  struct Waiting {
    uint64_t instance = 0;     // where the change was chosen
    uint64_t active_from = 0;  // it is in force once chosen_end reaches this
  };
  std::map<uint64_t, Waiting> waiting_;  // by token
  std::map<uint64_t, Core::PeerState> peers_;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_RECONFIG_H_
