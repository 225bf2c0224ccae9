// --membership (sim.h): joiner nodes, the change scheduler and its
// scenarios, lost disks, the address book, the votes the checker counts,
// and the quiet phase's convergence and liveness probes.
#include <algorithm>

#include "paxos.pb.h"
#include "unittest/sim/sim_impl.h"

namespace chorus {
namespace sim {
namespace internal {

namespace {

using paxos::Config;
using paxos::Member;

std::string Address(uint64_t id) { return "n" + std::to_string(id); }

const Member* FindMember(const Config& c, uint64_t id) {
  for (const Member& m : c.members) {
    if (m.id == id) return &m;
  }
  return nullptr;
}

const char* OpName(ChangeStep::Op op) {
  switch (op) {
    case ChangeStep::kAddFollower: return "add follower";
    case ChangeStep::kPromote: return "promote";
    case ChangeStep::kRemove: return "remove";
    case ChangeStep::kReplace: return "replace";
    case ChangeStep::kRemoveMaster: return "remove the master";
    case ChangeStep::kTouch: return "touch";
  }
  return "?";
}

}  // namespace

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
  if (o_.check_node_membership) member_checker_.CheckNode(n.id, n.joined, n.core->chosen_end(), m);
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
  } else if (f.status.IsInvalidArgument() && n.core->role() != paxos::MemberRole::kVoter) {
    r_.changes_refused++;  // its node is no longer a voting member
  } else {
    Violation("node " + std::to_string(n.id) + "'s change (base version " +
              std::to_string(c.change.base_version) + ") failed: " + f.status.ToString());
  }
  return true;
}

void Sim::MembershipTick() {
  if (quiet_) return;
  if (rng_.OneIn(kRemovedLoseDiskPpm)) {
    // A removed node that still runs loses its disk: it may come back as a
    // new member only through an add (M5).
    // (Only once its removal is in force: until then it still votes.)
    const int i = static_cast<int>(rng_.Uniform(n_));
    const Node& n = *nodes_[i];
    bool was_member = false, member = false;
    const uint64_t from = member_checker_.At(Frontier(i)).active_from;
    for (const Config& c : member_checker_.configs()) {
      was_member = was_member || FindMember(c, n.id) != nullptr;
      member = member || (c.active_from >= from && FindMember(c, n.id) != nullptr);
    }
    if (n.core && was_member && !member) LoseDisk(i);
  }
  if (rng_.OneIn(kChangeTickPpm)) Schedule();
}

void Sim::Schedule() {
  // A node added as a follower before it ran starts now.
  for (int j = 0; j < n_; ++j) {
    if (nodes_[j]->idle && FindMember(member_checker_.Latest(), nodes_[j]->id) != nullptr) {
      nodes_[j]->idle = false;
      StartNode(j);
    }
  }
  if (scenario_.token != 0 || r_.violation) return;  // one scheduled change at a time
  if (scenario_.name.empty() && !StartScenario()) return;
  while (scenario_.next < scenario_.steps.size() && StepDone(scenario_.steps[scenario_.next])) {
    scenario_.next++;
  }
  if (scenario_.next == scenario_.steps.size()) {
    r_.scenarios_done++;
    r_.scenarios[scenario_.kind]++;
    Log("scenario done: " + scenario_.name);
    scenario_ = Scenario();
    return;
  }
  if (++scenario_.attempts > kMaxScenarioAttempts) {
    Log("scenario dropped: " + scenario_.name);
    scenario_ = Scenario();
    return;
  }
  ChangeStep& s = scenario_.steps[scenario_.next];
  // Half the time the node to add starts before its add is proposed.
  if (s.a >= 0 && nodes_[s.a]->idle && rng_.OneIn(500000)) {
    nodes_[s.a]->idle = false;
    StartNode(s.a);
  }
  // Any node that runs and knows a configuration proposes.
  std::vector<int> up;
  for (int j = 0; j < n_; ++j) {
    if (nodes_[j]->core && !Paused(j) && nodes_[j]->core->membership().known()) up.push_back(j);
  }
  if (up.empty()) return;
  const int i = up[rng_.Uniform(up.size())];
  if (ProposeStep(i, &s, true) == 0 || r_.violation) return;
  if (up.size() > 1 && rng_.OneIn(kRaceChangePpm)) {
    int j = up[rng_.Uniform(up.size())];
    if (j == i) j = up[(std::find(up.begin(), up.end(), i) - up.begin() + 1) % up.size()];
    ChangeStep race = rng_.OneIn(500000) ? s : ChangeStep{ChangeStep::kTouch, -1, -1};
    if (nodes_[j]->core) ProposeStep(j, &race, false);
  }
  if (o_.master_election && !r_.violation) {
    if (rng_.OneIn(kRaceTransferPpm)) {
      TransferAt();
    } else if (rng_.OneIn(kRaceMasterCrashPpm)) {
      const int h = LeaseHolder();
      if (h >= 0) Crash(h, rng_.OneIn(500000));
    }
  }
}

bool Sim::StartScenario() {
  const Config& latest = member_checker_.Latest();
  const size_t voters = MembershipChecker::VoterCount(latest);
  const int spare = PickSpare();
  Scenario sc;
  // A voter that cannot vote (crashed for good, or its disk was lost) is
  // dealt with first.
  for (const Member& m : latest.members) {
    const int v = IndexOf(m.id);
    if (!m.voter || Capable(latest, v)) continue;
    if (!nodes_[v]->dead) {
      sc.kind = "rejoin_after_lost_disk";
      sc.name = "rejoin of node " + std::to_string(m.id) + " after a lost disk";
      sc.steps = {{ChangeStep::kRemove, -1, v}, {ChangeStep::kAddFollower, v, -1},
                  {ChangeStep::kPromote, v, -1}};
    } else if (voters > kMinVoters) {
      sc.kind = "remove_crashed";
      sc.name = "removal of crashed node " + std::to_string(m.id);
      sc.steps = {{ChangeStep::kRemove, -1, v}};
    } else if (spare >= 0) {
      sc.kind = "replace_crashed";
      sc.name = "replacement of crashed node " + std::to_string(m.id);
      sc.steps = {{ChangeStep::kAddFollower, spare, -1}, {ChangeStep::kReplace, spare, v}};
    } else {
      return false;
    }
    break;
  }
  if (sc.name.empty()) {
    bool dead = false;
    for (const auto& n : nodes_) dead = dead || n->dead;
    const int v = PickVoter(true);
    if (v < 0) return false;
    // Liveness, not safety: a node is crashed for good or loses its disk
    // only while every configuration governing the instances not chosen yet
    // keeps a majority that can vote without it.
    bool spare_v = true;
    const uint64_t from = member_checker_.At(Frontier(v)).active_from;
    for (const Config& c : member_checker_.configs()) {
      if (c.active_from < from) continue;
      size_t voters = 0, capable = 0;
      for (const Member& m : c.members) {
        if (!m.voter) continue;
        voters++;
        if (IndexOf(m.id) != v && Capable(c, IndexOf(m.id))) capable++;
      }
      spare_v = spare_v && 2 * capable > voters;
    }
    const std::string old = std::to_string(nodes_[v]->id);
    const std::string add = spare >= 0 ? std::to_string(nodes_[spare]->id) : "";
    switch (rng_.Uniform(o_.master_election ? 7 : 6)) {
      case 0:
      case 1:
        if (spare < 0) return false;
        sc.kind = "add_follower_then_promote";
        sc.name = "add node " + add + " (follower, then promoted)";
        sc.steps = {{ChangeStep::kAddFollower, spare, -1}, {ChangeStep::kPromote, spare, -1}};
        break;
      case 2:
        if (voters <= kMinVoters) return false;
        sc.kind = "remove";
        sc.name = "remove node " + old;
        sc.steps = {{ChangeStep::kRemove, -1, v}};
        break;
      case 3:
        if (spare < 0) return false;
        sc.kind = "replace";
        sc.name = "replace node " + old + " by node " + add;
        sc.steps = {{ChangeStep::kAddFollower, spare, -1}, {ChangeStep::kReplace, spare, v}};
        break;
      case 4:
        // Crash a voter for good; an empty node takes its place.
        if (spare < 0 || dead || !spare_v) return false;
        KillForGood(v);
        sc.kind = "replace_crashed";
        sc.name = "replace crashed node " + old + " by empty node " + add;
        sc.steps = {{ChangeStep::kAddFollower, spare, -1}};
        if (rng_.OneIn(500000)) {
          sc.steps.push_back({ChangeStep::kReplace, spare, v});
        } else {
          sc.steps.push_back({ChangeStep::kPromote, spare, -1});
          sc.steps.push_back({ChangeStep::kRemove, -1, v});
        }
        break;
      case 5:
        // A voter loses its disk: it comes back as a joiner under a new
        // incarnation, which never votes as its old self (M5).
        if (!spare_v) return false;
        LoseDisk(v);
        sc.kind = "rejoin_after_lost_disk";
        sc.name = "node " + old + " lost its disk";
        sc.steps = {{ChangeStep::kRemove, -1, v}, {ChangeStep::kAddFollower, v, -1},
                    {ChangeStep::kPromote, v, -1}};
        break;
      default:
        if (voters > kMinVoters) {
          sc.kind = "remove_master";
          sc.name = "remove the master";
          sc.steps = {{ChangeStep::kRemoveMaster, -1, -1}};
        } else if (spare >= 0) {
          sc.kind = "replace_master";
          sc.name = "replace the master by node " + add;
          sc.steps = {{ChangeStep::kAddFollower, spare, -1},
                      {ChangeStep::kRemoveMaster, spare, -1}};
        } else {
          return false;
        }
        break;
    }
  }
  Log("scenario: " + sc.name);
  scenario_ = sc;
  return true;
}

bool Sim::StepDone(const ChangeStep& s) const {
  const Config& latest = member_checker_.Latest();
  auto in = [&](int j, bool voter) {
    const Member* m = FindMember(latest, nodes_[j]->id);
    return m != nullptr && (!voter || m->voter) &&
           (m->incarnation == 0 ? !nodes_[j]->joined
                                : m->incarnation == nodes_[j]->dir_incarnation);
  };
  auto out = [&](int j) { return FindMember(latest, nodes_[j]->id) == nullptr; };
  switch (s.op) {
    case ChangeStep::kAddFollower: return in(s.a, false);
    case ChangeStep::kPromote: return in(s.a, true);
    case ChangeStep::kRemove: return out(s.b);
    case ChangeStep::kReplace: return in(s.a, true) && out(s.b);
    case ChangeStep::kRemoveMaster: return s.b >= 0 && out(s.b) && (s.a < 0 || in(s.a, true));
    case ChangeStep::kTouch: return false;
  }
  return false;
}

Member Sim::MemberFor(int j, bool voter) const {
  Member m;
  m.id = nodes_[j]->id;
  m.voter = voter;
  m.address = Address(m.id);
  m.incarnation = nodes_[j]->dir_incarnation;
  return m;
}

uint64_t Sim::ProposeStep(int i, ChangeStep* s, bool driver) {
  const Config& own = nodes_[i]->core->membership().Latest();
  Config next;
  next.members = own.members;
  auto drop = [&next, this](int j) {
    auto& ms = next.members;
    ms.erase(std::remove_if(ms.begin(), ms.end(),
                            [&](const Member& m) { return m.id == nodes_[j]->id; }),
             ms.end());
  };
  auto put = [&](int j, bool voter) {
    drop(j);
    next.members.push_back(MemberFor(j, voter));
  };
  switch (s->op) {
    case ChangeStep::kAddFollower: put(s->a, false); break;
    case ChangeStep::kPromote: put(s->a, true); break;
    case ChangeStep::kRemove: drop(s->b); break;
    case ChangeStep::kReplace:
      drop(s->b);
      put(s->a, true);
      break;
    case ChangeStep::kRemoveMaster:
      if (s->b < 0) s->b = LeaseHolder();
      if (s->b < 0) return 0;  // no master now: next time
      drop(s->b);
      if (s->a >= 0) put(s->a, true);
      break;
    case ChangeStep::kTouch: break;
  }
  std::sort(next.members.begin(), next.members.end(),
            [](const Member& a, const Member& b) { return a.id < b.id; });
  // Liveness, not safety: a majority of the new voters must be able to vote.
  size_t voters = 0, capable = 0;
  for (const Member& m : next.members) {
    if (!m.voter) continue;
    voters++;
    if (Capable(next, IndexOf(m.id))) capable++;
  }
  if (voters < 2 || 2 * capable <= voters) return 0;
  paxos::MembershipChange change;
  change.base_version = own.version;
  change.members = next.members;
  change.activation_distance = own.activation_distance;
  Log("node " + std::to_string(nodes_[i]->id) + " proposes " + OpName(s->op) +
      (driver ? "" : " (racing)") + ": " + MembershipChecker::Describe(next) + " on v" +
      std::to_string(own.version));
  return ProposeChange(i, change, driver);
}

uint64_t Sim::ProposeChange(int i, const paxos::MembershipChange& change, bool driver) {
  Node& n = *nodes_[i];
  const uint64_t token = next_token_++;
  Outputs out;
  Status s = In(i)->ProposeMembership(token, change, &out);
  if (!s.ok()) {
    if (s.IsInvalidArgument() && n.core->role() != paxos::MemberRole::kVoter) {
      r_.changes_refused++;  // not a voting member, and no master to forward to
    } else {
      Violation("ProposeMembership at node " + std::to_string(n.id) + " failed: " + s.ToString());
    }
    EndStep(i, &out);
    return 0;
  }
  r_.changes_proposed++;
  Change c;
  c.node = i;
  c.change = change;
  c.driver = driver;
  changes_[token] = c;
  n.changes.insert(token);
  if (driver) scenario_.token = token;
  Push(Event{now_ + kProposeDeadlineMs, 0, EventType::kDeadline, i, n.incarnation, {}, {}, token});
  EndStep(i, &out);  // (a crash point: Crash forgets the token)
  return token;
}

bool Sim::Capable(const Config& c, int j) const {
  if (j < 0 || nodes_[j]->dead) return false;
  const Member* m = FindMember(c, nodes_[j]->id);
  if (m == nullptr || !m->voter) return false;
  return m->incarnation == 0 ? !nodes_[j]->joined : m->incarnation == nodes_[j]->dir_incarnation;
}

int Sim::PickSpare() {
  // An idle one (an empty data dir) when there is one.
  std::vector<int> spares, idle;
  for (int j = 0; j < n_; ++j) {
    if (!nodes_[j]->dead && FindMember(member_checker_.Latest(), nodes_[j]->id) == nullptr) {
      spares.push_back(j);
      if (nodes_[j]->idle) idle.push_back(j);
    }
  }
  if (!idle.empty() && rng_.OneIn(750000)) return idle[rng_.Uniform(idle.size())];
  return spares.empty() ? -1 : spares[rng_.Uniform(spares.size())];
}

int Sim::PickVoter(bool capable_only) {
  const Config& latest = member_checker_.Latest();
  std::vector<int> voters;
  for (const Member& m : latest.members) {
    const int j = IndexOf(m.id);
    if (m.voter && (!capable_only || Capable(latest, j))) voters.push_back(j);
  }
  return voters.empty() ? -1 : voters[rng_.Uniform(voters.size())];
}

int Sim::LeaseHolder() {
  for (int j = 0; j < n_; ++j) {
    if (nodes_[j]->core && In(j)->HoldsLease()) return j;
  }
  return -1;
}

uint64_t Sim::Frontier(int except) const {
  uint64_t end = member_checker_.next();
  for (int j = 0; j < n_; ++j) {
    if (j != except && nodes_[j]->core) end = std::min(end, nodes_[j]->core->chosen_end());
  }
  return end;
}

int Sim::IndexOf(uint64_t id) const {
  for (int j = 0; j < n_; ++j) {
    if (nodes_[j]->id == id) return j;
  }
  return -1;
}

uint64_t Sim::TransferTarget(int i) {
  std::vector<uint64_t> voters;
  for (const Member& m : nodes_[i]->core->membership().Latest().members) {
    if (m.voter && m.id != nodes_[i]->id) voters.push_back(m.id);
  }
  return voters.empty() ? 0 : voters[rng_.Uniform(voters.size())];
}

void Sim::LoseDisk(int i) {
  Node& n = *nodes_[i];
  if (n.core) Crash(i);
  n.log = MemLogStorage();
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
    if (!n->core || !n->pending.empty() || !n->changes.empty() || !n->reads.empty() ||
        !n->round.empty()) {
      return false;
    }
    if (FindMember(latest, n->id) != nullptr) {
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
