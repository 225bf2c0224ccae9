// MembershipChanger: the master's side of the membership calls
// (Node::AddFollower, PromoteFollower, AddMember, RemoveMember,
// ChangeMember). The caller's node sends a request (membership_wire.h) to
// the node it knows as master, or posts it to its own loop when that is
// itself; this class runs it on the master's loop, ONE change at a time per
// group (a second request gets Busy; a repeat of the running one, same
// origin and request id, attaches to it), and replies once:
//   AddFollower      one change: the node joins Latest() as a follower;
//   PromoteFollower  waits until the follower was heard from within
//                    member_live_ms, reported its incarnation, and its
//                    chosen end (Core::peers()) is within
//                    catch_up_margin_instances of the master's, then one
//                    change makes it a voter under that incarnation (M5);
//   AddMember        AddFollower (unless it is a follower already), then
//                    PromoteFollower;
//   ChangeMember     AddFollower(new) (unless it is one already), the same
//                    catch-up wait, then ONE change: new becomes a voter and
//                    old leaves (the number of voters never changes);
//   RemoveMember     a follower: one change. A voter: refused (Busy
//                    "unsafe: ...") unless the voters left that this master
//                    heard from within member_live_ms (itself included) are
//                    a majority of the voters left. Removing this master
//                    itself: the mastership goes to the live voter that is
//                    furthest ahead (Core::TransferMaster) and the caller is
//                    answered NotMaster, so it retries against the new
//                    master (inside its call).
// Each change is proposed with Core::ProposeMembership under a token with
// bit 63 set (Admission's tokens never have it) and the call ends when the
// core ends that token: OK once the change is in force. A request whose
// time (its timeout_ms) runs out is answered Timeout, its proposal
// cancelled (it may still be chosen: GetMembership tells).
//
// Thread safety: none; the group's loop only (FailAll: Stop, once the loop
// is joined).
#ifndef CHORUS_NODE_MEMBERSHIP_CHANGER_H_
#define CHORUS_NODE_MEMBERSHIP_CHANGER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/options.h"
#include "chorus/transport.h"
#include "node/group_timers.h"
#include "node/membership_wire.h"
#include "node/proposal.h"
#include "paxos/core.h"
#include "utils/logging.h"

namespace chorus {

class MembershipChanger {
 public:
  // Sends a reply frame to a remote caller.
  using SendFn = std::function<void(uint64_t to, std::string frame)>;

  static constexpr uint64_t kTokenBit = uint64_t{1} << 63;
  static bool IsToken(uint64_t token) { return (token & kTokenBit) != 0; }

  // Everything borrowed outlives this object.
  MembershipChanger(const Options* options, uint32_t group, Logger* logger, GroupTimers* timers,
                    SendFn send);

  MembershipChanger(const MembershipChanger&) = delete;
  MembershipChanger& operator=(const MembershipChanger&) = delete;

  // A request from `origin` (this node for a local call, whose waiter is
  // `local`; nullptr for a remote one). `now_ms`: the core's clock.
  void OnRequest(paxos::Core* core, uint64_t now_ms, const MembershipMessage& request,
                 std::shared_ptr<CallWaiter> local, paxos::Outputs* step);
  // The core ended a membership token (IsToken).
  void OnFinished(paxos::Core* core, uint64_t now_ms, const paxos::ProposalResult& result,
                  paxos::Outputs* step);
  // The periodic check while a change runs (catch-up, deadline, mastership).
  void OnTick(paxos::Core* core, uint64_t now_ms, paxos::Outputs* step);
  // Answers the running change with `why` (Stop, Halt).
  void FailAll(const Status& why);

  bool running() const { return op_ != nullptr; }

 private:
  enum class Stage { kFollower, kCatchUp, kFinal };
  struct Op {
    MembershipMessage request;
    std::shared_ptr<CallWaiter> local;
    uint64_t target = 0;  // the node added, promoted or removed
    uint64_t old = 0;     // ChangeMember: the voter replaced
    NodeInfo node;        // AddFollower / AddMember / ChangeMember: the new node
    uint64_t deadline_ms = 0;
    Stage stage = Stage::kFinal;
    uint64_t token = 0;  // the proposal in the core, 0: none
  };
  struct Done {
    uint64_t origin = 0;
    uint64_t request_id = 0;
    Status status;
  };

  // Plans `request` against Latest(): OK with op->stage set, or the answer
  // (an error, or OK with *done when the change holds already).
  Status Plan(paxos::Core* core, uint64_t now_ms, Op* op, bool* done, paxos::Outputs* step);
  // Moves the running change on; replies when it ended.
  void Advance(paxos::Core* core, uint64_t now_ms, paxos::Outputs* step);
  // Proposes Latest() with `members`; replies on an error.
  void Propose(paxos::Core* core, std::vector<paxos::Member> members, paxos::Outputs* step);
  // The voters of `config` other than `except` heard from within
  // member_live_ms (self counts).
  size_t LiveVoters(const paxos::Core& core, const paxos::Config& config, uint64_t except,
                    uint64_t now_ms) const;
  void Reply(const Status& status);
  void ArmTick();
  std::string Name(const Op& op) const;

  const Options* const options_;
  const uint32_t group_;
  Logger* const logger_;
  GroupTimers* const timers_;
  const SendFn send_;

  std::unique_ptr<Op> op_;        // the running change, or none
  uint64_t tick_timer_ = 0;       // GroupTimers handle, 0: none
  uint64_t next_token_ = 1;
  std::deque<Done> done_;         // the last few answers, for repeats
};

}  // namespace chorus

#endif  // CHORUS_NODE_MEMBERSHIP_CHANGER_H_
