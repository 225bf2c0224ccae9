// Internal to the simulation (sim.h): its constants, event and node types,
// and the Sim class, whose methods live in several files by concern:
//   sim.cc             the run (fault phase, quiet phase), node starts,
//                      crashes, pauses, the chaos tick
//   sim_round.cc       group commit: a node's steps, rounds and their
//                      execution (persist, send, apply, timers), the network
//   sim_events.cc      the event loop (Step) and the workload (proposals,
//                      reads, master transfers, lease checks)
//   sim_checkpoint.cc  --checkpoints: the hash-chain state machine, delayed
//                      durable checkpoints, restarts from a checkpoint,
//                      simulated transfers, and their checks
//   sim_membership.cc  --membership: joiners, lost disks, the address book,
//                      votes for the checker, convergence, liveness probes
//   sim_scheduler.cc   --membership: the change scheduler and its scenarios
// Single-threaded; deterministic from SimOptions::seed.
#ifndef CHORUS_UNITTEST_SIM_SIM_IMPL_H_
#define CHORUS_UNITTEST_SIM_SIM_IMPL_H_

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "paxos/catchup.h"
#include "paxos/core.h"
#include "paxos/random.h"
#include "paxos/round.h"
#include "unittest/sim/checker.h"
#include "unittest/sim/clock.h"
#include "unittest/sim/membership_checker.h"
#include "unittest/sim/sim_membership.h"
#include "unittest/sim/sim.h"
#include "unittest/support/mem_log_storage.h"

