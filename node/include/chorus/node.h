// Copyright (c) chorus authors.
//
// Node: one replica of a chorus cluster. Open() it with Options, then call
// Propose() from any number of threads. Every replica executes the chosen
// values on its StateMachines in the same order.
//
// Thread safety: every method may be called from any thread concurrently,
// Stop() included: once Stop() has begun, proposals return Stopped (the
// queries keep answering). The destructor stops the node and then waits for
// the calls still inside it (e.g. a Propose waiting for its value, which
// returns Stopped) to return. But no call may BEGIN once the destructor may
// have begun: as with any C++ object, calling into one that is being
// destroyed is undefined. So first make sure no thread will call the node
// any more (e.g. Stop(), then join the threads that use it), then destroy it.

#ifndef CHORUS_NODE_H_
#define CHORUS_NODE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/metrics.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "chorus/status.h"

namespace chorus {

// The master of a group as this node knows it (Node::GetMaster).
struct MasterInfo {
  // The master's address; its id is node.id().
  NodeInfo node;
  // The master's epoch: its current ballot, (number, node id). Every change
  // of master changes it; so does, rarely, the same master running phase 1
  // again (above a stale promise of a member that restarted), which is no
  // change of master (on_master_change is not called). It only grows: compare
  // (epoch_number, epoch_node) lexicographically to tell the newer of two
  // answers, e.g. from different nodes.
  uint64_t epoch_number = 0;
  uint64_t epoch_node = 0;
  // Whether a master is known (GetMaster returns NotFound otherwise).
  bool known = false;
};

// A member of a group (Node::GetMembership).
struct MemberInfo {
  NodeInfo node;       // its address; its id is node.id()
  bool voter = true;   // false: a follower (a non-voting replica)
};

// A group's membership as this node knows it (Node::GetMembership).
struct MembershipInfo {
  // 0: the initial membership (Options::nodes of the first start); +1 per
  // change.
  uint64_t version = 0;
  // The newest membership, sorted by node id.
  std::vector<MemberInfo> members;
  // The first instance it governs. A change is chosen at some instance i and
  // governs from i + 256 on (the activation distance: the instances in
  // flight when it was chosen keep their quorums), so right after it is
  // chosen it is pending: active_from > the executed instance.
  uint64_t active_from = 0;
  bool pending = false;
};

// Where this node stands in a group's membership (GroupStatus::role).
enum class MemberRole {
  kVoter,        // a voting member
  kFollower,     // a non-voting replica: executes every value, never votes
  kRemoved,      // it was a member and was removed: it proposes nothing
  kJoining,      // started with Options::join and not added yet
  // Its id is a voter, but under another data dir: it lost its state (e.g.
  // its disk) and must be removed and added again; it never votes. Known
  // once the node learned a membership that names it (from a change in the
  // log or a checkpoint); before that such a node reads kJoining.
  kNotEligible,
};
// "voter", "follower", "removed", "joining", "not_eligible": the name /status,
// chorus_admin and the samples print.
const char* MemberRoleText(MemberRole role);

// Where this node stands in a group (Node::GetGroupStatus, second form).
struct GroupStatus {
  // The next instance this node's state machines execute: they executed
  // every instance below it (Node::GetNowInstanceId).
  uint64_t executed = 0;
  // The master's chosen end as last heard from it (its heartbeats carry it;
  // on the master, its own): every instance below it is chosen. 0 when no
  // master is known.
  uint64_t master_chosen_end = 0;
  // executed >= master_chosen_end with a master known: this node has caught
  // up with what the master had chosen when it last heard from it.
  bool caught_up = false;
  // The master's node id (NodeInfo::id()), 0 when none is known.
  uint64_t master_node = 0;
  // Checkpoints and the log (Options checkpoint_*):
  // the instance of the newest stored checkpoint (0: none);
  uint64_t checkpoint_instance = 0;
  // the first instance the log still holds (Node::GetMinChosenInstanceId);
  uint64_t log_start = 0;
  // a checkpoint being received from a peer (catch-up by checkpoint): its
  // instance (0: no transfer), and bytes received of its total.
  uint64_t transfer_instance = 0;
  uint64_t transfer_bytes_done = 0;
  uint64_t transfer_bytes_total = 0;
  // Checkpoints made, received (loaded from a peer) and sent by this node
  // in this group since Open.
  uint64_t checkpoints_made = 0;
  uint64_t checkpoints_loaded = 0;
  uint64_t checkpoints_sent = 0;
  // Membership: this node's role, and the membership's version.
  MemberRole role = MemberRole::kVoter;
  uint64_t membership_version = 0;
};

// What an asynchronous proposal (Node::ProposeAsync) hands its `done`. Every
// field says what the same field of Propose says: meaningful only when done's
// Status is OK, otherwise zero / empty (proposal_id excepted).
struct ProposeResult {
  // The instance the value was chosen at (Propose's *instance_id) and its
  // position there (BatchPropose's *batch_index; 0 unbatched).
  uint64_t instance = 0;
  uint32_t batch_index = 0;
  // What Execute wrote to its ctx->output, and the Status Execute returned
  // (the application's result; never one of chorus's codes).
  std::string output;
  Status result;
  // As ExecuteContext::proposal_id: set whatever the outcome once the value
  // was queued (0 when it was refused before: InvalidArgument, TooLarge,
  // Busy over max_async_proposals, Stopped at the call).
  uint64_t proposal_id = 0;
};

// Called exactly once per ProposeAsync / BatchProposeAsync call with
// chorus's Status (the same codes as Propose) and the result. *result is
// chorus's and valid only during the call: move what you keep (e.g.
// std::move(result->output)). See Node::ProposeAsync for the thread it runs on.
using ProposeCallback = std::function<void(const Status& status, ProposeResult* result)>;

class Node {
 public:
  // Validates `options`, opens every group's log (recovering its state),
  // starts the transport and the group loops. On success *node is the running
  // node. Returns:
  //   InvalidArgument  (naming the problem) an empty node list, self not in
  //                    the list, duplicate nodes, group_count < 1, two state
  //                    machines with one id in a group, bad limits; a data
  //                    dir that is missing or empty while
  //                    Options::create_if_missing is false; a data dir that
  //                    belongs to another cluster, group or node;
  //   IOError          a data dir that cannot be created, read or written;
  //   Corruption       a damaged log. A torn tail of the log's last write (a
  //                    crash or power loss in the middle of it) is not
  //                    damage: that write never returned, so it is cut off
  //                    (logged as a warning) and the node starts.
  static Status Open(const Options& options, std::unique_ptr<Node>* node);

  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Stops (see Stop), waits for the calls still inside the node to return
  // (see Thread safety above) and frees everything.
  virtual ~Node();

