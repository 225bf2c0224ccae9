// Copyright (c) chorus authors.
//
// StateMachine: what an application implements. chorus calls Execute() with
// every chosen value, in log order, on every replica of the group.

#ifndef CHORUS_STATE_MACHINE_H_
#define CHORUS_STATE_MACHINE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "chorus/status.h"

namespace chorus {

// Passed by a proposer to Propose() / BatchPropose(); handed back to
// Execute() on the proposing node only (on other replicas Execute gets
// nullptr), and only while the proposer still waits.
struct ExecuteContext {
  // ---- Set by the caller ----
  // Which state machine of the group executes the value. 0 selects the only
  // state machine of a group that has exactly one; with several, it must name
  // one (Propose returns InvalidArgument otherwise).
  int state_machine_id = 0;
  // This call's deadline: how long it waits for the value to be chosen and
  // executed before it returns Timeout. 0 (default): Options::
  // propose_timeout_ms. Negative: InvalidArgument. The values of one batch
  // (BatchPropose) share one paxos instance and so one deadline: the
  // earliest of theirs.
  int timeout_ms = 0;
  // Opaque pointer for the application (e.g. where Execute writes a reply).
  void* user = nullptr;

  // ---- Set by chorus ----
  // Filled by Execute on the proposing node: its result bytes (optional).
  std::string output;
  // Set by chorus on the proposing node: the Status that Execute returned for
  // this value. It is the application's own result and never one of chorus's
  // codes: Propose returns chorus's Status separately (see node.h). Valid
  // when Propose returned ok; ok also when no state machine executed the
  // value (it was below a checkpoint, or named no state machine).
  Status result;
  // The id of this proposal, set by Propose / BatchPropose before it queues
  // the value and kept whatever the call returns (0 when the call failed
  // before that: InvalidArgument, TooLarge, Busy for too many waiting
  // proposals). The value carries it: if and only if the value is chosen,
  // every replica executes it with ExecuteInfo::proposal_id equal to this.
  // So after an indeterminate failure (Timeout, Stopped, ...) an application
  // learns the outcome by looking for this id among the values it executes
  // (see node.h). Ids are random 64-bit numbers, distinct within a node and,
  // with overwhelming probability, across the cluster and restarts.
  uint64_t proposal_id = 0;
};

// Where a value was chosen, handed to Execute.
struct ExecuteInfo {
  uint32_t group = 0;
  uint64_t instance = 0;
  // The value's position among the values chosen at `instance` (0 for a
  // value of Propose; 0 .. batch_size-1 for the values of one BatchPropose
  // batch). (instance, batch_index) names the value uniquely in the group.
  uint32_t batch_index = 0;
  // How many values were chosen at `instance` (all state machines').
  uint32_t batch_size = 1;
  // The proposer's ExecuteContext::proposal_id (0 for a value logged by a
  // chorus version that did not record one).
  uint64_t proposal_id = 0;
};

// Where a checkpoint stands (StateMachine::PrepareCheckpoint, LoadCheckpoint).
struct CheckpointInfo {
  uint32_t group = 0;
  // The checkpoint reflects every instance below `instance` (each value
  // chosen there was executed, each noop skipped) and nothing at or above it.
  uint64_t instance = 0;
};

// Writes one checkpoint's files. Made by StateMachine::PrepareCheckpoint on
// the group's loop thread; chorus then calls Write once, on its checkpoint
// thread, while the group goes on choosing and executing, and destroys it.
class CheckpointWriter {
 public:
  virtual ~CheckpointWriter();
  // Writes the checkpoint into `dir` (it exists and is empty): any number of
  // files, in subdirectories or not. chorus syncs them and records every
  // file's size and checksum once Write returned OK; a non-ok Status drops
  // this checkpoint (the previous one stays; chorus tries again at the next
  // interval). Write runs concurrently with Execute on this state machine:
  // it must read only what PrepareCheckpoint captured (see there).
  virtual Status Write(const std::string& dir) = 0;
};

class StateMachine {
 public:
  virtual ~StateMachine();

  // A positive id, unique among the state machines of one group. Values
  // proposed with ExecuteContext::state_machine_id == id() go to this one.
  virtual int id() const = 0;

