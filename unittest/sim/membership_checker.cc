#include "unittest/sim/membership_checker.h"

#include <algorithm>
#include <utility>

#include "paxos.pb.h"
#include "paxos/value.h"

namespace chorus {
namespace sim {

namespace {

// The member set of a change as a configuration holds it: sorted by id.
std::vector<paxos::Member> Sorted(std::vector<paxos::Member> members) {
  std::sort(members.begin(), members.end(),
            [](const paxos::Member& a, const paxos::Member& b) { return a.id < b.id; });
  return members;
}

bool SameMembers(const std::vector<paxos::Member>& a, const std::vector<paxos::Member>& b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    if (a[k].id != b[k].id || a[k].voter != b[k].voter || a[k].address != b[k].address ||
        a[k].incarnation != b[k].incarnation) {
      return false;
    }
  }
  return true;
}

// The checker's own reading of the member-set rules (membership.h
// ValidateMembers): 1..kMaxMembers members, a voter, no id 0, no duplicate,
// addresses of at most kMaxMemberAddressBytes.
bool ValidMembers(const std::vector<paxos::Member>& sorted) {
  if (sorted.empty() || sorted.size() > paxos::kMaxMembers) return false;
  bool voter = false;
  for (size_t k = 0; k < sorted.size(); ++k) {
    if (sorted[k].id == 0 || sorted[k].address.size() > paxos::kMaxMemberAddressBytes) return false;
    if (k > 0 && sorted[k].id == sorted[k - 1].id) return false;
    voter = voter || sorted[k].voter;
  }
  return voter;
}

// The identity of an envelope, as the learners report it.
std::string EnvelopeKey(const std::string& envelope) {
  uint64_t proposer = 0, id = 0;
  std::string data;
  if (!paxos::DecodeValue(envelope, &proposer, &id, &data)) return "(not an envelope)";
  const bool system = (id & paxos::kSystemValueBit) != 0;
  return std::to_string(proposer) + "/" + std::to_string(id) + "/" +
         (system ? "(system value)" : data.empty() ? "(noop)" : data);
}

// Whether the learned `v` is the value of `envelope`.
bool Matches(const paxos::ChosenValue& v, const std::string& envelope) {
  uint64_t proposer = 0, id = 0;
  std::string data;
  if (!paxos::DecodeValue(envelope, &proposer, &id, &data)) return false;
  if (v.proposer != proposer || v.proposal_id != id) return false;
  const bool system = (id & paxos::kSystemValueBit) != 0;
  return v.noop ? (system || data.empty()) : (!system && data == v.value);
}

}  // namespace

MembershipChecker::MembershipChecker(std::vector<paxos::Member> genesis, uint64_t alpha,
                                     Report report)
    : report_(std::move(report)), alpha_(alpha) {
  paxos::Config c;
  c.activation_distance = alpha;
  c.members = Sorted(std::move(genesis));
  configs_.push_back(c);
}

const paxos::Config& MembershipChecker::At(uint64_t instance) const {
  size_t k = 0;
  while (k + 1 < configs_.size() && configs_[k + 1].active_from <= instance) ++k;
  return configs_[k];
}

bool MembershipChecker::IsVoter(const paxos::Config& c, uint64_t id) {
  for (const auto& m : c.members) {
    if (m.id == id) return m.voter;
  }
  return false;
}

size_t MembershipChecker::VoterCount(const paxos::Config& c) {
  size_t n = 0;
  for (const auto& m : c.members) n += m.voter ? 1 : 0;
  return n;
}

bool MembershipChecker::Eligible(const paxos::Config& c, const Voter& voter) {
  for (const auto& m : c.members) {
    if (m.id != voter.id) continue;
    if (!m.voter) return false;
    return m.incarnation == 0 ? !voter.joined : m.incarnation == voter.incarnation;
  }
  return false;
}

bool MembershipChecker::SameConfig(const paxos::Config& a, const paxos::Config& b) {
  return a.version == b.version && a.active_from == b.active_from &&
         a.changed_at == b.changed_at && a.activation_distance == b.activation_distance &&
         SameMembers(a.members, b.members);
}

std::string MembershipChecker::Describe(const paxos::Config& c) {
  std::string s = "v" + std::to_string(c.version) + " from " + std::to_string(c.active_from) +
                  " (changed at " + std::to_string(c.changed_at) + ", alpha " +
                  std::to_string(c.activation_distance) + ") {";
  for (const auto& m : c.members) {
    s += " " + std::to_string(m.id) + (m.voter ? "" : "f") +
         (m.incarnation != 0 ? "#" + std::to_string(m.incarnation % 1000) : std::string());
  }
  return s + " }";
}

std::vector<std::string> MembershipChecker::Majorities(const paxos::Config& c,
                                                       const Quorums& q) const {
  const size_t majority = VoterCount(c) / 2 + 1;
  std::vector<std::string> values;
  for (const auto& entry : q) {
    std::set<uint64_t> ids;
    for (const Voter& v : entry.second) {
      if (Eligible(c, v)) ids.insert(v.id);
    }
    if (ids.size() >= majority &&
        std::find(values.begin(), values.end(), entry.first.second) == values.end()) {
      values.push_back(entry.first.second);
    }
  }
  return values;
}

void MembershipChecker::Vote(const Voter& voter, uint64_t instance, const paxos::Ballot& ballot,
                             const std::string& value) {
  auto& voters = votes_[instance][{ballot, value}];
  if (!voters.insert(voter).second || instance >= next_) return;
  // A late vote at a learned instance: it must not make a second value chosen.
  const paxos::Config& c = At(instance);
  for (const std::string& v : Majorities(c, votes_[instance])) {
    if (v != chosen_[instance]) {
      report_("instance " + std::to_string(instance) + " has two chosen values: " +
              EnvelopeKey(chosen_[instance]) + " and " + EnvelopeKey(v) +
              ", each accepted by a majority of config " + Describe(c));
      return;
    }
  }
}

void MembershipChecker::Sent(const Voter& voter, const std::string& bytes) {
  paxos::PaxosMsg m;
  if (!m.ParseFromString(bytes)) return;
  const paxos::Ballot b = paxos::Ballot::FromPb(m.ballot());
  if (m.type() == paxos::ACCEPT) {
    auto it = accepts_.emplace(std::make_pair(m.instance(), b), m.value()).first;
    if (it->second != m.value()) {
      report_("node " + std::to_string(voter.id) + " sent ACCEPT at instance " +
              std::to_string(m.instance()) + " ballot " + b.ToString() + " for " +
              EnvelopeKey(m.value()) + " after one for " + EnvelopeKey(it->second) +
              ": two values under one ballot");
    }
  } else if (m.type() == paxos::ACCEPTED) {
    auto it = accepts_.find({m.instance(), b});
    if (it != accepts_.end()) Vote(voter, m.instance(), b, it->second);
  }
}

void MembershipChecker::Chosen(const paxos::ChosenValue& v) {
  const uint64_t j = v.instance;
  if (j != next_) {
    report_("membership checker: instance " + std::to_string(j) + " learned first when " +
            std::to_string(next_) + " was next");
    return;
  }
  next_++;
  const paxos::Config& c = At(j);
  const std::vector<std::string> values = Majorities(c, votes_[j]);
  const std::string key = std::to_string(v.proposer) + "/" + std::to_string(v.proposal_id);
  if (values.empty()) {
    std::string votes;
    for (const auto& entry : votes_[j]) {
      votes += " " + entry.first.first.ToString() + ":";
      for (const Voter& voter : entry.second) {
        votes += " " + std::to_string(voter.id) + (Eligible(c, voter) ? "" : "(not eligible)");
      }
      votes += ";";
    }
    report_("instance " + std::to_string(j) + " learned (" + key +
            ") without a majority of the eligible voters of config " + Describe(c) +
            " accepting it at one ballot; votes:" + votes);
    chosen_[j] = "";
    return;
  }
  if (values.size() > 1) {
    report_("instance " + std::to_string(j) + " has two chosen values: " +
            EnvelopeKey(values[0]) + " and " + EnvelopeKey(values[1]) +
            ", each accepted by a majority of config " + Describe(c));
  }
  if (!Matches(v, values[0])) {
    report_("instance " + std::to_string(j) + ": a node learned " + key + " but a majority of " +
            "config " + Describe(c) + " accepted " + EnvelopeKey(values[0]));
  }
  verified_++;
  chosen_[j] = values[0];
  Apply(j, values[0]);
}

void MembershipChecker::Apply(uint64_t instance, const std::string& envelope) {
  uint64_t proposer = 0, id = 0;
  std::string data;
  if (!paxos::DecodeValue(envelope, &proposer, &id, &data) ||
      (id & paxos::kSystemValueBit) == 0 || data.empty() ||
      data[0] != static_cast<char>(paxos::SystemValueKind::kMembershipChange)) {
    return;  // an application value or a noop
  }
  paxos::MembershipChangePb pb;
  if (!pb.ParseFromString(data.substr(1))) {
    invalid_++;
    return;
  }
  std::vector<paxos::Member> members;
  for (const auto& m : pb.members()) {
    paxos::Member member;
    member.id = m.id();
    member.voter = m.voter();
    member.address = m.address();
    member.incarnation = m.incarnation();
    members.push_back(member);
  }
  members = Sorted(std::move(members));
  if (pb.activation_distance() != alpha_ || !ValidMembers(members)) {
    invalid_++;
    return;
  }
  if (pb.base_version() != Latest().version) {
    conflicts_++;
    return;
  }
  paxos::Config c;
  c.version = Latest().version + 1;
  c.active_from = instance + alpha_;
  c.changed_at = instance;
  c.activation_distance = alpha_;
  c.members = std::move(members);
  configs_.push_back(std::move(c));
  applied_++;
}

void MembershipChecker::CheckNode(uint64_t id, bool partial, uint64_t chosen_end,
                                  const paxos::Membership& m) {
  std::vector<const paxos::Config*> expected;
  for (const auto& c : configs_) {
    if (c.version == 0 || c.changed_at < chosen_end) expected.push_back(&c);
  }
  // A node with a genesis data dir and an untrimmed log holds the whole
  // history; one that joined holds its newest part (from the first change
  // it learned, or what a checkpoint or a peer gave it), a trimmed one the
  // part from its log's start, and either knows a configuration once a
  // change is chosen below its chosen_end.
  const auto& have = m.configs();
  bool same = partial ? have.size() <= expected.size() && (!have.empty() || expected.size() == 1)
                     : have.size() == expected.size();
  const size_t skip = expected.size() - std::min(expected.size(), have.size());
  for (size_t k = 0; same && k < have.size(); ++k) {
    same = SameConfig(have[k], *expected[skip + k]);
  }
  if (same) return;
  std::string want, got;
  for (const auto* c : expected) want += " [" + Describe(*c) + "]";
  for (const auto& c : have) got += " [" + Describe(c) + "]";
  report_("node " + std::to_string(id) + "'s membership differs from the checker's at chosen_end " +
          std::to_string(chosen_end) + ": it holds" + (got.empty() ? " nothing" : got) +
          ", the log makes" + (want.empty() ? " nothing" : want));
}

void MembershipChecker::CheckFinished(const paxos::MembershipChange& change, const Status& status,
                                      uint64_t instance, uint64_t chosen_end) {
  if (status.ok()) {
    const std::vector<paxos::Member> members = Sorted(change.members);
    for (const auto& c : configs_) {
      if (c.version == 0 || c.changed_at != instance) continue;
      if (c.version != change.base_version + 1 || !SameMembers(c.members, members)) break;
      if (chosen_end < c.active_from) {
        report_("a change reported in force at chosen_end " + std::to_string(chosen_end) +
                " governs only from " + std::to_string(c.active_from));
      }
      return;
    }
    report_("a change reported applied at instance " + std::to_string(instance) +
            " (base version " + std::to_string(change.base_version) +
            ") is not the configuration the log made there");
    return;
  }
  if (status.IsConflict() && Latest().version <= change.base_version) {
    report_("a change on base version " + std::to_string(change.base_version) +
            " reported Conflict, but the log's newest version is " +
            std::to_string(Latest().version));
  }
}

}  // namespace sim
}  // namespace chorus
