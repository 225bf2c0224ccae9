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
#include <memory>
#include <string>

#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "chorus/status.h"

namespace chorus {

class Node {
 public:
  // Validates `options`, opens every group's log (recovering its state),
  // starts the transport and the group loops. On success *node is the running
  // node. Returns InvalidArgument (naming the problem) for an empty node list,
  // self not in the list, duplicate nodes, group_count < 1, two state
  // machines with one id in a group, bad limits; IOError / InvalidArgument
  // for a data dir that cannot be written or belongs to another cluster;
  // Corruption when the log is damaged.
  static Status Open(const Options& options, std::unique_ptr<Node>* node);

  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Stops (see Stop), waits for the calls still inside the node to return
  // (see Thread safety above) and frees everything.
  virtual ~Node();

  // Proposes `value` to `group` and waits until it is chosen and executed on
  // this node. On ok, *instance_id is the instance it was chosen at and, if
  // ctx is given, ctx->output holds what the state machine wrote and
  // ctx->result the Status its Execute returned.
  // The returned Status is chorus's alone: what Execute returns never shows
  // up here (a state machine that returns Busy or Timeout must not make a
  // caller that retries on those codes propose a chosen value again), so a
  // caller that needs the application's result passes a ctx.
  // Returns:
  //   OK               chosen and executed (whatever Execute returned);
  //   InvalidArgument  bad group, or state machine id unknown / ambiguous;
  //   TooLarge         value above max_value_bytes;
  //   Busy             too many proposals waiting (overload), try later;
  //   Timeout          not chosen+executed within propose_timeout_ms; the
  //                    value may still be chosen later;
  //   Stopped          the node is stopping;
  //   IOError          the group halted: writing its log failed;
  //   Corruption       the group halted: its log disagrees with a peer's
  //                    (chained checksum mismatch).
  // REQUIRES: not called from StateMachine::Execute of the same group
  // (InvalidArgument: it would wait for itself).
  virtual Status Propose(uint32_t group, const std::string& value, uint64_t* instance_id,
                         ExecuteContext* ctx = nullptr) = 0;

  // Like Propose, but the value may share one paxos instance with other
  // concurrent BatchPropose calls of the group (see Options batch_*).
  // *batch_index is the value's position within that instance.
  virtual Status BatchPropose(uint32_t group, const std::string& value, uint64_t* instance_id,
                              uint32_t* batch_index, ExecuteContext* ctx = nullptr) = 0;

  // The next instance id this node will execute in `group` (0 for a bad group).
  virtual uint64_t GetNowInstanceId(uint32_t group) const = 0;
  // The smallest instance id still in `group`'s log (0 for a bad group).
  virtual uint64_t GetMinChosenInstanceId(uint32_t group) const = 0;
  // This node's id (NodeInfo::id() of options.self).
  virtual uint64_t node_id() const = 0;

  // OK while `group` works. Once it halted, the reason (IOError: a log write
  // failed; Corruption: its log disagrees with a peer's); the group then
  // refuses proposals with that Status and applies nothing more until the
  // process restarts it. Stopped after Stop(); InvalidArgument for a bad group.
  virtual Status GetGroupStatus(uint32_t group) const = 0;

  // Stops the node: waiting proposers return Stopped, loop and transport
  // threads are joined, logs closed. Idempotent.
  virtual void Stop() = 0;

 protected:
  Node() = default;
};

}  // namespace chorus

#endif  // CHORUS_NODE_H_
