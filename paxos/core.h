// Core: the Multi-Paxos protocol of ONE group on ONE node, as a deterministic
// state machine. It has no threads, sockets, clock, files or randomness of its
// own: the runtime (node/) or the simulation (unittest/sim) feeds it inputs
// and executes the Outputs each input returns.
//
// Roles (each in its own file): Acceptor (acceptor.h: promise / accept rules
// of Paxos Made Simple, with ONE promised ballot for the whole group),
// Proposer (proposer.h: phase 1 / phase 2 with a majority, adoption of
// accepted values, randomised backoff, pipelining, the phase-1-skipping fast
// path), Learner (learner.h: chosen notices, catch-up, chained checksums,
// in-order delivery), Master (master.h: election, the acceptors' lease
// grants, heartbeats, read barriers, forwarding and transfer; only with
// CoreOptions::master_election), LogTrimmer (trim.h: the log's start,
// trimming behind checkpoints, checkpoint installs, "use a checkpoint"),
// Reconfig (reconfig.h: membership changes, the non-member filter, peers;
// the rules are membership.h's).
//
// How a runtime drives a Core
// ---------------------------
//   std::unique_ptr<Core> core;
//   Status s = Core::Open(options, log, &core);   // recovers from `log`
//   Outputs out;
//   core->Start(&out);  Execute(out);             // arms the learn timer
//   loop: for each input (a Propose, a message from the transport, a timer
//   firing, a Cancel, a ReadBarrier, a TransferMaster) call SetNow(monotonic
//   ms) and then the matching method with a fresh `out`, then
//   Execute(out) before feeding the next input. Or (group commit) add each
//   step's `out` to a Round (round.h) and Execute the merged round after
//   several inputs: the core's state may run ahead of what is executed.
//
// Execute(out) MUST do, in this order:
//   0. optionally: send the out.messages entries marked before_persist
//      (else send them with step 2's): requests carrying no vote of this
//      node (outputs.h). Their replies, like every input, reach the core
//      only after step 1 returned;
//   1. persist: log->Write(out.persist, out.sync) when !out.persist.empty().
//      If the write fails the group must stop (drop the Core; it may be
//      reopened from the log later): nothing else of this step may be
//      sent/applied. This ordering is what makes "a promise or accept is
//      answered only once it is durable" true.
//   2. send every other out.messages entry (kBroadcast: every other member);
//      serve every out.catchup_reads entry (paxos/catchup.h: ReadCatchup,
//      then send its reply to read.peer when reply.bytes is not empty,
//      which may be a "use a checkpoint" answer with no entries): after
//      step 1 returned, on any thread, in any order with the sends; or
//      drop it (best effort too);
//   3. apply out.chosen to the state machines in order, then wake the
//      waiters of out.finished and out.barriers; report out.master when
//      out.master_changed;
//      start fetching a checkpoint for out.checkpoint_needed (unless a
//      transfer runs); once it is stored, load it into the state machines,
//      then call InstallCheckpoint (on the loop, between rounds; trim.h);
//   4. start out.timers (call OnTimeout(id) after delay_ms on a monotonic
//      clock) and optionally cancel out.cancel_timers.
//   out.errors are reports (log them); they need no action.
//
// Every input method clears *out first, so an Outputs object can be reused.
//
// Thread safety: none. One group = one thread (the group's event loop) calls
// every method. The borrowed LogStorage is only read by the core (recovery,
// ReadChosen, an ACCEPT for an instance chosen long ago, the one record
// OnCheckpoint reads for the chain's start); all writes are
// outputs, and so are the catch-up reads of values evicted from its cache
// (Outputs::catchup_reads), which the runtime serves off its loop.
//
// Messages to self: the core handles its own prepare/accept/chosen messages
// internally within the same step; the runtime never sees them.
//
// Values: the core wraps each proposed value in an envelope (proposer id,
// proposal id, bytes); the envelope is what is replicated and checksummed.
// Empty application values are not allowed: an empty envelope payload marks a
// noop filler the core may choose to close a gap (ChosenValue::noop).
#ifndef CHORUS_PAXOS_CORE_H_
#define CHORUS_PAXOS_CORE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "chorus/log_storage.h"
#include "chorus/status.h"
#include "paxos/ballot.h"
#include "paxos/membership.h"
#include "paxos/options.h"
#include "paxos/outputs.h"
#include "paxos/random.h"