namespace chorus {
namespace sim {
namespace internal {

using paxos::ChosenValue;
using paxos::Core;
using paxos::CoreOptions;
using paxos::Outputs;
using paxos::Rng;
using paxos::Round;
using paxos::TimerId;


// Fault rates, per million.
constexpr uint64_t kDropPpm = 50000;       // 5% of messages lost
constexpr uint64_t kDupPpm = 30000;        // 3% duplicated
constexpr uint64_t kLongDelayPpm = 50000;  // 5% delayed long (reordering)
constexpr uint64_t kChaosTickMs = 10;
constexpr uint64_t kProposePpm = 700000;   // per chaos tick
constexpr uint64_t kBurstPpm = 20000;      // per chaos tick: many proposals at once
constexpr uint64_t kCrashPpm = 25000;      // per chaos tick
constexpr uint64_t kPartitionPpm = 10000;  // per chaos tick
constexpr uint64_t kQuietLimitMs = 120000; // liveness bound after faults stop
// Unfinished proposals per node: 2 * max_inflight, so the pipeline can fill
// (and queue) whatever its depth.
constexpr size_t kPendingPerInflight = 2;
constexpr size_t kValueBytes = 64;  // CoreOptions::max_value_bytes here
// ... with --membership: a change names every member (id, role, address,
// incarnation), so its system value is larger than an application value.
constexpr size_t kMembershipValueBytes = 256;
// A crash point: right after a node raised its promise (a PROMISE, or an
// ACCEPTED for a higher ballot than it had promised), crash it with this
// probability (and restart it quickly). Promises are the state whose loss
// breaks Paxos; crashing exactly there is what exposes a node that does not
// persist them.
constexpr uint64_t kCrashAfterPromisePpm = 400000;
constexpr uint64_t kCrashAfterAcceptPpm = 5000;
// A round's messages marked before_persist (OutMessage: a proposer's
// ACCEPTs) leave before its persist, as the runtime sends them; then the node crashes
// with this probability before the persist ran: its own votes of the round
// are lost while the requests are on the wire. Where one of them is a reply
// (only a mutation makes a vote early), with the promise crash's
// probability: that is where such a vote is lost.
constexpr uint64_t kCrashBeforePersistPpm = 5000;
constexpr uint64_t kCrashBeforePersistAfterVotePpm = 400000;
// A round that holds fewer steps than its limit executes at a flush event
// this many ms later at most (0: after the events already due now), as a
// runtime loop executes after taking what is queued: other events for the
// node can land in the round before it.
constexpr uint64_t kMaxFlushDelayMs = 5;
// Clocks (SimOptions::clocks): per chaos tick, a live node pauses (a stopped
// process) for kPauseMinMs .. kPauseMinMs + kPauseSpanMs: about a lease
// (kLeaseMs), the length that matters to a master.
constexpr uint64_t kPausePpm = 4000;
constexpr uint64_t kPauseMinMs = 100;
constexpr uint64_t kPauseSpanMs = 400;
// Master election (SimOptions::master_election): the runtime's defaults
// (lease 800, heartbeat 100, election 800 + 200 ms) scaled to the
// simulation's message delays (1..10 ms) and phase timeouts (100 ms).
constexpr uint64_t kLeaseMs = 200;
constexpr uint64_t kHeartbeatMs = 40;
constexpr uint64_t kElectionTimeoutMs = 200;
constexpr uint64_t kElectionJitterMs = 50;
constexpr uint64_t kReadPpm = 300000;      // per chaos tick: a ReadBarrier on a random node
constexpr uint64_t kTransferPpm = 20000;   // per chaos tick: the master transfers or steps down
constexpr uint64_t kStepDownPpm = 250000;  // of those: a step down (target 0)
// Per chaos tick: the link between two nodes is cut both ways (the rest of
// the network still works: a partition that is not transitive, as a node
// that hears the master's acceptors but not the master).
constexpr uint64_t kCutPpm = 30000;
// Right after an acceptor acked a heartbeat (granted the master a lease) it
// crashes with this probability, and restarts within a few ms: only its
// startup hold stands for the grant it forgot.
constexpr uint64_t kCrashAfterGrantPpm = 20000;
// Random crashes per chaos tick with master election: fewer than kCrashPpm,
// so a master often lives for several leases (the aimed crashes and pauses
// below put the faults where leases break).
constexpr uint64_t kMasterCrashPpm = 8000;
// And the crash right after raising a promise (kCrashAfterPromisePpm): every
// election raises promises, so a high rate would kill most of them.
constexpr uint64_t kMasterCrashAfterPromisePpm = 40000;
// Right after a lease holder took a HEARTBEAT_ACK (its lease was just
// renewed) it pauses with this probability, for kLeaseMs .. 2 * kLeaseMs of
// virtual time: the grants behind its lease run out while it is stopped, the
// others elect a new master as early as the grants allow, and its own lease
// must have ended by then (on its own clock).
constexpr uint64_t kPauseAfterAckPpm = 20000;
// The runtime's propose deadline: a proposal unfinished this long after its
// Propose is cancelled (a forwarded one whose master died finishes no other
// way); its outcome is unknown.
constexpr uint64_t kProposeDeadlineMs = 5000;

// --checkpoints (sim_checkpoint.cc). Every node's state machine checkpoints
// every K executed instances, K drawn per node start in [kMinInterval,
// kMinInterval + kIntervalSpan]; log_keep_instances is drawn in [0, 2K].
constexpr uint64_t kMinInterval = 3;
constexpr uint64_t kIntervalSpan = 17;
// A snapshot becomes durable 1 .. kDurableDelayMs after it was taken (a
// crash before that loses it).
constexpr uint64_t kDurableDelayMs = 50;
// Core::OnCheckpoint gets a trim_limit (the runtime's byte margin) below the
// checkpoint with this probability (else none: UINT64_MAX).
constexpr uint64_t kTrimLimitPpm = 250000;
// A checkpoint transfer arrives (or is given up as lost) kTransferMinMs ..
// kTransferMinMs + kTransferSpanMs after it began; in the fault phase it is
// lost or corrupt (rejected) with these probabilities.
constexpr uint64_t kTransferMinMs = 20;
constexpr uint64_t kTransferSpanMs = 180;
constexpr uint64_t kTransferLostPpm = 100000;
constexpr uint64_t kTransferCorruptPpm = 100000;
// A received checkpoint is committed to the node's store before the core
// installs it; the node crashes between the two with this probability (its
// restart must install it from the store).
constexpr uint64_t kCrashAfterStorePpm = 100000;
// Per chaos tick: a node goes down for kLongDownMs .. 2 * kLongDownMs (one
// at a time), long enough that every peer trims past it (it comes back by
// checkpoint, often only in the quiet phase).
constexpr uint64_t kLongDownPpm = 10000;
constexpr uint64_t kLongDownMs = 3000;


enum class EventType : uint8_t {
  kDeliver, kTimer, kChaos, kRestart, kHeal, kFlush,
  kDeadline,  // a proposal's deadline (token in `from`)
  kUncut,     // the cut link between `node` and `from` (an index) works again
  kDurable,   // --checkpoints: node's snapshot `checkpoint` is durable now
  kTransfer,  // --checkpoints: the transfer of `checkpoint` to node ends
};

// --checkpoints: the state machine's state (a hash chain over the executed
// values: hash(i) = Mix(hash(i - 1), value(i))) and a checkpoint of it.
struct SmState {
  uint64_t count = 0;  // instances executed: [0, count)
  uint64_t hash = 0;
};
struct Checkpoint {
  uint64_t instance = 0;  // reflects [0, instance); 0: none
  uint64_t hash = 0;      // the state machine's hash at `instance`
  uint32_t chain = 0;     // Core::chain_checksum() at `instance`
  // --membership: Core::MembershipAt(instance), which the checkpoint carries.
  paxos::Membership membership;
};

struct Event {
  uint64_t time = 0;
  uint64_t seq = 0;
  EventType type = EventType::kChaos;
  int node = 0;
  uint64_t incarnation = 0;  // kTimer, kFlush: the incarnation that queued it
  std::string bytes;         // kDeliver
  TimerId timer;             // kTimer
  // kDeliver: the sender (as a transport verifies it); kDeadline: the
  // proposal's token; kUncut: the other end's index.
  uint64_t from = 0;
  // kDurable, kTransfer: the checkpoint; kTransfer: its fate.
  Checkpoint checkpoint = {};
  bool lost = false;
  bool corrupt = false;
  bool operator>(const Event& o) const {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

struct Proposal {
  int node = 0;
  uint64_t incarnation = 0;
  std::string data;
  bool done = false;
  bool abandoned = false;  // its node crashed before it finished
  bool cancelled = false;  // cancelled at its deadline
  uint64_t begin = 0;      // virtual time of its Propose
  bool probe = false;      // a liveness probe of the quiet phase: must be chosen
};


// A ReadBarrier not reported yet.
struct Read {
  int node = 0;
  uint64_t begin = 0;     // virtual time of the call
  uint64_t required = 0;  // MasterChecker::ReadBegins() at the call
  bool lease = false;     // reported in the call's own step (a lease read)
};

// The options that may differ between nodes (and between starts of one node).
struct NodeConfig {
  size_t max_inflight = 0;
  size_t window = 0;
  size_t budget = 0;  // promise_budget_bytes
};

struct Node {
  explicit Node(paxos::TestMutation m) : round(m) {}
  uint64_t id = 0;
  NodeConfig config;
  MemLogStorage log;
  std::unique_ptr<Core> core;  // null while crashed
  uint64_t incarnation = 0;
  int partition = 0;
  std::set<uint64_t> pending;  // tokens of unfinished proposals of this incarnation
  // Group commit: the outputs of this incarnation's steps not executed yet.
  Round round;
  uint64_t round_limit = 1;  // the round executes once it holds this many steps
  bool flush_due = false;    // a kFlush event of this incarnation is queued
  paxos::Ballot round_promised;  // the core's promise when the current round began
  NodeClock clock;               // its machine's clock (SimOptions::clocks)
  uint64_t paused_until = 0;     // virtual time its pause ends (0: not paused)
  std::set<uint64_t> reads;      // tokens of its unreported ReadBarriers (this incarnation)
  paxos::Ballot counted_epoch;   // the last epoch it was counted as elected with
  // --checkpoints (sim_checkpoint.cc).
  SmState sm;                  // the state machine (memory: a crash loses it)
  Checkpoint store;            // its newest durable checkpoint (survives crashes)
  uint64_t interval = 0;       // K of this start
  uint64_t keep = 0;           // log_keep_instances of this start
  uint64_t last_snapshot = 0;  // sm.count at the last snapshot
  bool snapshot_pending = false;  // a snapshot waits to become durable
  bool transfer_running = false;  // a checkpoint transfer to it runs
  // The highest log start its checkpoints and installs so far allow (the
  // sim's own computation of the trim rule, across restarts).
  uint64_t trim_allowed = 0;
  // --membership (sim_membership.cc).
  uint64_t dir_incarnation = 0;  // CoreOptions::incarnation: its data dir's
  bool joined = false;           // its data dir was created to join
  bool idle = false;             // not started (a spare), or waiting to
  bool dead = false;             // crashed for good: never restarts
  std::set<uint64_t> changes;    // tokens of its unfinished changes (this incarnation)
  std::vector<StepVote> votes;   // votes of the steps of its unexecuted round
  std::vector<uint64_t> join_peers;  // CoreOptions::join_peers of its data dir
  paxos::Membership reported;    // the membership its rounds last reported
  bool step_reported = false;    // a step of its unexecuted round set membership_changed
};

inline uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  return h * 0x100000001B3ULL;
}

inline uint64_t HashBytes(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}
class Sim {
 public:
  explicit Sim(const SimOptions& o)
      : o_(o),
        clocks_(o.clocks || o.master_election),
        rng_(o.seed * 0x2545F4914F6CDD1DULL + 1),
        n_(o.nodes + (o.membership ? o.spares : 0)),
        members_(NodeIds(o.nodes)),
        checker_(NodeIds(n_), [this](const std::string& what) { Violation(what); }),
        master_checker_(NodeIds(n_), [this](const std::string& what) { Violation(what); }),
        member_checker_(Genesis(members_), o.membership ? DrawAlpha(o) : 0,
                        [this](const std::string& what) { Violation(what); }) {
    for (int i = 0; i < n_; ++i) {
      nodes_.emplace_back(new Node(o.mutation));
      nodes_.back()->id = NodeIds(n_)[i];
    }
    window_ = o.window != 0 ? o.window
                            : (rng_.OneIn(500000) ? o.max_inflight : 4 * o.max_inflight);
    budget_ = o.promise_budget_bytes != 0 ? o.promise_budget_bytes : DrawBudget();
    for (auto& n : nodes_) n->config = {o.max_inflight, window_, budget_};
    if (clocks_) {
      // The worst case the lease rule must survive is a slow master among
      // fast acceptors: its lease must end (in real time) before the
      // grants behind it. Half the seeds are exactly that, at the bound: one
      // node slow, every other fast. In the other half three nodes in four
      // drift exactly at the bound (either way), the rest within it.
      const int64_t bound = static_cast<int64_t>(o.drift_ppm);
      const bool slow_one = rng_.OneIn(500000);
      const uint64_t slow = rng_.Uniform(o.nodes);
      for (size_t i = 0; i < nodes_.size(); ++i) {
        int64_t rate = rng_.OneIn(750000) ? bound
                                          : static_cast<int64_t>(rng_.Uniform(2 * bound + 1)) -
                                                bound;
        if (rng_.OneIn(500000)) rate = -rate;
        if (slow_one) rate = i == slow ? -bound : bound;
        nodes_[i]->clock = NodeClock(rng_.Uniform(1000000), rate);
      }
    }
  }

