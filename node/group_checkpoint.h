// GroupCheckpoint: the checkpoint side of a group's runtime (issue 10).
// The trimming rules are the core's (paxos/trim.h); this class
//  - owns the group's CheckpointStore (Options::checkpoint_dir/g<group>;
//    none when checkpoints are off: no checkpoint_dir and no data_dir);
//  - on restart (Group::Open) loads the newest stored checkpoint into every
//    state machine that is behind it, installs it into the core when the
//    core's chosen prefix ends below it (a crash between storing a received
//    checkpoint and installing it), and replays the rest of the log;
//  - makes a checkpoint every Options::checkpoint_interval_instances
//    executed instances: PrepareCheckpoint on every state machine on the
//    loop, then Write and the store's durable Commit on the node's
//    CheckpointWorker, then (kCheckpointDone, back on the loop)
//    Core::OnCheckpoint, which trims the log behind it, bounded by the
//    byte margin (Options::log_keep_bytes) computed here;
//  - answers Outputs::checkpoint_needed: from its own store when that holds
//    a checkpoint above the chosen prefix, else through
//    GroupEnv::request_checkpoint (the transfer), which posts
//    kLoadCheckpoint once it stored one; loading it is LoadCheckpoint on
//    every state machine, then Core::InstallCheckpoint.
//
// Durability: the core hears of a checkpoint (OnCheckpoint) only after the
// store's Commit returned: files, MANIFEST and directory fsynced. So the
// log never loses an instance that the newest durable checkpoint lacks.
//
// Thread safety: the accessors marked thread-safe may be called from any
// thread; everything else is for the group's loop thread only (Restore and
// Replay: for Group::Open, before the loop starts).
#ifndef CHORUS_NODE_GROUP_CHECKPOINT_H_
#define CHORUS_NODE_GROUP_CHECKPOINT_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chorus/log_storage.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "node/checkpoint_store.h"
#include "node/checkpoint_worker.h"
#include "node/event_queue.h"
#include "paxos/core.h"
#include "utils/logging.h"

namespace chorus {

// Called on a group's loop for Outputs::checkpoint_needed that the group's
// own store cannot serve: fetch a checkpoint of `group` above `above` (its
// chosen_end) from `peer` (or another peer). Repeats come while one runs.
using CheckpointRequestHook =
    std::function<void(uint32_t group, uint64_t peer, uint64_t above)>;

// The directory of group `group`'s checkpoints under `options`, "" when
// checkpoints are off (no checkpoint_dir and no data_dir).
std::string CheckpointDirOf(const Options& options, uint32_t group);

class GroupCheckpoint {
 public:
  // Everything is borrowed and outlives this object. `worker` may be null:
  // then this group makes no checkpoints (it still loads them). `queue` is
  // the group's loop inbox (kCheckpointDone is posted there).
  // `applied_from` is the group's map of state machine id -> the first
  // instance Apply executes on it (instances below are reflected in its
  // state already): Restore fills it, a load raises it.
  GroupCheckpoint(const Options* options, uint32_t group, Logger* logger,
                  CheckpointWorker* worker, CheckpointRequestHook request,
                  std::shared_ptr<EventQueue> queue,
                  const std::map<int, StateMachine*>* machines,
                  std::map<int, uint64_t>* applied_from);
  ~GroupCheckpoint();

  GroupCheckpoint(const GroupCheckpoint&) = delete;
  GroupCheckpoint& operator=(const GroupCheckpoint&) = delete;

  // ---- Group::Open, before the loop starts ----
  // Opens the store (when checkpoints are on).
  Status OpenStore();
  // Fills applied_from from every state machine's GetCheckpointInstanceId,
  // loads the newest stored checkpoint into those behind it and installs it
  // into `core` when it is ahead of the core's chosen prefix; that install's
  // records are written to `log` (synced) here, and its other outputs go to
  // *out (for the loop's first round). A state machine that fails to load
  // it: the replay from the log covers it when the log still starts at or
  // below that state machine's own checkpoint (a warning), else the error.
  Status Restore(paxos::Core* core, LogStorage* log, paxos::Outputs* out);
  // Replays the chosen values [min applied_from, chosen_end) through
  // `apply`. Corruption when the log no longer holds one of them.
  Status Replay(paxos::Core* core, const std::function<void(const paxos::ChosenValue&)>& apply);