  // Proposes `value` to `group` and waits until it is chosen and executed on
  // this node, or until the call's deadline (ctx->timeout_ms, default
  // Options::propose_timeout_ms).
  //
  // With Options::master_election on, a node that knows another node as the
  // master forwards the value to it (Options::forward_to_master, the
  // default: the outcomes below are the same, one hop later) or refuses it
  // with NotMaster.
  //
  // *instance_id (if not null) is the instance the value was chosen at
  // whenever it was executed here (whatever Execute returned). On every
  // other outcome it is set to 0, which says nothing (0 is also a real
  // instance id).
  // ctx (optional): in: state_machine_id, timeout_ms, user; out: output (what
  // Execute wrote), result (the Status Execute returned) and proposal_id
  // (see below).
  //
  // The returned Status is chorus's alone: what Execute returns never shows
  // up here (a state machine that returns Busy or Timeout must not make a
  // caller that retries on those codes propose a chosen value again), so a
  // caller that needs the application's result passes a ctx.
  //
  // Returns one of three kinds of outcome:
  // Executed (the value was chosen and executed on this node):
  //   OK               whatever Execute returned (see ctx->result).
  // Definite failures (the value was never proposed and never will be; safe
  // to retry):
  //   NotMaster        master_election is on, forward_to_master is off and
  //                    another node is the master; the message ends with
  //                    its address "ip:port": propose there;
  //   InvalidArgument  bad group, state machine id unknown / ambiguous,
  //                    ctx->timeout_ms < 0, or called from inside Execute of
  //                    the same group (it would wait for itself);
  //   TooLarge         value above max_value_bytes;
  //   Busy             the proposal never started. The message says why:
  //                    "overloaded": more than max_waiting_proposals waiting,
  //                      or it waited max_queue_wait_ms for room among the
  //                      proposals in flight; back off, then retry;
  //                    "stalled": the group's loop took it from its queue
  //                      only after max_queue_wait_ms, because the process
  //                      was paused (e.g. SIGSTOP) or the loop was blocked (a
  //                      slow disk or Execute); not an overload: retry.
  // Indeterminate failures (the value may have been chosen, or may still be
  // chosen later, by this or any other replica):
  //   Timeout          not chosen and executed by the call's deadline (the
  //                    message says "never proposed" when it timed out
  //                    before it was proposed: then it is definite);
  //   Stopped          the node is stopping (definite when the call came in
  //                    after Stop()); or "outcome unknown": the value's
  //                    instance was decided while this node was behind,
  //                    and it caught up by loading a checkpoint that covers
  //                    it, so it cannot tell whether its value won there
  //                    (the value is never proposed again);
  //   IOError          the group halted: writing its log failed;
  //   Corruption       the group halted: its log disagrees with a peer's
  //                    (chained checksum mismatch).
  // To learn the outcome of an indeterminate failure, pass a ctx: its
  // proposal_id is set before the value is queued (and kept whatever the
  // call returns). The value carries it, so if and only if the value is ever
  // chosen, Execute is called with ExecuteInfo::proposal_id equal to it on
  // every replica (with ctx == nullptr once the call returned). An
  // application that must not apply a timed-out value late can propose a
  // "cancel <proposal_id>" value of its own and have Execute ignore the
  // original if the cancel is executed first: every replica decides alike.
  virtual Status Propose(uint32_t group, const std::string& value, uint64_t* instance_id,
                         ExecuteContext* ctx = nullptr) = 0;

