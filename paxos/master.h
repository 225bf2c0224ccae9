// Master: master election with an acceptor-grant lease, heartbeats, read
// barriers, forwarding of proposals to the master, and master transfer. Only
// with CoreOptions::master_election; with it off every method is a no-op
// (or answers NotSupported) and the core sends exactly what it sent before.
//
// Time is an input (Core::SetNow, ctx->now()): monotonic ms, each node its
// own clock, rates within 1 +- rho (rho = max_clock_drift_ppm / 1e6).
//
// The lease (why at most one node holds one at any real instant)
// ---------------------------------------------------------------
// An acceptor that gets a HEARTBEAT (or accepts an ACCEPT) of ballot b from
// node N with b >= its promised ballot GRANTS N until now + lease_ms (its own
// clock; memory only, never persisted). While the grant lives it refuses
// every PREPARE from another node, and does so WITHOUT raising (or
// persisting) its promise: a lagging or partitioned node cannot depose a
// healthy master. The master stamps heartbeat round k with its send time
// t0_k; once a majority (itself included: its own acceptor grants it in the
// same step) acked round k, its lease ends at t0_k + lease_ms * (1 - rho) /
// (1 + rho) (its clock). In real time that is at most lease_ms / (1 + rho)
// after the round left, and every grant of round k was given after it left
// and lasts at least lease_ms / (1 + rho): the lease ends before any of the
// majority's grants. A rival needs PROMISEs from a majority, which meets the
// grant majority in an acceptor that refuses it until its grant ended. The
// grant is given only when b >= promised: an acceptor that already promised
// a higher ballot (whose owner may have a majority) does not grant the
// lower one, and the master's own ballot b is promised by a majority (its
// phase 1), so no lower ballot can get a value chosen during the lease.
// After a restart an acceptor does not know what it granted: the startup
// hold refuses every PREPARE (from anyone) for lease_ms after Start.
//
// Readiness: a new master serves no read (lease read or read index) until
// the noop it proposes right after phase 1, at an instance above every
// value its promises reported, is chosen in its own ballot and applied:
// then every value chosen under an older master is in its applied prefix.
//
// Rules (this node S; M = a master; "grant" = the acceptor's live grant)
//
//   event                        condition                   action
//   ---------------------------  --------------------------  ---------------------------------
//   Start                        -                           hold_until = now + lease_ms;
//                                                            arm the election timer
//   PREPARE(b) from N            now < hold_until, or a      PREPARE_REJECT(lease_holder =
//                                grant to G != N lives       G, or kUnknownHolder in the
//                                                            hold); promised unchanged
//   HEARTBEAT(b, k) from N       b >= promised (and S is     grant = (N, b, now + lease_ms);
//                                not a master of a higher    known master = N, b, its
//                                ballot)                     chosen_end; re-arm election;
//                                                            HEARTBEAT_ACK(k, promised)
//                                otherwise                   HEARTBEAT_ACK(k, promised > b)
//   ACCEPT(b) accepted from N    -                           grant = (N, b, now + lease_ms)
//   RELEASE(t, b) from N         grant holder N, ballot b    grant = (t, now + lease_ms) (t=0:
//                                                            none); forget N as master;
//                                t == S                      phase 1 at once
//   phase 1 of S (proposer)      own acceptor would refuse   back off, send nothing
//   phase 1 of S succeeded       -                           S is master (ballot b), not
//                                                            ready; propose a noop; heartbeat
//   heartbeat timer              S master                    HEARTBEAT(b, ++k) to all, t0_k
//   HEARTBEAT_ACK(k) majority    promised <= b               lease = max(lease, t0_k +
//                                                            lease_ms (1-rho)/(1+rho))
//   HEARTBEAT_ACK refused        promised > b, of another    phase 1 again above it (the
//                                node                        holder may; a stale promise
//                                                            goes, a real rival refuses)
//   *_REJECT / own acceptor's    a ballot > b of another     S in its lease (not released):
//   promise                      node                        phase 1 again above it, S stays
//                                                            master, ready, in lease (a stale
//                                                            promise: no rival can have a
//                                                            majority); otherwise step down
//   HEARTBEAT                    a ballot > b of another     step down
//                                node
//   any input                    S master, now >= max(lease, step down
//                                since + lease_ms)
//   proposer idle or at its      S master, not ready         phase 1 again (after every
//   ballot's limit                                           refusal, loss or backoff)
//   noop applied                 it is S's noop, its phase   ready
//                                1 saw every vote
//                                otherwise                   propose another noop
//   election timer               no live master known, no    phase 1 (even with nothing
//                                grant to another, no hold,  queued); re-arm with jitter
//                                not right after a transfer
//   Propose                      live master M != S          FORWARD to M (or NotMaster)
//   proposals queued             live master M != S          forward them, never phase 1
//   HEARTBEAT(b) granted, from   S holds a slot of its own   FILL(i = its highest such slot,
//   M != S                       no ballot of S drives (S    b) to M (once per heartbeat)
//                                not preparing / prepared)
//   FILL(i, b) from N != S       S master (not released) of  noop fillers at every free
//                                ballot b or b null (a       instance >= its next instance,
//                                learn tick's: learner.h),   up to i (not the readiness noop;
//                                i >= chosen_end             slots, adopted ones included,
//                                                            stay as they are)
//   FORWARD(envelope, b)         S master since b or before, propose it (no local waiter)
//                                not a duplicate
//   applied value of S's         forwarded by S              finish its token, ours = true
//   ReadBarrier                  S ready master, in lease    I = chosen_end, at once
//                                live master M != S          READ_INDEX to M
//                                otherwise                   Busy
//   READ_INDEX                   S ready master, in lease    READ_INDEX_REPLY(chosen_end)
//                                otherwise                   READ_INDEX_REPLY(0: refused)
//   READ_INDEX_REPLY(I)          I > 0                       done once chosen_end >= I (ask M
//                                                            for values now if behind)
//   membership (membership.h)
//   election timer / RELEASE to  S not an eligible voter of  no campaign (followers, removed,
//   S                            Latest()                    not eligible nodes never run)
//   HEARTBEAT_ACK majority       of the voters of every      (the lease rule above needs
//                                configuration governing     them all: M3)
//                                [chosen_end, chosen_end +
//                                alpha)
//   end of a step                S master, no configuration  TransferMaster(0): release to
//                                governing [chosen_end, inf) nobody, propose nothing more
//                                has S as an eligible voter
//   phase 1 of S succeeded       Latest().active_from >      noop fillers up to it (a change
//                                chosen_end                  gets in force under a new master)
//   TransferMaster(t)            t not a voter of Latest()   InvalidArgument
//   TransferMaster(t)            S master                    drop the lease and readiness (in
//                                                            this step, before RELEASE
//                                                            leaves), stop the proposer's
//                                                            ballot, RELEASE(t, b) to all;
//                                                            no campaign for
//                                                            election_timeout_ms
//                                                            (t = 0, step down:
//                                                            2 x timeout + jitter)
#ifndef CHORUS_PAXOS_MASTER_H_
#define CHORUS_PAXOS_MASTER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "paxos/ballot.h"
#include "paxos/core.h"

