// Core and CoreContext: the membership queries every role shares
// (membership.h M2..M4) and Core's membership API.
#include <algorithm>

#include "paxos/core.h"
#include "paxos/learner.h"
#include "paxos/master.h"
#include "paxos/proposer.h"
#include "paxos/reconfig.h"
#include "paxos/value.h"

namespace chorus {
namespace paxos {

// ---- CoreContext ----

void CoreContext::PersistMembership() {
  PersistVariable(kMembershipVariable, membership_.Encode());
  membership_changed_ = true;
}

uint64_t CoreContext::activation_distance() const {
  return membership_.known() ? membership_.Latest().activation_distance
                             : options_.activation_distance;
}

uint64_t CoreContext::ProposeDistance() const {
  return std::min<uint64_t>(options_.window, activation_distance());
}

uint64_t CoreContext::NewProposalId() { return rng_.Next() & ~kSystemValueBit; }

bool CoreContext::SelfCanVote() const {
  const uint64_t self = options_.self;
  for (const Config* c : membership_.Governing(learner_->chosen_end(), UINT64_MAX)) {
    if (c->IsEligibleVoter(self, options_.incarnation, options_.joined)) return true;
    // The mutation lets a follower's acceptor vote too, so that counting its
    // votes (the proposer's half of the mutation) has votes to count.
    if (Mutated(TestMutation::kFollowerVotes) && c->Contains(self)) return true;
  }
  return false;
}

bool CoreContext::MayAccept(uint64_t instance) const {
  if (!SelfCanVote()) return false;
  const Membership& m = membership_;
  if (m.configs().front().active_from > instance) return true;  // not known here
  const Config& c = m.At(instance);
  if (Mutated(TestMutation::kFollowerVotes)) return c.Contains(options_.self);
  return c.IsEligibleVoter(options_.self, options_.incarnation, options_.joined);
}

bool CoreContext::MayPromise(uint64_t /*from*/) const { return SelfCanVote(); }

bool CoreContext::CanPrepareFrom(uint64_t from) const {
  return SelfCanVote() && membership_.known() &&
         membership_.configs().front().active_from <= from;
}

bool CoreContext::SelfEligibleInLatest() const {
  return membership_.known() &&
         membership_.Latest().IsEligibleVoter(options_.self, options_.incarnation,
                                              options_.joined);
}

bool CoreContext::IsCurrentMember(uint64_t id) const {
  for (const Config* c : membership_.Governing(learner_->chosen_end(), UINT64_MAX)) {
    if (c->Contains(id)) return true;
  }
  return false;
}

std::vector<const Config*> CoreContext::QuorumConfigs(uint64_t from, uint64_t to,
                                                      bool* complete) const {
  *complete = membership_.known() && !membership_.configs().empty() &&
              membership_.configs().front().active_from <= from;
  if (Mutated(TestMutation::kQuorumOfCurrentOnly)) {
    *complete = membership_.known();
    return {&membership_.At(learner_->chosen_end())};
  }
  return membership_.Governing(from, to);
}

namespace {
// A majority of `c`'s voters, each vote counted as its sender's data dir
// (M5). kFollowerVotes: any responder counts, as if every member were a
// voter.
bool Counts(const Config& c, const Votes& votes, bool any) {
  if (any) return c.VoterCount() > 0 && votes.size() >= c.Majority();
  size_t n = 0;
  for (const auto& kv : votes) {
    n += c.IsEligibleVoter(kv.first, kv.second.incarnation, kv.second.joined) ? 1 : 0;
  }
  return c.VoterCount() > 0 && n >= c.Majority();
}
}  // namespace

VoterId VoterOf(const PaxosMsg& msg) {
  VoterId v;
  v.incarnation = msg.incarnation();
  v.joined = msg.joined();
  return v;
}

bool CoreContext::Phase2Quorum(uint64_t instance, const Votes& ids) const {
  const bool any = Mutated(TestMutation::kFollowerVotes);
  if (Mutated(TestMutation::kQuorumOfCurrentOnly)) {
    return Counts(membership_.At(learner_->chosen_end()), ids, any);
  }
  return Counts(membership_.At(instance), ids, any);
}

bool CoreContext::QuorumOver(uint64_t from, uint64_t to, const Votes& ids) const {
  return QuorumEnd(from, to, ids) >= to;
}

uint64_t CoreContext::QuorumEnd(uint64_t from, uint64_t to, const Votes& ids) const {
  if (from >= to) return to;
  bool complete = false;
  const std::vector<const Config*> configs = QuorumConfigs(from, to, &complete);
  if (!complete || configs.empty()) return from;
  const bool any = Mutated(TestMutation::kFollowerVotes);
  if (Mutated(TestMutation::kQuorumOfCurrentOnly)) {
    return Counts(*configs.front(), ids, any) ? to : from;
  }
  for (const Config* c : configs) {
    if (!Counts(*c, ids, any)) return std::max(from, c->active_from);
  }
  return to;
}

bool CoreContext::QuorumImpossible(uint64_t from, uint64_t to,
                                   const std::set<uint64_t>& refused) const {
  bool complete = false;
  for (const Config* c : QuorumConfigs(from, to, &complete)) {
    if (c->MajorityImpossible(refused)) return true;
  }
  return !complete;
}

// ---- Core ----

Status Core::ProposeMembership(uint64_t token, const MembershipChange& change, Outputs* out) {
  Begin(out);
  Status s;
  std::string envelope;
  if (learner_->halted()) {
    s = Status::Stopped("paxos group halted");
  } else {
    s = reconfig_->Envelope(change, &envelope);
  }
  if (s.ok()) s = Route(token, envelope, /*system=*/true);
  Finish();
  return s;
}

const Membership& Core::membership() const { return ctx_.membership(); }

Membership Core::MembershipAt(uint64_t instance) const {
  return ctx_.membership().Before(instance);
}

MemberRole Core::role() const { return reconfig_->role(); }

std::vector<Core::PeerState> Core::peers() const { return reconfig_->peers(); }

}  // namespace paxos
}  // namespace chorus
