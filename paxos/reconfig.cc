#include "paxos/reconfig.h"

#include <algorithm>

#include "paxos/learner.h"
#include "paxos/master.h"
#include "paxos/proposer.h"
#include "paxos/value.h"

namespace chorus {
namespace paxos {

namespace {

// How many peers peers() remembers: a bound on what non-members (which may
// send learn-type messages) can make this node keep.
constexpr size_t kMaxPeers = 4 * kMaxMembers;

bool NamesSelf(const Membership& m, uint64_t self) {
  for (const Config& c : m.configs()) {
    if (c.Contains(self)) return true;
  }
  return false;
}

}  // namespace

Status Reconfig::Recover() {
  const CoreOptions& o = ctx_->options();
  std::string bytes;
  Status s = ctx_->log()->GetVariable(kMembershipVariable, &bytes);
  if (s.ok()) {
    Membership m;
    s = Membership::Decode(bytes, &m);
    if (!s.ok()) return Status::Corruption("paxos log: " + s.ToString());
    *ctx_->mutable_membership() = std::move(m);
  } else if (!s.IsNotFound()) {
    return Status::Corruption("paxos log: reading the membership: " + s.ToString());
  } else if (!o.members.empty()) {
    std::vector<Member> members;
    for (size_t i = 0; i < o.members.size(); ++i) {
      Member m;
      m.id = o.members[i];
      m.voter = true;
      if (!o.member_addresses.empty()) m.address = o.member_addresses[i];
      members.push_back(std::move(m));
    }
    *ctx_->mutable_membership() = Membership::Genesis(std::move(members), o.activation_distance);
    // Recorded, so a later change of CoreOptions::members is visible (the
    // runtime compares) and never silently changes who votes.
    persist_at_start_ = true;
  }
  was_member_ = NamesSelf(ctx_->membership(), o.self);
  return Status::OK();
}

void Reconfig::Replay(uint64_t instance, const std::string& envelope) {
  uint64_t proposer = 0, id = 0;
  std::string data, payload;
  SystemValueKind kind;
  MembershipChange change;
  if (!DecodeValue(envelope, &proposer, &id, &data) ||
      !DecodeSystemValue(id, data, &kind, &payload) ||
      !DecodeMembershipChange(payload, &change)) {
    return;
  }
  const Membership& m = ctx_->membership();
  if (m.known() && m.Latest().version > 0 && instance <= m.Latest().changed_at) return;
  if (ctx_->mutable_membership()
          ->Apply(instance, change, ctx_->Mutated(TestMutation::kActivateAtOnce))
          .ok()) {
    persist_at_start_ = true;
  }
  was_member_ = was_member_ || NamesSelf(ctx_->membership(), ctx_->options().self);
}

void Reconfig::Start() {
  if (!persist_at_start_ || !ctx_->membership().known()) return;
  persist_at_start_ = false;
  ctx_->PersistMembership();
}

Status Reconfig::Apply(uint64_t instance, bool known_kind, const std::string& payload) {
  if (!known_kind) return Status::OK();  // a kind this version does not know: a noop
  MembershipChange change;
  Status s;
  if (!DecodeMembershipChange(payload, &change)) {
    s = Status::InvalidArgument("membership change at instance " + std::to_string(instance) +
                                " does not parse");
  } else {
    s = ctx_->mutable_membership()->Apply(instance, change,
                                          ctx_->Mutated(TestMutation::kActivateAtOnce));
  }
  if (s.ok()) {
    ctx_->stats()->membership_changes++;
    // Synced with this step's chosen record of `instance` (one batch): a
    // restart never sees the change chosen without its history.
    ctx_->PersistMembership();
    was_member_ = was_member_ || NamesSelf(ctx_->membership(), ctx_->options().self);
  } else {
    ctx_->stats()->membership_conflicts++;
  }
  return s;
}

void Reconfig::Track(uint64_t instance, const Status& s, bool ours, uint64_t token,
                     bool own_proposer) {
  const uint64_t active_from = ctx_->membership().Latest().active_from;
  if (ours) {
    if (s.ok()) {
      waiting_[token] = {instance, active_from};
    } else {
      ctx_->out()->finished.push_back({token, instance, s});
    }
  }
  // The change is in force only once every instance below active_from is
  // chosen: whoever got it chosen (or the master, for a forwarded one)
  // fills the gap with noops so an idle group gets there by itself.
  if (s.ok() && (own_proposer || master_->IsMaster()) && active_from > learner_->chosen_end()) {
    proposer_->FillTo(active_from);
  }
}

void Reconfig::EndStep() {
  const uint64_t end = learner_->chosen_end();
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (end >= it->second.active_from) {
      ctx_->out()->finished.push_back({it->first, it->second.instance, Status::OK()});
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Reconfig::Cancel(uint64_t token) {
  auto it = waiting_.find(token);
  if (it == waiting_.end()) return false;
  ctx_->out()->finished.push_back(
      {token, 0,
       Status::Stopped("membership change cancelled, but it was chosen at instance " +
                       std::to_string(it->second.instance) + " and takes effect at instance " +
                       std::to_string(it->second.active_from))});
  waiting_.erase(it);
  return true;
}

Status Reconfig::Envelope(const MembershipChange& change, std::string* envelope) {
  Status s = ValidateMembers(change.members);
  if (!s.ok()) return s;
  const Membership& m = ctx_->membership();
  const uint64_t alpha = ctx_->activation_distance();
  MembershipChange c = change;
  // 0: the group's (a caller need not know it).
  if (c.activation_distance == 0) c.activation_distance = alpha;
  if (c.activation_distance != alpha) {
    return Status::InvalidArgument("ProposeMembership: activation distance " +
                                   std::to_string(change.activation_distance) +
                                   " is not the group's " + std::to_string(alpha));
  }
  if (!m.known()) {
    return Status::InvalidArgument("ProposeMembership: this node knows no membership yet");
  }
  *envelope = EncodeSystemValue(ctx_->options().self, ctx_->NewProposalId(),
                                SystemValueKind::kMembershipChange, EncodeMembershipChange(c));
  return Status::OK();
}

bool Reconfig::Admit(const PaxosMsg& msg) {
  switch (msg.type()) {
    case ASK_LEARN:
    case CONFIRM_LEARN:
    case LEARN_VALUES:
    case CHOSEN:
    case NOT_MEMBER:
      // A chosen value is a fact whoever tells it (no Byzantine nodes), and
      // a removed or joining node must be able to learn.
    case RELEASE:
      // A master gives up the grants it holds (Master::OnRelease acts only
      // for the holder and ballot of the live grant): a master whose removal
      // is in force sends it once it is no member any more.
    case FILL:
      // A removed node asks a voter to decide the instance of a slot it
      // can no longer drive (Learner::OnTick); it only makes the voter
      // propose noop fillers where nothing is chosen, safe whoever asks.
      return msg.from() != 0;
    default:
      break;
  }
  if (ctx_->IsCurrentMember(msg.from())) return true;
  ctx_->stats()->non_member_messages++;
  // Header only: its chosen_end lets the sender catch up and learn why.
  PaxosMsg reply;
  reply.set_type(NOT_MEMBER);
  reply.set_instance(msg.instance());
  ctx_->Send(msg.from(), &reply);
  ctx_->stats()->not_member_sent++;
  return false;
}

void Reconfig::NotePeer(const PaxosMsg& msg) {
  const uint64_t id = msg.from();
  if (id == ctx_->options().self) return;
  auto it = peers_.find(id);
  if (it == peers_.end()) {
    if (peers_.size() >= kMaxPeers) {
      auto oldest = peers_.begin();
      for (auto p = peers_.begin(); p != peers_.end(); ++p) {
        if (p->second.last_heard_ms < oldest->second.last_heard_ms) oldest = p;
      }
      peers_.erase(oldest);
    }
    it = peers_.emplace(id, Core::PeerState()).first;
    it->second.id = id;
  }
  it->second.last_heard_ms = ctx_->now();
  it->second.chosen_end = msg.chosen_end();
  if (msg.incarnation() != 0) it->second.incarnation = msg.incarnation();
}

std::vector<Core::PeerState> Reconfig::peers() const {
  std::vector<Core::PeerState> v;
  v.reserve(peers_.size());
  for (const auto& kv : peers_) v.push_back(kv.second);
  return v;
}

void Reconfig::OnTrim(uint64_t below) {
  if (!ctx_->membership().known()) return;
  ctx_->mutable_membership()->ForgetBelow(below);
  ctx_->PersistMembership();
}

void Reconfig::Install(uint64_t instance, const Membership* membership) {
  if (membership == nullptr || !membership->known()) return;
  // The checkpoint's maker may have joined after At(instance) was made: it
  // does not know it, and without it this node could not run phase 1 from
  // `instance` (CanPrepareFrom). Ours may: keep it.
  Membership m = *membership;
  if (!ctx_->Mutated(TestMutation::kInstallDropsOlder)) {
    m.PrependOlder(ctx_->membership(), instance);
  }
  *ctx_->mutable_membership() = std::move(m);
  ctx_->PersistMembership();
  was_member_ = was_member_ || NamesSelf(ctx_->membership(), ctx_->options().self);
}

MemberRole Reconfig::role() const {
  const Membership& m = ctx_->membership();
  const CoreOptions& o = ctx_->options();
  if (!m.known()) return MemberRole::kNotMember;
  const Config& latest = m.Latest();
  const Member* me = latest.Find(o.self);
  if (me != nullptr) {
    if (!me->voter) return MemberRole::kFollower;
    return latest.IsEligibleVoter(o.self, o.incarnation, o.joined) ? MemberRole::kVoter
                                                                   : MemberRole::kNotEligible;
  }
  return was_member_ ? MemberRole::kRemoved : MemberRole::kNotMember;
}

}  // namespace paxos
}  // namespace chorus