namespace chorus {
namespace paxos {

// PaxosMsg::lease_holder of a PREPARE_REJECT sent during the startup hold:
// the acceptor does not know whom it granted before its restart.
constexpr uint64_t kUnknownHolder = ~uint64_t{0};

class Master {
 public:
  Master(CoreContext* ctx, Learner* learner, Acceptor* acceptor, Proposer* proposer)
      : ctx_(ctx), learner_(learner), acceptor_(acceptor), proposer_(proposer) {}

  bool enabled() const { return ctx_->options().master_election; }

  // Step boundaries. Begin: expiries that depend on the time (the lease,
  // the known master, read-index requests). End: read barriers whose
  // instance was reached; Outputs::master_changed.
  void Start();
  void BeginStep();
  void EndStep();

  // ---- acceptor side ----
  // True when the PREPARE is refused for a grant or the startup hold (the
  // refusal was sent; the acceptor must not see the PREPARE).
  bool RefusePrepare(const PaxosMsg& msg);
  // True when this node's own acceptor would refuse this node's PREPARE now.
  // The proposer then does not start phase 1 (it backs off): a ballot is
  // sent only together with the own acceptor's promise of it, persisted in
  // the same step, which is what keeps a restarted node from ever using the
  // same ballot twice (with another value).
  bool RefusesOwnPrepare() const;
  // The acceptor accepted this ACCEPT.
  void OnAccepted(const PaxosMsg& msg);
  void OnHeartbeat(const PaxosMsg& msg);
  void OnRelease(const PaxosMsg& msg);

  // ---- master side ----
  // The proposer's phase 1 with ballot `b` succeeded.
  void OnPrepared(const Ballot& b);
  // The proposer placed the noop the master asked for (Proposer::WantNoop).
  // `complete`: its ballot's phase 1 reported every vote of its majority
  // (no reported_end, nothing beyond the window); otherwise values may be
  // chosen above the ballot's limit that this node never heard of, and the
  // noop does not make it ready: it asks again (the proposer then fills up
  // to the limit and runs phase 1 again from there).
  void NoteNoop(uint64_t instance, const std::string& envelope, bool complete);
  // This node is master but not ready (nor released): the proposer keeps
  // running phase 1 (after each backoff) until its readiness noop is placed
  // under a ballot whose phase 1 saw every vote. (Sim F2: a phase 1 again,
  // after a truncated PROMISE, that was refused or lost left the proposer
  // idle with "nothing to do", and the master never became ready.)
  bool WantsReady() const { return enabled() && is_master_ && !ready_ && !released_; }
  // End of a step: a master whose removal is in force (it votes in no
  // configuration still to govern) releases to nobody. True when it did
  // (the RELEASE is queued: drain it).
  bool StepDownIfRemoved();
  // Some node's ballot `b` is known promised or used: a master with a lower
  // ballot (of another node) steps down.
  void OnHigherBallot(const Ballot& b);
  void OnHeartbeatAck(const PaxosMsg& msg);
  void OnForward(const PaxosMsg& msg);
  // FILL(i) from a follower with a stranded slot at i (paxos.proto).
  void OnFill(const PaxosMsg& msg);
  // This node is the master (not released): the proposer may place fillers.
  bool IsMaster() const { return enabled() && is_master_ && !released_; }
  void OnReadIndex(const PaxosMsg& msg);
  void OnReadIndexReply(const PaxosMsg& msg);
  void OnTimeout(TimerKind kind);

