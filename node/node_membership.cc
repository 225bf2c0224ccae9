// NodeImpl's membership calls (chorus/node.h), the membership frames of the
// control channel, and the address book the transport is told.
//
// A call goes to the group's master as this node knows it: posted to its
// own loop when that is itself, else sent as a REQUEST (membership_wire.h)
// and answered by a REPLY. The master runs it (MembershipChanger). A
// NotMaster answer (the master moved, or hands its mastership over before
// it removes itself) makes the call look for the master again and retry
// there, until its deadline (Options::membership_timeout_ms).
#include <chrono>
#include <random>
#include <thread>

#include "node/core_options.h"
#include "node/membership_wire.h"
#include "node/node_impl.h"
#include "utils/mutex.h"

namespace chorus {

const char* MemberRoleText(MemberRole role) {
  switch (role) {
    case MemberRole::kVoter:
      return "voter";
    case MemberRole::kFollower:
      return "follower";
    case MemberRole::kRemoved:
      return "removed";
    case MemberRole::kJoining:
      return "joining";
    case MemberRole::kNotEligible:
      return "not_eligible";
  }
  return "unknown";
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// How often a waiting caller sends its request again (the same request id:
// the master attaches it to the running change), and polls for a master.
constexpr auto kResendEvery = std::chrono::milliseconds(1000);
constexpr auto kPollEvery = std::chrono::milliseconds(20);
// A master's answer may come this long after the call's own deadline (the
// master answers Timeout at that deadline; the frame takes a moment).
constexpr auto kReplyGrace = std::chrono::milliseconds(2000);

int MsUntil(SteadyClock::time_point when) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(when - SteadyClock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

uint64_t RandomRequestId() {
  static thread_local std::mt19937_64 rng{std::random_device{}() ^
                                          static_cast<uint64_t>(SteadyClock::now().time_since_epoch().count())};
  uint64_t id = 0;
  while (id == 0) id = rng();
  return id;
}

}  // namespace

// A remote call waiting for its REPLY. `mu` guards the rest.
struct NodeImpl::RemoteCall {
  Mutex mu;
  CondVar cv;
  uint64_t master = 0;  // the node asked; a reply from another is ignored
  bool done GUARDED_BY(mu) = false;
  Status status GUARDED_BY(mu);
};

void NodeImpl::PushPeers() {
  Status s = transport_->SetPeers(address_book_->Peers());
  if (s.IsNotSupported()) {
    // An application's transport that keeps its own book: membership changes
    // work as long as it knows every member.
    if (!set_peers_unsupported_.exchange(true)) {
      CHORUS_LOG(&logger_, kWarning,
                 "the transport does not support SetPeers (%s): it must know every member itself",
                 s.ToString().c_str());
    }
  } else if (!s.ok()) {
    CHORUS_LOG(&logger_, kWarning, "transport SetPeers: %s", s.ToString().c_str());
  }
}

void NodeImpl::OnMembershipFrame(uint64_t from, uint32_t group, std::string bytes) {
  MembershipMessage msg;
  Status s = DecodeMembershipMessage(bytes.data(), bytes.size(), &msg);
  if (!s.ok() || msg.cluster_id != options_.cluster_id || msg.from != from ||
      msg.group != group) {
    misrouted_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (msg.type == kMembershipRequestType) {
    Group* g = FindGroup(group);
    if (g == nullptr) {
      misrouted_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    g->PostMembershipRequest(from, std::move(bytes));
    return;
  }
  std::shared_ptr<RemoteCall> call;
  {
    MutexLock lock(&remote_mu_);
    auto it = remote_calls_.find(msg.request_id);
    if (it != remote_calls_.end()) call = it->second;
  }
  if (!call || call->master != from) return;  // a late or stray reply
  {
    MutexLock lock(&call->mu);
    call->done = true;
    call->status = msg.status;
  }
  call->cv.SignalAll();
}

Status NodeImpl::RemoteMembershipCall(Group* g, uint64_t master, const MembershipMessage& request,
                                      SteadyClock::time_point deadline, bool* unanswered) {
  auto call = std::make_shared<RemoteCall>();
  call->master = master;
  {
    MutexLock lock(&remote_mu_);
    remote_calls_[request.request_id] = call;
  }
  struct Unregister {
    NodeImpl* node;
    uint64_t id;
    ~Unregister() {
      MutexLock lock(&node->remote_mu_);
      node->remote_calls_.erase(id);
    }
  } unregister{this, request.request_id};
  const std::string frame = EncodeMembershipMessage(request);
  *unanswered = true;
  while (true) {
    Status s = transport_->Send(master, frame);
    if (!s.ok()) CHORUS_LOG(&logger_, kDebug, "membership request: %s", s.ToString().c_str());
    const auto resend = std::min(SteadyClock::now() + kResendEvery, deadline + kReplyGrace);
    MutexLock lock(&call->mu);
    // Stop() is seen within a poll period.
    while (!call->done && SteadyClock::now() < resend && !stopping_.load(std::memory_order_seq_cst)) {
      call->cv.WaitFor(&call->mu, std::chrono::milliseconds(100));
    }
    if (call->done) {
      *unanswered = false;
      return call->status;
    }
    if (stopping_.load(std::memory_order_seq_cst)) return Status::Stopped("the node is stopping");
    if (SteadyClock::now() >= deadline + kReplyGrace) {
      return Status::Timeout("group " + std::to_string(request.group) +
                             ": no answer from the master (node " + std::to_string(master) +
                             ") by the deadline (membership_timeout_ms)");
    }
    const MasterSnapshot m = g->master();
    if (m.node != master) {
      return Status::NotMaster("group " + std::to_string(request.group) + ": the master changed");
    }
  }
}

Status NodeImpl::RunMembershipCall(uint32_t group, MembershipOp op, uint64_t node_id,
                            const NodeInfo* node) {
  ActiveCall call(this);
  Group* g = nullptr;
  Status s = MasterGroup(call, group, /*refuse_when_stopping=*/true, &g);
  if (!s.ok()) return s;
  MembershipMessage request;
  request.type = kMembershipRequestType;
  request.cluster_id = options_.cluster_id;
  request.group = group;
  request.from = options_.self.id();
  request.request_id = RandomRequestId();
  request.op = op;
  request.node_id = node_id;
  if (node != nullptr) {
    Status valid = node->Validate();
    if (!valid.ok()) {
      return Status::InvalidArgument("group " + std::to_string(group) + ": bad address: " +
                                     valid.message());
    }
    request.address = MemberAddress(*node);
  }
  const auto began = SteadyClock::now();
  const auto deadline = began + std::chrono::milliseconds(options_.membership_timeout_ms);
  // With no master known for this long (elections take about one election
  // timeout, a few when they duel), the caller hears Busy.
  const auto no_master_until =
      std::min(deadline, began + std::chrono::milliseconds(3 * (options_.election_timeout_ms +
                                                                 options_.election_jitter_ms) +
                                                            options_.lease_ms));
  Status last;
  bool maybe_acted = false;  // a master may have made (part of) the change already
  while (true) {
    if (call.stopping()) return Status::Stopped("the node is stopping");
    if (SteadyClock::now() >= deadline) {
      return Status::Timeout("group " + std::to_string(group) + ": " + MembershipOpName(op) +
                             " not done by the deadline (membership_timeout_ms)" +
                             (last.ok() ? std::string() : ": " + last.message()));
    }
    const MasterSnapshot m = g->master();
    if (m.node == 0) {
      if (SteadyClock::now() >= no_master_until && last.ok()) {
        return Status::Busy("group " + std::to_string(group) + ": no master known; retry");
      }
      std::this_thread::sleep_for(kPollEvery);
      continue;
    }
    request.retry = maybe_acted;
    request.timeout_ms = static_cast<uint32_t>(MsUntil(deadline));
    bool unanswered = false;
    if (m.node == options_.self.id()) {
      s = g->MembershipCall(request, static_cast<int>(request.timeout_ms));
    } else {
      s = RemoteMembershipCall(g, m.node, request, deadline, &unanswered);
    }
    if (!s.IsNotMaster()) return s;
    // The master moved: ask the new one. It treats a change that holds
    // already as done when the old master may have made it.
    if (unanswered || s.message().find("stopped being the master") != std::string::npos) {
      maybe_acted = true;
    }
    last = s;
    std::this_thread::sleep_for(kPollEvery);
  }
}

Status NodeImpl::GetMembership(uint32_t group, MembershipInfo* info) const {
  ActiveCall call(const_cast<NodeImpl*>(this));
  if (call.destroying()) return Status::Stopped("the node is being destroyed");
  Group* g = FindGroup(group);
  if (g == nullptr) return Status::InvalidArgument("no group " + std::to_string(group));
  const MembershipSnapshot snap = g->membership();
  if (info != nullptr) {
    *info = snap.info;
    info->pending = snap.known && snap.info.active_from > g->now_instance_id();
  }
  return Status::OK();
}

Status NodeImpl::AddMember(uint32_t group, const NodeInfo& node) {
  return RunMembershipCall(group, MembershipOp::kAddMember, 0, &node);
}

Status NodeImpl::AddFollower(uint32_t group, const NodeInfo& node) {
  return RunMembershipCall(group, MembershipOp::kAddFollower, 0, &node);
}

Status NodeImpl::PromoteFollower(uint32_t group, uint64_t node_id) {
  return RunMembershipCall(group, MembershipOp::kPromote, node_id, nullptr);
}

Status NodeImpl::RemoveMember(uint32_t group, uint64_t node_id) {
  return RunMembershipCall(group, MembershipOp::kRemove, node_id, nullptr);
}

Status NodeImpl::ChangeMember(uint32_t group, uint64_t old_node_id, const NodeInfo& new_node) {
  return RunMembershipCall(group, MembershipOp::kChange, old_node_id, &new_node);
}

}  // namespace chorus