namespace chorus {
namespace paxos {

class Acceptor;
class Learner;
class LogTrimmer;
class Master;
class Proposer;
class Reconfig;

// Name of the LogStorage variable that holds the largest acceptance window
// this log was written under (decimal). Recovery scans that far beyond the
// chosen prefix, so lowering CoreOptions::window across a restart loses no
// vote cast under the larger one.
extern const char kWindowVariable[];
// Name of the LogStorage variable that holds the log's start (a LogStartPb,
// paxos.proto): the first instance the log holds and the chained checksum of
// the instance before it. Unset: the log was never trimmed. Every trim and
// every checkpoint install writes it in the SAME synced batch as its
// LogWriteBatch::delete_below ("paxos.log_start").
extern const char kLogStartVariable[];

// Counters, for tests and metrics.
struct CoreStats {
  uint64_t garbage_messages = 0;  // failed to parse, or malformed (dropped)
  uint64_t foreign_messages = 0;  // other cluster/group or non-member (dropped)
  // The message's own `from` is not the sender the transport verified (dropped).
  uint64_t sender_mismatches = 0;
  uint64_t prepares_started = 0;  // phase 1 rounds this proposer began
  uint64_t fast_accepts = 0;      // proposals sent straight to phase 2
  uint64_t catchup_requests = 0;  // ASK_LEARN / CONFIRM_LEARN sent
  // Catch-up batches beyond the cache, planned as Outputs::catchup_reads.
  uint64_t catchup_reads = 0;
  uint64_t accepts_behind = 0;    // ACCEPTs this acceptor refused: beyond its window
  uint64_t behind_replies = 0;    // ACCEPT_BEHIND this proposer received
  uint64_t behind_resends = 0;    // ACCEPTs re-sent to an acceptor that caught up
  uint64_t beyond_window = 0;     // chosen values the learner ignored: beyond its window
  uint64_t truncated_promises = 0;  // PROMISEs sent that hit promise_budget_bytes
  // Master election (zero when it is off).
  uint64_t elections_started = 0;    // phase 1 begun by the election timer or a RELEASE
  uint64_t heartbeats_sent = 0;      // heartbeat rounds this master sent
  uint64_t prepares_refused = 0;     // PREPAREs refused for a grant or the startup hold
  uint64_t forwards_sent = 0;        // proposals this node forwarded to the master
  uint64_t forwards_proposed = 0;    // FORWARDs this master proposed
  // FILL hints this node sent: a follower's stranded slots (master.h), or
  // work it cannot get decided itself (learner.h, on a learn tick).
  uint64_t fills_sent = 0;
  uint64_t fills_proposed = 0;       // noop fillers this node proposed for FILLs
  uint64_t forwards_dropped = 0;     // FORWARDs dropped (not the master, duplicate)
  uint64_t read_index_requests = 0;  // READ_INDEX sent
  uint64_t master_messages_ignored = 0;  // master-election messages while it is off
  // Checkpoints and log trimming (paxos/trim.h).
  uint64_t trims = 0;                  // trims persisted (OnCheckpoint moved log_start)
  uint64_t checkpoint_replies = 0;     // "use a checkpoint" answers sent (LEARN_VALUES log_start)
  uint64_t checkpoints_needed = 0;     // Outputs::checkpoint_needed entries reported
  uint64_t checkpoints_installed = 0;  // InstallCheckpoint calls that moved chosen_end
  // Membership (paxos/membership.h).
  uint64_t membership_changes = 0;    // changes applied (M1), chosen here or learned
  uint64_t membership_conflicts = 0;  // changes chosen but not applied (stale / invalid)
  uint64_t non_member_messages = 0;   // voting messages refused from non-voters (M4)
  uint64_t not_member_sent = 0;       // NOT_MEMBER replies sent
};

// The votes (PROMISE, ACCEPTED, HEARTBEAT_ACK) a count holds, by sender,
// with the data dir each says it speaks for (PaxosMsg.incarnation, joined):
// a vote counts in a configuration only as its sender's eligible entry's
// (membership.h M5), whatever the sender believes the history to be.
struct VoterId {
  uint64_t incarnation = 0;
  bool joined = false;
};
using Votes = std::map<uint64_t, VoterId>;
// The sender of `msg` as a voter.
VoterId VoterOf(const PaxosMsg& msg);

// State shared by the roles of one core during one step. Internal.
class CoreContext {
 public:
  CoreContext(const CoreOptions& options, LogStorage* log);

