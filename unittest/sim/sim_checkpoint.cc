// --checkpoints (sim.h): the hash-chain state machines, their delayed-durable
// checkpoints, log trimming, restarts from a checkpoint, simulated checkpoint
// transfers, long-down nodes, and their checks.
#include "unittest/sim/sim_impl.h"

namespace chorus {
namespace sim {
namespace internal {

namespace {

// What a node executes for chosen value `v`: every instance counts (noops
// too), and the value's identity is mixed into the chain.
uint64_t SmStep(uint64_t hash, const ChosenValue& v) {
  return Mix(hash, HashBytes(SafetyChecker::Key(v)));
}

}  // namespace

void Sim::DrawCheckpointConfig(int i) {
  Node& n = *nodes_[i];
  n.interval = kMinInterval + rng_.Uniform(kIntervalSpan + 1);
  n.keep = rng_.Uniform(2 * n.interval + 1);
  n.sm = SmState();
  n.last_snapshot = 0;
  n.snapshot_pending = false;
  n.transfer_running = false;
}

bool Sim::InstallStoredCheckpoint(int i) {
  Node& n = *nodes_[i];
  if (n.store.instance <= n.core->chosen_end()) return true;
  // A crash between committing a received checkpoint to the store and the
  // core's install (or a lost unsynced tail of chosen records): the store
  // is ahead of the log, so the core jumps to it.
  Outputs out;
  Status s = n.core->InstallCheckpoint(n.store.instance, n.store.chain,
                                       o_.membership ? &n.store.membership : nullptr, &out);
  if (!s.ok()) {
    Violation("node " + std::to_string(n.id) + " could not install its stored checkpoint at " +
              std::to_string(n.store.instance) + ": " + s.ToString());
    return false;
  }
  r_.installs++;
  n.trim_allowed = std::max(n.trim_allowed, n.store.instance);
  checker_.Installed(i, n.store.instance);
  if (!out.persist.empty()) n.log.Write(out.persist, out.sync);
  if (!out.chosen.empty() || !out.errors.empty() || !out.finished.empty()) {
    Violation("node " + std::to_string(n.id) + " installed its stored checkpoint before Start "
              "and got chosen values, results or errors");
    return false;
  }
  return true;
}

bool Sim::RestoreStateMachine(int i) {
  Node& n = *nodes_[i];
  n.sm.count = n.store.instance;
  n.sm.hash = n.store.hash;
  n.last_snapshot = n.sm.count;
  if (n.store.instance > 0) CheckHash(i, n.sm.count, n.sm.hash);
  const uint64_t end = n.core->chosen_end();
  for (uint64_t k = n.sm.count; k < end && !r_.violation; ++k) {
    ChosenValue v;
    Status s = n.core->ReadChosen(k, &v);
    if (!s.ok()) {
      Violation("node " + std::to_string(n.id) + " skips instance " + std::to_string(k) +
                " on restart: its checkpoint is at " + std::to_string(n.store.instance) +
                " but its log starts at " + std::to_string(n.core->log_start()) + " (" +
                s.ToString() + ")");
      return false;
    }
    SmApply(i, v);
  }
  return !r_.violation;
}

void Sim::SmApply(int i, const ChosenValue& v) {
  Node& n = *nodes_[i];
  if (v.instance != n.sm.count) {
    Violation("node " + std::to_string(n.id) + "'s state machine " +
              (v.instance < n.sm.count ? "repeats" : "skips") + " an instance: got " +
              std::to_string(v.instance) + " when " + std::to_string(n.sm.count) +
              " was next");
    return;
  }
  n.sm.hash = SmStep(n.sm.hash, v);
  n.sm.count++;
  CheckHash(i, n.sm.count, n.sm.hash);
}

void Sim::CheckHash(int i, uint64_t count, uint64_t hash) {
  auto it = hash_at_.emplace(count, hash).first;
  if (it->second != hash) {
    Violation("node " + std::to_string(nodes_[i]->id) + "'s state hash after " +
              std::to_string(count) + " instances differs from another node's");
  }
}

void Sim::AfterRound(int i, const Outputs& round) {
  Node& n = *nodes_[i];
  if (!n.core || r_.violation) return;
  // A snapshot at a round boundary (the state machine is at the core's
  // chosen_end), as the runtime's PrepareCheckpoint.
  if (!n.snapshot_pending && n.sm.count >= n.last_snapshot + n.interval &&
      n.sm.count == n.core->chosen_end()) {
    Event e{now_ + 1 + rng_.Uniform(kDurableDelayMs), 0, EventType::kDurable, i, n.incarnation,
            {}, {}};
    e.checkpoint = Checkpoint{n.sm.count, n.sm.hash, n.core->chain_checksum(), {}};
    if (o_.membership) e.checkpoint.membership = n.core->MembershipAt(n.sm.count);
    n.snapshot_pending = true;
    n.last_snapshot = n.sm.count;
    Push(std::move(e));
  }
  if (round.checkpoint_needed.empty() || n.transfer_running) return;
  // The first need of the round; the peer serves its newest durable one.
  const paxos::CheckpointNeeded& need = round.checkpoint_needed[0];
  int j = 0;
  while (j < n_ && nodes_[j]->id != need.peer) ++j;
  if (j == n_) {
    Violation("node " + std::to_string(n.id) + " needs a checkpoint of unknown node " +
              std::to_string(need.peer));
    return;
  }
  const Checkpoint& ck = nodes_[j]->store;
  if (ck.instance < need.log_start) {
    Violation("node " + std::to_string(need.peer) + " said its log starts at " +
              std::to_string(need.log_start) + " but its newest durable checkpoint is at " +
              std::to_string(ck.instance));
    return;
  }
  n.transfer_running = true;
  r_.checkpoint_transfers++;
  Event e{now_ + kTransferMinMs + rng_.Uniform(kTransferSpanMs + 1), 0, EventType::kTransfer, i,
          n.incarnation, {}, {}};
  e.checkpoint = ck;
  if (!quiet_) {
    e.lost = rng_.OneIn(kTransferLostPpm);
    e.corrupt = !e.lost && rng_.OneIn(kTransferCorruptPpm);
  }
  Log("node " + std::to_string(n.id) + " fetches checkpoint " + std::to_string(ck.instance) +
      " from node " + std::to_string(need.peer));
  Push(std::move(e));
}

void Sim::CheckpointEvent(const Event& e) {
  Node& n = *nodes_[e.node];
  if (!n.core || n.incarnation != e.incarnation) return;  // died with its node
  if (e.type == EventType::kDurable) {
    Durable(e);
  } else {
    TransferEnds(e);
  }
}

void Sim::Durable(const Event& e) {
  const int i = e.node;
  Node& n = *nodes_[i];
  n.snapshot_pending = false;
  const Checkpoint& ck = e.checkpoint;
  if (ck.instance > n.store.instance) n.store = ck;
  r_.checkpoints++;
  // Now and then the runtime's own bound (its byte margin) holds the trim
  // further back.
  uint64_t limit = UINT64_MAX;
  if (rng_.OneIn(kTrimLimitPpm)) {
    limit = ck.instance - std::min(ck.instance, rng_.Uniform(n.interval));
  }
  // The trim rule, computed here on its own: the log may start at most at
  // the checkpoint's instance minus the margin (and the runtime's bound).
  n.trim_allowed =
      std::max(n.trim_allowed, std::min(ck.instance - std::min(ck.instance, n.keep), limit));
  Outputs out;
  In(i)->OnCheckpoint(ck.instance, limit, &out);
  if (n.core->log_start() > n.store.instance) {
    Violation("node " + std::to_string(n.id) + " trimmed its log to " +
              std::to_string(n.core->log_start()) + ", beyond its newest durable checkpoint " +
              std::to_string(n.store.instance));
  }
  EndStep(i, &out);
}

void Sim::TransferEnds(const Event& e) {
  const int i = e.node;
  Node& n = *nodes_[i];
  n.transfer_running = false;
  if (e.lost) {
    r_.transfers_lost++;
    return;
  }
  if (e.corrupt) {
    r_.transfers_corrupt++;  // a chunk failed its checksum: rejected
    return;
  }
  const Checkpoint& ck = e.checkpoint;
  if (ck.instance <= n.core->chosen_end()) return;  // caught up meanwhile
  // On the loop, between rounds: the state machine is at the core's
  // chosen_end before it loads (nothing executed after the load is older).
  if (!n.round.empty()) ExecuteRound(i);
  if (!n.core || n.incarnation != e.incarnation || r_.violation) return;
  if (ck.instance <= n.core->chosen_end()) return;
  if (ck.instance > n.store.instance) n.store = ck;  // committed to its store
  if (!quiet_ && rng_.OneIn(kCrashAfterStorePpm)) {
    Crash(i);  // before the install: the restart installs from the store
    return;
  }
  if (n.sm.count > ck.instance) {
    Violation("node " + std::to_string(n.id) + "'s state machine would go back from " +
              std::to_string(n.sm.count) + " to checkpoint " + std::to_string(ck.instance));
    return;
  }
  n.sm.count = ck.instance;
  n.sm.hash = ck.hash;
  n.last_snapshot = ck.instance;
  CheckHash(i, ck.instance, ck.hash);
  checker_.Installed(i, ck.instance);
  Log("node " + std::to_string(n.id) + " installs checkpoint " + std::to_string(ck.instance));
  Outputs out;
  Status s = In(i)->InstallCheckpoint(ck.instance, ck.chain,
                                      o_.membership ? &ck.membership : nullptr, &out);
  if (!s.ok()) Violation("node " + std::to_string(n.id) + " install failed: " + s.ToString());
  r_.installs++;
  n.trim_allowed = std::max(n.trim_allowed, ck.instance);
  EndStep(i, &out);
}

void Sim::CheckUseCheckpoint(int i, const paxos::PaxosMsg& m) {
  const Node& n = *nodes_[i];
  const uint64_t start = m.log_start();
  if (m.instance() >= start) {
    Violation("node " + std::to_string(n.id) + " answered use-a-checkpoint to a request from " +
              std::to_string(m.instance()) + ", at or above its log start " +
              std::to_string(start));
  } else if (start > n.store.instance) {
    Violation("node " + std::to_string(n.id) + " answered use-a-checkpoint with log start " +
              std::to_string(start) + ", beyond its newest durable checkpoint " +
              std::to_string(n.store.instance));
  } else if (start > n.trim_allowed) {
    Violation("node " + std::to_string(n.id) + " told a peer asking from " +
              std::to_string(m.instance()) + " to use a checkpoint: its log starts at " +
              std::to_string(start) + ", within the kept margin (it may start at " +
              std::to_string(n.trim_allowed) + " at most)");
  }
}

void Sim::LongDown() {
  if (long_down_ >= 0 && !nodes_[long_down_]->core) return;  // one at a time
  const int i = static_cast<int>(rng_.Uniform(n_));
  if (!nodes_[i]->core) return;
  long_down_ = i;
  r_.long_downs++;
  Log("long down: node " + std::to_string(nodes_[i]->id));
  Crash(i, false, kLongDownMs + rng_.Uniform(kLongDownMs));
}

}  // namespace internal
}  // namespace sim
}  // namespace chorus
