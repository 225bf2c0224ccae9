// --membership (sim.h): joiner nodes, lost disks, the address book, the
// votes the checker counts, the membership checks of each round, and the
// quiet phase's convergence and liveness probes. The change scheduler and
// its scenarios: sim_scheduler.cc.
#include <algorithm>

#include "paxos.pb.h"
#include "unittest/sim/sim_impl.h"

namespace chorus {
namespace sim {
namespace internal {

using paxos::Config;
using paxos::Member;

std::vector<Member> Sim::Genesis(const std::vector<uint64_t>& ids) {
  std::vector<Member> genesis;
  for (uint64_t id : ids) {
    Member m;
    m.id = id;
    m.voter = true;
    m.address = Address(id);
    genesis.push_back(m);
  }
  return genesis;
}

uint64_t Sim::DrawAlpha(const SimOptions& o) {
  if (o.activation_distance != 0) return o.activation_distance;
  Rng rng(o.seed * 0x9E3779B97F4A7C15ULL + 7);
  const uint64_t inflight = o.mixed_options ? 2 * o.max_inflight : o.max_inflight;
  return std::max<uint64_t>(8, inflight) + rng.Uniform(25);
}

void Sim::InitMembership() {
  for (int i = 0; i < n_; ++i) {
    Node& n = *nodes_[i];
    n.dir_incarnation = rng_.Next() | 1;
    n.joined = i >= o_.nodes;
    n.idle = n.joined;
    if (n.joined) n.join_peers = members_;
  }
  Log("membership: alpha " + std::to_string(member_checker_.Latest().activation_distance) +
      ", " + std::to_string(n_ - o_.nodes) + " spare nodes");
}

void Sim::MembershipOptions(int i, CoreOptions* c) {
  const Node& n = *nodes_[i];
  c->activation_distance = member_checker_.configs()[0].activation_distance;
  c->incarnation = n.dir_incarnation;
  c->joined = n.joined;
  c->member_addresses.clear();
  if (n.joined) {
    c->members.clear();
    c->join_peers = n.join_peers;
  } else {
    for (uint64_t id : c->members) c->member_addresses.push_back(Address(id));
  }
}

bool Sim::InBook(int i, int j) const {
  const Node& n = *nodes_[i];
  const uint64_t id = nodes_[j]->id;
  if (n.core) {
    for (const Config& c : n.core->membership().configs()) {
      if (FindMember(c, id) != nullptr) return true;
    }
  }
  const std::vector<uint64_t>& started = n.joined ? n.join_peers : members_;
  return std::find(started.begin(), started.end(), id) != started.end();
}

void Sim::StepVotes(int i, const Outputs& out) {
  Node& n = *nodes_[i];
  n.step_reported = n.step_reported || out.membership_changed;
  for (const auto& rec : out.persist.records) {
    paxos::InstanceRecord r;
    if (!r.ParseFromString(rec.second) || r.chosen()) continue;
    const paxos::Ballot b = paxos::Ballot::FromPb(r.accepted_ballot());
    if (!b.IsNull()) n.votes.push_back(StepVote{rec.first, b, r.value()});
  }
}

void Sim::CastVotes(int i) {
  Node& n = *nodes_[i];
  for (const StepVote& v : n.votes) {
    member_checker_.Vote({n.id, n.dir_incarnation, n.joined}, v.instance, v.ballot, v.value);
  }
  n.votes.clear();
}

void Sim::CheckMembership(int i, const Outputs& round) {
  Node& n = *nodes_[i];
  if (!n.core || r_.violation) return;
  const paxos::Membership& m = n.core->membership();
  if (o_.check_node_membership) member_checker_.CheckNode(n.id, n.joined || o_.checkpoints, n.core->chosen_end(), m);
  auto same = [](const paxos::Membership& a, const paxos::Membership& b) {
    if (a.configs().size() != b.configs().size()) return false;
    for (size_t k = 0; k < a.configs().size(); ++k) {
      if (!MembershipChecker::SameConfig(a.configs()[k], b.configs()[k])) return false;
    }
    return true;
  };
  if (n.step_reported && !round.membership_changed) {
    Violation("node " + std::to_string(n.id) + "'s round dropped the membership_changed of its "
              "steps (paxos::Round)");
  }
  n.step_reported = false;
  if (round.membership_changed) {
    if (!same(round.membership, m)) {
      Violation("node " + std::to_string(n.id) +
                "'s round reported a membership that is not its core's");
    }
    n.reported = round.membership;
  } else if (!same(n.reported, m)) {
    Violation("node " + std::to_string(n.id) +
              "'s membership changed without Outputs::membership_changed");
  }
}

bool Sim::ChangeFinished(int i, const paxos::ProposalResult& f) {
  auto it = changes_.find(f.token);
  if (it == changes_.end()) return false;
  Node& n = *nodes_[i];
  if (n.changes.erase(f.token) == 0 || it->second.node != i) {
    Violation("node " + std::to_string(n.id) + " finished another node's change token " +
              std::to_string(f.token));
    return true;
  }
  const Change c = it->second;
  changes_.erase(it);
  if (scenario_.token == f.token) scenario_.token = 0;
  Log("node " + std::to_string(n.id) + " change token " + std::to_string(f.token) + ": " +
      f.status.ToString() + (f.status.ok() ? " at " + std::to_string(f.instance) : ""));
  if (f.status.ok() || f.status.IsConflict()) {
    if (f.status.ok()) r_.changes_ok++;
    if (o_.check_node_membership) {
      member_checker_.CheckFinished(c.change, f.status, f.instance, n.core->chosen_end());
    }
  } else if (c.cancelled && f.status.IsStopped()) {
    r_.timeouts++;  // the client's deadline: outcome unknown
  } else if (o_.checkpoints && f.status.IsStopped() &&
             f.status.ToString().find("outcome unknown") != std::string::npos) {
    r_.outcome_unknown++;  // a checkpoint install skipped its instance
  } else if (f.status.IsInvalidArgument() && n.core->role() != paxos::MemberRole::kVoter) {
    r_.changes_refused++;  // its node is no longer a voting member
  } else {
    Violation("node " + std::to_string(n.id) + "'s change (base version " +
              std::to_string(c.change.base_version) + ") failed: " + f.status.ToString());
  }
  return true;
}

void Sim::LoseDisk(int i) {
  Node& n = *nodes_[i];
  if (n.core) Crash(i);
  n.log = MemLogStorage();
  n.store = Checkpoint();  // its checkpoints were on that disk too
  n.trim_allowed = 0;
  n.dir_incarnation = rng_.Next() | 1;
  n.joined = true;
  n.join_peers.clear();
  for (const Member& m : member_checker_.Latest().members) {
    if (m.id != n.id) n.join_peers.push_back(m.id);
  }
  checker_.DiskLost(i);
  r_.disks_lost++;
  Log("node " + std::to_string(n.id) + " lost its disk: it comes back as a joiner");
}

void Sim::KillForGood(int i) {
  if (nodes_[i]->core) Crash(i);
  nodes_[i]->dead = true;
  Log("node " + std::to_string(nodes_[i]->id) + " is gone for good");
}

void Sim::CheckStoppedProposing(int i, const std::string& bytes) {
  const Node& n = *nodes_[i];
  if (!n.core) return;
  paxos::PaxosMsg m;
  if (!m.ParseFromString(bytes) || (m.type() != paxos::PREPARE && m.type() != paxos::ACCEPT)) {
    return;
  }
  const uint64_t end = m.chosen_end();  // when the step sent it (the core may be ahead now)
  for (const Config& c : member_checker_.configs()) {
    if (c.changed_at >= end && c.version > 0) break;  // not chosen at this node yet
    if ((&c == &member_checker_.At(end) || c.active_from > end) &&
        FindMember(c, n.id) != nullptr) {
      return;  // a member of a configuration governing [end, infinity)
    }
  }
  Violation("node " + std::to_string(n.id) + " sent " + paxos::MsgType_Name(m.type()) +
            " for instance " + std::to_string(m.instance()) + " at chosen_end " +
            std::to_string(end) + ", where its removal is in force: a removed node must stop "
            "proposing");
}

void Sim::Probe(int i) {
  Node& n = *nodes_[i];
  const uint64_t token = next_token_++;
  Proposal p;
  p.node = i;
  p.incarnation = n.incarnation;
  p.begin = now_;
  p.probe = true;
  p.data = "s" + std::to_string(o_.seed) + "probe" + std::to_string(token);
  checker_.Proposed(p.data);
  proposals_[token] = p;
  n.pending.insert(token);
  r_.proposals++;
  Log("probe " + p.data + " at node " + std::to_string(n.id));
  Outputs out;
  Status s = In(i)->Propose(token, p.data, &out);
  if (!s.ok()) {
    Violation("liveness: node " + std::to_string(n.id) +
              ", a voter, refused a probe after the faults stopped: " + s.ToString());
  }
  EndStep(i, &out);
}

bool Sim::MembershipConverged() {
  const Config& latest = member_checker_.Latest();
  for (int j = 0; j < n_; ++j) {
    if (nodes_[j]->idle && FindMember(latest, nodes_[j]->id) != nullptr) {
      nodes_[j]->idle = false;
      StartNode(j);
    }
  }
  uint64_t end = 0;
  bool first = true;
  for (const auto& n : nodes_) {
    if (n->idle || n->dead) continue;
    // A node that is no longer a member may hold a proposal at an instance
    // only a member's later proposal decides: the probes come first.
    const bool member = FindMember(latest, n->id) != nullptr;
    if (!n->core || !n->round.empty() || !n->reads.empty() ||
        ((member || probes_sent_) && (!n->pending.empty() || !n->changes.empty()))) {
      return false;
    }
    if (member) {
      if (first) end = n->core->chosen_end();
      first = false;
      if (n->core->chosen_end() != end) return false;
    } else if (probes_sent_ &&
               FindMember(n->core->membership().Latest(), n->id) != nullptr) {
      return false;  // a removed node must learn it was removed
    }
  }
  if (end < checker_.chosen() || (o_.master_election && !SomeoneHoldsLease())) return false;
  if (probes_sent_) return true;
  // Converged once: the group must still choose values after the changes.
  probes_sent_ = true;
  for (int j = 0; j < n_ && !r_.violation; ++j) {
    if (nodes_[j]->core && Capable(latest, j)) Probe(j);
  }
  return false;
}

}  // namespace internal
}  // namespace sim
}  // namespace chorus