  const CoreOptions& options() const { return options_; }
  // True when the test mutation `m` is on (see TestMutation).
  bool Mutated(TestMutation m) const { return options_.test_mutation == m; }
  LogStorage* log() const { return log_; }
  Rng* rng() { return &rng_; }
  CoreStats* stats() { return &stats_; }
  Outputs* out() { return out_; }
  // The current time (Core::SetNow), monotonic ms.
  uint64_t now() const { return now_; }
  void set_now(uint64_t now_ms) { now_ = now_ms > now_ ? now_ms : now_; }

  // Fills the header (cluster, group, from, chosen_end) and queues `msg` for
  // `to` (kBroadcast: every other member AND this node). Messages to self are
  // delivered within the current step.
  void Send(uint64_t to, PaxosMsg* msg);
  // As Send, for a request that carries no vote of this node (a proposer's
  // ACCEPT): it may leave before the step's persist (OutMessage::
  // before_persist) unless the step persists a variable or a trim. The copy
  // to self is handled as Send's, within the step.
  void SendRequest(uint64_t to, PaxosMsg* msg);
  // Records the state of `instance` to persist at the end of the step (the
  // last one recorded for an instance wins). A vote (an accepted value, the
  // acceptor's word) makes the step's write synced; a chosen record alone
  // does not: a crash that loses it loses nothing a peer relies on (the
  // votes that chose it are synced, so it is learned again), which saves
  // the second fsync before Execute on the propose path.
  void PersistRecord(uint64_t instance, std::string record, bool vote);
  // Variables (the promise, the window) always make the write synced.
  void PersistVariable(const std::string& name, std::string value);
  // Removes every record below `below` (LogWriteBatch::delete_below) in this
  // step's write, together with the records this step recorded below it
  // (the storage applies delete_below before the batch's records). Makes the
  // write synced: a trim always goes with its kLogStartVariable.
  void PersistTrim(uint64_t below);
  // Starts timer `kind`, superseding the running one of that kind.
  void StartTimer(TimerKind kind, uint64_t delay_ms);
  void CancelTimer(TimerKind kind);
  // True when `id` is the live timer of its kind (not superseded/cancelled).
  bool IsLiveTimer(const TimerId& id) const;
  void ReportError(const Status& s);

  // Step boundaries (Core only).
  void BeginStep(Outputs* out);
  bool PopLocal(PaxosMsg* msg);
  void EndStep();

  void set_chosen_end_source(const Learner* learner) { learner_ = learner; }

