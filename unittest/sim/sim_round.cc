#include "unittest/sim/sim_impl.h"

namespace chorus {
namespace sim {
namespace internal {

void Sim::EndStep(int i, Outputs* out) {
  Node& n = *nodes_[i];
  // Reports need no execution: check them now, so a crash that drops the
  // round cannot hide one.
  for (const auto& e : out->errors) {
    Violation("node " + std::to_string(n.id) + " reported: " + e.ToString());
  }
  out->errors.clear();
  if (o_.membership) StepVotes(i, *out);
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

void Sim::ExecuteRound(int i) {
  Node& n = *nodes_[i];
  const size_t steps = n.round.steps();
  Outputs out;
  n.round.Take(&out);
  if (steps > 1) {
    r_.merged_rounds++;
    Log("node " + std::to_string(n.id) + " executes a round of " + std::to_string(steps) +
        " steps");
  }
  // The requests that may leave before the persist do, as in the runtime;
  // a crash point follows them.
  if (SendEarly(i, &out)) return;  // crashed before the persist
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

bool Sim::SendEarly(int i, Outputs* out) {
  bool any = false, vote = false;
  std::vector<paxos::OutMessage> rest;
  for (auto& m : out->messages) {
    if (!m.before_persist) {
      rest.push_back(std::move(m));
      continue;
    }
    paxos::PaxosMsg msg;
    vote = vote || (msg.ParseFromString(m.bytes) &&
                    (msg.type() == paxos::ACCEPTED || msg.type() == paxos::PROMISE));
    any = true;
    SendOut(i, m);
  }
  out->messages.swap(rest);
  if (!any) return false;
  r_.early_rounds++;
  if (quiet_ || !rng_.OneIn(vote ? kCrashBeforePersistAfterVotePpm : kCrashBeforePersistPpm)) {
    return false;
  }
  r_.crashes_before_persist++;
  Crash(i);  // the round's persist never ran
  return true;
}

void Sim::Execute(int i, Outputs* out) {
  Node& n = *nodes_[i];
  if (!out->persist.empty()) n.log.Write(out->persist, out->sync);
  if (o_.membership) CastVotes(i);
  for (auto& m : out->messages) SendOut(i, m);
  // Catch-up reads, served as the runtime's reader does (paxos/catchup.h)
  // but at once: after the persist, from the node's own log. The network
  // delays and reorders their replies like any message.
  for (const paxos::CatchupRead& read : out->catchup_reads) {
    paxos::CatchupReply reply;
    paxos::ReadCatchup(read, &n.log, &reply);
    r_.catchup_reads++;
    // (A "use a checkpoint" reply has no entries but bytes: a trim raced it.)
    if (reply.log_start != 0) r_.raced_checkpoint_replies++;
    if (!reply.bytes.empty()) SendOut(i, paxos::OutMessage{read.peer, std::move(reply.bytes)});
  }
  for (const ChosenValue& v : out->chosen) {
    Learned(i, v);
    if (o_.checkpoints) SmApply(i, v);
    if (v.ours && changes_.count(v.token) != 0) {
      if (!v.noop) {
        Violation("node " + std::to_string(n.id) + " applied its change (token " +
                  std::to_string(v.token) + ") as an application value");
      }
    } else if (v.ours) {
      auto p = proposals_.find(v.token);
      if (p == proposals_.end() || p->second.data != v.value || p->second.node != i) {
        Violation("node " + std::to_string(n.id) + " claims token " + std::to_string(v.token) +
                  " for a value that is not its proposal");
      }
    }
  }
  for (const auto& f : out->finished) {
    if (o_.membership && ChangeFinished(i, f)) continue;
    auto p = proposals_.find(f.token);
    if (p == proposals_.end() || n.pending.erase(f.token) == 0) {
      Violation("node " + std::to_string(n.id) + " finished unknown token " +
                std::to_string(f.token));
      continue;
    }
    p->second.done = true;
    if (o_.checkpoints && f.status.IsStopped() &&
        f.status.ToString().find("outcome unknown") != std::string::npos) {
      r_.outcome_unknown++;  // a checkpoint install skipped its instance
      continue;
    }
    if (!f.status.ok() && p->second.cancelled && f.status.IsStopped()) {
      r_.timeouts++;  // the client's deadline: outcome unknown
      continue;
    }
    if (!f.status.ok() && p->second.probe) {
      Violation("liveness: probe " + p->second.data + " at node " + std::to_string(n.id) +
                " failed after the faults stopped: " + f.status.ToString());
      continue;
    }
    if (!f.status.ok() && o_.membership && f.status.IsInvalidArgument() &&
        n.core->role() != paxos::MemberRole::kVoter) {
      r_.proposals_refused++;  // its node is no longer a voting member
      checker_.Failed(p->second.data);
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
  if (o_.checkpoints) AfterRound(i, *out);
  if (o_.membership) CheckMembership(i, *out);
}

void Sim::SendOut(int i, const paxos::OutMessage& m) {
  checker_.Sent(i, m.bytes);
  if (o_.checkpoints) {
    paxos::PaxosMsg msg;
    if (msg.ParseFromString(m.bytes) && msg.type() == paxos::LEARN_VALUES &&
        msg.log_start() != 0) {
      CheckUseCheckpoint(i, msg);
    }
  }
  if (o_.membership) {
    const Node& n = *nodes_[i];
    member_checker_.Sent({n.id, n.dir_incarnation, n.joined}, m.bytes);
    CheckStoppedProposing(i, m.bytes);
  }
  for (int j = 0; j < n_; ++j) {
    if (j == i) continue;
    if (m.to == paxos::kBroadcast ? !o_.membership || InBook(i, j) : nodes_[j]->id == m.to) {
      Send(i, j, m.bytes);
    }
  }
}

void Sim::Send(int from, int to, const std::string& bytes) {
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

}  // namespace internal
}  // namespace sim
}  // namespace chorus
