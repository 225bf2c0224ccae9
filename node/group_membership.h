// GroupMembership: what a group's runtime does with the core's membership
// (paxos/membership.h has the rules; the core applies every change).
//  - keeps a thread-safe snapshot of the newest configuration and of this
//    node's role, for Node::GetMembership and GroupStatus role /
//    membership_version;
//  - logs one info line per change it sees (the format is in the .cc and in
//    docs: tools read it), one when this node learns it is no longer a
//    member, and on Open one warning when Options::nodes names other ids
//    than the membership the log recorded (the log wins);
//  - keeps the list of nodes a broadcast goes to: every member of every
//    kept configuration but self, or Options::join while no membership is
//    known (a joining node catches up from them);
//  - tells the node's address book (through `on_change`) the history,
//    whenever it changed.
//
// Thread safety: snapshot() from any thread (`mu_` guards the copy);
// everything else on the group's loop (or Group::Open before it starts).
#ifndef CHORUS_NODE_GROUP_MEMBERSHIP_H_
#define CHORUS_NODE_GROUP_MEMBERSHIP_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chorus/node.h"
#include "chorus/options.h"
#include "paxos/core.h"
#include "paxos/membership.h"
#include "utils/logging.h"
#include "utils/mutex.h"

namespace chorus {

struct MembershipSnapshot {
  bool known = false;  // false: joining, no configuration learned yet
  MembershipInfo info;  // pending is left false: the caller computes it
  MemberRole role = MemberRole::kJoining;
};

// The public role of a core role.
MemberRole ToMemberRole(paxos::MemberRole role);
// "1,2,4 followers 5" style text of a configuration: "voters 1,2,4 followers -".
std::string DescribeConfig(const paxos::Config& config);

class GroupMembership {
 public:
  using ChangeHook = std::function<void(uint32_t group, const paxos::Membership& membership)>;

  // Everything borrowed outlives this object. `on_change` may be empty.
  GroupMembership(const Options* options, uint32_t group, Logger* logger, ChangeHook on_change);

  GroupMembership(const GroupMembership&) = delete;
  GroupMembership& operator=(const GroupMembership&) = delete;

  // Thread-safe.
  MembershipSnapshot snapshot() const;

  // Group::Open, once the core recovered: the first snapshot, the stale
  // Options::nodes warning, the first broadcast list and address book.
  void OnOpen(const paxos::Core& core);
  // After every round: publishes and logs a change of version or role.
  // Returns true when something changed.
  bool AfterRound(const paxos::Core& core);

  // Loop only: the ids a broadcast goes to.
  const std::vector<uint64_t>& broadcast_peers() const { return broadcast_; }

 private:
  void Publish(const paxos::Core& core);

  const Options* const options_;
  const uint32_t group_;
  Logger* const logger_;
  const ChangeHook on_change_;

  mutable Mutex mu_;
  MembershipSnapshot shared_ GUARDED_BY(mu_);

  // ---- Loop only ----
  bool published_ = false;
  bool known_ = false;
  uint64_t version_ = 0;
  uint64_t changed_at_ = 0;
  paxos::MemberRole role_ = paxos::MemberRole::kNotMember;
  std::vector<uint64_t> broadcast_;
};

}  // namespace chorus

#endif  // CHORUS_NODE_GROUP_MEMBERSHIP_H_