  // Like Propose, but the value may share one paxos instance with other
  // concurrent BatchPropose calls of the group (see Options batch_*).
  // *batch_index (if not null) is the value's position within that instance
  // (ExecuteInfo::batch_index), set like *instance_id. The values of one
  // batch share one fate: one instance, and one deadline, the earliest of
  // their calls'.
  virtual Status BatchPropose(uint32_t group, const std::string& value, uint64_t* instance_id,
                              uint32_t* batch_index, ExecuteContext* ctx = nullptr) = 0;

  // ---- Asynchronous proposals ----
  //
  // Proposes `value` to `group` like Propose, but returns at once and never
  // blocks: the outcome comes to `done` (may be empty: fire and forget).
  // For applications that run their own event loop (an RPC framework,
  // coroutines): no thread waits per proposal, and no wake-up is spent on a
  // thread that only hands the result on.
  //
  // ctx (optional, read during the call only): state_machine_id, timeout_ms
  // and user, as for Propose (Execute gets its own ExecuteContext with that
  // user; what it writes to output comes in done's ProposeResult).
  //
  // done is called EXACTLY ONCE per call, with the Status Propose would have
  // returned: OK (executed on this node), NotMaster, InvalidArgument,
  // TooLarge, Busy, Timeout at the call's deadline (ctx->timeout_ms or
  // Options::propose_timeout_ms; the value may still be chosen later),
  // Stopped, IOError, Corruption; node.h's Propose says what each means.
  // Besides Propose's Busy cases, Busy "overloaded" naming
  // max_async_proposals: the group already has Options::max_async_proposals
  // outstanding (queued or in flight, not yet handed to their done); back
  // off, then retry.
  //
  // Which thread runs done:
  //  - The group's loop thread, right after the value is executed (or its
  //    deadline passes, or the group halts): the same thread that runs
  //    Execute, in instance order. This costs the proposal no wake-up and
  //    no context switch, which is the point of the call. So done MUST NOT
  //    BLOCK (no waiting on I/O, locks held long, or a blocking Propose:
  //    from there that returns InvalidArgument): while it runs the group
  //    does nothing else. Hand slow work to your own executor. chorus's
  //    own cost per done is a std::function call, a Status copy and the
  //    metrics' relaxed counters; what done itself does is added to every
  //    round of the group (README: ProposeAsync, measured).
  //  - The calling thread, before ProposeAsync returns, when the call is
  //    refused at once (InvalidArgument, TooLarge, Busy over
  //    max_async_proposals, Stopped after Stop()). So do not hold, across
  //    ProposeAsync, a lock that done takes.
  //  - The thread running Stop() (or the destructor), with Stopped, for the
  //    calls still outstanding when the node stops: once Stop() returns,
  //    every call made before it has had its done.
  // The dones of different calls may so run concurrently (a refusal on a
  // caller's thread while the loop runs another's).
  // The deadline is enforced by the loop: while it is stuck (a hung disk)
  // dones come late; there is no give-up of the caller's own, as a blocking
  // Propose has after its deadline plus a grace period.
  // done may call ProposeAsync / BatchProposeAsync again (chaining): the
  // slot of the finished call is free by then. A done that proposes again
  // must not do so on Stopped (each refusal would call done again, inline:
  // unbounded recursion), nor on Busy without backing off. done must not call Stop() or destroy the
  // node.
  //
  // Order: the calls of one thread to one group enter the group's queue in
  // call order and are proposed in that order; with a stable master their
  // values are chosen in that order too (a retry after a lost ballot, or a
  // change of master, may reorder values in flight, as for Propose).
  virtual void ProposeAsync(uint32_t group, const std::string& value, ProposeCallback done,
                            const ExecuteContext* ctx = nullptr) = 0;

