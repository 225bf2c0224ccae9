// Group: one paxos group of a running Node. It owns the group's protocol
// core and log, and runs the group's event loop thread, which is the only
// thread that touches the core and the state machines.
//
// The loop takes every queued event (messages, timeouts, proposals,
// deadlines), feeds each into the core, adds each step's outputs to one
// paxos::Round (paxos/round.h: the core's group commit, which the simulation
// runs too), and executes the merged round in the order the core's contract
// requires:
//   persist (one synced write for the whole round)
//   -> send, and hand the catch-up reads to the node's CatchupReader
//   -> apply chosen values, answer proposers -> timers.
// The loop does no merging of its own: what a round holds, and why merging
// is safe, is round.h's contract (unittest/node/persist_before_send_test.cc
// checks from outside that replies leave only after their records are
// durable). Which proposals enter the core, and when, is Admission's
// (admission.h); time, timers and the core's seed come from GroupEnv::runtime.
#ifndef CHORUS_NODE_GROUP_H_
#define CHORUS_NODE_GROUP_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chorus/log_storage.h"
#include "chorus/node.h"
#include "chorus/options.h"
#include "chorus/state_machine.h"
#include "chorus/transport.h"
#include "node/address_book.h"
#include "node/admission.h"
#include "node/catchup_reader.h"
#include "node/checkpoint_store.h"
#include "node/checkpoint_worker.h"
#include "node/event_queue.h"
#include "node/group_checkpoint.h"
#include "node/group_master.h"
#include "node/group_membership.h"
#include "node/membership_changer.h"
#include "node/membership_wire.h"
#include "node/group_timers.h"
#include "node/metrics_recorder.h"
#include "node/proposal.h"
#include "node/propose_batch.h"
#include "node/runtime_env.h"
#include "paxos/core.h"
#include "paxos/round.h"
#include "utils/logging.h"
#include "utils/mutex.h"
#include "utils/notifier_pool.h"

namespace chorus {

// What a Group borrows from its Node. Everything outlives the Group.
struct GroupEnv {
  const Options* options = nullptr;
  Transport* transport = nullptr;
  // Clock, timers and core seeds (tests replace them through its hooks).
  const RuntimeEnv* runtime = nullptr;
  NotifierPool* notifier_pool = nullptr;
  Logger* logger = nullptr;
  // REQUIRED. Serves the catch-up reads the core plans
  // (Outputs::catchup_reads) off the loop. The Group hands it its log: the
  // reader must be stopped before the Group is destroyed.
  CatchupReader* catchup_reader = nullptr;
  // Runs the checkpoint writers and commits off the loop (GroupCheckpoint).
  // nullptr: the group makes no checkpoints (it still loads stored ones).
  // Stopped before the Group is destroyed.
  CheckpointWorker* checkpoint_worker = nullptr;
  // Fetches a checkpoint from a peer (Outputs::checkpoint_needed), called on
  // the loop; the transfer sets it. Empty: none.
  CheckpointRequestHook request_checkpoint;
  // The data dir's identity (data_dir_identity.h): the core's incarnation
  // and joined (membership.h M5).
  uint64_t incarnation = 0;
  bool joined = false;
  // Where master addresses are looked up (thread-safe); nullptr:
  // Options::nodes.
  const AddressBook* address_book = nullptr;
  // Called on the loop (and once in Open) with the group's membership
  // history whenever it changed. Empty: none.
  GroupMembership::ChangeHook on_membership_change;
};

class Group {
 public:
  // Opens the group's checkpoint store, the core on `log` (recovering its
  // state), loads the newest stored checkpoint into the state machines that
  // are behind it and replays the chosen values they still need
  // (group_checkpoint.h). Does not start the loop.
  static Status Open(const GroupEnv& env, uint32_t index, std::unique_ptr<LogStorage> log,
                     std::vector<StateMachine*> state_machines, std::unique_ptr<Group>* group);
  ~Group();

  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  // Starts the event loop thread.
  Status Start();
  // Answers every waiting proposer with Stopped, stops and joins the loop,
  // cancels its timers. Idempotent.
  void Stop();

  // Thread-safe. A paxos message (the group prefix removed) from peer
  // `from`, the sender the transport verified; the core drops it (and
  // counts it) unless the message names that sender as its own. Dropped (and
  // counted) when the messages already queued hold
  // Options::max_inbound_queue_bytes.
  void PostMessage(uint64_t from, std::string bytes);
  uint64_t dropped_messages() const { return dropped_messages_.load(std::memory_order_relaxed); }

  // Thread-safe. Proposes and waits; see Node::Propose / BatchPropose.
  Status Propose(const std::string& value, ExecuteContext* ctx, bool batch,
                 uint64_t* instance_id, uint32_t* batch_index);

  // Thread-safe, never blocks. See Node::ProposeAsync / BatchProposeAsync
  // (group_async.cc): `done` is called exactly once, maybe before this
  // returns. `began`: when the node's call began (for the metrics).
  void ProposeAsync(const std::string& value, ProposeCallback done, const ExecuteContext* ctx,
                    bool batch, std::chrono::steady_clock::time_point began);
  // Asynchronous proposals whose done has not been called yet (for tests).
  int async_outstanding() const { return async_outstanding_.load(std::memory_order_relaxed); }

