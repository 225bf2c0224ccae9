// MembershipChecker: the simulation's oracle of membership changes
// (SimOptions::membership). It derives the configurations of the group on
// its own, from the chosen log and the group's true activation distance
// (alpha), never from a core's Membership, and from every vote any node
// ever cast (every incarnation, every data dir) it checks:
//   (a) no instance has two values each accepted at some ballot by a
//       majority of the eligible voters of the configuration governing it
//       (two chosen values, whatever the learners learned);
//   (b) the value learned at instance j was accepted at one ballot by a
//       majority of the eligible voters of the configuration governing j:
//       a follower, a removed node, a node under another data dir (M5) or a
//       voter of another configuration never made up a quorum;
//   (c) a node's Membership (Core::membership()) equals the history the
//       checker derived for the instances that node has chosen (a node that
//       joined: its newest part, from the first configuration it learned);
// and a change a node reported finished OK is applied at that instance with
// those members, and one reported Conflict is stale.
//
// Votes come from the acceptors' own durable records (each core step's
// persisted accepted records, taken when their round is persisted) and from
// every ACCEPTED on the wire (its value from the ACCEPT of that ballot and
// instance). Configurations follow membership.h M1: a change chosen at i
// whose base_version is the newest version chosen below i, with a valid
// member set and the group's alpha, governs from i + alpha on.
// Single-threaded; deterministic.
#ifndef CHORUS_UNITTEST_SIM_MEMBERSHIP_CHECKER_H_
#define CHORUS_UNITTEST_SIM_MEMBERSHIP_CHECKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "paxos/ballot.h"
#include "paxos/membership.h"
#include "paxos/outputs.h"

namespace chorus {
namespace sim {

class MembershipChecker {
 public:
  using Report = std::function<void(const std::string& violation)>;

  // Who cast a vote: the node id and its data dir (M5).
  struct Voter {
    uint64_t id = 0;
    uint64_t incarnation = 0;  // CoreOptions::incarnation of its data dir
    bool joined = false;       // the data dir was created to join
    bool operator<(const Voter& o) const {
      return std::tie(id, incarnation, joined) < std::tie(o.id, o.incarnation, o.joined);
    }
  };

  // `genesis`: the genesis voters (ids, addresses); `alpha`: the group's
  // activation distance.
  MembershipChecker(std::vector<paxos::Member> genesis, uint64_t alpha, Report report);

  // `voter` durably accepted `value` at `ballot` for `instance`.
  void Vote(const Voter& voter, uint64_t instance, const paxos::Ballot& ballot,
            const std::string& value);
  // `voter`'s node sent `bytes` (a serialized PaxosMsg): an ACCEPT names the
  // value of its ballot and instance, an ACCEPTED is a vote.
  void Sent(const Voter& voter, const std::string& bytes);
  // Instance v.instance was learned for the first time by any node; every
  // instance below it was learned before (they are learned in order).
  void Chosen(const paxos::ChosenValue& v);

  // (c): node `id` has chosen [0, chosen_end) and holds `m`. `partial`: it
  // may hold only the newest part of the history (its data dir joined, or
  // its log was trimmed or installed from a checkpoint).
  void CheckNode(uint64_t id, bool partial, uint64_t chosen_end, const paxos::Membership& m);
  // A change proposed with `change` ended at a node with `status` (instance:
  // valid when ok) while the node's chosen_end is `chosen_end`.
  void CheckFinished(const paxos::MembershipChange& change, const Status& status,
                     uint64_t instance, uint64_t chosen_end);

  // The configurations derived so far (genesis first).
  const std::vector<paxos::Config>& configs() const { return configs_; }
  const paxos::Config& Latest() const { return configs_.back(); }
  // The configuration governing `instance` (by the derived history).
  const paxos::Config& At(uint64_t instance) const;
  // `voter` is an eligible voter of `c` (M5).
  static bool Eligible(const paxos::Config& c, const Voter& voter);
  static bool IsVoter(const paxos::Config& c, uint64_t id);
  static size_t VoterCount(const paxos::Config& c);
  static bool SameConfig(const paxos::Config& a, const paxos::Config& b);
  static std::string Describe(const paxos::Config& c);

  uint64_t applied() const { return applied_; }
  uint64_t conflicts() const { return conflicts_; }
  uint64_t invalid() const { return invalid_; }
  uint64_t verified() const { return verified_; }
  uint64_t next() const { return next_; }

 private:
  // Votes of one instance: (ballot, value) -> the voters.
  using Quorums = std::map<std::pair<paxos::Ballot, std::string>, std::set<Voter>>;
  // The values of `q` accepted by a majority of `c`'s eligible voters.
  std::vector<std::string> Majorities(const paxos::Config& c, const Quorums& q) const;
  void Apply(uint64_t instance, const std::string& envelope);

  const Report report_;
  const uint64_t alpha_;
  std::vector<paxos::Config> configs_;  // by active_from, genesis first
  std::map<uint64_t, Quorums> votes_;   // instance -> votes
  // ACCEPTs seen: (instance, ballot) -> value.
  std::map<std::pair<uint64_t, paxos::Ballot>, std::string> accepts_;
  std::map<uint64_t, std::string> chosen_;  // instance -> the envelope a majority accepted
  uint64_t next_ = 0;                       // instances [0, next_) were learned
  uint64_t applied_ = 0, conflicts_ = 0, invalid_ = 0, verified_ = 0;
};

}  // namespace sim
}  // namespace chorus

#endif  // CHORUS_UNITTEST_SIM_MEMBERSHIP_CHECKER_H_
