#include "node/group_membership.h"

#include <algorithm>
#include <set>

#include "node/core_options.h"

namespace chorus {

namespace {

std::string JoinIds(const std::vector<uint64_t>& ids) {
  if (ids.empty()) return "-";
  std::string out;
  for (uint64_t id : ids) {
    if (!out.empty()) out += ",";
    out += std::to_string(id);
  }
  return out;
}

}  // namespace

MemberRole ToMemberRole(paxos::MemberRole role) {
  switch (role) {
    case paxos::MemberRole::kVoter: return MemberRole::kVoter;
    case paxos::MemberRole::kFollower: return MemberRole::kFollower;
    case paxos::MemberRole::kRemoved: return MemberRole::kRemoved;
    case paxos::MemberRole::kNotMember: return MemberRole::kJoining;
    case paxos::MemberRole::kNotEligible: return MemberRole::kNotEligible;
  }
  return MemberRole::kJoining;
}

std::string DescribeConfig(const paxos::Config& config) {
  std::vector<uint64_t> voters;
  std::vector<uint64_t> followers;
  for (const paxos::Member& m : config.members) (m.voter ? voters : followers).push_back(m.id);
  return "voters " + JoinIds(voters) + " followers " + JoinIds(followers);
}

GroupMembership::GroupMembership(const Options* options, uint32_t group, Logger* logger,
                                 ChangeHook on_change)
    : options_(options), group_(group), logger_(logger), on_change_(std::move(on_change)) {}

MembershipSnapshot GroupMembership::snapshot() const {
  MutexLock lock(&mu_);
  return shared_;
}

void GroupMembership::OnOpen(const paxos::Core& core) {
  const paxos::Membership& m = core.membership();
  if (m.known() && !options_->nodes.empty()) {
    std::set<uint64_t> given;
    for (const NodeInfo& n : options_->nodes) given.insert(n.id());
    std::set<uint64_t> recorded;
    for (const paxos::Member& member : m.Latest().members) recorded.insert(member.id);
    if (given != recorded) {
      // The log is the source of truth once it recorded a membership
      // (options.h, Options::nodes): say so once, and follow it.
      CHORUS_LOG(logger_, kWarning,
                 "group %u: Options::nodes (ids %s) differs from the membership recorded in the "
                 "log (v%llu: %s): following the log",
                 group_, JoinIds(std::vector<uint64_t>(given.begin(), given.end())).c_str(),
                 static_cast<unsigned long long>(m.Latest().version),
                 DescribeConfig(m.Latest()).c_str());
    }
  }
  Publish(core);
}

bool GroupMembership::AfterRound(const paxos::Core& core) {
  const paxos::Membership& m = core.membership();
  const bool known = m.known();
  const uint64_t version = known ? m.Latest().version : 0;
  const uint64_t changed_at = known ? m.Latest().changed_at : 0;
  const paxos::MemberRole role = core.role();
  if (published_ && known == known_ && version == version_ && changed_at == changed_at_ &&
      role == role_) {
    return false;
  }
  if (known && (!known_ || version != version_ || changed_at != changed_at_)) {
    // The format is documented for operators' tools (m9-findings, README):
    // keep it stable.
    CHORUS_LOG(logger_, kInfo, "group %u membership v%llu: %s (active from %llu)", group_,
               static_cast<unsigned long long>(version), DescribeConfig(m.Latest()).c_str(),
               static_cast<unsigned long long>(m.Latest().active_from));
  }
  if (role == paxos::MemberRole::kRemoved && role_ != paxos::MemberRole::kRemoved) {
    CHORUS_LOG(logger_, kInfo,
               "group %u: this node (%llu) is no longer a member (membership v%llu): it proposes "
               "nothing more",
               group_, static_cast<unsigned long long>(options_->self.id()),
               static_cast<unsigned long long>(version));
  }
  Publish(core);
  return true;
}

void GroupMembership::Publish(const paxos::Core& core) {
  const paxos::Membership& m = core.membership();
  published_ = true;
  known_ = m.known();
  version_ = known_ ? m.Latest().version : 0;
  changed_at_ = known_ ? m.Latest().changed_at : 0;
  role_ = core.role();

  MembershipSnapshot snap;
  snap.known = known_;
  snap.role = ToMemberRole(role_);
  if (known_) {
    const paxos::Config& latest = m.Latest();
    snap.info.version = latest.version;
    snap.info.active_from = latest.active_from;
    for (const paxos::Member& member : latest.members) {
      MemberInfo info;
      if (!ParseMemberAddress(member.id, member.address, &info.node).ok()) {
        info.node = NodeInfo();  // unparsable text from the log: the id alone
        info.node.node_id = member.id;
      }
      info.voter = member.voter;
      snap.info.members.push_back(info);
    }
  }
  {
    MutexLock lock(&mu_);
    shared_ = snap;
  }

  std::set<uint64_t> peers;
  for (const paxos::Config& c : m.configs()) {
    for (const paxos::Member& member : c.members) peers.insert(member.id);
  }
  if (!known_) {
    for (const NodeInfo& n : options_->join) peers.insert(n.id());
  }
  peers.erase(options_->self.id());
  broadcast_.assign(peers.begin(), peers.end());
  if (on_change_) on_change_(group_, m);
}

}  // namespace chorus
