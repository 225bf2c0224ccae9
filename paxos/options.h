// CoreOptions: the configuration of one group's protocol core.
#ifndef CHORUS_PAXOS_OPTIONS_H_
#define CHORUS_PAXOS_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace paxos {

// Rule breakers for tests only. Each breaks one protocol rule on purpose, so
// the simulation can prove that it catches the broken rule (unittest/sim
// names them; README lists the seeds that catch each). Never set one in
// production.
enum class TestMutation {
  kNone = 0,
  // Acceptor: the promise of a PREPARE is never persisted (a restart forgets
  // every promise; accepted values are still persisted).
  kForgetPromise,
  // Acceptor: accepts a ballot lower than the one it promised.
  kAcceptLowerBallot,
  // Acceptor: an accepted value is not persisted (the ACCEPTED still goes).
  kAcceptNotPersisted,
  // Recovery: accepted (not chosen) values are not restored.
  kAcceptedNotRecovered,
  // Acceptor: a PROMISE leaves out the entries max_inflight or more past the
  // PREPARE's instance, without saying so (no reported_end).
  kPromiseDropsFar,
  // Acceptor: a PROMISE leaves out its last entry, without saying so.
  kPromiseDropsLast,
  // Acceptor: a PROMISE leaves out the values it knows chosen (and so, as
  // usual for those, its own vote there).
  kPromiseDropsChosen,
  // Core: the round's writes are not synced (a crash loses them).
  kUnsyncedWrites,
  // Proposer: a PROMISE's reported_end is ignored (the ballot is used beyond
  // what the promise reported).
  kIgnoreReportedEnd,
  // Proposer: adopts the reported value at the first reported instance only;
  // the others get fresh values.
  kAdoptFirstOnly,
  // Proposer: adopts the reported value with the lowest ballot.
  kAdoptLowestBallot,
  // Proposer: sends fresh proposals to phase 2 while its ballot is still in
  // phase 1 (before a majority promised).
  kFastPathWhilePreparing,
  // Acceptor: the promise implied by accepting a higher ballot is kept in
  // memory only.
  kAcceptPromiseNotPersisted,
  // Proposer: a chosen value a PROMISE reported beyond this node's window
  // (ignored by its learner) does not bound the ballot; only visible when
  // members' windows differ (the simulation's --mixed_options).
  kFarChosenUnbounded,
  // Group commit (round.h) keeps the FIRST record / variable a round holds
  // for a key instead of the last: a node that promised or accepted twice in
  // one round persists the older state.
  kRoundKeepsFirst,
  // Core: an acceptor's ACCEPTED is marked OutMessage::before_persist: it
  // may leave before the vote it reports is durable.
  kVoteBeforePersist,
  // Master election (paxos/master.h); each one changes behaviour only when
  // master_election is on.
  // Master: lease = t0 + lease_ms, not shortened by the drift bound.
  kLeaseIgnoresDrift,
  // Master: serves lease reads (and read index) right after phase 1, before
  // its noop is chosen and applied.
  kReadBeforeNoopCommit,
  // Acceptor: promises a PREPARE from another node despite a live grant.
  kPrepareIgnoresGrant,
  // Acceptor: no startup hold (a restart forgets the grants it gave).
  kNoStartupHold,
  // Master: TransferMaster does not drop the old master's lease.
  kTransferKeepsLease,
  // Log trimming (paxos/trim.h); each one changes behaviour only when the
  // runtime reports checkpoints (Core::OnCheckpoint: the simulation's
  // --checkpoints).
  // Trim: the trim point is computed from chosen_end instead of the
  // checkpoint's instance (chosen_end - log_keep_instances): the log may
  // lose instances the newest checkpoint does not cover.
  kTrimIgnoresCheckpoint,
  // Trim: the log is trimmed right at the checkpoint's instance, ignoring
  // log_keep_instances: a peer lagging by less than the margin is told to
  // use a checkpoint.
  kTrimIgnoresMargin,
  // Membership (paxos/membership.h); each one changes behaviour only when a
  // membership change is chosen (the simulation's --membership).
  // Membership: a change governs from the instance after its own (alpha =
  // 1) instead of activation_distance later: proposers that do not know it
  // yet still use the old quorums there.
  kActivateAtOnce,
  // Proposer: counts a follower's (or a removed node's) ACCEPTED and PROMISE
  // toward a majority.
  kFollowerVotes,
  // Proposer: counts phase 1 and phase 2 majorities in the configuration of
  // chosen_end only, ignoring the ones a pending change activates later.
  kQuorumOfCurrentOnly,
  // Checkpoint install: the history a checkpoint brings replaces this
  // node's own outright, even when it lacks the configurations this node
  // knows before its first one (a joiner's checkpoint: Membership::
  // PrependOlder is skipped).
  kInstallDropsOlder,
  // Learner: a node never asks a voter to fill (the learn tick's FILL,
  // Proposer::FillWanted): a removed node's slot, or a joiner's work below
  // the first configuration it knows, waits for proposals that may never
  // come.
  kNoFillRequest,
  // Learner: a vote of this node's acceptor that stays undecided at the
  // log's end never makes it run phase 1 (learner.h): once its proposer and
  // every record of its choice are gone, nobody decides it.
  kNoVoteRecovery,
};

