// GroupMaster: the master-election side of a group's runtime
// (Options::master_election). The rules (election, lease, forwarding, read
// index, transfer) are the core's (paxos/master.h); this class only
//  - keeps a thread-safe snapshot of the master as the core last reported
//    it, for Node::GetMaster / IsMaster / GetGroupStatus;
//  - fires Options::on_master_change when that master changes;
//  - holds the ReadBarrier callers until the core reported their read point
//    (Outputs::barriers) AND the state machines executed every instance
//    below it, or their deadline passed;
//  - holds the TransferMaster / StepDown callers until the round that sends
//    the hand-over has been executed.
//
// Thread safety: snapshot() may be called from any thread; everything else
// is for the group's loop thread only (or for Stop, once the loop is joined).
#ifndef CHORUS_NODE_GROUP_MASTER_H_
#define CHORUS_NODE_GROUP_MASTER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "chorus/options.h"
#include "chorus/status.h"
#include "node/address_book.h"
#include "node/group_timers.h"
#include "node/proposal.h"
#include "utils/mutex.h"

namespace chorus {

// What the core said of the master, as of the loop's latest round.
struct MasterSnapshot {
  uint64_t node = 0;  // 0: none known
  uint64_t epoch_number = 0;
  uint64_t epoch_node = 0;
  bool self_ready = false;   // this node is the master and its noop is committed
  bool holds_lease = false;  // ... and its lease held at that round
  uint64_t master_chosen_end = 0;

  bool is_master(uint64_t self) const { return node == self && self_ready; }
  bool operator==(const MasterSnapshot& o) const {
    return node == o.node && epoch_number == o.epoch_number && epoch_node == o.epoch_node &&
           self_ready == o.self_ready && holds_lease == o.holds_lease &&
           master_chosen_end == o.master_chosen_end;
  }
  bool operator!=(const MasterSnapshot& o) const { return !(*this == o); }
};

class GroupMaster {
 public:
  // REQUIRES: options, timers and book (when not null) outlive this.
  // `book`: where the master's address is looked up (the node's address
  // book); nullptr: Options::nodes.
  GroupMaster(const Options* options, uint32_t group, GroupTimers* timers,
              const AddressBook* book = nullptr);

  GroupMaster(const GroupMaster&) = delete;
  GroupMaster& operator=(const GroupMaster&) = delete;

  // Thread-safe.
  MasterSnapshot snapshot() const;
  // NotMaster naming the master's address ("... the master is ip:port")
  // when `s` is NotMaster and the snapshot knows a master; `s` otherwise.
  Status WithMasterAddress(const Status& s) const;
  // The address of node `id`: true with *node filled, false when unknown.
  bool FindMember(uint64_t id, NodeInfo* node) const;

  // ---- Loop thread only ----
  // After each round: stores `now` and fires on_master_change when the
  // master (node, epoch or this node's readiness) changed.
  void Update(const MasterSnapshot& now);

  // A ReadBarrier caller: returns the core token to pass to
  // Core::ReadBarrier, and arms its deadline (`timeout_ms`).
  uint64_t AddBarrier(std::shared_ptr<CallWaiter> waiter, int timeout_ms);
  // The core's answer for `token`: a failure is answered at once; a read
  // point waits until `executed` (the next instance to execute) reaches it.
  void OnBarrierResult(uint64_t token, uint64_t instance, const Status& status,
                       uint64_t executed);
  // The state machines execute `executed` next: answers the barriers whose
  // read point it reached.
  void OnExecuted(uint64_t executed);
  // The deadline of `token` passed: answers it Timeout.
  void OnBarrierDeadline(uint64_t token);

  // A transfer the core accepted: answered OK by AnswerSent, after the
  // round that holds its messages was sent.
  void AddSentWaiter(std::shared_ptr<CallWaiter> waiter);
  void AnswerSent();

  // Answers every waiting caller with `why` (Stop, Halt).
  void FailAll(const Status& why);

  size_t barriers_waiting() const { return barriers_.size(); }

 private:
  struct Barrier {
    std::shared_ptr<CallWaiter> waiter;
    uint64_t deadline_timer = 0;  // GroupTimers handle, 0: fired
    bool has_point = false;       // the core reported a read point...
    uint64_t point = 0;           // ...this one
  };
  void Answer(uint64_t token, const Status& status, uint64_t instance);

  const Options* const options_;
  const uint32_t group_;
  GroupTimers* const timers_;
  const AddressBook* const book_;

  mutable Mutex mu_;
  MasterSnapshot shared_ GUARDED_BY(mu_);

  // ---- Loop thread only ----
  MasterSnapshot last_;  // what Update stored last
  uint64_t next_token_ = 1;
  std::map<uint64_t, Barrier> barriers_;  // by core token
  std::vector<std::shared_ptr<CallWaiter>> sent_waiters_;
};

}  // namespace chorus

#endif  // CHORUS_NODE_GROUP_MASTER_H_
