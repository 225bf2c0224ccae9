#include "unittest/sim/sim_impl.h"

namespace chorus {
namespace sim {
namespace internal {

SimResult Sim::Run() {
  if (o_.membership) InitMembership();
  for (int i = 0; i < n_ && !r_.violation; ++i) {
    if (!nodes_[i]->idle) StartNode(i);
  }
  Push(Event{kChaosTickMs, 0, EventType::kChaos, 0, 0, {}, {}});
  // Fault phase.
  while (!r_.violation && r_.steps < o_.steps && !queue_.empty()) Step();
  // Quiet phase: heal, restart everyone, stop faults and new proposals.
  quiet_ = true;
  const uint64_t deadline = now_ + kQuietLimitMs;
  for (auto& n : nodes_) n->partition = 0;
  cut_.clear();
  for (int i = 0; i < n_ && !r_.violation; ++i) {
    if (!nodes_[i]->core && !nodes_[i]->idle && !nodes_[i]->dead) StartNode(i);
  }
  while (!r_.violation && !Converged()) {
    if (queue_.empty() || queue_.top().time > deadline) {
      Violation("liveness: no convergence within " + std::to_string(kQuietLimitMs) +
                " ms of virtual time after faults stopped (" + Progress() + ")");
      break;
    }
    Step();
  }
  // Converged: one chosen_end, so one chained checksum (a checkpoint
  // installed with a wrong one shows here even if no catch-up batch met it).
  // (--membership: among the nodes that run and are at the same chosen_end.)
  int first = -1;
  for (int i = 0; o_.checkpoints && i < n_ && !r_.violation; ++i) {
    if (!nodes_[i]->core) continue;
    if (first < 0) {
      first = i;
    } else if (nodes_[i]->core->chosen_end() == nodes_[first]->core->chosen_end() &&
               nodes_[i]->core->chain_checksum() != nodes_[first]->core->chain_checksum()) {
      Violation("node " + std::to_string(nodes_[i]->id) + "'s chained checksum differs from node " +
                std::to_string(nodes_[first]->id) + "'s at chosen_end " +
                std::to_string(nodes_[first]->core->chosen_end()));
    }
  }
  r_.chosen = checker_.chosen();
  r_.changes_applied = member_checker_.applied();
  r_.changes_conflict = member_checker_.conflicts();
  r_.votes_checked = member_checker_.verified();
  for (const auto& n : nodes_) Tally(*n);
  return r_;
}

void Sim::Push(Event e) {
  e.seq = seq_++;
  queue_.push(std::move(e));
}

void Sim::Log(const std::string& s) {
  if (o_.verbose) std::printf("[t=%llu] %s\n", static_cast<unsigned long long>(now_), s.c_str());
}

void Sim::Violation(const std::string& what) {
  if (r_.violation) return;
  r_.violation = true;
  r_.what = what;
  Log("VIOLATION " + what);
}

std::string Sim::Progress() const {
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
         (o_.membership
              ? std::string(n->dead ? " dead" : n->idle ? " idle" : "") +
                    (n->core ? std::string(" role=") + paxos::MemberRoleName(n->core->role()) +
                                   " v" + std::to_string(n->core->membership().Latest().version) +
                                   (n->core->membership().known()
                                        ? " (from v" +
                                              std::to_string(
                                                  n->core->membership().configs()[0].version) +
                                              ")"
                                        : std::string(" (none)")) +
                                   " changes=" + std::to_string(n->changes.size())
                             : std::string())
              : std::string()) +
         "; ";
  }
  if (o_.membership) {
    s += "the log's configs:";
    for (const auto& c : member_checker_.configs()) s += " [" + MembershipChecker::Describe(c) + "]";
  }
  return s;
}

bool Sim::Converged() {
  if (o_.membership) return MembershipConverged();
  uint64_t end = 0;
  for (const auto& n : nodes_) {
    if (!n->core || !n->pending.empty() || !n->reads.empty() || !n->round.empty()) return false;
    if (&n == &nodes_[0]) end = n->core->chosen_end();
    if (n->core->chosen_end() != end) return false;
  }
  return end >= checker_.chosen() && (!o_.master_election || SomeoneHoldsLease());
}

size_t Sim::DrawBudget() {
  const size_t min_budget = ValueBytes() + paxos::kEnvelopeOverhead;
  switch (rng_.Uniform(3)) {
    case 0: return min_budget;
    case 1: return min_budget + rng_.Uniform(400);
    default: return CoreOptions().promise_budget_bytes;
  }
}

NodeConfig Sim::DrawConfig() {
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

CoreOptions Sim::OptionsFor(int i) {
  CoreOptions c;
  c.cluster_id = 77;
  c.group = 0;
  c.self = nodes_[i]->id;
  c.members = members_;
  const NodeConfig& config = nodes_[i]->config;
  c.max_inflight = config.max_inflight;
  c.window = config.window;
  c.max_value_bytes = ValueBytes();
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
  if (o_.checkpoints) c.log_keep_instances = nodes_[i]->keep;
  if (o_.membership) MembershipOptions(i, &c);
  return c;
}

void Sim::StartNode(int i) {
  Node& n = *nodes_[i];
  n.incarnation++;
  if (o_.mixed_options) n.config = DrawConfig();
  if (o_.checkpoints) DrawCheckpointConfig(i);
  Status s = Core::Open(OptionsFor(i), &n.log, &n.core);
  if (!s.ok()) {
    Violation("node " + std::to_string(n.id) + " failed to recover: " + s.ToString());
    return;
  }
  if (o_.checkpoints && !InstallStoredCheckpoint(i)) return;
  // The recovered chosen prefix must be what this node learned before (it
  // may be shorter: see checker.h).
  if (!checker_.Recovered(i, n.core.get())) return;
  if (o_.membership) {
    if (o_.check_node_membership) {
      member_checker_.CheckNode(n.id, n.joined || o_.checkpoints, n.core->chosen_end(),
                                n.core->membership());
    }
    n.reported = n.core->membership();
  }
  if (o_.checkpoints && !RestoreStateMachine(i)) return;
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

void Sim::Tally(const Node& n) {
  if (!n.core) return;
  r_.behind += n.core->stats().accepts_behind;
  r_.truncated += n.core->stats().truncated_promises;
  r_.forwards += n.core->stats().forwards_sent;
  r_.trims += n.core->stats().trims;
  r_.checkpoint_replies += n.core->stats().checkpoint_replies;
  r_.not_member_sent += n.core->stats().not_member_sent;
}

void Sim::Crash(int i, bool quick, uint64_t down_ms) {
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
  for (uint64_t t : n.changes) {
    changes_.erase(t);
    if (scenario_.token == t) scenario_.token = 0;
  }
  n.changes.clear();
  n.votes.clear();  // never persisted
  n.step_reported = false;
  r_.crashes++;
  r_.faults++;
  Log("crash node " + std::to_string(n.id));
  // Half the restarts are quick (in-flight messages still arrive), half slow.
  const uint64_t down =
      down_ms > 0 ? down_ms
                  : quick || rng_.OneIn(800000) ? 1 + rng_.Uniform(5) : 20 + rng_.Uniform(500);
  Push(Event{now_ + down, 0, EventType::kRestart, i, 0, {}, {}});
}

void Sim::Learned(int i, const ChosenValue& v) {
  const uint64_t known = checker_.chosen();
  if (checker_.Learned(i, v)) hash_ = Mix(hash_, HashBytes(SafetyChecker::Key(v)));
  // The first node to learn an instance: the membership checker verifies
  // its quorum and follows the log's configurations.
  if (o_.membership && checker_.chosen() > known) member_checker_.Chosen(v);
}

void Sim::Pause(int i, uint64_t ms) {
  nodes_[i]->paused_until = now_ + ms;
  r_.pauses++;
  r_.faults++;
  Log("pause node " + std::to_string(nodes_[i]->id) + " until t=" +
      std::to_string(nodes_[i]->paused_until));
}

void Sim::Chaos() {
  Push(Event{now_ + kChaosTickMs, 0, EventType::kChaos, 0, 0, {}, {}});
  if (quiet_) return;
  if (rng_.OneIn(kProposePpm)) ProposeAt(static_cast<int>(rng_.Uniform(n_)));
  if (rng_.OneIn(kBurstPpm)) {
    // A burst fills one node's pipeline (and its queue) at once.
    const int i = static_cast<int>(rng_.Uniform(n_));
    const uint64_t k = 1 + rng_.Uniform(kPendingPerInflight * nodes_[i]->config.max_inflight);
    for (uint64_t j = 0; j < k && !r_.violation; ++j) ProposeAt(i);
  }
  if (rng_.OneIn(o_.master_election ? kMasterCrashPpm : kCrashPpm)) {
    int i = static_cast<int>(rng_.Uniform(n_));
    if (nodes_[i]->core) Crash(i);
  }
  if (rng_.OneIn(kPartitionPpm)) {
    for (auto& n : nodes_) n->partition = static_cast<int>(rng_.Uniform(2));
    r_.faults++;
    Log("partition");
    Push(Event{now_ + 50 + rng_.Uniform(1000), 0, EventType::kHeal, 0, 0, {}, {}});
  }
  if (o_.checkpoints && rng_.OneIn(kLongDownPpm)) LongDown();
  if (o_.master_election) {
    if (rng_.OneIn(kReadPpm)) ReadAt(static_cast<int>(rng_.Uniform(n_)));
    if (rng_.OneIn(kTransferPpm)) TransferAt();
  }
  if (o_.membership) MembershipTick();
  if (clocks_ && n_ > 1 && rng_.OneIn(kCutPpm)) {
    const int a = static_cast<int>(rng_.Uniform(n_));
    const int b = (a + 1 + static_cast<int>(rng_.Uniform(n_ - 1))) % n_;
    cut_.insert({std::min(a, b), std::max(a, b)});
    r_.faults++;
    Log("cut " + std::to_string(nodes_[a]->id) + " <-> " + std::to_string(nodes_[b]->id));
    Push(Event{now_ + 50 + rng_.Uniform(1000), 0, EventType::kUncut, std::min(a, b), 0, {}, {},
               static_cast<uint64_t>(std::max(a, b))});
  }
  if (clocks_ && rng_.OneIn(kPausePpm)) {
    const int i = static_cast<int>(rng_.Uniform(n_));
    if (nodes_[i]->core && !Paused(i)) Pause(i, kPauseMinMs + rng_.Uniform(kPauseSpanMs + 1));
  }
}

}  // namespace internal

SimResult RunSim(const SimOptions& options) { return internal::Sim(options).Run(); }

}  // namespace sim
}  // namespace chorus