// The largest ballot number ever used: a message carrying a larger one (2^62
// or more) is malformed (dropped and counted as garbage), and a proposer's
// next ballot number saturates here instead of wrapping to 0.
constexpr uint64_t kMaxBallotNumber = (uint64_t{1} << 62) - 1;
// Instance ids at or above this are never used: a message about one is
// malformed (dropped), a log record at one is Corruption at Open. Together
// with the acceptance window it keeps chosen_end + window from overflowing.
constexpr uint64_t kMaxInstanceId = uint64_t{1} << 62;
// The default activation distance (CoreOptions::activation_distance), and the
// largest max_inflight the runtime accepts.
constexpr uint64_t kDefaultActivationDistance = 256;
// The largest acceptance window (CoreOptions::window).
constexpr size_t kMaxWindow = size_t{1} << 20;
// A value envelope (value.h) is the application's bytes plus this header.
constexpr size_t kEnvelopeOverhead = 16;
// Bytes a PaxosMsg may take beyond its value bytes: the header fields, and
// per reported entry (AcceptedEntry / LearnedEntry) its instance, ballot,
// checksum, flags and length prefixes. Generous upper bounds (protobuf
// varints take at most 10 bytes each).
constexpr size_t kMessageHeaderBytes = 256;
constexpr size_t kEntryOverheadBytes = 64;

struct CoreOptions {
  // Identity of the cluster; messages of another cluster are dropped. Default 0.
  uint64_t cluster_id = 0;
  // Index of this paxos group; messages of another group are dropped. Default 0.
  uint32_t group = 0;
  // This node's id. REQUIRES: non-zero, and in `members` unless `joined`.
  // Default 0 (invalid).
  uint64_t self = 0;
  // The GENESIS voters (paxos/membership.h: version 0): the membership of a
  // log that never recorded one (kMembershipVariable). Once a log holds a
  // membership, that one governs and this list is only compared with it (the
  // runtime warns when they differ). Ids of every member, self included.
  // REQUIRES: non-zero, no duplicates, at most kMaxMembers; non-empty unless
  // `joined`. Default empty.
  std::vector<uint64_t> members;
  // The genesis members' addresses (opaque to the core, stored in the
  // membership): empty, or one per entry of `members`. Default empty.
  std::vector<std::string> member_addresses;
  // Lamport's alpha (membership.h M1, M2): a change chosen at i governs from
  // i + activation_distance on. Fixed for the group's life: the genesis
  // records it, and every node of a group must use the same one (the
  // runtime uses kDefaultActivationDistance). REQUIRES max_inflight <=
  // activation_distance <= kMaxWindow. Default 256.
  uint64_t activation_distance = kDefaultActivationDistance;
  // The incarnation of this node's data dir (membership.h M5): a random
  // non-zero number the runtime draws when it creates the data dir. 0: not
  // known (tests), matches genesis entries only. Default 0.
  uint64_t incarnation = 0;
  // The data dir was created to join an existing group (Options::join): the
  // node knows no membership until it learns one (from the log or a
  // checkpoint), never votes under a genesis entry (M5), and asks
  // `join_peers` for values until it knows members. Default false.
  bool joined = false;
  // Nodes to catch up from while no membership is known (joined). Default
  // empty.
  std::vector<uint64_t> join_peers;

