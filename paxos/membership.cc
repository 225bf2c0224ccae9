#include "paxos/membership.h"

#include <algorithm>

#include "paxos.pb.h"

namespace chorus {
namespace paxos {

const char kMembershipVariable[] = "paxos.membership";

namespace {

// The empty configuration At() answers when nothing governs an instance.
const Config& EmptyConfig() {
  static const Config* empty = new Config();
  return *empty;
}

void ToPb(const Member& m, MemberPb* pb) {
  pb->set_id(m.id);
  pb->set_voter(m.voter);
  pb->set_address(m.address);
  pb->set_incarnation(m.incarnation);
}

Member FromPb(const MemberPb& pb) {
  Member m;
  m.id = pb.id();
  m.voter = pb.voter();
  m.address = pb.address();
  m.incarnation = pb.incarnation();
  return m;
}

std::vector<Member> Sorted(std::vector<Member> members) {
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.id < b.id; });
  return members;
}

}  // namespace

// ---- Config ----

const Member* Config::Find(uint64_t id) const {
  auto it = std::lower_bound(members.begin(), members.end(), id,
                             [](const Member& m, uint64_t v) { return m.id < v; });
  return it != members.end() && it->id == id ? &*it : nullptr;
}

bool Config::IsVoter(uint64_t id) const {
  const Member* m = Find(id);
  return m != nullptr && m->voter;
}

bool Config::IsEligibleVoter(uint64_t id, uint64_t incarnation, bool joined) const {
  const Member* m = Find(id);
  if (m == nullptr || !m->voter) return false;
  // M5: a genesis entry (0) belongs to the data dir that was created with
  // the group, never to one created to join it; a later entry names the
  // exact data dir it was added with.
  if (m->incarnation == 0) return !joined;
  return m->incarnation == incarnation;
}

size_t Config::VoterCount() const {
  size_t n = 0;
  for (const Member& m : members) n += m.voter ? 1 : 0;
  return n;
}

bool Config::HasMajority(const std::set<uint64_t>& ids) const {
  const size_t voters = VoterCount();
  if (voters == 0) return false;  // nothing known: no quorum at all
  size_t n = 0;
  for (uint64_t id : ids) n += IsVoter(id) ? 1 : 0;
  return n >= Majority();
}

bool Config::MajorityImpossible(const std::set<uint64_t>& refused) const {
  size_t left = 0;
  for (const Member& m : members) left += (m.voter && refused.count(m.id) == 0) ? 1 : 0;
  return VoterCount() == 0 || left < Majority();
}

bool Config::operator==(const Config& o) const {
  return version == o.version && active_from == o.active_from && changed_at == o.changed_at &&
         activation_distance == o.activation_distance && members == o.members;
}

// ---- validation and coding ----

Status ValidateMembers(const std::vector<Member>& members) {
  if (members.empty()) return Status::InvalidArgument("membership: no members");
  if (members.size() > kMaxMembers) {
    return Status::InvalidArgument("membership: " + std::to_string(members.size()) +
                                   " members, more than " + std::to_string(kMaxMembers));
  }
  std::set<uint64_t> ids;
  size_t voters = 0;
  for (const Member& m : members) {
    if (m.id == 0) return Status::InvalidArgument("membership: a member with node id 0");
    if (!ids.insert(m.id).second) {
      return Status::InvalidArgument("membership: node id " + std::to_string(m.id) + " twice");
    }
    if (m.address.size() > kMaxMemberAddressBytes) {
      return Status::InvalidArgument("membership: the address of node " + std::to_string(m.id) +
                                     " is longer than " +
                                     std::to_string(kMaxMemberAddressBytes) + " bytes");
    }
    voters += m.voter ? 1 : 0;
  }
  if (voters == 0) return Status::InvalidArgument("membership: no voter");
  return Status::OK();
}

std::string EncodeMembershipChange(const MembershipChange& change) {
  MembershipChangePb pb;
  pb.set_base_version(change.base_version);
  pb.set_activation_distance(change.activation_distance);
  for (const Member& m : change.members) ToPb(m, pb.add_members());
  return pb.SerializeAsString();
}

bool DecodeMembershipChange(const std::string& bytes, MembershipChange* change) {
  MembershipChangePb pb;
  if (!pb.ParseFromString(bytes)) return false;
  *change = MembershipChange();
  change->base_version = pb.base_version();
  change->activation_distance = pb.activation_distance();
  for (const MemberPb& m : pb.members()) change->members.push_back(FromPb(m));
  return true;
}

const char* MemberRoleName(MemberRole role) {
  switch (role) {
    case MemberRole::kVoter:
      return "voter";
    case MemberRole::kFollower:
      return "follower";
    case MemberRole::kRemoved:
      return "removed";
    case MemberRole::kNotMember:
      return "not a member";
    case MemberRole::kNotEligible:
      return "not eligible (its data dir is not the one it was added with)";
  }
  return "unknown";
}

// ---- Membership ----

Membership Membership::Genesis(std::vector<Member> members, uint64_t activation_distance) {
  Membership m;
  Config c;
  c.activation_distance = activation_distance;
  c.members = Sorted(std::move(members));
  m.configs_.push_back(std::move(c));
  return m;
}

const Config& Membership::At(uint64_t instance) const {
  // The last configuration active at or before `instance`.
  auto it = std::upper_bound(configs_.begin(), configs_.end(), instance,
                             [](uint64_t v, const Config& c) { return v < c.active_from; });
  if (it == configs_.begin()) return EmptyConfig();
  return *std::prev(it);
}

const Config& Membership::Latest() const {
  return configs_.empty() ? EmptyConfig() : configs_.back();
}