  // ---- Membership (membership.h; core_membership.cc) ----
  // The group's configuration history as this node knows it.
  const Membership& membership() const { return membership_; }
  // Replaces the history (recovery, a checkpoint install) or changes it (an
  // applied change, a trim); the caller persists it (PersistMembership).
  Membership* mutable_membership() { return &membership_; }
  // Writes kMembershipVariable (synced, like every variable) in this step
  // and reports the new history (Outputs::membership_changed).
  void PersistMembership();
  // Lamport's alpha of the group: the history's (a log's recorded one wins),
  // else CoreOptions::activation_distance.
  uint64_t activation_distance() const;
  // min(window, alpha): how far beyond chosen_end this node may propose (M2).
  uint64_t ProposeDistance() const;
  // A proposal id for an application value or noop: bit 63 clear (value.h).
  uint64_t NewProposalId();
  // M4: this node is an eligible voter of some configuration governing
  // [chosen_end, infinity). (kFollowerVotes: any member.)
  bool SelfCanVote() const;
  // M4, what the acceptor answers: a PREPARE (from any instance) while
  // SelfCanVote(); an ACCEPT at `instance` as an eligible voter of
  // At(instance), or while SelfCanVote() when this node does not know that
  // configuration (a joiner's history starts at the first change it
  // learned). The proposer counts a vote only as the sender's eligible
  // entry (Votes), so an answer that cannot count is only wasted.
  // (kFollowerVotes: any member answers.)
  bool MayAccept(uint64_t instance) const;
  bool MayPromise(uint64_t from) const;
  // This node may run phase 1 from `from` (Learner's gap filling): it votes
  // (SelfCanVote) and knows the configuration governing `from`.
  bool CanPrepareFrom(uint64_t from) const;
  // This node is an eligible voter of Latest() (it may run for master).
  bool SelfEligibleInLatest() const;
  // `id` is a member (voter or follower) of some configuration governing
  // [chosen_end, infinity): its non-learning messages are accepted.
  bool IsCurrentMember(uint64_t id) const;
  // M3, phase 2: `ids` (the acceptors that accepted) choose instance j.
  bool Phase2Quorum(uint64_t instance, const Votes& votes) const;
  // M3, phase 1 and the master's lease: `ids` hold a majority of every
  // configuration governing [from, to) (false when some instance there is
  // governed by no known configuration).
  bool QuorumOver(uint64_t from, uint64_t to, const Votes& votes) const;
  // The first instance in [from, to) where QuorumOver fails (to: none).
  uint64_t QuorumEnd(uint64_t from, uint64_t to, const Votes& votes) const;
  // Some configuration governing [from, to) can no longer reach a majority
  // outside `refused`.
  bool QuorumImpossible(uint64_t from, uint64_t to, const std::set<uint64_t>& refused) const;

 private:
  // The configurations the proposer's quorum rules look at for [from, to):
  // kQuorumOfCurrentOnly narrows them to the one of chosen_end.
  std::vector<const Config*> QuorumConfigs(uint64_t from, uint64_t to, bool* complete) const;

  const CoreOptions options_;
  LogStorage* const log_;
  Rng rng_;
  CoreStats stats_;
  Outputs* out_ = nullptr;
  const Learner* learner_ = nullptr;
  uint64_t now_ = 0;
  std::map<uint64_t, std::string> records_;
  std::map<std::string, std::string> variables_;
  uint64_t delete_below_ = 0;
  bool sync_ = false;  // the step wrote a vote, a variable or a trim
  std::deque<PaxosMsg> local_;
  // Send and SendRequest: fills the header, queues msg (unless it is for
  // this node alone) and, for this node or a broadcast, on local_.
  void Queue(uint64_t to, PaxosMsg* msg, bool before_persist);
  uint64_t next_generation_ = 1;
  std::map<TimerKind, uint64_t> live_timers_;
  Membership membership_;
  bool membership_changed_ = false;  // the step changed it: report it
};

class Core {
 public:
  // Validates `options` (InvalidArgument on a bad one), then recovers the
  // acceptor's promise, every accepted value and the chosen prefix from `log`
  // (which must outlive the Core). A record or variable that fails its storage
  // checksum or does not parse, a broken checksum chain, a ballot above
  // kMaxBallotNumber, or a record at or beyond chosen_end + W, where W is the
  // largest window this log was written under (kWindowVariable; kMaxWindow
  // for a log that predates it) and the core never writes (the scan stops
  // there, so Open costs O(records + W) whatever ids the log holds), returns
  // Corruption naming the instance: the group must not start. A window
  // smaller than the log's is fine: the votes beyond it are kept.
  // A trimmed log (kLogStartVariable = (S, c)): the chosen prefix starts at
  // S with chained checksum c, so chosen_end() >= S even when no record at or
  // beyond S is chosen; a record below S (there must be none) or a variable
  // that does not parse is Corruption. A log without the variable whose
  // first record is chosen restarts the chain from that record's checksum.
  static Status Open(const CoreOptions& options, LogStorage* log,
                     std::unique_ptr<Core>* core);
  ~Core();

  Core(const Core&) = delete;
  Core& operator=(const Core&) = delete;

  // First step after Open: arms the learn timer (which also catches up a
  // node that restarted behind its peers). With master_election: arms the
  // election timer and begins the startup hold (the acceptor refuses every
  // PREPARE until now + lease_ms).
  void Start(Outputs* out);