  // Thread-safe. See Node::ReadBarrier, TransferMaster (target 0: StepDown).
  // REQUIRES: Options::master_election (the node checks it).
  Status ReadBarrier(uint64_t* instance);
  Status TransferMaster(uint64_t target);

  // ---- Membership (thread-safe) ----
  // A membership call on this node, the master (request.from is self): runs
  // it on the loop and waits for its answer for up to timeout_ms plus a
  // grace period. See MembershipChanger.
  Status MembershipCall(const MembershipMessage& request, int timeout_ms);
  // A membership request frame (prefix removed) from peer `from`, the
  // sender the transport verified: run on the loop, answered over the
  // transport.
  void PostMembershipRequest(uint64_t from, std::string bytes);
  // The membership as of the loop's latest round.
  MembershipSnapshot membership() const { return membership_.snapshot(); }

  // Thread-safe queries.
  uint64_t now_instance_id() const { return next_execute_.load(std::memory_order_acquire); }
  // The master as of the loop's latest round (all zero with master_election off).
  MasterSnapshot master() const { return master_.snapshot(); }
  // NotMaster with the master's address, for a NotMaster of the core.
  Status WithMasterAddress(const Status& s) const { return master_.WithMasterAddress(s); }
  // The first instance the log holds (Core::log_start as of the loop's
  // latest round; Node::GetMinChosenInstanceId).
  uint64_t min_chosen_instance_id() const { return log_start_.load(std::memory_order_acquire); }

  // ---- Checkpoints (thread-safe) ----
  // The group's store, nullptr when checkpoints are off (for the transfer).
  CheckpointStore* checkpoint_store() const { return checkpoint_->store(); }
  // A checkpoint received from a peer is committed to the store as
  // `instance`: the loop loads it into every state machine and installs it
  // into the core (kLoadCheckpoint). Ignored when stale or stopped.
  void PostLoadCheckpoint(uint64_t instance);
  // The newest stored checkpoint's instance (0: none), and the checkpoints
  // made and loaded (from a peer) since Open.
  uint64_t checkpoint_instance() const { return checkpoint_->checkpoint_instance(); }
  uint64_t checkpoints_made() const { return checkpoint_->made(); }
  uint64_t checkpoints_loaded() const { return checkpoint_->loaded(); }
  // Whether a checkpoint is being written right now (for tests).
  bool checkpoint_in_progress() const { return checkpoint_->making(); }
  // ---- Metrics ----
  // The group's counters and histograms (Node::GetMetrics). Thread-safe.
  GroupMetricsRecorder* metrics() { return &metrics_; }
  const GroupMetricsRecorder* metrics() const { return &metrics_; }
  // The core's counters. Loop thread only, or once Stop() returned.
  const paxos::CoreStats& core_stats() const { return core_->stats(); }
  // OK while the group works; the reason once it halted (IOError: a log
  // write failed; Corruption: its log disagrees with a peer's); Stopped after
  // Stop().
  Status health() const;

  // For tests that must order events without sleeping. Thread-safe.
  // Proposers inside Propose (from its overload check until it returns).
  int waiting_proposals() const { return waiting_.load(std::memory_order_relaxed); }
  // Events queued for the loop and not taken yet; whether Stop closed the queue.
  size_t queued_events() const { return queue_->size(); }
  bool queue_closed() const { return queue_->closed(); }
  // BatchPropose values waiting in the pending batch.
  size_t batch_pending() { return batch_.pending_count(); }

 private:
  // A caller (Propose, ReadBarrier, TransferMaster) that the loop has not
  // answered by its deadline plus this much gives up on its own (the loop
  // is stuck, e.g. on a hung disk).
  static constexpr std::chrono::seconds kAnswerGrace{2};

  Group(const GroupEnv& env, uint32_t index, std::unique_ptr<LogStorage> log,
        std::vector<StateMachine*> state_machines);

