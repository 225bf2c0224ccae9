// The seeded whole-cluster simulation of the paxos core.
//
// N real Cores in one thread; a simulated network (delay, drop, duplicate,
// reorder, partitions that come and go); a virtual clock that drives the
// timers; a MemLogStorage per node that keeps exactly what was synced when
// its node crashes; crashes and restarts (a restart is a new Core recovering
// from that storage); proposals from random nodes. Everything flows from one
// seed: the same seed gives the same run and the same event-log hash.
//
// Group commit runs as in the runtime: each node adds the outputs of its
// core steps to a paxos::Round (paxos/round.h) and executes the merged round
// (persist, send, apply, timers) once it holds a number of steps drawn per
// round from 1..max_round_steps, or at a flush event a few virtual ms after
// it became non-empty (other events for the node may land in it first). A
// crash discards the unexecuted round: nothing of it was persisted or sent.
// The catch-up reads a round holds (Outputs::catchup_reads: batches beyond a
// core's small cache) are served when it executes, right after its persist,
// from the node's own log, as the runtime's reader thread serves them.
//
// Checked after every step (an event: a delivery, a timer, a proposal, a
// fault): no two nodes learn different values for an instance; a node's
// learned values never change (also across restarts); values come out in
// instance order exactly once; every chosen value was proposed, and at most
// once; a proposal reported chosen at instance i is the value at i; no core
// reports an error; and, on the wire, no node ever sends a PROMISE or an
// ACCEPTED for a ballot lower than one it sent either for before (in any
// incarnation): an acceptor keeps its word. A restarted node may recover a
// shorter chosen prefix than it learned (chosen records are written
// unsynced); what it learns again must be what it learned before. Crashes
// are aimed too: right after a node raised its promise, often.
// --mixed_options draws max_inflight, window and PROMISE budget per node
// start. After the fault phase the network heals, every node
// restarts, and within a bounded virtual time every pending proposal must
// finish and every node must reach the same chosen_end (liveness).
//
// --clocks (and --master_election, which implies it): each node has its own
// monotonic clock (clock.h), drifting within the bound; the core gets it
// (Core::SetNow) before every input, and its timers fire by it. Nodes pause
// (a stopped process: inputs wait, its clock runs on) for about a lease, and
// single links are cut both ways for a while (a partition that is not
// transitive). --master_election turns CoreOptions::master_election on for
// every node: proposals on random nodes are forwarded to the master (a
// proposal unfinished 5 s after its Propose is cancelled, as the runtime's
// deadline does: outcome unknown), reads (Core::ReadBarrier) on random
// nodes, the master transfers its mastership or steps down now and then,
// a lease holder pauses right after a heartbeat ack renewed its lease, and
// acceptors crash (and restart within ms) right after granting a lease,
// sometimes. Checked after every step on top of the above (checker.h
// MasterChecker): at most one node holds a valid lease (each evaluated at
// its own clock's time), every read's barrier is beyond every write reported
// to its client before the read began, and a lease holder can transfer its
// mastership; at the end, every read is reported and some node holds the
// lease.
//
// --checkpoints (sim_checkpoint.cc): each node runs a deterministic state
// machine, a hash chain over the values it executes (hash(i) =
// Mix(hash(i - 1), value(i))). Every K executed instances (K drawn per node
// start) it snapshots (instance, hash, Core::chain_checksum()); the snapshot
// becomes durable a few ms later (a crash first loses it), then the node's
// store keeps it (across crashes) and the core gets OnCheckpoint, which trims
// the log (log_keep_instances drawn per start). A restart loads the stored
// checkpoint, installs it into the core when the log is behind it, and
// replays the log after it. Outputs::checkpoint_needed starts a simulated
// transfer of the peer's durable checkpoint, which arrives after a delay,
// or is lost, or arrives corrupt and is rejected (the learner asks again);
// the receiver executes its round, commits the checkpoint to its store,
// loads it and calls Core::InstallCheckpoint (sometimes crashing between
// the store and the install). A node goes down for seconds now and then,
// until its peers trimmed past it. Checked on top of the above: every
// node's state hash after instance i agrees with every other's; no node
// skips or repeats an instance across a checkpoint load or a restart (its
// log must hold every instance from its checkpoint on); a node's log never
// starts beyond its newest durable checkpoint; and, on the wire, a node
// answers "use a checkpoint" only to a request below its log start, and
// only with a log start its checkpoints allow (checkpoint - margin: a
// lagging peer within the margin is served from the log).
#ifndef CHORUS_UNITTEST_SIM_SIM_H_
#define CHORUS_UNITTEST_SIM_SIM_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "paxos/options.h"