  // --membership: the genesis members as the checker and the options hold them.
  static std::vector<paxos::Member> Genesis(const std::vector<uint64_t>& ids);
  // --membership: the seed's activation distance (a pure function of `o`).
  static uint64_t DrawAlpha(const SimOptions& o);

  static std::vector<uint64_t> NodeIds(int n) {
    std::vector<uint64_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back(1000 + 7 * static_cast<uint64_t>(i));
    return ids;
  }

  SimResult Run();

 private:
  size_t ValueBytes() const { return o_.membership ? kMembershipValueBytes : kValueBytes; }
  // Node i's clock now.
  uint64_t LocalNow(int i) const { return clocks_ ? nodes_[i]->clock.Local(now_) : now_; }
  // The virtual time at which node i's clock has advanced `delay_ms` from now.
  uint64_t After(int i, uint64_t delay_ms) const {
    return clocks_ ? nodes_[i]->clock.VirtualAt(now_, LocalNow(i) + delay_ms) : now_ + delay_ms;
  }
  bool Paused(int i) const { return nodes_[i]->paused_until > now_; }
  // Node i's core, told the time of its clock: call before every input.
  Core* In(int i) {
    Core* core = nodes_[i]->core.get();
    core->SetNow(LocalNow(i));
    return core;
  }

