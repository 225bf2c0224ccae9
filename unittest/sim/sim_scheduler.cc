// --membership (sim.h): the change scheduler and its scenarios (add,
// remove, replace, remove the master, replace a node crashed for good or
// whose disk was lost), racing changes, transfers and master crashes.
#include <algorithm>

#include "paxos.pb.h"

#include "unittest/sim/sim_impl.h"

namespace chorus {
namespace sim {
namespace internal {

namespace {

using paxos::Config;
using paxos::Member;

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
  // What each other node would still know chosen after a crash now: the
  // chosen prefix of its log's durable part (chosen records are written
  // unsynced, so a restart may know less than the running core).
  uint64_t end = member_checker_.next();
  for (int j = 0; j < n_; ++j) {
    const Node& n = *nodes_[j];
    if (j == except || n.dead || n.idle) continue;
    MemLogStorage durable = n.log;
    durable.Crash();
    uint64_t k = 0;
    std::string bytes;
    paxos::LogStartPb start;
    if (durable.GetVariable(paxos::kLogStartVariable, &bytes).ok() && start.ParseFromString(bytes)) {
      k = start.instance();
    }
    paxos::InstanceRecord r;
    while (durable.Get(k, &bytes).ok() && r.ParseFromString(bytes) && r.chosen()) ++k;
    end = std::min(end, std::max(k, n.store.instance));
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

}  // namespace internal
}  // namespace sim
}  // namespace chorus
