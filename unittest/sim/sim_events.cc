#include "unittest/sim/sim_impl.h"

namespace chorus {
namespace sim {
namespace internal {

void Sim::Step() {
  Event e = queue_.top();
  queue_.pop();
  now_ = e.time;
  if ((e.type == EventType::kDeliver || e.type == EventType::kTimer ||
       e.type == EventType::kFlush || e.type == EventType::kDeadline ||
       e.type == EventType::kDurable || e.type == EventType::kTransfer) &&
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
    case EventType::kDurable:
  case EventType::kTransfer:
    CheckpointEvent(e);
    break;
  case EventType::kUncut:
      cut_.erase({e.node, static_cast<int>(e.from)});
      break;
    case EventType::kDeadline: {
      Node& n = *nodes_[e.node];
      if (!n.core || n.incarnation != e.incarnation) break;
      if (n.changes.count(e.from) != 0) {
        changes_[e.from].cancelled = true;
      } else if (n.pending.count(e.from) != 0) {
        proposals_[e.from].cancelled = true;
      } else {
        break;
      }
      Log("deadline: cancel token " + std::to_string(e.from) + " at node " +
          std::to_string(n.id));
      Outputs out;
      In(e.node)->Cancel(e.from, &out);
      EndStep(e.node, &out);
      break;
    }
    case EventType::kRestart:
      if (!nodes_[e.node]->core && !nodes_[e.node]->dead) StartNode(e.node);
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
      if (!s.ok() && o_.membership && s.IsInvalidArgument()) {
        r_.non_member_drops++;  // from a node that is not a member here (M4)
      } else if (!s.ok()) {
        Violation("node " + std::to_string(n.id) + " rejected a message: " + s.ToString());
      }
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

void Sim::ProposeAt(int i) {
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
  if (!s.ok() && o_.membership && s.IsInvalidArgument() &&
      n.core->role() != paxos::MemberRole::kVoter) {
    // Not a voting member (a follower, removed, joining) and no master to
    // forward to: refused, nothing queued.
    r_.proposals_refused++;
    n.pending.erase(token);
    proposals_.erase(token);
    EndStep(i, &out);
    return;
  }
  if (!s.ok()) Violation("Propose failed: " + s.ToString());
  EndStep(i, &out);
  if (o_.master_election || o_.membership) {
    Push(Event{now_ + kProposeDeadlineMs, 0, EventType::kDeadline, i, n.incarnation, {}, {},
               token});
  }
}

void Sim::ReadAt(int i) {
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

void Sim::TransferAt() {
  for (int i = 0; i < n_; ++i) {
    Node& n = *nodes_[i];
    if (!n.core || Paused(i) || !In(i)->HoldsLease()) continue;
    uint64_t target = 0;
    if (o_.membership) {
      if (!rng_.OneIn(kStepDownPpm)) target = TransferTarget(i);
    } else if (!rng_.OneIn(kStepDownPpm)) {
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

void Sim::CheckLeases() {
  std::vector<int> holders;
  for (int i = 0; i < n_; ++i) {
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

bool Sim::SomeoneHoldsLease() {
  for (int i = 0; i < n_; ++i) {
    if (nodes_[i]->core && In(i)->HoldsLease()) return true;
  }
  return false;
}

}  // namespace internal
}  // namespace sim
}  // namespace chorus