  void Push(Event e);

  void Log(const std::string& s);

  void Violation(const std::string& what);

  std::string Progress() const;

  // Every node is up, idle and at the same chosen_end; with master election
  // also every read reported and some node holds the lease.
  bool Converged();

  // A PROMISE byte budget: the smallest allowed (PROMISEs truncate all the
  // time), a few hundred bytes, or the default (unlimited here).
  size_t DrawBudget();

  // --mixed_options: each start of a node draws its own pipeline depth,
  // window and PROMISE budget, so members disagree (an ordinary setting) and
  // a node's own options change across restarts (a rolling change, lowering
  // the window below records it wrote included).
  NodeConfig DrawConfig();

  CoreOptions OptionsFor(int i);

  void StartNode(int i);

  void Tally(const Node& n);

  // `quick`: restart within a few ms (in-flight messages still arrive);
  // `down_ms` > 0: restart after that long (a long-down fault).
  void Crash(int i, bool quick = false, uint64_t down_ms = 0);

  // ---- --checkpoints (sim_checkpoint.cc) ----
  // Node i starts: draws its K and margin (before Core::Open).
  void DrawCheckpointConfig(int i);
  // Node i's core was opened: installs its stored checkpoint if the log is
  // behind it. Returns false after a violation.
  bool InstallStoredCheckpoint(int i);
  // Node i's state machine loads its stored checkpoint and replays the log
  // after it. Returns false after a violation ("skips").
  bool RestoreStateMachine(int i);
  // Node i executes chosen value `v` on its state machine.
  void SmApply(int i, const ChosenValue& v);
  // The state hash at `count` executed instances must agree across nodes.
  void CheckHash(int i, uint64_t count, uint64_t hash);
  // After node i executed a round: snapshots, checkpoint transfers to start.
  void AfterRound(int i, const Outputs& round);
  void CheckpointEvent(const Event& e);
  void Durable(const Event& e);
  void TransferEnds(const Event& e);
  // Node i sends LEARN_VALUES `m` (parsed): the "use a checkpoint" promise.
  void CheckUseCheckpoint(int i, const paxos::PaxosMsg& m);
  // A long-down fault: a node goes down until every peer trimmed past it.
  void LongDown();