  Status ResolveStateMachine(const ExecuteContext* ctx, int* id) const;
  // What every proposal passes before it is queued (Propose's contract):
  // the deadline of ctx, stopped, max_value_bytes, the state machine.
  Status CheckProposal(const std::string& value, const ExecuteContext* ctx, int* timeout_ms,
                       int* state_machine_id) const;
  // Sets the waiter's enqueue time, deadline and proposal id.
  void Stamp(ProposalWaiter* waiter, int timeout_ms);
  // Queues the waiter's value (alone, or into the pending batch). False:
  // the queue is closed and nobody will answer it (a batch answers itself).
  bool Post(const std::shared_ptr<ProposalWaiter>& waiter, const std::string& value, bool batch);
  void Loop();
  void HandleEvent(Event* event, paxos::Outputs* step);
  // Executes the current round, then rounds of what the executed ones
  // unblocked (backlog starts), until a round is empty.
  void RunRounds();
  void HandlePropose(const std::shared_ptr<ProposalRequest>& request, paxos::Outputs* step);
  uint64_t NextProposalId();
  // Adds the outputs of one core step to the current round (clears *step).
  void Merge(paxos::Outputs* step);
  // Executes the current round and starts an empty one.
  void ExecuteRound();
  void Apply(const paxos::ChosenValue& chosen);
  void Finish(const paxos::ProposalResult& result);
  void Halt(const Status& why);
  // Sends those of a round's messages whose before_persist is
  // `before_persist`, behind the group's envelope, as one batch.
  void SendMessages(const std::vector<paxos::OutMessage>& messages, bool before_persist);
  // Hands the core the current time (monotonic ms): before every core input.
  void SetCoreNow();
  // Posts a call (kReadBarrier / kTransfer) and waits for the loop's answer
  // for up to timeout_ms plus a grace period.
  Status Call(Event event, int timeout_ms, uint64_t* instance);
  void HandleReadBarrier(const std::shared_ptr<CallWaiter>& call, paxos::Outputs* step);
  void HandleTransfer(const std::shared_ptr<CallWaiter>& call, uint64_t target,
                      paxos::Outputs* step);
  // kMembership: a request of a local or remote caller (group_calls.cc).
  void HandleMembership(Event* event, paxos::Outputs* step);
  // The core's clock in ms (what SetCoreNow hands it).
  uint64_t CoreNowMs() const;
  // After a round: the master snapshot and the callback (master_election only).
  void UpdateMaster();
  // ---- Metrics (group_metrics.cc) ----
  // After a round: publishes its figures and logs its events (loop only).
  void PublishMetrics(const paxos::Outputs& round);
  // The end of Open: one info line (log range, replay, time taken).
  void LogOpened(std::chrono::steady_clock::time_point began, uint64_t replayed);

  const GroupEnv env_;
  const uint32_t index_;
  // Counters (metrics_recorder.h says what guards them). After env_ and index_.
  GroupMetricsRecorder metrics_{index_, env_.options->self.id(),
                                2 * static_cast<uint64_t>(env_.options->max_inflight), env_.logger};
  const std::unique_ptr<LogStorage> log_;
  std::unique_ptr<paxos::Core> core_;
  // id -> state machine of this group. Read-only after construction.
  std::map<int, StateMachine*> state_machines_;
  // id -> the first instance Apply executes on that state machine: it
  // already reflects every instance below (its own checkpoint, or one chorus
  // loaded into it). Set by GroupCheckpoint::Restore in Open, raised by a
  // load on the loop; loop thread only afterwards.
  std::map<int, uint64_t> checkpoints_;
  // The membership snapshot, log lines and broadcast list (its snapshot is
  // thread-safe, the rest loop only).
  GroupMembership membership_{env_.options, index_, env_.logger, env_.on_membership_change};
  // Proposal ids (ExecuteContext::proposal_id): MixBits(base + seq), from
  // any proposing thread.
  const uint64_t proposal_id_base_;
  std::atomic<uint64_t> proposal_seq_{0};

  std::shared_ptr<EventQueue> queue_;
  ProposeBatch batch_;
  std::thread loop_;
  std::atomic<bool> stopped_{false};
  // Proposers waiting for an answer (queued, in flight or executing).
  std::atomic<int> waiting_{0};
  // Asynchronous proposals not yet handed to their done (max_async_proposals).
  std::atomic<int> async_outstanding_{0};
  std::atomic<uint64_t> dropped_messages_{0};  // inbound queue full
  // The next instance the state machines execute (written by the loop).
  std::atomic<uint64_t> next_execute_{0};
  // Core::log_start() as of the latest round (written by the loop).
  std::atomic<uint64_t> log_start_{0};
  // The loop thread, so that Propose from inside Execute is refused instead
  // of waiting for itself.
  std::atomic<std::thread::id> loop_thread_id_{};
  mutable Mutex health_mu_;
  Status health_ GUARDED_BY(health_mu_);  // copy of halted_ for other threads

  // ---- Loop thread only ----
  std::unique_ptr<GroupTimers> timers_;
  paxos::Round round_;  // the current round: the steps since the last ExecuteRound
  // The master snapshot (thread-safe), read barriers and transfers (loop
  // only): see group_master.h. After timers_, which it uses.
  GroupMaster master_;
  // The membership calls this node runs as master (loop only). After timers_.
  std::unique_ptr<MembershipChanger> changer_;
  // Which proposals are in the core, which wait; made by Open once the core exists.
  std::unique_ptr<Admission> admission_;
  // Making, trimming behind and loading checkpoints (its accessors are
  // thread-safe, the rest loop only). Made by the constructor.
  std::unique_ptr<GroupCheckpoint> checkpoint_;
  // Non-ok once the group halted (log write failed, checksum mismatch): it
  // then answers every proposal with this and feeds nothing to the core.
  Status halted_;
};

}  // namespace chorus

#endif  // CHORUS_NODE_GROUP_H_
