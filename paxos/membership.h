// Membership: which nodes vote on which instances of a group.
//
// A configuration (Config) is a versioned set of members, each a voter or a
// follower (a non-voting replica: it learns and executes every value and
// never counts in a quorum). A membership change is an ordinary replicated
// value (a system envelope, value.h) that names the FULL new member set and
// the version it replaces. The configurations of a group form a history
// indexed by instance (Membership): every instance is governed by exactly one
// configuration, the same on every node, because it is a function of the
// chosen values alone.
//
// Rules (Lamport's alpha; "Paxos Made Simple" section 3, "Reconfiguring a
// State Machine"):
//   M1 activation: a change chosen at instance i whose base_version is the
//      newest version chosen below i (Latest().version) is applied: the new
//      configuration, version + 1, governs every instance from
//      i + activation_distance on. A change with another base_version (a
//      concurrent change won first) or an invalid member set is chosen but
//      NOT applied: it ends its proposal with Conflict / InvalidArgument, on
//      every node alike.
//   M2 pipelining: a proposer never proposes at or beyond its learner's
//      chosen_end + activation_distance (Proposer::Bound), so every instance
//      it uses is governed by a configuration it already knows: every change
//      that could govern it is at an instance below chosen_end. Hence
//      activation_distance >= max_inflight, and it is fixed for the life of
//      the group (recorded in every Config, from the genesis on).
//   M3 quorums: a phase 2 vote at instance j counts only from an eligible
//      voter of At(j) (M5, as the data dir the vote names: every message
//      carries its sender's incarnation and joined flag), and j is chosen by
//      a majority of At(j)'s voters. A phase 1
//      ballot from s is usable at j only once it holds promises from a
//      majority of the voters of At(j); the proposer waits for a majority of
//      every configuration Governing(s, s + distance) before it uses it.
//      The master's heartbeat round (lease) needs the same set of majorities.
//   M4 voting: a node's acceptor answers PREPARE / ACCEPT only while it is an
//      eligible voter (Config::IsEligibleVoter) of some configuration
//      governing [chosen_end, infinity); followers, removed nodes and nodes
//      that do not know a configuration naming them stay silent.
//   M5 identity: a member entry carries the incarnation of the data dir the
//      node had when it was added (0 for the genesis members). A node votes
//      under an entry only if the entry's incarnation is 0 and the node's
//      data dir was not created to join (CoreOptions::joined), or the entry's
//      incarnation equals its own. A node whose disk was lost gets a new data
//      dir, so a new incarnation: it never votes as its old self, and comes
//      back only through a remove and an add (M1).
//   M6 history: the configuration in force at the log's start and every later
//      one are kept (persisted in kMembershipVariable with each applied
//      change, and carried by every checkpoint: MembershipAt), so a restart,
//      a trim and a checkpoint install all know At(j) for every j they use.
//      (A joiner knows the history from the first change it learned only,
//      so its checkpoint at S may lack At(S): an install keeps the
//      installer's own configurations before the checkpoint's first one,
//      PrependOlder.)
//
// Pure: no I/O, no clock. Thread safety: none (one group loop).
#ifndef CHORUS_PAXOS_MEMBERSHIP_H_
#define CHORUS_PAXOS_MEMBERSHIP_H_

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace paxos {

// Name of the LogStorage variable that holds the group's membership history
// (a MembershipPb, paxos.proto): written, synced, in the step that applies a
// change and in the step of every trim; unset on a log that never had one
// (then the genesis from CoreOptions governs) ("paxos.membership").
extern const char kMembershipVariable[];

// The largest number of members a configuration may hold.
constexpr size_t kMaxMembers = 64;
// The largest member address (an opaque runtime string, e.g. "host:port").
constexpr size_t kMaxMemberAddressBytes = 512;

struct Member {
  uint64_t id = 0;           // the node id; never 0
  bool voter = true;         // false: a follower
  std::string address;       // opaque to the core (the runtime's NodeInfo text)
  uint64_t incarnation = 0;  // 0: a genesis member (see M5)

  bool operator==(const Member& o) const {
    return id == o.id && voter == o.voter && address == o.address &&
           incarnation == o.incarnation;
  }
};

struct Config {
  uint64_t version = 0;       // 0: the genesis; +1 per applied change
  uint64_t active_from = 0;   // the first instance it governs
  uint64_t changed_at = 0;    // the instance of the change that made it (0: genesis)
  uint64_t activation_distance = 0;  // alpha, the same in every Config of a group
  std::vector<Member> members;       // sorted by id, unique ids

  const Member* Find(uint64_t id) const;
  bool Contains(uint64_t id) const { return Find(id) != nullptr; }
  bool IsVoter(uint64_t id) const;
  // M5: `id` with data dir `incarnation` (joined: created to join) votes here.
  bool IsEligibleVoter(uint64_t id, uint64_t incarnation, bool joined) const;
  size_t VoterCount() const;
  size_t Majority() const { return VoterCount() / 2 + 1; }
  // True when `ids` hold a majority of the voters (ids of non-voters ignored).
  bool HasMajority(const std::set<uint64_t>& ids) const;
  // True when a majority can no longer be reached: the voters outside
  // `refused` are fewer than Majority().
  bool MajorityImpossible(const std::set<uint64_t>& refused) const;
  bool operator==(const Config& o) const;
};

// A requested change: the full member set of the new configuration and the
// version it replaces (M1).
struct MembershipChange {
  uint64_t base_version = 0;
  std::vector<Member> members;
  // alpha of the group (Config::activation_distance): must equal Latest()'s
  // (InvalidArgument otherwise); a node that knows no configuration yet
  // adopts it.
  uint64_t activation_distance = 0;
};

// Checks a member set: 1..kMaxMembers members, at least one voter, no id 0,
// no duplicate id, addresses at most kMaxMemberAddressBytes. InvalidArgument
// naming the problem otherwise.
Status ValidateMembers(const std::vector<Member>& members);

// The system value payload of a change (value.h: EncodeSystemValue carries
// it). Decode returns false on bytes that are not one.
std::string EncodeMembershipChange(const MembershipChange& change);
bool DecodeMembershipChange(const std::string& bytes, MembershipChange* change);

// Where a node stands in a group, as of the newest configuration it knows.
enum class MemberRole {
  kVoter,        // an eligible voter of Latest()
  kFollower,     // a follower of Latest()
  kRemoved,      // an earlier configuration (or a NOT_MEMBER) named it; Latest() does not
  kNotMember,    // no configuration it knows names it (joining, not added yet)
  kNotEligible,  // Latest() names it as a voter under another data dir (M5):
                 // it lost its state; remove it and add it again
};
const char* MemberRoleName(MemberRole role);

class Membership {
 public:
  // No configuration known (a node that joins: it learns one from the log or
  // a checkpoint). At() returns an empty Config, known() is false.
  Membership() = default;
  // The genesis: version 0, active from instance 0.
  static Membership Genesis(std::vector<Member> members, uint64_t activation_distance);

  bool known() const { return !configs_.empty(); }
  // The configuration governing `instance` (an empty one when !known() or
  // `instance` lies before the oldest kept configuration).
  const Config& At(uint64_t instance) const;
  // The newest configuration chosen (possibly not active yet).
  const Config& Latest() const;
  // Every configuration governing some instance in [from, to), oldest first.
  std::vector<const Config*> Governing(uint64_t from, uint64_t to) const;
  // Every kept configuration, oldest first.
  const std::vector<Config>& configs() const { return configs_; }

  // M1: the change chosen at `instance`. OK: applied (a new Latest(),
  // version + 1, active from instance + activation_distance). Conflict:
  // base_version is not Latest().version; InvalidArgument: the member set
  // is invalid or the distance is not the group's; both leave the history
  // as it was. A change at or below Latest().changed_at was applied already
  // (recovery replays it): OK, nothing changes. On a Membership that is not
  // known(), any valid change is applied (a joining node adopts it) with
  // version base_version + 1.
  // test_activate_at_once: the TestMutation kActivateAtOnce (alpha = 1: the
  // new configuration governs from instance + 1). Never in production.
  Status Apply(uint64_t instance, const MembershipChange& change,
               bool test_activate_at_once = false);
  // Drops the configurations that govern no instance at or above `instance`
  // (trim: the one in force at `instance` stays).
  void ForgetBelow(uint64_t instance);
  // Puts the configurations of `older` (another history of this group: the
  // node's own, before it adopts this one from a checkpoint) that precede
  // this history's first one and govern some instance at or above `from`
  // in front of it, when `older` holds the version right before that one.
  // A joiner's history starts at the first change it learned, so a
  // checkpoint it made at `from` may lack At(from); a node that knew it
  // keeps it. Nothing changes when `older` does not connect (versions are
  // consecutive: M1).
  void PrependOlder(const Membership& older, uint64_t from);
  // The history as of the instances below `instance`: the configurations
  // made by changes chosen below it (for a checkpoint at `instance`).
  Membership Before(uint64_t instance) const;

  std::string Encode() const;
  // Corruption when `bytes` is not an encoded Membership.
  static Status Decode(const std::string& bytes, Membership* out);
  bool operator==(const Membership& o) const { return configs_ == o.configs_; }

 private:
  std::vector<Config> configs_;  // by active_from, strictly increasing
};

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_MEMBERSHIP_H_