  // How many of this node's proposals may be in phase 2 at once (pipelining).
  // 1 behaves like PhxPaxos (one instance at a time). Default 8. REQUIRES >= 1.
  size_t max_inflight = 8;
  // Phase 1 without a majority of promises for this long: retry with a higher
  // ballot after a random backoff. Default 1000 ms. REQUIRES >= 1.
  uint64_t prepare_timeout_ms = 1000;
  // Phase 2 of the oldest in-flight instance without a majority for this
  // long: start phase 1 again (higher ballot). Default 1000 ms. REQUIRES >= 1.
  uint64_t accept_timeout_ms = 1000;
  // Period of the learn timer: a learner that made no progress while a peer
  // is ahead asks that peer for the missing values. Default 1000 ms.
  // REQUIRES >= 1.
  uint64_t learn_interval_ms = 1000;
  // The acceptance window. A node takes part in instances below its own
  // chosen_end + window only: its acceptor refuses an ACCEPT at or above it
  // with ACCEPT_BEHIND (the proposer keeps its ballot and re-sends once this
  // node caught up), its learner ignores chosen values at or above it, and
  // its proposer never proposes (values, noop fillers) at or above it. So an
  // acceptor holds accepted-but-unapplied values for at most `window`
  // instances, which bounds a PROMISE (at most `window` entries) and
  // recovery (the log's records plus `window` ids).
  //
  // Members may use different windows, and a node may change its window
  // across a restart: the protocol is safe for any mix (a proposer never
  // proposes where a PROMISE reported a value it could not keep, chosen or
  // not), and the log remembers the largest window it was written under
  // (kWindowVariable), so a restart with a smaller one still recovers, and
  // still reports, every vote cast under the larger one.
  // Default 256. REQUIRES max_inflight <= window <= 2^20.
  size_t window = 256;
  // Largest value Propose() takes; larger ones fail with TooLarge. Replicated
  // values (envelopes: max_value_bytes + kEnvelopeOverhead) larger than that,
  // or that are not envelopes, are dropped as garbage wherever they arrive.
  // Default 4 MiB. REQUIRES 1 <= max_value_bytes <= 2^31.
  size_t max_value_bytes = 4 << 20;
  // A PROMISE carries at most this many value bytes. When the accepted and
  // chosen-but-unapplied values it must report do not fit, it reports those
  // below some instance t (at least one value) and says so (reported_end =
  // t); the proposer then uses its ballot only below t and runs phase 1
  // again (higher ballot) to go beyond. Default 32 MiB.
  // REQUIRES >= max_value_bytes + kEnvelopeOverhead.
  size_t promise_budget_bytes = 32u << 20;
  // Catch-up: at most this many chosen values per LEARN_VALUES message.
  // Default 64. REQUIRES 1 <= catchup_batch_count <= 2^20.
  size_t catchup_batch_count = 64;
  // Catch-up: a LEARN_VALUES message stops growing once it holds this many
  // value bytes (it always holds at least one value). Default 1 MiB.
  // REQUIRES <= 2^31.
  size_t catchup_batch_bytes = 1 << 20;
  // How many recently chosen values stay in memory to serve catch-up and
  // Read(); older ones are read back from the LogStorage. Default 1024.
  size_t chosen_cache_size = 1024;
  // Log trimming (paxos/trim.h): when the runtime reports a durable
  // checkpoint at instance S (Core::OnCheckpoint), the log keeps this many
  // instances below S and drops the rest (a lagging peer within the margin
  // still catches up from the log instead of fetching a checkpoint). 0: trim
  // right at the checkpoint. Default 0 (the runtime passes
  // Options::log_keep_instances). Any value is valid.
  uint64_t log_keep_instances = 0;
  // Seed of the core's PRNG (backoff jitter, proposal ids). Two starts of the
  // same node must use different seeds (the runtime draws one from the OS;
  // the simulation from its own seed). Default 1.
  uint64_t seed = 1;
  // ---- Master election (paxos/master.h) ----
  //
  // Clock assumption: every node's clock (Core::SetNow) is monotonic and runs
  // at a rate within [1 - max_clock_drift_ppm / 1e6, 1 + max_clock_drift_ppm
  // / 1e6] of real time. Nothing else about clocks is assumed (they need not
  // agree on the time). Leases are safe under this assumption only.

