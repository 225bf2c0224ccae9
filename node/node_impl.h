// NodeImpl: the Node an application gets from Node::Open. It owns the
// groups, the transport (unless the application plugged in its own) and the
// logger; it routes incoming messages to their group by the group index
// prefixed to every message.
#ifndef CHORUS_NODE_NODE_IMPL_H_
#define CHORUS_NODE_NODE_IMPL_H_

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "chorus/node.h"
#include "node/address_book.h"
#include "node/catchup_reader.h"
#include "node/checkpoint_worker.h"
#include "node/checkpoint_transfer.h"
#include "node/data_dir_identity.h"
#include "node/group.h"
#include "node/membership_wire.h"
#include "node/runtime_env.h"
#include "utils/logging.h"
#include "utils/mutex.h"

namespace chorus {

class NodeImpl : public Node {
 public:
  // Node::Open with RuntimeHooks: a TEST HOOK (a manual clock, hand-fired
  // timers, fixed seeds); Node::Open passes none. Every hook must outlive
  // the node.
  static Status OpenWithHooks(const Options& options, const RuntimeHooks& hooks,
                              std::unique_ptr<Node>* node);

  NodeImpl(const Options& options, const RuntimeHooks& hooks);
  ~NodeImpl() override;

  // Opens the logs and groups and starts everything. Called once by Node::Open.
  Status Init();

  Status Propose(uint32_t group, const std::string& value, uint64_t* instance_id,
                 ExecuteContext* ctx) override;
  Status BatchPropose(uint32_t group, const std::string& value, uint64_t* instance_id,
                      uint32_t* batch_index, ExecuteContext* ctx) override;
  void ProposeAsync(uint32_t group, const std::string& value, ProposeCallback done,
                    const ExecuteContext* ctx) override;
  void BatchProposeAsync(uint32_t group, const std::string& value, ProposeCallback done,
                         const ExecuteContext* ctx) override;
  uint64_t GetNowInstanceId(uint32_t group) const override;
  uint64_t GetMinChosenInstanceId(uint32_t group) const override;
  uint64_t node_id() const override { return options_.self.id(); }
  Status GetGroupStatus(uint32_t group) const override;
  Status GetGroupStatus(uint32_t group, GroupStatus* status) const override;
  // ---- Metrics (node_metrics.cc) ----
  Status GetMetrics(uint32_t group, GroupMetrics* metrics) const override;
  Status GetTransportMetrics(TransportMetrics* metrics) const override;
  Status GetMaster(uint32_t group, MasterInfo* info) const override;
  bool IsMaster(uint32_t group) const override;
  Status ReadBarrier(uint32_t group, uint64_t* instance) override;
  Status TransferMaster(uint32_t group, uint64_t node_id) override;
  Status StepDown(uint32_t group) override;
  // ---- Membership (node_membership.cc) ----
  Status GetMembership(uint32_t group, MembershipInfo* info) const override;
  Status AddMember(uint32_t group, const NodeInfo& node) override;
  Status AddFollower(uint32_t group, const NodeInfo& node) override;
  Status PromoteFollower(uint32_t group, uint64_t node_id) override;
  Status RemoveMember(uint32_t group, uint64_t node_id) override;
  Status ChangeMember(uint32_t group, uint64_t old_node_id, const NodeInfo& new_node) override;
  void Stop() override;

  // The protocol counters of `group`. REQUIRES: a valid group, and Stop()
  // has returned (the loop thread is joined, so nothing writes them).
  const paxos::CoreStats& core_stats_for_testing(uint32_t group) const {
    return groups_[group]->core_stats();
  }

  // Calls inside the node right now (the destructor waits for them).
  int active_calls_for_testing() const { return active_calls_.load(std::memory_order_seq_cst); }

  // The node's checkpoint transfer (counters, progress). Valid until the destructor.
  const CheckpointTransfer& checkpoint_transfer_for_testing() const {
    return *checkpoint_transfer_;
  }

  // The reader that serves this node's catch-up reads (counters only).
  const CatchupReader& catchup_reader_for_testing() const { return *catchup_reader_; }

  // Messages that named no valid group or came with no sender (dropped).
  uint64_t misrouted_messages() const { return misrouted_.load(std::memory_order_relaxed); }
  // For tests: group `group`, or nullptr. Valid until the destructor.
  Group* group_for_testing(uint32_t group) const { return FindGroup(group); }
  // The data dir's identity as Open read or created it.
  const DataDirIdentity& identity_for_testing() const { return identity_; }