  // ProposeAsync whose value may share one paxos instance with other
  // concurrent BatchPropose / BatchProposeAsync calls of the group, as
  // BatchPropose (Options batch_*): one instance, one fate, and one
  // deadline, the earliest of theirs. ProposeResult::batch_index is its
  // position there. Cheaper per value than ProposeAsync under load (one
  // paxos instance and one Execute round for up to batch_max_count values).
  virtual void BatchProposeAsync(uint32_t group, const std::string& value, ProposeCallback done,
                                 const ExecuteContext* ctx = nullptr) = 0;

  // The next instance id this node will execute in `group` (0 for a bad group).
  virtual uint64_t GetNowInstanceId(uint32_t group) const = 0;
  // The first instance `group`'s log still holds: every instance below it
  // was trimmed behind a checkpoint (Options::checkpoint_interval_instances,
  // log_keep_instances) or is covered by one this node loaded from a peer.
  // 0 while the log was never trimmed, and for a bad group. As of the group
  // loop's latest round.
  virtual uint64_t GetMinChosenInstanceId(uint32_t group) const = 0;
  // This node's id (NodeInfo::id() of options.self).
  virtual uint64_t node_id() const = 0;

  // OK while `group` works. Once it halted, the reason (IOError: a log write
  // failed; Corruption: its log disagrees with a peer's); the group then
  // refuses proposals with that Status and applies nothing more until the
  // process restarts it. Stopped after Stop(); InvalidArgument for a bad group.
  virtual Status GetGroupStatus(uint32_t group) const = 0;

  // Fills *status (see GroupStatus) and returns OK, or InvalidArgument for a
  // bad group (then *status is untouched). Works with master_election off as
  // well: then no master is ever known (master_node 0, caught_up false).
  // Thread-safe, never blocks on the group's loop; a snapshot as of the
  // loop's latest round.
  virtual Status GetGroupStatus(uint32_t group, GroupStatus* status) const = 0;

  // ---- Metrics (chorus/metrics.h) ----
  //
  // Fills *metrics with `group`'s counters, histograms and gauges and
  // returns OK, or InvalidArgument for a bad group (*metrics untouched).
  // Thread-safe, never blocks on the group's loop (relaxed reads of
  // counters the loop publishes after each round); keeps answering after
  // Stop(). Cheap enough to call once a second per group.
  virtual Status GetMetrics(uint32_t group, GroupMetrics* metrics) const = 0;
  // Fills *metrics with the node's transport counters (known = false, all
  // zero, with an application's own Options::transport). Thread-safe; OK.
  virtual Status GetTransportMetrics(TransportMetrics* metrics) const = 0;

  // ---- Master election (Options::master_election) ----
  //
  // Each of these returns NotSupported (and does nothing) when
  // Options::master_election is false, and InvalidArgument for a bad group.
  // They never block on a slow peer; the answers of the queries are a
  // snapshot as of the group loop's latest round. See options.h for the
  // clock contract that the lease, and so ReadBarrier, relies on.

  // The master of `group` as this node knows it: OK with *info filled
  // (known = true), or NotFound while it knows none (an election is
  // running, or the master went silent: its lease ran out). A follower
  // learns of a new master from its first heartbeat, so two nodes may
  // briefly answer differently; the one with the larger epoch is newer.
  virtual Status GetMaster(uint32_t group, MasterInfo* info) const = 0;

  // True when this node is the ready master of `group` (its first noop is
  // committed) and held a valid lease at the loop's latest round. False
  // otherwise, and for a bad group or with master_election off. Advisory:
  // mastership may end right after the call; for a read use ReadBarrier.
  virtual bool IsMaster(uint32_t group) const = 0;