  void Learned(int i, const ChosenValue& v);

  // ---- --membership (sim_membership.cc) ----
  // Draws every node's data dir; the spares start idle.
  void InitMembership();
  // Node i's options: genesis or joiner, alpha, its data dir.
  void MembershipOptions(int i, CoreOptions* c);
  // Whether a broadcast of node i reaches node j: j is in i's address book
  // (every member of every configuration i keeps, and the nodes it was
  // started with), as the runtime's transport has it.
  bool InBook(int i, int j) const;
  // The votes of one step of node i (its persisted accepted records), kept
  // until its round persists.
  void StepVotes(int i, const Outputs& out);
  // Node i's round persisted: its votes are cast.
  void CastVotes(int i);
  // Node i executed a round: its membership against the checker's, and the
  // round's membership report.
  void CheckMembership(int i, const Outputs& round);
  // A change of node i ended (Outputs::finished). False: not a change.
  bool ChangeFinished(int i, const paxos::ProposalResult& f);
  // The scheduler's chaos tick.
  void MembershipTick();
  // Starts a scenario, or proposes the next change of the running one.
  void Schedule();
  bool StartScenario();
  // Whether step `s` holds in the checker's newest configuration.
  bool StepDone(const ChangeStep& s) const;
  // Proposes step `s` on node i from its own newest configuration. Returns
  // the token (0: nothing proposed).
  uint64_t ProposeStep(int i, ChangeStep* s, bool driver);
  uint64_t ProposeChange(int i, const paxos::MembershipChange& change, bool driver);
  // Whether node j can vote under its entry in `c` (up or restarting, and
  // its data dir is the entry's: M5).
  bool Capable(const paxos::Config& c, int j) const;
  // A node that is not a member of the checker's newest configuration and
  // not dead (mostly an idle one: an empty data dir); -1: none.
  int PickSpare();
  int PickVoter(bool capable_only);
  int LeaseHolder();
  int IndexOf(uint64_t id) const;
  // The smallest chosen prefix the nodes other than `except` keep durably
  // (what they know after a crash): the instances from there on may still
  // need the votes of the configurations governing them.
  uint64_t Frontier(int except) const;
  paxos::Member MemberFor(int j, bool voter) const;
  // Node i (a member or a removed node) loses its disk: it comes back as a
  // new joiner with a new data dir.
  void LoseDisk(int i);
  void KillForGood(int i);
  // The quiet phase with --membership: the members of the newest
  // configuration have nothing pending and agree on chosen_end; then the
  // liveness probes (a value proposed at every voter) must be chosen, and
  // every node that runs must end with nothing pending, the non-members
  // knowing they are not members.
  bool MembershipConverged();
  // TransferMaster's target: another voter of node i's newest configuration.
  uint64_t TransferTarget(int i);
  // Node i sends `bytes`: once its removal is in force (no configuration
  // governing its chosen_end or later names it) it proposes nothing more:
  // no PREPARE, no ACCEPT.
  void CheckStoppedProposing(int i, const std::string& bytes);
  // A liveness probe: a value proposed at node i that must be chosen.
  void Probe(int i);