  // Executes `value`, chosen at info.instance of info.group.
  //
  // Call count: once per chosen VALUE, not per instance. An instance chosen
  // for a BatchPropose batch holds several values: Execute runs once for
  // each value of this state machine, in batch order (info.batch_index
  // increasing). An instance that holds no value for this state machine (a
  // noop the protocol chose to fill a gap, values only for other state
  // machines of the group, or a value chorus cannot decode) gets one
  // ExecuteNoop call instead. So for every instance from
  // GetCheckpointInstanceId() on, in increasing instance order, each state
  // machine sees either its Execute calls or exactly one ExecuteNoop, and
  // can track the instance ids it has applied.
  //
  // Within one process run each value is executed at most once. After a
  // restart, Node::Open replays the chosen log from this state machine's
  // GetCheckpointInstanceId() on (instances below it are skipped), so a
  // value may be executed again by a new process: a state machine that
  // keeps state across restarts must report its checkpoint.
  //
  // Threads: one call at a time per group, on the group's loop thread,
  // except the replay, which runs inside Node::Open.
  // Must not call Propose on its own group (it would wait for itself).
  // REQUIRES: deterministic: every replica must reach the same state.
  // `ctx` is the proposer's context on the proposing node while the proposer
  // still waits, nullptr otherwise.
  // The returned Status is the application's result: the proposing node
  // hands it back in ctx->result (Propose itself then returns ok, since the
  // value was chosen and executed). It does not stop the group (replicas
  // must reject the same values).
  virtual Status Execute(const ExecuteInfo& info, const std::string& value,
                         ExecuteContext* ctx) = 0;

  // Called for an instance that holds no value for this state machine (see
  // Execute), on the same thread and in the same order as Execute.
  // Default: does nothing.
  virtual void ExecuteNoop(uint32_t group, uint64_t instance);

  // Checkpoint hook: the instance id from which this state machine needs
  // values replayed after a restart (every instance below it is durably
  // reflected in the application's own state). Default 0: replay everything
  // kept in the paxos log, which suits in-memory state machines. It may lie
  // beyond the log's chosen prefix after a machine crash: chorus writes a
  // chosen-instance record without its own fsync (the votes that chose it
  // are synced, so it is learned again), and skips the instances below the
  // checkpoint when they come back.
  //
  // With checkpoints (PrepareCheckpoint below), Node::Open first loads the
  // group's newest stored checkpoint into every state machine whose
  // GetCheckpointInstanceId() is below that checkpoint's instance, then
  // replays the log from there. So an in-memory state machine (the default
  // 0) comes back from the checkpoint and replays only the log after it.
  virtual uint64_t GetCheckpointInstanceId(uint32_t group) const;

  // ---- Checkpoints (optional) ----
  //
  // A checkpoint lets chorus trim the group's log (Options::
  // checkpoint_interval_instances, log_keep_instances) and bring a replica
  // that fell behind every peer's log up to date by sending it a checkpoint
  // instead of the log. chorus owns the stored checkpoints (under
  // Options::checkpoint_dir) and their transfer; the state machine only
  // writes one and loads one.
  //
  // Snapshot isolation is the state machine's part, and it is this:
  // PrepareCheckpoint captures the state as of info.instance, and Write
  // later writes exactly that state, however many values Execute applied
  // in between. Ways to get it: a leveldb/rocksdb snapshot (GetSnapshot())
  // or a checkpoint of the database's files taken in PrepareCheckpoint; a
  // copy of small state; a copy-on-write / persistent data structure.

  // Called on the group's loop thread between two instances: this state
  // machine executed every instance below info.instance and none at or
  // above it. Capture what Write needs and return quickly (the group
  // executes nothing meanwhile): set *writer and return OK. Return
  // NotSupported (the default) when this state machine makes no
  // checkpoints: then the group makes none and its log is never trimmed
  // (every state machine of a group must support them). Any other non-ok
  // Status skips this checkpoint.
  virtual Status PrepareCheckpoint(const CheckpointInfo& info,
                                   std::unique_ptr<CheckpointWriter>* writer);

  // Replaces this state machine's whole state with the checkpoint of
  // `info` whose files are in `dir` (what a Write produced, on this or
  // another replica; chorus verified every file's size and checksum).
  // Called on the group's loop thread when this replica catches up by
  // checkpoint (the group applies nothing meanwhile; other groups go on), or
  // inside Node::Open on restart (see GetCheckpointInstanceId). No process
  // exit is needed or expected.
  // After OK, the next Execute / ExecuteNoop is for info.instance, and
  // GetCheckpointInstanceId() should report at least info.instance (a
  // persistent state machine records it with its state).
  // ATOMIC: until it returns OK the old state must stay intact and usable
  // (build the new state beside the old one, verify it, then swap); on
  // error chorus keeps the old state and tries again later. The files in
  // `dir` are chorus's: read them, or move them into the state machine's own
  // storage; chorus deletes whatever is left in `dir` afterwards.
  // Default: NotSupported.
  virtual Status LoadCheckpoint(const CheckpointInfo& info, const std::string& dir);
};

}  // namespace chorus

#endif  // CHORUS_STATE_MACHINE_H_
