// Helpers of the membership-change tests over the Harness (reconfig_test,
// reconfig_master_test): members, a change of them, proposing it on a node,
// and finding its result.
#ifndef CHORUS_UNITTEST_PAXOS_MEMBERSHIP_HELPERS_H_
#define CHORUS_UNITTEST_PAXOS_MEMBERSHIP_HELPERS_H_

#include <cstdint>
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

}  // namespace testing
}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_UNITTEST_PAXOS_MEMBERSHIP_HELPERS_H_