  // Off (the default): no master, no heartbeats, no election, no extra
  // messages; every node proposes on its own, exactly as before, and
  // ReadBarrier / TransferMaster answer NotSupported. On: the group elects a
  // master that holds a lease, serves reads, and takes the proposals of the
  // other nodes (forward_to_master).
  bool master_election = false;
  // How long an acceptor's grant lasts (on its own clock) after a heartbeat
  // of the master, and so the longest a dead master blocks a new election.
  // The master's own lease from one heartbeat round is shorter:
  // lease_ms * (1e6 - drift) / (1e6 + drift) from the round's send time.
  // Also the startup hold: after Start an acceptor refuses every PREPARE for
  // lease_ms, since it does not remember the grants it gave before a crash.
  // Shorter: faster failover, more heartbeats needed per lease. Default 800
  // ms (failover under 1.5 s with the defaults below).
  // REQUIRES 1 <= lease_ms <= 3,600,000.
  uint64_t lease_ms = 800;
  // The master's heartbeat period. Each heartbeat round acked by a majority
  // renews the lease, so several rounds fit in one lease and a lost one or
  // two cost nothing. Renewal writes nothing to the log.
  // Default 100 ms. REQUIRES 1 <= heartbeat_interval_ms < lease_ms / 2.
  uint64_t heartbeat_interval_ms = 100;
  // A node that heard no master for election_timeout_ms + a random
  // [0, election_jitter_ms] runs for master (phase 1). At least lease_ms: an
  // earlier try would only meet live grants and be refused. Default 800 ms.
  // REQUIRES lease_ms <= election_timeout_ms.
  uint64_t election_timeout_ms = 800;
  // The randomisation of the election timeout, so that candidates do not
  // duel. Default 200 ms. REQUIRES <= 3,600,000.
  uint64_t election_jitter_ms = 200;
  // The clock rate drift bound in parts per million (above). 50,000 (5%) is
  // far beyond what NTP ever slews (500 ppm); larger values shorten the
  // master's usable lease. Default 50,000. REQUIRES < 500,000.
  uint64_t max_clock_drift_ppm = 50000;
  // Propose on a node that knows a live master other than itself: true
  // (default), the value is forwarded to the master (one more hop; the
  // result is reported as for an own proposal); false, Propose returns
  // NotMaster naming the master.
  bool forward_to_master = true;

  // Test only. Default kNone.
  TestMutation test_mutation = TestMutation::kNone;

  // Returns OK, or InvalidArgument naming the first bad field.
  Status Validate() const;
  // The largest envelope this core replicates.
  size_t MaxEnvelopeBytes() const { return max_value_bytes + kEnvelopeOverhead; }
  // An upper bound on the size of every message this core sends, given that
  // every chosen value it serves obeys max_value_bytes:
  //   max( MaxEnvelopeBytes() + kMessageHeaderBytes,                 ACCEPT, CHOSEN
  //        promise_budget_bytes + window * kEntryOverheadBytes
  //          + kMessageHeaderBytes,                                  PROMISE
  //        catchup_batch_bytes + MaxEnvelopeBytes()
  //          + catchup_batch_count * kEntryOverheadBytes
  //          + kMessageHeaderBytes )                                 LEARN_VALUES
  // A transport must carry frames of at least this size (node/ validates it).
  size_t MaxMessageBytes() const;
  // A majority of the genesis members. Quorums follow the membership
  // (membership.h M3), not this: for tests of a fixed membership only.
  size_t Majority() const { return members.size() / 2 + 1; }
  // `id` is a genesis member.
  bool IsMember(uint64_t id) const;
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_OPTIONS_H_
