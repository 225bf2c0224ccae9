// Copyright (c) chorus authors.
//
// StateMachine: what an application implements. chorus calls Execute() with
// every chosen value, in instance order, on every replica of the group.

#ifndef CHORUS_STATE_MACHINE_H_
#define CHORUS_STATE_MACHINE_H_

#include <cstdint>
#include <string>

#include "chorus/status.h"

namespace chorus {

// Passed by a proposer to Propose(); handed back to Execute() on the
// proposing node only (on other replicas Execute gets nullptr).
struct ExecuteContext {
  // Which state machine of the group executes the value. 0 selects the only
  // state machine of a group that has exactly one; with several, it must name
  // one (Propose returns InvalidArgument otherwise).
  int state_machine_id = 0;
  // Opaque pointer for the application (e.g. where Execute writes a reply).
  void* user = nullptr;
  // Filled by Execute on the proposing node: its result bytes (optional).
  std::string output;
  // Set by chorus on the proposing node: the Status that Execute returned for
  // this value. It is the application's own result and never one of chorus's
  // codes: Propose returns chorus's Status separately (see node.h). Valid
  // when Propose returned ok; ok also when no state machine executed the
  // value (it was below a checkpoint, or named no state machine).
  Status result;
};

class StateMachine {
 public:
  virtual ~StateMachine();

  // A positive id, unique among the state machines of one group. Values
  // proposed with ExecuteContext::state_machine_id == id() go to this one.
  virtual int id() const = 0;

  // Executes `value`, chosen at `instance` of `group`. Called in instance
  // order, one call at a time per group, exactly once per instance per
  // process run: on the group's loop thread, except for the replay of the
  // log after a restart, which runs inside Node::Open (from this state
  // machine's GetCheckpointInstanceId() on; instances below it are skipped).
  // Must not call Propose on its own group (it would wait for itself).
  // REQUIRES: deterministic: every replica must reach the same state.
  // `ctx` is the proposer's context on the proposing node, nullptr elsewhere.
  // The returned Status is the application's result: the proposing node
  // hands it back in ctx->result (Propose itself then returns ok, since the
  // value was chosen and executed). It does not stop the group (replicas
  // must reject the same values).
  virtual Status Execute(uint32_t group, uint64_t instance, const std::string& value,
                         ExecuteContext* ctx) = 0;

  // Checkpoint hook: the instance id from which this state machine needs
  // values replayed after a restart (every instance below it is durably
  // reflected in the application's own state). Default 0: replay everything
  // kept in the paxos log, which suits in-memory state machines.
  virtual uint64_t GetCheckpointInstanceId(uint32_t group) const;
};

}  // namespace chorus

#endif  // CHORUS_STATE_MACHINE_H_
