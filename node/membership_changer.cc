#include "node/membership_changer.h"

#include <algorithm>

#include "node/core_options.h"
#include "node/event_queue.h"

namespace chorus {

namespace {

// How often a running change checks catch-up, its deadline and mastership.
constexpr uint64_t kTickMs = 50;
// Answers kept for repeats of a call that already ended.
constexpr size_t kDoneKept = 32;

std::string GroupText(uint32_t group) { return "group " + std::to_string(group); }

std::vector<paxos::Member> Sorted(std::vector<paxos::Member> members) {
  std::sort(members.begin(), members.end(),
            [](const paxos::Member& a, const paxos::Member& b) { return a.id < b.id; });
  return members;
}

const paxos::Core::PeerState* FindPeer(const std::vector<paxos::Core::PeerState>& peers,
                                       uint64_t id) {
  for (const auto& p : peers) {
    if (p.id == id) return &p;
  }
  return nullptr;
}

}  // namespace

MembershipChanger::MembershipChanger(const Options* options, uint32_t group, Logger* logger,
                                     GroupTimers* timers, SendFn send)
    : options_(options), group_(group), logger_(logger), timers_(timers), send_(std::move(send)) {}

std::string MembershipChanger::Name(const Op& op) const {
  std::string text = GroupText(group_) + " " + MembershipOpName(op.request.op) + " of node " +
                     std::to_string(op.target);
  if (op.old != 0) text += " (replacing node " + std::to_string(op.old) + ")";
  return text;
}

size_t MembershipChanger::LiveVoters(const paxos::Core& core, const paxos::Config& config,
                                     uint64_t except, uint64_t now_ms) const {
  const std::vector<paxos::Core::PeerState> peers = core.peers();
  const uint64_t live_ms = static_cast<uint64_t>(options_->member_live_ms);
  size_t live = 0;
  for (const paxos::Member& m : config.members) {
    if (!m.voter || m.id == except) continue;
    if (m.id == options_->self.id()) {
      ++live;
      continue;
    }
    const paxos::Core::PeerState* p = FindPeer(peers, m.id);
    if (p != nullptr && p->last_heard_ms + live_ms >= now_ms) ++live;
  }
  return live;
}

void MembershipChanger::OnRequest(paxos::Core* core, uint64_t now_ms,
                                  const MembershipMessage& request,
                                  std::shared_ptr<CallWaiter> local, paxos::Outputs* step) {
  auto answer = [&](const Status& s) {
    if (local) {
      AnswerCall(local.get(), s);
    } else {
      MembershipMessage reply;
      reply.type = kMembershipReplyType;
      reply.cluster_id = options_->cluster_id;
      reply.group = group_;
      reply.from = options_->self.id();
      reply.request_id = request.request_id;
      reply.status = s;
      send_(request.from, EncodeMembershipMessage(reply));
    }
  };
  for (const Done& d : done_) {
    if (d.origin == request.from && d.request_id == request.request_id) {
      answer(d.status);  // a repeat of a call that ended: its answer was lost
      return;
    }
  }
  if (op_ && op_->request.from == request.from && op_->request.request_id == request.request_id) {
    if (local) op_->local = std::move(local);  // the same call, asking again
    return;
  }
  const paxos::MasterView view = core->master();
  if (view.node != options_->self.id() || !view.self_ready) {
    // The caller looks for the master again and retries there.
    answer(Status::NotMaster(GroupText(group_) + ": node " +
                             std::to_string(options_->self.id()) +
                             " is not the ready master; membership changes go to the master"));
    return;
  }
  if (op_) {
    answer(Status::Busy(GroupText(group_) + ": another membership change is in progress (" +
                        Name(*op_) + "); retry once it ended"));
    return;
  }
  auto op = std::make_unique<Op>();
  op->request = request;
  op->local = local;  // (a copy: `answer` above still needs it)
  op->deadline_ms = now_ms + request.timeout_ms;
  bool done = false;
  Status s = Plan(core, now_ms, op.get(), &done, step);
  if (!s.ok() || done) {
    answer(s);
    return;
  }
  op_ = std::move(op);
  CHORUS_LOG(logger_, kInfo, "%s: started (requested by node %llu)", Name(*op_).c_str(),
             static_cast<unsigned long long>(request.from));
  Advance(core, now_ms, step);
  if (op_) ArmTick();
}

Status MembershipChanger::Plan(paxos::Core* core, uint64_t now_ms, Op* op, bool* done,
                               paxos::Outputs* step) {
  const MembershipMessage& r = op->request;
  const paxos::Membership& membership = core->membership();
  if (!membership.known()) return Status::Busy(GroupText(group_) + ": no membership known yet");
  const paxos::Config& latest = membership.Latest();
  const bool adds = r.op == MembershipOp::kAddFollower || r.op == MembershipOp::kAddMember ||
                    r.op == MembershipOp::kChange;
  if (adds) {
    Status s = NodeInfo::Parse(r.address, &op->node);
    if (!s.ok()) return Status::InvalidArgument(GroupText(group_) + ": bad address: " + s.message());
    if (op->node.id() == 0) {
      return Status::InvalidArgument(GroupText(group_) + ": address '" + r.address +
                                     "' names no node id");
    }
    op->target = op->node.id();
  } else {
    op->target = r.node_id;
  }
  if (r.op == MembershipOp::kChange) op->old = r.node_id;
  const std::string who = GroupText(group_) + ": node " + std::to_string(op->target);
  const paxos::Member* member = latest.Find(op->target);
  // A call sent again to a new master may find its change made already.
  auto holds = [&](const std::string& why) {
    if (r.retry) {
      *done = true;
      return Status::OK();
    }
    return Status::InvalidArgument(why);
  };
  switch (r.op) {
    case MembershipOp::kAddFollower:
      if (member != nullptr) return holds(who + " is already a member");
      op->stage = Stage::kFollower;
      return Status::OK();
    case MembershipOp::kPromote:
      if (member == nullptr) return Status::InvalidArgument(who + " is not a member");
      if (member->voter) return holds(who + " is already a voter");
      op->stage = Stage::kCatchUp;
      return Status::OK();
    case MembershipOp::kAddMember:
      if (member != nullptr && member->voter) return holds(who + " is already a voter");
      op->stage = member != nullptr ? Stage::kCatchUp : Stage::kFollower;
      return Status::OK();
    case MembershipOp::kChange: {
      const paxos::Member* old = latest.Find(op->old);
      if (old == nullptr && member != nullptr && member->voter) {
        return holds(who + " replaced node " + std::to_string(op->old) + " already");
      }
      if (old == nullptr || !old->voter) {
        return Status::InvalidArgument(GroupText(group_) + ": node " + std::to_string(op->old) +
                                       " is not a voter");
      }
      if (op->old == op->target) {
        return Status::InvalidArgument(who + " cannot replace itself");
      }
      if (member != nullptr && member->voter) return Status::InvalidArgument(who + " is already a voter");
      break;
    }
    case MembershipOp::kRemove:
      if (member == nullptr) return holds(who + " is not a member");
      if (!member->voter) {
        op->stage = Stage::kFinal;
        return Status::OK();
      }
      break;
  }
  // A voter leaves (RemoveMember, ChangeMember's old one).
  const uint64_t leaving = r.op == MembershipOp::kChange ? op->old : op->target;
  if (r.op == MembershipOp::kRemove) {
    const size_t left = latest.VoterCount() - 1;
    if (left == 0) return Status::InvalidArgument(who + ": removing it would leave no voter");
    const size_t live = LiveVoters(*core, latest, leaving, now_ms);
    const size_t majority = left / 2 + 1;
    if (live < majority) {
      return Status::Busy(GroupText(group_) + ": unsafe: removing node " +
                          std::to_string(leaving) + " would leave " + std::to_string(left) +
                          " voters of which only " + std::to_string(live) +
                          " were heard from within member_live_ms (" +
                          std::to_string(options_->member_live_ms) + " ms), fewer than their majority " +
                          std::to_string(majority));
    }
  }
  if (leaving == options_->self.id()) {
    // A master does not remove itself: it hands the mastership to the live
    // voter furthest ahead, and the caller retries against that one.
    const uint64_t live_ms = static_cast<uint64_t>(options_->member_live_ms);
    uint64_t best = 0;
    uint64_t best_end = 0;
    for (const paxos::Core::PeerState& p : core->peers()) {
      if (p.id == leaving || !latest.IsVoter(p.id) || p.last_heard_ms + live_ms < now_ms) continue;
      if (best == 0 || p.chosen_end > best_end) {
        best = p.id;
        best_end = p.chosen_end;
      }
    }
    if (best == 0) {
      return Status::Busy(GroupText(group_) + ": unsafe: no other live voter to hand the "
                          "mastership to before this master leaves");
    }
    Status s = core->TransferMaster(best, step);
    if (!s.ok()) return s.Annotate(GroupText(group_) + ": handing the mastership over");
    CHORUS_LOG(logger_, kInfo, "%s: this master leaves: mastership handed to node %llu first",
               GroupText(group_).c_str(), static_cast<unsigned long long>(best));
    return Status::NotMaster(GroupText(group_) + ": the master hands its mastership to node " +
                             std::to_string(best) + " before it is removed; retry there");
  }
  if (r.op == MembershipOp::kChange) {
    op->stage = member != nullptr ? Stage::kCatchUp : Stage::kFollower;
  } else {
    op->stage = Stage::kFinal;
  }
  return Status::OK();
}

void MembershipChanger::Advance(paxos::Core* core, uint64_t now_ms, paxos::Outputs* step) {
  if (!op_) return;
  Op& op = *op_;
  const paxos::MasterView view = core->master();
  const bool master = view.node == options_->self.id() && view.self_ready;
  if (op.token != 0) {
    if (now_ms >= op.deadline_ms) {
      core->Cancel(op.token, step);  // it may still be chosen: GetMembership tells
      Reply(Status::Timeout(Name(op) + ": the change was not in force by the deadline "
                            "(membership_timeout_ms); it may still be chosen"));
    }
    return;  // the core ends it
  }
  if (!master) {
    Reply(Status::NotMaster(Name(op) + ": this node stopped being the master; retry there"));
    return;
  }
  const paxos::Config& latest = core->membership().Latest();
  const std::vector<paxos::Core::PeerState> peers = core->peers();
  const paxos::Core::PeerState* peer = FindPeer(peers, op.target);
  switch (op.stage) {
    case Stage::kFollower: {
      if (latest.Contains(op.target)) {
        op.stage = Stage::kCatchUp;  // made meanwhile (a repeat on a new master)
        Advance(core, now_ms, step);
        return;
      }
      std::vector<paxos::Member> members = latest.members;
      paxos::Member m;
      m.id = op.target;
      m.voter = false;
      m.address = MemberAddress(op.node);
      m.incarnation = peer != nullptr ? peer->incarnation : 0;
      members.push_back(m);
      Propose(core, std::move(members), step);
      return;
    }
    case Stage::kCatchUp: {
      const paxos::Member* m = latest.Find(op.target);
      if (m == nullptr || m->voter) {
        Reply(Status::Conflict(Name(op) + ": the node's membership changed meanwhile; retry"));
        return;
      }
      const bool heard = peer != nullptr && peer->incarnation != 0 &&
                         peer->last_heard_ms + static_cast<uint64_t>(options_->member_live_ms) >= now_ms;
      const bool caught_up =
          heard && peer->chosen_end + options_->catch_up_margin_instances >= core->chosen_end();
      if (!caught_up) {
        if (now_ms >= op.deadline_ms) {
          const std::string where =
              peer == nullptr ? "it was never heard from"
                              : "its chosen end " + std::to_string(peer->chosen_end) +
                                    ", the master's " + std::to_string(core->chosen_end());
          Reply(Status::Timeout(Name(op) + ": the node did not catch up by the deadline (" + where +
                                ")"));
        }
        return;  // checked again at the next tick
      }
      std::vector<paxos::Member> members;
      for (paxos::Member x : latest.members) {
        if (x.id == op.old) continue;  // ChangeMember: the old one leaves in the same change
        if (x.id == op.target) {
          x.voter = true;
          x.incarnation = peer->incarnation;  // M5: it votes under this data dir only
        }
        members.push_back(x);
      }
      op.stage = Stage::kFinal;
      Propose(core, std::move(members), step);
      return;
    }
    case Stage::kFinal: {
      if (now_ms >= op.deadline_ms) {
        Reply(Status::Timeout(Name(op) + ": not started by the deadline"));
        return;
      }
      std::vector<paxos::Member> members;
      for (const paxos::Member& x : latest.members) {
        if (x.id != op.target) members.push_back(x);
      }
      Propose(core, std::move(members), step);
      return;
    }
  }
}

void MembershipChanger::Propose(paxos::Core* core, std::vector<paxos::Member> members,
                                paxos::Outputs* step) {
  const paxos::Config& latest = core->membership().Latest();
  paxos::MembershipChange change;
  change.base_version = latest.version;
  change.members = Sorted(std::move(members));
  change.activation_distance = latest.activation_distance;
  const uint64_t token = kTokenBit | next_token_++;
  Status s = core->ProposeMembership(token, change, step);
  if (!s.ok()) {
    Reply(s.Annotate(Name(*op_)));
    return;
  }
  op_->token = token;
}

void MembershipChanger::OnFinished(paxos::Core* core, uint64_t now_ms,
                                   const paxos::ProposalResult& result, paxos::Outputs* step) {
  if (!op_ || op_->token != result.token) return;  // one that timed out and was answered
  op_->token = 0;
  if (result.status.IsConflict()) {
    Reply(Status::Conflict(Name(*op_) + ": a concurrent membership change was chosen first; retry"));
    return;
  }
  if (!result.status.ok()) {
    Reply(result.status.Annotate(Name(*op_)));
    return;
  }
  if (op_->stage == Stage::kFollower &&
      (op_->request.op == MembershipOp::kAddMember || op_->request.op == MembershipOp::kChange)) {
    op_->stage = Stage::kCatchUp;
    Advance(core, now_ms, step);
    return;
  }
  if (op_->stage != Stage::kFinal && op_->request.op != MembershipOp::kAddFollower) return;
  Reply(Status::OK());
}

void MembershipChanger::OnTick(paxos::Core* core, uint64_t now_ms, paxos::Outputs* step) {
  tick_timer_ = 0;
  Advance(core, now_ms, step);
  if (op_) ArmTick();
}

void MembershipChanger::ArmTick() {
  if (tick_timer_ != 0) return;
  Event tick;
  tick.kind = Event::Kind::kMembershipTick;
  tick_timer_ = timers_->Start(kTickMs, std::move(tick));
}

void MembershipChanger::Reply(const Status& status) {
  if (!op_) return;
  const MembershipMessage& r = op_->request;
  CHORUS_LOG(logger_, kInfo, "%s: %s", Name(*op_).c_str(), status.ToString().c_str());
  if (op_->local) {
    AnswerCall(op_->local.get(), status);
  } else {
    MembershipMessage reply;
    reply.type = kMembershipReplyType;
    reply.cluster_id = options_->cluster_id;
    reply.group = group_;
    reply.from = options_->self.id();
    reply.request_id = r.request_id;
    reply.status = status;
    send_(r.from, EncodeMembershipMessage(reply));
  }
  // A NotMaster is no answer to keep: the caller asks the master again,
  // which may be this node once more.
  if (!status.IsNotMaster()) {
    done_.push_back(Done{r.from, r.request_id, status});
    if (done_.size() > kDoneKept) done_.pop_front();
  }
  if (tick_timer_ != 0) {
    timers_->Cancel(tick_timer_);
    tick_timer_ = 0;
  }
  op_.reset();
}

void MembershipChanger::FailAll(const Status& why) {
  // A remote caller hears it too (after Stop the send fails harmlessly).
  Reply(why);
}

}  // namespace chorus