namespace chorus {
namespace sim {

struct SimOptions {
  uint64_t seed = 1;
  int nodes = 3;
  // Events processed in the fault phase (the liveness phase comes on top).
  uint64_t steps = 2000;
  paxos::TestMutation mutation = paxos::TestMutation::kNone;
  // CoreOptions::max_inflight of every node (pipelining depth).
  size_t max_inflight = 4;
  // CoreOptions::window of every node. 0: drawn per seed, max_inflight (the
  // smallest allowed: the "behind" path runs often) or 4 * max_inflight.
  size_t window = 0;
  // CoreOptions::promise_budget_bytes of every node (values are small:
  // max_value_bytes is 64 here). 0: drawn per seed, from the smallest allowed
  // (80: PROMISEs truncate all the time) to a few hundred, or unlimited.
  size_t promise_budget_bytes = 0;
  // Each start of each node draws its own max_inflight (1 .. 2 * max_inflight),
  // window (max_inflight .. 4 * max_inflight of its own) and
  // promise_budget_bytes, overriding the three fields above: members disagree,
  // and a restart may lower or raise them (a rolling change).
  bool mixed_options = false;
  // Group commit: a node's round merges at most this many consecutive core
  // steps (the number is drawn per round in [1, max_round_steps]). 1: every
  // step executes on its own. REQUIRES >= 1.
  size_t max_round_steps = 4;
  // Master election (CoreOptions::master_election) on every node, with the
  // lease, heartbeat and election timeouts scaled to the simulation's time
  // (sim.cc: kLeaseMs...); proposals are forwarded to the master, and the
  // workload adds reads (ReadBarrier), master transfers and step-downs.
  // Implies `clocks`.
  bool master_election = false;
  // Per-node clocks: each node's monotonic clock runs at its own rate, drawn
  // per node per seed within 1 +- drift_ppm / 1e6 (half the seeds: one node
  // slow at the bound, all others fast at it; the other half: three nodes in
  // four at the bound either way), from its own offset; the core gets it
  // (Core::SetNow) before every input, and a timer the core starts for d ms
  // fires when that node's clock advanced by d. Nodes also pause (a stopped
  // process: no input, its messages queue, its clock runs on) for about a
  // lease, now and then, and single links are cut both ways for a while.
  // Off (and master_election off): one perfect clock, no pauses (the runs of
  // the plain protocol are those of before).
  bool clocks = false;
  // The drift bound of `clocks`; also every node's CoreOptions::
  // max_clock_drift_ppm. REQUIRES < 500000.
  uint64_t drift_ppm = 200000;
  // State machines that checkpoint, log trimming, restarts from
  // checkpoints, checkpoint transfers and long-down nodes (above).
  bool checkpoints = false;
  // Membership changes (sim_membership.cc): `spares` more nodes start as
  // joiners (CoreOptions::joined, empty genesis, join_peers = the genesis
  // ids, their own data dir incarnations), and a scheduler drives
  // Core::ProposeMembership on random nodes: add (a follower, then its
  // promotion), remove, replace (a follower added, then ONE change that
  // promotes it and removes the old voter), remove the master, replace a
  // node crashed for good by an empty one, racing changes (one of them
  // Conflicts), racing master transfers and master crashes; a removed node
  // may lose its disk and come back as a new joiner. Every proposal gets the
  // runtime's deadline. Checked (membership_checker.h) from the votes and the
  // chosen log alone: no instance has two values accepted by a majority of
  // its configuration; every value learned at j was accepted at one ballot
  // by a majority of the eligible voters of the configuration governing j;
  // every node's Membership is the checker's for its chosen prefix.
  bool membership = false;
  int spares = 2;  // joiner nodes beyond `nodes` (membership)
  // CoreOptions::activation_distance of every node (membership). 0: drawn
  // per seed in [max(8, largest max_inflight), that + 24].
  uint64_t activation_distance = 0;
  // Check (c): every node's Membership, and every change reported in force,
  // against the checker's. Off only to show that the quorum checks alone
  // catch a mutation (sim_test).
  bool check_node_membership = true;
  bool verbose = false;  // print every event to stdout
};

struct SimResult {
  uint64_t steps = 0;         // events processed (both phases; round flushes not counted)
  uint64_t faults = 0;        // drops + duplicates + long delays + partitions + crashes
  uint64_t crashes = 0;
  uint64_t chosen = 0;        // instances chosen by the end
  uint64_t proposals = 0;     // proposals submitted
  uint64_t proposals_ok = 0;  // proposals reported chosen
  bool violation = false;
  std::string what;           // the first violation, when violation
  uint64_t hash = 0;          // hash of the whole event log
  uint64_t behind = 0;        // ACCEPTs refused as behind (all incarnations)
  uint64_t truncated = 0;     // PROMISEs truncated by the byte budget
  uint64_t merged_rounds = 0;  // rounds executed that merged two or more steps
  uint64_t early_rounds = 0;   // rounds whose requests left before their persist
  uint64_t crashes_before_persist = 0;  // crashes between those and the persist
  uint64_t catchup_reads = 0;  // catch-up reads (CatchupRead) served from a node's log
  uint64_t pauses = 0;         // node pauses (clocks)
  // Master election (master_election):
  uint64_t elections = 0;         // a node became a ready master
  uint64_t lease_reads = 0;       // reads a master served inside its lease
  uint64_t read_index_reads = 0;  // reads a follower served with a read index
  uint64_t reads_busy = 0;        // reads refused (no master known / not ready)
  uint64_t forwards = 0;          // proposals forwarded to the master
  uint64_t transfers = 0;         // TransferMaster / step-down calls that returned OK
  uint64_t timeouts = 0;          // proposals cancelled at their deadline (outcome unknown)
  // --checkpoints:
  uint64_t checkpoints = 0;        // snapshots that became durable
  uint64_t trims = 0;              // log trims (CoreStats::trims, all incarnations)
  uint64_t checkpoint_replies = 0; // "use a checkpoint" answers sent by the cores
  // ... built by ReadCatchup instead: a trim ran between the read's planning
  // and its serving.
  uint64_t raced_checkpoint_replies = 0;
  uint64_t checkpoint_transfers = 0;  // transfers begun
  uint64_t transfers_lost = 0;     // ... lost (the learner asked again)
  uint64_t transfers_corrupt = 0;  // ... arrived corrupt and were rejected
  uint64_t installs = 0;           // InstallCheckpoint calls that moved chosen_end
  uint64_t long_downs = 0;         // long-down faults
  uint64_t outcome_unknown = 0;    // proposals an install ended "outcome unknown"
  // --membership:
  uint64_t changes_proposed = 0;   // ProposeMembership calls that queued a change
  uint64_t changes_applied = 0;    // changes the checker applied (chosen, base version current)
  uint64_t changes_conflict = 0;   // changes chosen stale (the checker's count)
  uint64_t changes_ok = 0;         // changes that finished OK at their node (in force)
  uint64_t proposals_refused = 0;  // Propose refused at once: not a voting member
  uint64_t changes_refused = 0;    // ProposeMembership refused at once (not a member, invalid)
  uint64_t scenarios_done = 0;     // scheduler scenarios completed
  std::map<std::string, uint64_t> scenarios;  // ... by kind (e.g. "replace_crashed")
  uint64_t disks_lost = 0;         // removed nodes that came back with a new data dir
  uint64_t not_member_sent = 0;    // NOT_MEMBER replies (CoreStats, all incarnations)
  uint64_t non_member_drops = 0;   // messages a core refused: not from a member there
  uint64_t votes_checked = 0;      // chosen instances whose quorum the checker verified
  // Virtual ms from Propose to the client's result, per proposal reported
  // chosen (in completion order).
  std::vector<uint64_t> commit_latency_ms;
};

SimResult RunSim(const SimOptions& options);

// The --mutation name of `m` (paxos/options.h lists what each breaks).
const char* MutationName(paxos::TestMutation m);
// Parses "none" or a mutation's name.
bool ParseMutation(const std::string& name, paxos::TestMutation* m);
// Every mutation (kNone excluded), in declaration order.
std::vector<paxos::TestMutation> AllMutations();

}  // namespace sim
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SIM_SIM_H_