  // The current time in ms on a monotonic clock (any origin; the core only
  // compares and adds). Call it before every input (the runtime: its
  // monotonic clock; the simulation: the node's drifting clock). A value
  // below the last one is ignored (time never goes back). Only master
  // election uses it; with it off the core's behaviour does not depend on it.
  void SetNow(uint64_t now_ms);

  // Proposes `value` under the caller's `token` (REQUIRES: unique among this
  // Core's unfinished proposals). The value is chosen at some instance
  // (re-proposed at a later instance whenever another value takes the one it
  // tried) until it is chosen or cancelled; the end is reported once as a
  // ProposalResult, and the value appears in Outputs::chosen with ours = true.
  // Returns InvalidArgument (empty value; or this node is no voter of the
  // newest configuration and knows no live master to forward to:
  // "this node is not a voting member of group G: <MemberRoleName>"),
  // TooLarge (> max_value_bytes) or Stopped (core halted); then nothing was
  // queued. A queued proposal of a node whose removal gets in force ends
  // InvalidArgument.
  Status Propose(uint64_t token, const std::string& value, Outputs* out);

  // Gives up proposal `token`. If its value is not being voted on it ends at
  // once with Stopped; if it is, it ends when that instance is decided: ok if
  // it was chosen there after all, Stopped otherwise. Unknown tokens: no-op.
  void Cancel(uint64_t token, Outputs* out);

  // A message from a peer. `sender` is the node the transport verified the
  // bytes came from; the message's own `from` must equal it. kSenderNotVerified
  // (the default) skips that one check, for in-process harnesses whose
  // delivery cannot forge a sender (the simulation, unit tests); a runtime
  // always passes the verified sender.
  // Returns Corruption for bytes that do not parse or
  // a malformed message (an instance id >= kMaxInstanceId, a ballot number
  // > kMaxBallotNumber, a replicated value that is not an envelope of at most
  // max_value_bytes: options.h),
  // InvalidArgument for a message of another cluster/group, from a
  // non-member, or whose `from` is not `sender`; all are dropped and counted
  // in stats(). A non-member here: a sender that no configuration governing
  // [chosen_end, infinity) names, for every type but the learning ones
  // (ASK_LEARN, CONFIRM_LEARN, LEARN_VALUES, CHOSEN, NOT_MEMBER), which any
  // node of the cluster may send; it is answered with NOT_MEMBER
  // (reconfig.h). Stopped when halted.
  static constexpr uint64_t kSenderNotVerified = 0;
  Status OnMessage(const std::string& bytes, Outputs* out,
                   uint64_t sender = kSenderNotVerified);

  // A timer started by an earlier step fired. Superseded timers are ignored.
  void OnTimeout(const TimerId& id, Outputs* out);

  // ---- Master election (CoreOptions::master_election) ----
  //
  // With master_election, Propose on a node that knows a live master M other
  // than itself does not queue the value: with forward_to_master it sends it
  // to M (FORWARD) and reports it like an own proposal when it is applied
  // (ours = true, the same token; Cancel ends it with Stopped, and a master
  // that dies first leaves it unfinished: the runtime's deadline ends it,
  // outcome unknown); without, it returns NotMaster("... node M") and
  // queues nothing.

  // A linearizable read point. Reports exactly one Outputs::barriers entry
  // for `token` (REQUIRES: unique among this Core's unfinished barriers), in
  // this step or a later one: OK with an instance I such that every value
  // chosen before this call is at an instance < I (read the state machines
  // once they executed [0, I)), else Busy / NotSupported / Stopped
  // (BarrierResult). On a ready master inside its lease it ends at once with
  // I = chosen_end(), sending and writing nothing. On a node that knows a
  // live master it costs one READ_INDEX round trip to the master, then waits
  // until this node's chosen_end reached the master's (asking the master for
  // the missing values at once); it ends Busy when the master refuses (not
  // ready or not in its lease), is no longer the live master, gave no answer
  // within lease_ms, or this node did not catch up within
  // election_timeout_ms of the call. Busy at once when no master is known or
  // this node is a master not ready yet. Checked on the inputs that follow
  // (the core has no clock): a barrier may end later than that, never
  // earlier. There is no cancel: a runtime that gave up ignores the entry.
  void ReadBarrier(uint64_t token, Outputs* out);