  // A linearizable read point. Returns OK once this node's state machines
  // of `group` have executed every value chosen (by any node) before the
  // call began; *instance (if not null) is then an instance I such that
  // they executed every instance below I (and every such value is below I).
  // Reading the application's own state after OK is a linearizable read.
  //   On the ready master inside its lease: no message and no log write.
  //   On any other node: one round trip to the master (read index), then
  //   this node waits until it executed up to the master's chosen end.
  // Otherwise *instance is set to 0 and it returns:
  //   Busy             "no master": none known, the master is not ready yet
  //                    (just elected) or it refused (its lease ended); retry
  //                    after a short pause;
  //   Timeout          no answer by Options::propose_timeout_ms (the master
  //                    died, or this node could not catch up in time);
  //   InvalidArgument  bad group, or called from inside Execute of the same
  //                    group (it would wait for itself);
  //   NotSupported     master_election is off;
  //   Stopped / IOError / Corruption  as Propose (stopping, group halted).
  virtual Status ReadBarrier(uint32_t group, uint64_t* instance) = 0;

  // Hands the mastership of `group` to member `node_id` (NodeInfo::id()).
  // REQUIRES: this node is the master. Returns OK once the hand-over was sent: by
  // then this node has dropped its lease (it serves no lease read any more;
  // on_master_change reports is_master false). The target takes over
  // within about one round trip, before the old lease would have run out;
  // if it is down, the group elects a master after election_timeout_ms.
  // Returns NotMaster when this node is not the master (the message names
  // the master's address when one is known), InvalidArgument when node_id
  // is not a member, NotSupported when master_election is off, Stopped when
  // the node is stopping.
  virtual Status TransferMaster(uint32_t group, uint64_t node_id) = 0;

  // Gives up the mastership of `group` (e.g. before maintenance): like
  // TransferMaster to no one in particular. This node drops its lease at
  // once and does not campaign for election_timeout_ms; the others elect a
  // master among themselves. Returns as TransferMaster does.
  virtual Status StepDown(uint32_t group) = 0;

  // ---- Membership ----
  //
  // The calls below change `group`'s membership. Each one may be called on
  // any node: it goes to the master (master_election must be on), which
  // makes one change at a time, and returns once the change is chosen AND
  // in force (every instance from its activation on uses the new quorums).
  // Each waits at most Options::membership_timeout_ms. A change that
  // succeeded is never undone by a later error; a Timeout says nothing about
  // whether it was chosen (GetMembership tells).
  // They return:
  //   OK               in force;
  //   NotSupported     master_election is off;
  //   InvalidArgument  bad group; the node already is / is not a member (as
  //                    the call needs); a bad address; the change would
  //                    leave no voter;
  //   Busy             another change of the group is in progress (on the
  //                    master), or no master is known: retry; or the change
  //                    is unsafe now: the message says why (a removal that
  //                    would leave fewer live voters than a majority of the
  //                    new membership);
  //   Conflict         a concurrent change got chosen first: retry;
  //   Timeout          the deadline passed (the new node did not catch up,
  //                    or no majority answered);
  //   Stopped / IOError / Corruption  as Propose.

  // The membership of `group` as this node knows it (a snapshot as of the
  // loop's latest round). OK, or InvalidArgument for a bad group. Works
  // without master_election too. A change whose call returned OK shows here
  // on the master at once, and on the other nodes once they learn it (the
  // calling node included, when it is not the master).
  virtual Status GetMembership(uint32_t group, MembershipInfo* info) const = 0;
  // Adds `node` as a voter: first as a follower, then, once it has caught up
  // (Options::catch_up_margin_instances), promoted. The node must be running
  // (started with Options::join naming members of the cluster) and reachable.
  virtual Status AddMember(uint32_t group, const NodeInfo& node) = 0;
  // Adds `node` as a follower (non-voting). It catches up by itself.
  virtual Status AddFollower(uint32_t group, const NodeInfo& node) = 0;
  // Makes follower `node_id` a voter, once it has caught up.
  virtual Status PromoteFollower(uint32_t group, uint64_t node_id) = 0;
  // Removes member `node_id` (a voter or a follower). Refused (Busy) when
  // the voters left that the master heard from within
  // Options::member_live_ms would be fewer than a majority of the voters
  // left. Removing the master: the mastership moves to another live voter
  // first, then the new master removes it.
  virtual Status RemoveMember(uint32_t group, uint64_t node_id) = 0;
  // Replaces voter `old_node_id` by `new_node` (e.g. a dead machine by a new
  // one): `new_node` is added as a follower and catches up, then one change
  // makes it a voter and removes the old one, so the number of voters never
  // changes.
  virtual Status ChangeMember(uint32_t group, uint64_t old_node_id, const NodeInfo& new_node) = 0;

  // Stops the node: waiting proposers return Stopped, loop and transport
  // threads are joined, logs closed. Idempotent.
  virtual void Stop() = 0;

 protected:
  Node() = default;
};

}  // namespace chorus

#endif  // CHORUS_NODE_H_