  // Group commit, as node/group.cc runs it: the outputs of node i's next
  // 1..max_round_steps core steps (drawn per round) accumulate in its round;
  // the round executes once it holds that many, or at a flush event soon
  // after it became non-empty.
  void EndStep(int i, Outputs* out);

  void ExecuteRound(int i);

  void Pause(int i, uint64_t ms);

  // Executes one merged round of node i: persist -> send -> apply -> timers.
  void Execute(int i, Outputs* out);
  // Sends (and takes out of out->messages) the round's messages marked
  // before_persist, before its persist, as the runtime may, and at the
  // crash point after them crashes node i: returns true then (the round's
  // persist and the rest are lost).
  bool SendEarly(int i, Outputs* out);

  // Sends message `m` of node i to its receivers (the checker sees it first).
  void SendOut(int i, const paxos::OutMessage& m);

  void Send(int from, int to, const std::string& bytes);

  void ProposeAt(int i);

  // A ReadBarrier on node i (master election).
  void ReadAt(int i);

  // The master (if a live, unpaused node is one) hands its mastership to a
  // random other member, or steps down.
  void TransferAt();

  // After every step (master election): the lease holders now, each node
  // read at its own clock; and the elections (a node seen holding the lease
  // under an epoch it was not counted for yet).
  void CheckLeases();

  bool SomeoneHoldsLease();

  void Chaos();

  void Step();

  const SimOptions o_;
  const bool clocks_;
  Rng rng_;
  const int n_;  // nodes: o_.nodes genesis members, then the spares
  size_t window_ = 0;
  size_t budget_ = 0;
  SimResult r_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<uint64_t> members_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  uint64_t seq_ = 0;
  uint64_t now_ = 0;
  bool quiet_ = false;
  uint64_t hash_ = 0;
  uint64_t next_token_ = 1;
  std::map<uint64_t, Proposal> proposals_;
  SafetyChecker checker_;
  MasterChecker master_checker_;
  MembershipChecker member_checker_;
  // --membership.
  std::map<uint64_t, Change> changes_;  // token -> unfinished change
  Scenario scenario_;
  bool probes_sent_ = false;
  std::map<uint64_t, Read> reads_;  // token -> unreported read
  uint64_t next_read_ = 1;
  std::vector<int> last_holders_;  // --verbose: the lease holders at the last step
  std::set<std::pair<int, int>> cut_;  // cut links (lower index first)
  // --checkpoints: the state hash after [0, count) executed, as the first
  // node to get there had it (every other node must agree).
  std::map<uint64_t, uint64_t> hash_at_;
  int long_down_ = -1;  // the node down for a long-down fault, if any
};

}  // namespace internal
}  // namespace sim
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SIM_SIM_IMPL_H_