  // Hands the mastership to `target` (a member), or gives it up (target 0:
  // step down). REQUIRES: this node is the master. In this very step the
  // node stops holding its lease (HoldsLease() is false when this returns,
  // before any message leaves), then tells every acceptor to move its grant
  // from this node to `target`; the target runs phase 1 at once when it gets
  // that, so it is master within about one round trip. This node does not
  // run for master for election_timeout_ms afterwards.
  // Returns OK; NotMaster when this node is not the master; InvalidArgument
  // for a target that is not a member; NotSupported when master election is
  // off; Stopped when halted. Target == self: OK, nothing changes.
  Status TransferMaster(uint64_t target, Outputs* out);

  // Who this node believes is master now (node 0: none; without
  // master_election always none). A follower knows the master that sent it
  // the last heartbeat it granted, for election_timeout_ms after it.
  MasterView master() const;
  // True when this node is the master, ready (its noop is chosen and
  // applied), and now < its lease's end: no other node can get a value
  // chosen before the lease ends. For the simulation's checker and IsMaster.
  // As of the last SetNow: call SetNow first for an up-to-date answer.
  bool HoldsLease() const;

  // Instances [0, chosen_end()) are chosen and have been emitted (by this Core
  // object, or before it was opened: see ReadChosen).
  uint64_t chosen_end() const;
  // Reads the chosen value of `instance` < chosen_end() (e.g. to replay the
  // log into a state machine after a restart). Returns NotFound if it is not
  // chosen here or was trimmed, Corruption if its record is bad.
  Status ReadChosen(uint64_t instance, ChosenValue* value);

  // ---- Checkpoints and log trimming (paxos/trim.h) ----
  //
  // A checkpoint at instance S reflects every instance < S. The runtime makes
  // and stores checkpoints; the core trims its log behind them and answers a
  // peer that asks for trimmed values with "use a checkpoint". Invariant the
  // runtime keeps: the log holds every chosen instance from the newest
  // durable checkpoint on (it calls OnCheckpoint only once the checkpoint is
  // durable, and the core never trims beyond it).

  // The first instance the log holds: every instance below it is trimmed (or
  // covered by an installed checkpoint). 0 if the log was never trimmed.
  // log_start() <= chosen_end().
  uint64_t log_start() const;
  // The chained checksum of instance chosen_end() - 1 (0 when chosen_end()
  // is 0): what a checkpoint made at chosen_end() carries, and what
  // InstallCheckpoint of that checkpoint gets on another node.
  uint32_t chain_checksum() const;

  // The runtime stored, durably, a checkpoint reflecting [0, instance).
  // REQUIRES: instance <= chosen_end() (a larger one is clamped to
  // chosen_end() and reported in out->errors as InvalidArgument). Trims the
  // log to T = min(instance - min(instance, log_keep_instances), trim_limit)
  // when T > log_start(): one synced write of delete_below = T and
  // kLogStartVariable = (T, checksum of T - 1); the core's cache of recent
  // values drops what lies below T. trim_limit is the runtime's own bound
  // (Options::log_keep_bytes: the byte margin); UINT64_MAX: none. No-op when
  // halted.
  void OnCheckpoint(uint64_t instance, uint64_t trim_limit, Outputs* out);

  // The runtime loaded a checkpoint reflecting [0, instance), whose chained
  // checksum (the checksum of instance - 1) is `checksum`, into every state
  // machine. instance <= chosen_end(): OK, nothing changes (a stale install;
  // the state machines are ahead already, and this core's log holds the
  // instances after its own checkpoint). Otherwise:
  //   - the chosen prefix jumps: chosen_end() = instance, chain_checksum() =
  //     checksum (a wrong one halts the core at the next value a peer sends:
  //     the chain must extend it);
  //   - pending chosen values below `instance` are dropped; the acceptor
  //     forgets its votes below it (it refuses PREPARE / ACCEPT below
  //     chosen_end anyway);
  //   - one synced write: delete_below = instance and kLogStartVariable =
  //     (instance, checksum), so a restart recovers from there;
  //   - proposals of this node in flight at an instance below `instance`
  //     end with Stopped("outcome unknown: ...") (their value may have been
  //     chosen there: never re-proposed; the runtime reports them as
  //     indeterminate); queued ones go on at the new chosen_end (master
  //     election: a proposal forwarded to the master is not tied to an
  //     instance here, and ends as before: applied, cancelled, or the
  //     runtime's deadline);
  //   - pending chosen values from `instance` on are applied (out->chosen).
  // Returns OK; InvalidArgument for an instance >= kMaxInstanceId; Stopped
  // when halted (nothing changes).
  Status InstallCheckpoint(uint64_t instance, uint32_t checksum, Outputs* out);
  // The same, for a checkpoint that carries the membership history as of
  // `instance` (MembershipAt on the node that made it): it replaces this
  // node's when instance > chosen_end() (M6). nullptr: the form above (a
  // checkpoint without one; the membership stays).
  Status InstallCheckpoint(uint64_t instance, uint32_t checksum, const Membership* membership,
                           Outputs* out);

