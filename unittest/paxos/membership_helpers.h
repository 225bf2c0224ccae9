// Helpers of the membership-change tests over the Harness (reconfig_test,
// reconfig_master_test, stranded_test): members, a change of them, proposing
// it on a node, finding its result, a cluster of genesis members and
// joiners, and ways to pump it.
#ifndef CHORUS_UNITTEST_PAXOS_MEMBERSHIP_HELPERS_H_
#define CHORUS_UNITTEST_PAXOS_MEMBERSHIP_HELPERS_H_

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <utility>
#include <vector>

#include "paxos/core.h"
#include "unittest/paxos/harness.h"

namespace chorus {
namespace paxos {
namespace testing {

// The activation distance of these tests' configurations: small, so a change
// comes into force within a few instances.
constexpr uint64_t kAlpha = 8;

inline Member M(uint64_t id, bool voter = true, uint64_t incarnation = 0) {
  Member m;
  m.id = id;
  m.voter = voter;
  m.incarnation = incarnation;
  return m;
}

// The change from configuration `base` to `members`, in force kAlpha
// instances after it is chosen.
inline MembershipChange Change(uint64_t base, std::vector<Member> members) {
  MembershipChange c;
  c.base_version = base;
  c.members = std::move(members);
  c.activation_distance = kAlpha;
  return c;
}

// Proposes `c` on node i as proposal `token` and executes what that outputs.
inline Status ProposeChange(Harness* h, int i, uint64_t token, const MembershipChange& c) {
  Outputs out;
  Status s = h->core(i)->ProposeMembership(token, c, &out);
  h->Exec(i, &out);
  return s;
}

// The result of proposal `token` on node i, or nullptr while it is pending.
inline const ProposalResult* Finished(Harness* h, int i, uint64_t token) {
  for (const ProposalResult& r : h->node(i).finished) {
    if (r.token == token) return &r;
  }
  return nullptr;
}

// CHORUS_RECONFIG_MUTATION=<n> runs every test with TestMutation n (to see
// which tests a mutation breaks).
inline TestMutation EnvMutation() {
  const char* e = std::getenv("CHORUS_RECONFIG_MUTATION");
  return e == nullptr ? TestMutation::kNone : static_cast<TestMutation>(std::atoi(e));
}

// Nodes 1..genesis form the genesis; the others start as joiners (empty
// data dir created to join, join_peers = node 1, incarnation 40 + id).
inline std::function<void(CoreOptions*)> Cluster(
    uint64_t genesis, TestMutation m = TestMutation::kNone,
    std::function<void(CoreOptions*)> more = nullptr) {
  return [genesis, m, more](CoreOptions* o) {
    o->activation_distance = kAlpha;
    o->max_inflight = 4;
    o->test_mutation = m == TestMutation::kNone ? EnvMutation() : m;
    o->members.clear();
    if (o->self <= genesis) {
      for (uint64_t id = 1; id <= genesis; ++id) o->members.push_back(id);
    } else {
      o->joined = true;
      o->join_peers = {1};
      o->incarnation = 40 + o->self;
    }
    if (more) more(o);
  };
}

// Newest message first: later instances' votes arrive before earlier ones'.
inline void PumpNewestFirst(Harness* h) {
  while (!h->net().empty()) {
    auto m = std::move(h->net().back());
    h->net().pop_back();
    h->Deliver(m.first, m.second);
  }
}

// Each node fires one of the proposer timers it has armed (a phase 1 gets
// its answers before its timeout fires), pumping after each.
inline void Tick(Harness* h, bool newest_first = false) {
  for (size_t i = 0; i < h->size(); ++i) {
    for (TimerKind k : {TimerKind::kBackoff, TimerKind::kAccept, TimerKind::kPrepare}) {
      if (h->node(static_cast<int>(i)).timers.count(k)) {
        h->Fire(static_cast<int>(i), k);
        break;
      }
    }
    if (newest_first) {
      PumpNewestFirst(h);
    } else {
      h->Pump();
    }
  }
}

// Delivers queued messages oldest first until `done` (or the network is
// empty).
inline void PumpUntil(Harness* h, const std::function<bool()>& done) {
  while (!h->net().empty() && !done()) {
    auto m = std::move(h->net().front());
    h->net().pop_front();
    h->Deliver(m.first, m.second);
  }
}

}  // namespace testing
}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_UNITTEST_PAXOS_MEMBERSHIP_HELPERS_H_