std::vector<const Config*> Membership::Governing(uint64_t from, uint64_t to) const {
  std::vector<const Config*> out;
  for (size_t i = 0; i < configs_.size(); ++i) {
    const uint64_t begin = configs_[i].active_from;
    const uint64_t end = i + 1 < configs_.size() ? configs_[i + 1].active_from : UINT64_MAX;
    // [begin, end) meets [from, to)
    if (begin < to && from < end) out.push_back(&configs_[i]);
  }
  return out;
}

Status Membership::Apply(uint64_t instance, const MembershipChange& change,
                         bool test_activate_at_once) {
  if (known() && Latest().version > 0 && instance <= Latest().changed_at) {
    return Status::OK();  // applied already (recovery replays it)
  }
  Status s = ValidateMembers(change.members);
  if (!s.ok()) return s;
  if (change.activation_distance == 0) {
    return Status::InvalidArgument("membership change: activation distance 0");
  }
  Config c;
  if (known()) {
    const Config& latest = Latest();
    if (change.activation_distance != latest.activation_distance) {
      return Status::InvalidArgument(
          "membership change: activation distance " + std::to_string(change.activation_distance) +
          " is not the group's " + std::to_string(latest.activation_distance));
    }
    if (change.base_version != latest.version) {
      return Status::Conflict("membership change based on version " +
                              std::to_string(change.base_version) + " chosen at instance " +
                              std::to_string(instance) + ", but version " +
                              std::to_string(latest.version) + " is the latest");
    }
    c.version = latest.version + 1;
  } else {
    c.version = change.base_version + 1;  // a joining node adopts it
  }
  c.changed_at = instance;
  c.activation_distance = change.activation_distance;
  c.active_from = instance + (test_activate_at_once ? 1 : change.activation_distance);
  c.members = Sorted(change.members);
  // Strictly increasing active_from. Only the mutation can activate a change
  // before one that is pending: the pending one then never governs.
  while (!configs_.empty() && configs_.back().active_from >= c.active_from) configs_.pop_back();
  configs_.push_back(std::move(c));
  return Status::OK();
}

void Membership::ForgetBelow(uint64_t instance) {
  // Keep the one in force at `instance` (the last with active_from <= it).
  size_t keep_from = 0;
  for (size_t i = 0; i < configs_.size(); ++i) {
    if (configs_[i].active_from <= instance) keep_from = i;
  }
  configs_.erase(configs_.begin(), configs_.begin() + static_cast<std::ptrdiff_t>(keep_from));
}

void Membership::PrependOlder(const Membership& older, uint64_t from) {
  // Nothing precedes a genesis, and a history that covers `from` lacks
  // nothing a checkpoint there needs.
  if (!known() || configs_.front().version == 0 || configs_.front().active_from <= from) return;
  const Config& first = configs_.front();
  std::vector<Config> merged;
  for (const Config& c : older.configs_) {
    if (c.version < first.version) merged.push_back(c);
  }
  // Only a chain that reaches this one: the version right before it, active
  // before it, under the group's alpha.
  if (merged.empty() || merged.back().version + 1 != first.version ||
      merged.back().active_from >= first.active_from ||
      merged.back().activation_distance != first.activation_distance) {
    return;
  }
  // Of those, the ones that govern an instance at or above `from` (each
  // governs up to the next one's active_from).
  size_t drop = 0;
  while (drop + 1 < merged.size() && merged[drop + 1].active_from <= from) ++drop;
  merged.erase(merged.begin(), merged.begin() + static_cast<std::ptrdiff_t>(drop));
  merged.insert(merged.end(), configs_.begin(), configs_.end());
  configs_.swap(merged);
}

Membership Membership::Before(uint64_t instance) const {
  Membership m;
  for (const Config& c : configs_) {
    // The genesis (and an adopted first configuration) precede every
    // instance the history covers; the others count from their change.
    if (&c == &configs_.front() || c.changed_at < instance) m.configs_.push_back(c);
  }
  return m;
}

std::string Membership::Encode() const {
  MembershipPb pb;
  for (const Config& c : configs_) {
    ConfigPb* cp = pb.add_configs();
    cp->set_version(c.version);
    cp->set_active_from(c.active_from);
    cp->set_changed_at(c.changed_at);
    cp->set_activation_distance(c.activation_distance);
    for (const Member& m : c.members) ToPb(m, cp->add_members());
  }
  return pb.SerializeAsString();
}

Status Membership::Decode(const std::string& bytes, Membership* out) {
  MembershipPb pb;
  if (!pb.ParseFromString(bytes)) {
    return Status::Corruption("membership: the history does not parse");
  }
  Membership m;
  for (const ConfigPb& cp : pb.configs()) {
    Config c;
    c.version = cp.version();
    c.active_from = cp.active_from();
    c.changed_at = cp.changed_at();
    c.activation_distance = cp.activation_distance();
    for (const MemberPb& mp : cp.members()) c.members.push_back(FromPb(mp));
    c.members = Sorted(std::move(c.members));
    Status s = ValidateMembers(c.members);
    if (!s.ok()) return Status::Corruption("membership: version " + std::to_string(c.version) +
                                           ": " + s.ToString());
    if (c.activation_distance == 0 || c.active_from >= (uint64_t{1} << 62)) {
      return Status::Corruption("membership: version " + std::to_string(c.version) +
                                " has a bad activation distance or start");
    }
    if (!m.configs_.empty() && (c.active_from <= m.configs_.back().active_from ||
                                c.version <= m.configs_.back().version)) {
      return Status::Corruption("membership: the configurations are out of order at version " +
                                std::to_string(c.version));
    }
    m.configs_.push_back(std::move(c));
  }
  *out = std::move(m);
  return Status::OK();
}

}  // namespace paxos
}  // namespace chorus
