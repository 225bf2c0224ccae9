#include "unittest/sim/sim.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <vector>

#include "paxos/core.h"
#include "paxos/random.h"
#include "paxos/catchup.h"
#include "paxos/round.h"
#include "unittest/sim/checker.h"
#include "unittest/sim/clock.h"
#include "unittest/support/mem_log_storage.h"

namespace chorus {
namespace sim {

using paxos::ChosenValue;
using paxos::Core;
using paxos::CoreOptions;
using paxos::Outputs;
using paxos::Rng;
using paxos::Round;
using paxos::TimerId;

namespace {

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
// A crash point: right after a node raised its promise (a PROMISE, or an
// ACCEPTED for a higher ballot than it had promised), crash it with this
// probability (and restart it quickly). Promises are the state whose loss
// breaks Paxos; crashing exactly there is what exposes a node that does not
// persist them.
constexpr uint64_t kCrashAfterPromisePpm = 400000;
constexpr uint64_t kCrashAfterAcceptPpm = 5000;
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

enum class EventType : uint8_t {
  kDeliver, kTimer, kChaos, kRestart, kHeal, kFlush,
  kDeadline,  // a proposal's deadline (token in `from`)
  kUncut,     // the cut link between `node` and `from` (an index) works again
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
};

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
  return h * 0x100000001B3ULL;
}

uint64_t HashBytes(const std::string& s) {
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
        members_(NodeIds(o.nodes)),
        checker_(members_, [this](const std::string& what) { Violation(what); }),
        master_checker_(members_, [this](const std::string& what) { Violation(what); }) {
    for (int i = 0; i < o.nodes; ++i) {
      nodes_.emplace_back(new Node(o.mutation));
      nodes_.back()->id = members_[i];
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

  static std::vector<uint64_t> NodeIds(int n) {
    std::vector<uint64_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back(1000 + 7 * static_cast<uint64_t>(i));
    return ids;
  }

  SimResult Run() {
    for (int i = 0; i < o_.nodes && !r_.violation; ++i) StartNode(i);
    Push(Event{kChaosTickMs, 0, EventType::kChaos, 0, 0, {}, {}});
    // Fault phase.
    while (!r_.violation && r_.steps < o_.steps && !queue_.empty()) Step();
    // Quiet phase: heal, restart everyone, stop faults and new proposals.
    quiet_ = true;
    const uint64_t deadline = now_ + kQuietLimitMs;
    for (auto& n : nodes_) n->partition = 0;
    cut_.clear();
    for (int i = 0; i < o_.nodes && !r_.violation; ++i) {
      if (!nodes_[i]->core) StartNode(i);
    }
    while (!r_.violation && !Converged()) {
      if (queue_.empty() || queue_.top().time > deadline) {
        Violation("liveness: no convergence within " + std::to_string(kQuietLimitMs) +
                  " ms of virtual time after faults stopped (" + Progress() + ")");
        break;
      }
      Step();
    }
    r_.chosen = checker_.chosen();
    for (const auto& n : nodes_) Tally(*n);
    return r_;
  }

 private:
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

  void Push(Event e) {
    e.seq = seq_++;
    queue_.push(std::move(e));
  }

  void Log(const std::string& s) {
    if (o_.verbose) std::printf("[t=%llu] %s\n", static_cast<unsigned long long>(now_), s.c_str());
  }

  void Violation(const std::string& what) {
    if (r_.violation) return;
    r_.violation = true;
    r_.what = what;
    Log("VIOLATION " + what);
  }

  std::string Progress() const {
    std::string s;
    for (const auto& n : nodes_) {
      s += "node " + std::to_string(n->id) + " chosen_end=" +
           std::to_string(n->core ? n->core->chosen_end() : 0) +
           " pending=" + std::to_string(n->pending.size()) +
           (o_.master_election && n->core
                ? " reads=" + std::to_string(n->reads.size()) + " master=" +
                      std::to_string(n->core->master().node) + " epoch=" +
                      n->core->master().epoch.ToString() + " promised=" +
                      n->core->promised().ToString() +
                      (n->core->master().self_ready ? " ready" : "") +
                      (n->core->HoldsLease() ? " (holds the lease)" : "")
                : std::string()) +
           "; ";
    }
    return s;
  }

  // Every node is up, idle and at the same chosen_end; with master election
  // also every read reported and some node holds the lease.
  bool Converged() {
    uint64_t end = 0;
    for (const auto& n : nodes_) {
      if (!n->core || !n->pending.empty() || !n->reads.empty() || !n->round.empty()) return false;
      if (&n == &nodes_[0]) end = n->core->chosen_end();
      if (n->core->chosen_end() != end) return false;
    }
    return end >= checker_.chosen() && (!o_.master_election || SomeoneHoldsLease());
  }

  // A PROMISE byte budget: the smallest allowed (PROMISEs truncate all the
  // time), a few hundred bytes, or the default (unlimited here).
  size_t DrawBudget() {
    const size_t min_budget = kValueBytes + paxos::kEnvelopeOverhead;
    switch (rng_.Uniform(3)) {
      case 0: return min_budget;
      case 1: return min_budget + rng_.Uniform(400);
      default: return CoreOptions().promise_budget_bytes;
    }
  }

  // --mixed_options: each start of a node draws its own pipeline depth,
  // window and PROMISE budget, so members disagree (an ordinary setting) and
  // a node's own options change across restarts (a rolling change, lowering
  // the window below records it wrote included).
  NodeConfig DrawConfig() {
    NodeConfig c;
    c.max_inflight = 1 + rng_.Uniform(2 * o_.max_inflight);
    switch (rng_.Uniform(3)) {
      case 0: c.window = c.max_inflight; break;
      case 1: c.window = c.max_inflight + rng_.Uniform(4 * o_.max_inflight); break;
      default: c.window = 4 * c.max_inflight; break;
    }
    c.budget = DrawBudget();
    return c;
  }

  CoreOptions OptionsFor(int i) {
    CoreOptions c;
    c.cluster_id = 77;
    c.group = 0;
    c.self = nodes_[i]->id;
    c.members = members_;
    const NodeConfig& config = nodes_[i]->config;
    c.max_inflight = config.max_inflight;
    c.window = config.window;
    c.max_value_bytes = kValueBytes;
    c.promise_budget_bytes = config.budget;
    c.prepare_timeout_ms = 100;
    c.accept_timeout_ms = 100;
    c.learn_interval_ms = 200;
    c.catchup_batch_count = 8;
    // Smaller than a catch-up batch: most batches are read from the log
    // (Outputs::catchup_reads), a few still come from the cache.
    c.chosen_cache_size = 4;
    c.seed = rng_.Next();
    c.test_mutation = o_.mutation;
    if (clocks_) c.max_clock_drift_ppm = o_.drift_ppm;
    if (o_.master_election) {
      c.master_election = true;
      c.lease_ms = kLeaseMs;
      c.heartbeat_interval_ms = kHeartbeatMs;
      c.election_timeout_ms = kElectionTimeoutMs;
      c.election_jitter_ms = kElectionJitterMs;
      c.forward_to_master = true;
    }
    return c;
  }

  void StartNode(int i) {
    Node& n = *nodes_[i];
    n.incarnation++;
    if (o_.mixed_options) n.config = DrawConfig();
    Status s = Core::Open(OptionsFor(i), &n.log, &n.core);
    if (!s.ok()) {
      Violation("node " + std::to_string(n.id) + " failed to recover: " + s.ToString());
      return;
    }
    // The recovered chosen prefix must be what this node learned before (it
    // may be shorter: see checker.h).
    if (!checker_.Recovered(i, n.core.get())) return;
    const uint64_t end = n.core->chosen_end();
    n.round_promised = n.core->promised();
    Log("start node " + std::to_string(n.id) + " incarnation " + std::to_string(n.incarnation) +
        " chosen_end=" + std::to_string(end) + " max_inflight=" +
        std::to_string(n.config.max_inflight) + " window=" + std::to_string(n.config.window) +
        " budget=" + std::to_string(n.config.budget) +
        (clocks_ ? " clock_rate_ppm=" + std::to_string(n.clock.rate_ppm()) : std::string()));
    Outputs out;
    In(i)->Start(&out);
    EndStep(i, &out);
  }

  void Tally(const Node& n) {
    if (!n.core) return;
    r_.behind += n.core->stats().accepts_behind;
    r_.truncated += n.core->stats().truncated_promises;
    r_.forwards += n.core->stats().forwards_sent;
  }

  // `quick`: restart within a few ms (in-flight messages still arrive).
  void Crash(int i, bool quick = false) {
    Node& n = *nodes_[i];
    Tally(n);
    n.core.reset();
    n.log.Crash();
    n.round.Clear();  // nothing of it was persisted or sent
    n.flush_due = false;
    n.paused_until = 0;  // kill -9 of a stopped process
    for (uint64_t t : n.pending) proposals_[t].abandoned = true;
    n.pending.clear();
    for (uint64_t t : n.reads) reads_.erase(t);
    n.reads.clear();
    r_.crashes++;
    r_.faults++;
    Log("crash node " + std::to_string(n.id));
    // Half the restarts are quick (in-flight messages still arrive), half slow.
    const uint64_t down =
        quick || rng_.OneIn(800000) ? 1 + rng_.Uniform(5) : 20 + rng_.Uniform(500);
    Push(Event{now_ + down, 0, EventType::kRestart, i, 0, {}, {}});
  }

  void Learned(int i, const ChosenValue& v) {
    if (checker_.Learned(i, v)) hash_ = Mix(hash_, HashBytes(SafetyChecker::Key(v)));
  }

  // Group commit, as node/group.cc runs it: the outputs of node i's next
  // 1..max_round_steps core steps (drawn per round) accumulate in its round;
  // the round executes once it holds that many, or at a flush event soon
  // after it became non-empty.
  void EndStep(int i, Outputs* out) {
    Node& n = *nodes_[i];
    // Reports need no execution: check them now, so a crash that drops the
    // round cannot hide one.
    for (const auto& e : out->errors) {
      Violation("node " + std::to_string(n.id) + " reported: " + e.ToString());
    }
    out->errors.clear();
    if (n.round.steps() == 0) {
      n.round_limit = o_.max_round_steps <= 1 ? 1 : 1 + rng_.Uniform(o_.max_round_steps);
    }
    n.round.Add(out);
    if (n.round.steps() >= n.round_limit) {
      ExecuteRound(i);
    } else if (!n.round.empty() && !n.flush_due) {
      n.flush_due = true;
      Push(Event{now_ + rng_.Uniform(kMaxFlushDelayMs + 1), 0, EventType::kFlush, i,
                 n.incarnation, {}, {}});
    }
  }

  void ExecuteRound(int i) {
    Node& n = *nodes_[i];
    const size_t steps = n.round.steps();
    Outputs out;
    n.round.Take(&out);
    if (steps > 1) {
      r_.merged_rounds++;
      Log("node " + std::to_string(n.id) + " executes a round of " + std::to_string(steps) +
          " steps");
    }
    // Crash points: right after the node raised its promise (answered a
    // PREPARE with a PROMISE, or accepted a higher ballot than it had
    // promised), or answered an ACCEPT with ACCEPTED (the reply is on the
    // wire). Decided per executed round: the runtime can only crash between
    // rounds' effects.
    const bool raised = n.round_promised < n.core->promised();
    bool promised = false, accepted = false, granted = false;
    for (const auto& m : out.messages) {
      paxos::PaxosMsg reply;
      if (!reply.ParseFromString(m.bytes)) continue;
      promised = promised || reply.type() == paxos::PROMISE ||
                 (raised && reply.type() == paxos::ACCEPTED);
      accepted = accepted || reply.type() == paxos::ACCEPTED;
      granted = granted || (reply.type() == paxos::HEARTBEAT_ACK &&
                            !(paxos::Ballot::FromPb(reply.ballot()) <
                              paxos::Ballot::FromPb(reply.promised())));
    }
    Execute(i, &out);
    n.round_promised = n.core->promised();
    if (!quiet_ && n.core && granted && rng_.OneIn(kCrashAfterGrantPpm)) {
      Crash(i, true);
    } else if (!quiet_ && n.core &&
               (promised ? rng_.OneIn(o_.master_election ? kMasterCrashAfterPromisePpm
                                                         : kCrashAfterPromisePpm)
                         : accepted && rng_.OneIn(kCrashAfterAcceptPpm))) {
      Crash(i);
    }
  }

  void Pause(int i, uint64_t ms) {
    nodes_[i]->paused_until = now_ + ms;
    r_.pauses++;
    r_.faults++;
    Log("pause node " + std::to_string(nodes_[i]->id) + " until t=" +
        std::to_string(nodes_[i]->paused_until));
  }

  // Executes one merged round of node i: persist -> send -> apply -> timers.
  void Execute(int i, Outputs* out) {
    Node& n = *nodes_[i];
    if (!out->persist.empty()) n.log.Write(out->persist, out->sync);
    for (auto& m : out->messages) SendOut(i, m);
    // Catch-up reads, served as the runtime's reader does (paxos/catchup.h)
    // but at once: after the persist, from the node's own log. The network
    // delays and reorders their replies like any message.
    for (const paxos::CatchupRead& read : out->catchup_reads) {
      paxos::CatchupReply reply;
      paxos::ReadCatchup(read, &n.log, &reply);
      r_.catchup_reads++;
      if (reply.entries > 0) SendOut(i, paxos::OutMessage{read.peer, std::move(reply.bytes)});
    }
    for (const ChosenValue& v : out->chosen) {
      Learned(i, v);
      if (v.ours) {
        auto p = proposals_.find(v.token);
        if (p == proposals_.end() || p->second.data != v.value || p->second.node != i) {
          Violation("node " + std::to_string(n.id) + " claims token " + std::to_string(v.token) +
                    " for a value that is not its proposal");
        }
      }
    }
    for (const auto& f : out->finished) {
      auto p = proposals_.find(f.token);
      if (p == proposals_.end() || n.pending.erase(f.token) == 0) {
        Violation("node " + std::to_string(n.id) + " finished unknown token " +
                  std::to_string(f.token));
        continue;
      }
      p->second.done = true;
      if (!f.status.ok() && p->second.cancelled && f.status.IsStopped()) {
        r_.timeouts++;  // the client's deadline: outcome unknown
        continue;
      }
      if (!f.status.ok()) {
        Violation("proposal " + p->second.data + " failed: " + f.status.ToString());
        continue;
      }
      if (!checker_.ChosenIs(f.instance, p->second.data)) {
        Violation("proposal " + p->second.data + " reported chosen at instance " +
                  std::to_string(f.instance) + " which holds something else");
        continue;
      }
      r_.proposals_ok++;
      r_.commit_latency_ms.push_back(now_ - p->second.begin);
      master_checker_.WriteCompleted(f.instance);
    }
    for (const paxos::BarrierResult& b : out->barriers) {
      auto rd = reads_.find(b.token);
      if (rd == reads_.end() || n.reads.erase(b.token) == 0) {
        Violation("node " + std::to_string(n.id) + " reported unknown read token " +
                  std::to_string(b.token));
        continue;
      }
      const Read read = rd->second;
      reads_.erase(rd);
      if (b.status.IsBusy()) {
        r_.reads_busy++;
        continue;
      }
      if (!b.status.ok()) {
        Violation("node " + std::to_string(n.id) + " read failed: " + b.status.ToString());
        continue;
      }
      (read.lease ? r_.lease_reads : r_.read_index_reads)++;
      master_checker_.ReadCompleted(i, read.begin, read.required, b.instance, read.lease);
    }
    for (const auto& t : out->timers) {
      Push(Event{After(i, t.delay_ms), 0, EventType::kTimer, i, n.incarnation, {}, t.id});
    }
    for (const auto& e : out->errors) {
      Violation("node " + std::to_string(n.id) + " reported: " + e.ToString());
    }
  }

  // Sends message `m` of node i to its receivers (the checker sees it first).
  void SendOut(int i, const paxos::OutMessage& m) {
    checker_.Sent(i, m.bytes);
    for (int j = 0; j < o_.nodes; ++j) {
      if (j != i && (m.to == paxos::kBroadcast || nodes_[j]->id == m.to)) Send(i, j, m.bytes);
    }
  }

  void Send(int from, int to, const std::string& bytes) {
    if (!quiet_) {
      if (nodes_[from]->partition != nodes_[to]->partition) return;
      if (cut_.count({std::min(from, to), std::max(from, to)}) != 0) return;
      if (rng_.OneIn(kDropPpm)) {
        r_.faults++;
        return;
      }
    }
    int copies = 1;
    if (!quiet_ && rng_.OneIn(kDupPpm)) {
      copies = 2;
      r_.faults++;
    }
    for (int c = 0; c < copies; ++c) {
      uint64_t delay = 1 + rng_.Uniform(10);
      if (!quiet_ && rng_.OneIn(kLongDelayPpm)) {
        delay += rng_.Uniform(1000);
        r_.faults++;
      }
      Push(Event{now_ + delay, 0, EventType::kDeliver, to, 0, bytes, {}, nodes_[from]->id});
    }
  }

  void ProposeAt(int i) {
    Node& n = *nodes_[i];
    if (!n.core || Paused(i) ||
        n.pending.size() >= kPendingPerInflight * n.config.max_inflight) {
      return;
    }
    const uint64_t token = next_token_++;
    Proposal p;
    p.node = i;
    p.incarnation = n.incarnation;
    p.begin = now_;
    p.data = "s" + std::to_string(o_.seed) + "v" + std::to_string(token);
    checker_.Proposed(p.data);
    proposals_[token] = p;
    n.pending.insert(token);
    r_.proposals++;
    Log("propose " + p.data + " at node " + std::to_string(n.id));
    Outputs out;
    Status s = In(i)->Propose(token, p.data, &out);
    if (!s.ok()) Violation("Propose failed: " + s.ToString());
    EndStep(i, &out);
    if (o_.master_election) {
      Push(Event{now_ + kProposeDeadlineMs, 0, EventType::kDeadline, i, n.incarnation, {}, {},
                 token});
    }
  }

  // A ReadBarrier on node i (master election).
  void ReadAt(int i) {
    Node& n = *nodes_[i];
    if (!n.core || Paused(i)) return;
    const uint64_t token = next_read_++;
    reads_[token] = Read{i, now_, master_checker_.ReadBegins(), false};
    n.reads.insert(token);
    Log("read " + std::to_string(token) + " at node " + std::to_string(n.id));
    Outputs out;
    In(i)->ReadBarrier(token, &out);
    for (const paxos::BarrierResult& b : out.barriers) {
      if (b.token == token && b.status.ok()) reads_[token].lease = true;
    }
    EndStep(i, &out);
  }

  // The master (if a live, unpaused node is one) hands its mastership to a
  // random other member, or steps down.
  void TransferAt() {
    for (int i = 0; i < o_.nodes; ++i) {
      Node& n = *nodes_[i];
      if (!n.core || Paused(i) || !In(i)->HoldsLease()) continue;
      uint64_t target = 0;
      if (!rng_.OneIn(kStepDownPpm)) {
        target = members_[(i + 1 + rng_.Uniform(o_.nodes - 1)) % o_.nodes];
        // Half the time to the slowest clock: it rarely wins an election
        // (its election timeout lasts longest in real time), and a slow
        // master among fast acceptors is where a lease that ignores the
        // drift bound outlives its grants.
        int slowest = 0;
        for (int j = 1; j < o_.nodes; ++j) {
          if (nodes_[j]->clock.rate_ppm() < nodes_[slowest]->clock.rate_ppm()) slowest = j;
        }
        if (clocks_ && slowest != i && rng_.OneIn(500000)) target = members_[slowest];
      }
      Log("node " + std::to_string(n.id) + " transfers the mastership to " +
          std::to_string(target));
      Outputs out;
      Status s = n.core->TransferMaster(target, &out);
      if (s.ok()) {
        r_.transfers++;
        master_checker_.Transferred(i, target, now_);
      } else {
        Violation("node " + std::to_string(n.id) + " holds the lease but TransferMaster(" +
                  std::to_string(target) + ") failed: " + s.ToString());
      }
      EndStep(i, &out);
      return;
    }
  }

  // After every step (master election): the lease holders now, each node
  // read at its own clock; and the elections (a node seen holding the lease
  // under an epoch it was not counted for yet).
  void CheckLeases() {
    std::vector<int> holders;
    for (int i = 0; i < o_.nodes; ++i) {
      Node& n = *nodes_[i];
      if (!n.core || !In(i)->HoldsLease()) continue;
      holders.push_back(i);
      const paxos::Ballot epoch = n.core->master().epoch;
      if (!(epoch == n.counted_epoch)) {
        n.counted_epoch = epoch;
        r_.elections++;
      }
    }
    if (o_.verbose && holders != last_holders_) {
      std::string list;
      for (int i : holders) list += " " + std::to_string(nodes_[i]->id);
      Log("lease holders:" + (list.empty() ? std::string(" none") : list));
    }
    last_holders_ = holders;
    master_checker_.Leases(now_, holders);
  }

  bool SomeoneHoldsLease() {
    for (int i = 0; i < o_.nodes; ++i) {
      if (nodes_[i]->core && In(i)->HoldsLease()) return true;
    }
    return false;
  }

  void Chaos() {
    Push(Event{now_ + kChaosTickMs, 0, EventType::kChaos, 0, 0, {}, {}});
    if (quiet_) return;
    if (rng_.OneIn(kProposePpm)) ProposeAt(static_cast<int>(rng_.Uniform(o_.nodes)));
    if (rng_.OneIn(kBurstPpm)) {
      // A burst fills one node's pipeline (and its queue) at once.
      const int i = static_cast<int>(rng_.Uniform(o_.nodes));
      const uint64_t k = 1 + rng_.Uniform(kPendingPerInflight * nodes_[i]->config.max_inflight);
      for (uint64_t j = 0; j < k && !r_.violation; ++j) ProposeAt(i);
    }
    if (rng_.OneIn(o_.master_election ? kMasterCrashPpm : kCrashPpm)) {
      int i = static_cast<int>(rng_.Uniform(o_.nodes));
      if (nodes_[i]->core) Crash(i);
    }
    if (rng_.OneIn(kPartitionPpm)) {
      for (auto& n : nodes_) n->partition = static_cast<int>(rng_.Uniform(2));
      r_.faults++;
      Log("partition");
      Push(Event{now_ + 50 + rng_.Uniform(1000), 0, EventType::kHeal, 0, 0, {}, {}});
    }
    if (o_.master_election) {
      if (rng_.OneIn(kReadPpm)) ReadAt(static_cast<int>(rng_.Uniform(o_.nodes)));
      if (rng_.OneIn(kTransferPpm)) TransferAt();
    }
    if (clocks_ && o_.nodes > 1 && rng_.OneIn(kCutPpm)) {
      const int a = static_cast<int>(rng_.Uniform(o_.nodes));
      const int b = (a + 1 + static_cast<int>(rng_.Uniform(o_.nodes - 1))) % o_.nodes;
      cut_.insert({std::min(a, b), std::max(a, b)});
      r_.faults++;
      Log("cut " + std::to_string(nodes_[a]->id) + " <-> " + std::to_string(nodes_[b]->id));
      Push(Event{now_ + 50 + rng_.Uniform(1000), 0, EventType::kUncut, std::min(a, b), 0, {}, {},
                 static_cast<uint64_t>(std::max(a, b))});
    }
    if (clocks_ && rng_.OneIn(kPausePpm)) {
      const int i = static_cast<int>(rng_.Uniform(o_.nodes));
      if (nodes_[i]->core && !Paused(i)) Pause(i, kPauseMinMs + rng_.Uniform(kPauseSpanMs + 1));
    }
  }

  void Step() {
    Event e = queue_.top();
    queue_.pop();
    now_ = e.time;
    if ((e.type == EventType::kDeliver || e.type == EventType::kTimer ||
         e.type == EventType::kFlush || e.type == EventType::kDeadline) &&
        Paused(e.node)) {
      // A stopped process: what arrives for it (messages, its timers, its
      // clients' deadlines) waits until it resumes (in arrival order:
      // re-queued in the order they pop).
      e.time = nodes_[e.node]->paused_until;
      Push(std::move(e));
      return;
    }
    if (e.type != EventType::kFlush) r_.steps++;
    hash_ = Mix(hash_, e.time);
    hash_ = Mix(hash_, static_cast<uint64_t>(e.type) * 131 + static_cast<uint64_t>(e.node));
    switch (e.type) {
      case EventType::kChaos:
        Chaos();
        break;
      case EventType::kHeal:
        for (auto& n : nodes_) n->partition = 0;
        Log("heal");
        break;
      case EventType::kUncut:
        cut_.erase({e.node, static_cast<int>(e.from)});
        break;
      case EventType::kDeadline: {
        Node& n = *nodes_[e.node];
        if (!n.core || n.incarnation != e.incarnation || n.pending.count(e.from) == 0) break;
        proposals_[e.from].cancelled = true;
        Log("deadline: cancel token " + std::to_string(e.from) + " at node " +
            std::to_string(n.id));
        Outputs out;
        In(e.node)->Cancel(e.from, &out);
        EndStep(e.node, &out);
        break;
      }
      case EventType::kRestart:
        if (!nodes_[e.node]->core) StartNode(e.node);
        break;
      case EventType::kFlush: {
        Node& n = *nodes_[e.node];
        if (!n.core || n.incarnation != e.incarnation) break;  // the round died with it
        n.flush_due = false;
        if (!n.round.empty()) ExecuteRound(e.node);
        break;
      }
      case EventType::kTimer: {
        Node& n = *nodes_[e.node];
        if (!n.core || n.incarnation != e.incarnation) break;
        hash_ = Mix(hash_, e.timer.generation);
        Outputs out;
        In(e.node)->OnTimeout(e.timer, &out);
        EndStep(e.node, &out);
        break;
      }
      case EventType::kDeliver: {
        Node& n = *nodes_[e.node];
        if (!n.core) break;
        hash_ = Mix(hash_, HashBytes(e.bytes));
        if (o_.verbose) {
          paxos::PaxosMsg m;
          if (m.ParseFromString(e.bytes)) {
            Log("deliver " + paxos::MsgType_Name(m.type()) + " " + std::to_string(m.from()) +
                "->" + std::to_string(n.id) + " inst=" + std::to_string(m.instance()) + " b=" +
                std::to_string(m.ballot().number()) + "." + std::to_string(m.ballot().node_id()) +
                " value=" + (m.value().size() > 16 ? m.value().substr(16) : std::string()) +
                " accepted=" + std::to_string(m.accepted_size()) +
                (m.type() == paxos::READ_INDEX_REPLY
                     ? " read_index=" + std::to_string(m.read_index())
                     : std::string()) +
                (m.lease_holder() != 0 ? " lease_holder=" + std::to_string(m.lease_holder())
                                       : std::string()) +
                (m.has_promised() ? " promised=" + std::to_string(m.promised().number()) + "." +
                                        std::to_string(m.promised().node_id())
                                  : std::string()));
          }
        }
        Outputs out;
        Status s = In(e.node)->OnMessage(e.bytes, &out, e.from);
        if (!s.ok()) Violation("node " + std::to_string(n.id) + " rejected a message: " + s.ToString());
        EndStep(e.node, &out);  // crash points: ExecuteRound
        if (o_.master_election && !quiet_ && n.core && !Paused(e.node) && n.core->HoldsLease()) {
          paxos::PaxosMsg m;
          if (m.ParseFromString(e.bytes) && m.type() == paxos::HEARTBEAT_ACK &&
              rng_.OneIn(kPauseAfterAckPpm)) {
            Pause(e.node, kLeaseMs + rng_.Uniform(kLeaseMs + 1));
          }
        }
        break;
      }
    }
    if (o_.master_election && !r_.violation) CheckLeases();
    r_.hash = hash_;
  }

  const SimOptions o_;
  const bool clocks_;
  Rng rng_;
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
  std::map<uint64_t, Read> reads_;  // token -> unreported read
  uint64_t next_read_ = 1;
  std::vector<int> last_holders_;  // --verbose: the lease holders at the last step
  std::set<std::pair<int, int>> cut_;  // cut links (lower index first)
};

}  // namespace

SimResult RunSim(const SimOptions& options) { return Sim(options).Run(); }

}  // namespace sim
}  // namespace chorus