  // ---- Loop thread ----
  // A chosen value of `bytes` at `instance` was applied (the byte margin).
  void OnApplied(uint64_t instance, size_t bytes);
  // After a round's applies (`executed`: the next instance to execute):
  // serves `needed`, and makes a checkpoint when one is due. Core outputs go
  // to *step (the caller merges them into the next round). Returns the
  // instance of a checkpoint it loaded from the store and installed (the
  // next instance to execute now), 0 when none.
  uint64_t AfterRound(paxos::Core* core, const std::vector<paxos::CheckpointNeeded>& needed,
                  uint64_t executed, paxos::Outputs* step);
  // kCheckpointDone: the worker stored checkpoint `instance` (status ok),
  // or failed to. Tells the core (trimming) on success.
  void OnMade(paxos::Core* core, uint64_t instance, const Status& status, paxos::Outputs* step);
  // kLoadCheckpoint: loads stored checkpoint `instance` (a received one).
  // Returns `instance` when it was installed (the next instance to execute
  // now), 0 when not (stale, or an error: logged, the old state stays).
  uint64_t OnLoad(paxos::Core* core, uint64_t instance, paxos::Outputs* step);
  // At the end of every round, once Group published its log start: ends
  // making() for a checkpoint whose OnMade came before this round.
  void EndOfRound();
  // The group halted: make nothing more.
  void Halt() { halted_ = true; }

  // ---- Thread-safe ----
  // The group's store, nullptr when checkpoints are off.
  CheckpointStore* store() const { return store_.get(); }
  uint64_t checkpoint_instance() const { return store_ ? store_->newest_instance() : 0; }
  uint64_t made() const { return made_.load(std::memory_order_relaxed); }
  uint64_t loaded() const { return loaded_.load(std::memory_order_relaxed); }
  // Whether a checkpoint is being written now, or its trim is not yet
  // executed and published (GetMinChosenInstanceId). For tests.
  bool making() const { return making_.load(std::memory_order_acquire); }

 private:
  // Loads checkpoint m into every state machine whose applied_from is below
  // it, then installs it into the core (its outputs: *step, cleared first).
  // Errors leave the core untouched.
  Status Load(paxos::Core* core, const CheckpointManifest& m, paxos::Outputs* step);
  Status LoadInto(const CheckpointManifest& m, int id, StateMachine* sm);
  // Core::InstallCheckpoint of `m`, with the membership it carries (if any).
  Status Install(paxos::Core* core, const CheckpointManifest& m, paxos::Outputs* out);
  void MaybeMake(paxos::Core* core, uint64_t executed);
  // The byte margin's bound on the trim point of a checkpoint whose values
  // below it add up to `bytes_below` (in applied_bytes_'s count); prunes the
  // samples no later checkpoint needs.
  uint64_t TrimLimit(uint64_t bytes_below);
  void ResetSamples(uint64_t instance);

  const Options* const options_;
  const uint32_t group_;
  Logger* const logger_;
  CheckpointWorker* const worker_;
  const CheckpointRequestHook request_;
  const std::shared_ptr<EventQueue> queue_;
  const std::map<int, StateMachine*>* const machines_;
  std::map<int, uint64_t>* const applied_from_;
  std::unique_ptr<CheckpointStore> store_;  // set by OpenStore; read-only afterwards

  std::atomic<uint64_t> made_{0};
  std::atomic<uint64_t> loaded_{0};
  // Written by the loop; read by tests.
  std::atomic<bool> making_{false};

  // ---- Loop thread only ----
  bool supported_ = true;   // false once a state machine said NotSupported
  bool halted_ = false;
  bool finished_ = false;   // OnMade ran; EndOfRound clears making_
  uint64_t last_ = 0;       // instance of the last checkpoint made, tried or loaded
  bool warned_no_store_ = false;
  // The byte margin: (instance, bytes of the values applied since the
  // samples began, below that instance), one sample every sample_every_
  // instances, oldest first. Only with log_keep_bytes.
  std::deque<std::pair<uint64_t, uint64_t>> samples_;
  uint64_t sample_every_ = 1;
  uint64_t applied_bytes_ = 0;
  // applied_bytes_ when the checkpoint being made was prepared.
  uint64_t making_bytes_ = 0;
};

}  // namespace chorus

#endif  // CHORUS_NODE_GROUP_CHECKPOINT_H_