  // ---- Membership (paxos/membership.h has the rules) ----

  // Proposes `change` under `token` (unique among this Core's unfinished
  // proposals and changes) like Propose, with the same routing (master
  // election: forwarded to the master, or NotMaster). It ends once
  // (Outputs::finished): OK when the change is chosen AND in force
  // (chosen_end() >= its active_from: the proposer fills the instances up to
  // there with noops, so an idle group gets there by itself), with instance
  // = the change's instance; Conflict when it was chosen but another change
  // got there first (its base_version is stale; on every node alike);
  // InvalidArgument when it was chosen with an invalid member set; Stopped
  // as for Propose (cancelled, halted, outcome unknown; a Cancel once it is
  // chosen but not in force yet ends it Stopped at once, and the change
  // stays chosen). Returns InvalidArgument (ValidateMembers, a distance that
  // is neither 0, meaning the group's, nor the group's, no membership known
  // here, or not a voter as for Propose) or Stopped; then nothing was queued.
  Status ProposeMembership(uint64_t token, const MembershipChange& change, Outputs* out);
  // The membership history as this core knows it (as of chosen_end()).
  const Membership& membership() const;
  // The history as of the instances below `instance` <= chosen_end(), for a
  // checkpoint made at `instance` (Membership::Before).
  Membership MembershipAt(uint64_t instance) const;
  // Where this node stands (MemberRole).
  MemberRole role() const;

  // What this node last heard from a peer (any node it received a message
  // from since Open): for the runtime's membership checks (is a node live,
  // has a follower caught up, what incarnation to add it with).
  struct PeerState {
    uint64_t id = 0;
    uint64_t last_heard_ms = 0;  // the core's time (SetNow) of its last message
    uint64_t chosen_end = 0;     // its chosen_end as its last message said
    // Its data dir's, from its last message that carried one (every message
    // does; ASK_LEARN / CONFIRM_LEARN at least, which a joiner sends first).
    uint64_t incarnation = 0;
  };
  std::vector<PeerState> peers() const;

  // True once a checksum mismatch or conflicting chosen value was seen: the
  // core refuses every further input (Stopped) and applies nothing more.
  bool halted() const;
  Ballot promised() const;
  const CoreStats& stats() const { return *ctx_.stats(); }

 private:
  explicit Core(const CoreOptions& options, LogStorage* log);
  Status Recover();
  Status RecoverWindow(bool log_empty);
  void Begin(Outputs* out);
  void Dispatch(const PaxosMsg& msg);
  void Drain();
  void Finish();
  // Propose / ProposeMembership: forwards `envelope` to a live master, or
  // queues it here (a voter only).
  Status Route(uint64_t token, const std::string& envelope, bool system);

  mutable CoreContext ctx_;
  std::unique_ptr<Learner> learner_;
  std::unique_ptr<Acceptor> acceptor_;
  std::unique_ptr<Proposer> proposer_;
  std::unique_ptr<Master> master_;
  std::unique_ptr<LogTrimmer> trimmer_;
  std::unique_ptr<Reconfig> reconfig_;
  // The window recovery scanned with: max(options.window, the log's).
  uint64_t recovery_window_ = 0;
  // The value of kWindowVariable to write in Start(), "" when it is right.
  std::string window_to_persist_;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_CORE_H_