  // The learner applied `envelope` (decoded: proposer, id) at `instance`.
  // Returns true (and *token) when it is a value this node forwarded.
  bool OnApplied(uint64_t instance, const std::string& envelope, uint64_t proposer, uint64_t id,
                 uint64_t* token);

  // A checkpoint covers every instance below `instance` (InstallCheckpoint):
  // a readiness noop placed there has an unknown fate, so it is placed again
  // (higher up).
  void Skip(uint64_t instance);

  // ---- routing ----
  // The proposer must not run phase 1 or propose fresh values: another node
  // is a live master (or this one just handed its mastership over).
  bool Defers() const;
  // True (and *master) when Propose must not queue: a live master other than
  // this node is known.
  bool ShouldForward(uint64_t* master) const;
  // Sends `envelope` (this node's proposal `token`) to the live master, or
  // returns NotMaster when forward_to_master is off or none is known.
  Status Forward(uint64_t token, const std::string& envelope);
  // Cancel of a forwarded token: true when it was one (finished Stopped).
  bool CancelForwarded(uint64_t token);

  // ---- Core API ----
  void ReadBarrier(uint64_t token);
  Status Transfer(uint64_t target);
  MasterView View() const;
  bool HoldsLease() const;

 private:
  bool Live(uint64_t now) const { return known_node_ != 0 && now < known_until_; }
  bool HoldActive() const;
  bool GrantLive() const;
  void Grant(uint64_t holder, const Ballot& b);
  void SendHeartbeat();
  void ArmElection();
  void StepDown();
  void FailReads(const std::string& why);
  void Barrier(uint64_t token, uint64_t instance, const Status& s);
  uint64_t DriftedLease() const;

  CoreContext* const ctx_;
  Learner* const learner_;
  Acceptor* const acceptor_;
  Proposer* const proposer_;

  // Acceptor side: the startup hold and the live grant (memory only).
  uint64_t hold_until_ = 0;
  uint64_t grant_holder_ = 0;  // 0: none
  Ballot grant_ballot_;
  uint64_t grant_until_ = 0;

  // Master side.
  bool is_master_ = false;
  bool ready_ = false;
  // kTransferKeepsLease only: released but still claiming the lease.
  bool released_ = false;
  Ballot ballot_;          // the prepared ballot heartbeats carry (the epoch)
  // The ballot this node became master with (in this process): FORWARDs
  // addressed to an earlier mastership (older ballots) are dropped.
  Ballot first_ballot_;
  uint64_t since_ = 0;     // when this node became master
  uint64_t lease_until_ = 0;
  bool has_noop_ = false;
  bool noop_complete_ = false;
  uint64_t noop_instance_ = 0;
  std::string noop_envelope_;
  uint64_t heartbeat_seq_ = 0;
  struct HeartbeatRound {
    uint64_t sent_at = 0;
    Votes acks;
  };
  std::map<uint64_t, HeartbeatRound> rounds_;  // bounded: the recent ones
  // FORWARDed identities (proposer, id) this master proposed, to drop a
  // duplicated FORWARD (bounded FIFO).
  std::set<std::pair<uint64_t, uint64_t>> seen_forwards_;
  std::deque<std::pair<uint64_t, uint64_t>> seen_order_;

  // Follower side.
  uint64_t known_node_ = 0;
  Ballot known_ballot_;
  uint64_t known_chosen_end_ = 0;
  uint64_t known_until_ = 0;
  uint64_t no_campaign_until_ = 0;

  // Forwarded proposals of this node: proposal id -> token.
  std::map<uint64_t, uint64_t> forwarded_;

  // Read index: requests awaiting the master's reply (by sequence number),
  // and answered ones awaiting this node's chosen_end (index).
  struct PendingRead {
    uint64_t token = 0;
    uint64_t master = 0;  // asked
    uint64_t index = 0;   // its answer
    uint64_t sent_at = 0;
  };
  uint64_t read_seq_ = 0;
  std::map<uint64_t, PendingRead> reads_;
  std::vector<PendingRead> waits_;

  MasterView last_view_;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_MASTER_H_