 private:
  Status OpenLog(uint32_t group, std::unique_ptr<LogStorage>* log);
  void OnMessage(uint64_t from, std::string message);
  Group* FindGroup(uint32_t group) const;
  class ActiveCall;
  // The group of a master call, or the Status to return: InvalidArgument (bad
  // group), NotSupported (master_election off), Stopped (stopping, when
  // `refuse_when_stopping`) or the destructor running.
  Status MasterGroup(const ActiveCall& call, uint32_t group, bool refuse_when_stopping,
                     Group** out) const;
  Status Transfer(uint32_t group, uint64_t target);
  // ProposeAsync / BatchProposeAsync.
  void StartAsync(uint32_t group, const std::string& value, ProposeCallback done,
                  const ExecuteContext* ctx, bool batch);
  // ---- Membership (node_membership.cc) ----
  struct RemoteCall;
  // A membership call: to the master, retried on NotMaster until the deadline.
  Status RunMembershipCall(uint32_t group, MembershipOp op, uint64_t node_id, const NodeInfo* node);
  // Sends `request` to `master` and waits for its REPLY (sent again every
  // second). NotMaster when the group's master changed meanwhile;
  // *unanswered: no reply came (the master may have acted).
  Status RemoteMembershipCall(Group* g, uint64_t master, const MembershipMessage& request,
                              std::chrono::steady_clock::time_point deadline, bool* unanswered);
  // A membership frame of the control channel from `from` (transport thread).
  void OnMembershipFrame(uint64_t from, uint32_t group, std::string bytes);
  // Tells the transport the address book (Transport::SetPeers).
  void PushPeers();
  // GetMetrics once registered (node_metrics.cc).
  Status FillMetrics(uint32_t group, GroupMetrics* metrics) const;

  const Options options_;
  const RuntimeEnv runtime_;  // clock, timers and seeds of every group
  Logger logger_;
  std::unique_ptr<TcpTransport> own_transport_;  // when options.transport is null
  Transport* transport_ = nullptr;                // the one in use
  // Filled by Init before the transport starts, read-only afterwards.
  std::vector<std::unique_ptr<Group>> groups_;
  // Reads the groups' logs for lagging peers (after own_transport_, which it
  // sends through; Stop() stops it before the groups and their logs go).
  std::unique_ptr<CatchupReader> catchup_reader_;
  // Writes and commits the groups' checkpoints off their loops (stopped by
  // Stop() after the groups, before they are freed).
  std::unique_ptr<CheckpointWorker> checkpoint_worker_;
  // Catch-up by checkpoint for every group: sends through transport_,
  // fetches into and serves from the groups' stores (the groups register in
  // Group::Open). Stop() stops it right after the transport, before the
  // groups and their stores go. Read-only pointer after Init.
  std::unique_ptr<CheckpointTransfer> checkpoint_transfer_;
  std::atomic<uint64_t> misrouted_{0};
  // Read or created by Init before anything else; read-only afterwards.
  DataDirIdentity identity_;
  // Every node this one talks to (thread-safe); made by Init.
  std::unique_ptr<AddressBook> address_book_;
  // Set by Init once every group is open: from then on a membership change
  // is pushed to the transport at once (before, Init pushes the whole book).
  std::atomic<bool> groups_opened_{false};
  // The transport answered SetPeers with NotSupported (logged once).
  std::atomic<bool> set_peers_unsupported_{false};
  // Membership calls waiting for a master's REPLY, by request id.
  Mutex remote_mu_;
  std::map<uint64_t, std::shared_ptr<RemoteCall>> remote_calls_ GUARDED_BY(remote_mu_);
  // Calls of the Node API inside the node right now (see ActiveCall in the
  // .cc). The destructor waits for them to leave before the groups are
  // freed: a proposer woken by Stop may still be on its way out of
  // Group::Propose.
  std::atomic<int> active_calls_{0};
  std::atomic<bool> stopping_{false};    // set by Stop(): proposals are refused
  std::atomic<bool> destroying_{false};  // set by the destructor: no group is touched
  Mutex stop_mu_;
  bool stopped_ GUARDED_BY(stop_mu_) = false;
};

// Counts a call for as long as it runs. It registers BEFORE the call looks
// at a flag or at any group: with seq_cst on both sides (this increment,
// then the load of the flag; the destructor's store of the flags, then its
// load of the count) either the destructor sees the call and waits for it,
// or the call sees the flag and returns without touching a group.
class NodeImpl::ActiveCall {
 public:
  explicit ActiveCall(NodeImpl* node) : node_(node) {
    node_->active_calls_.fetch_add(1, std::memory_order_seq_cst);
  }
  ~ActiveCall() { node_->active_calls_.fetch_sub(1, std::memory_order_seq_cst); }
  // Stop() was called: proposals are refused.
  bool stopping() const { return node_->stopping_.load(std::memory_order_seq_cst); }
  // The destructor runs: the groups are about to be freed.
  bool destroying() const { return node_->destroying_.load(std::memory_order_seq_cst); }

 private:
  NodeImpl* const node_;
};

}  // namespace chorus

#endif  // CHORUS_NODE_NODE_IMPL_H_
