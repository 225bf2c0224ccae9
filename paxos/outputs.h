// Outputs: everything one input step of the core asks the runtime to do.
#ifndef CHORUS_PAXOS_OUTPUTS_H_
#define CHORUS_PAXOS_OUTPUTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chorus/log_storage.h"
#include "chorus/status.h"
#include "paxos/ballot.h"
#include "paxos/membership.h"

namespace chorus {
namespace paxos {

// The timers of the core. A timer is identified by its kind and a generation;
// starting a kind again supersedes the earlier one, and a superseded timer
// that still fires is ignored by OnTimeout (so cancelling is only an
// optimisation for the runtime).
enum class TimerKind : uint8_t {
  kPrepare = 1,  // phase 1 timeout
  kAccept = 2,   // phase 2 timeout
  kBackoff = 3,  // randomised wait before retrying phase 1
  kLearn = 4,    // periodic learner check (catch-up)
  // Master election only (CoreOptions::master_election): never started when
  // it is off.
  kHeartbeat = 5,  // the master's heartbeat period (heartbeat_interval_ms)
  kElection = 6,   // election check (election_timeout_ms + jitter)
};

struct TimerId {
  TimerKind kind = TimerKind::kLearn;
  uint64_t generation = 0;
  bool operator==(const TimerId& o) const { return kind == o.kind && generation == o.generation; }
};

struct TimerStart {
  TimerId id;
  uint64_t delay_ms = 0;  // fire OnTimeout(id) after this long (monotonic clock)
};

// Node id 0 is never a member: a message to kBroadcast goes to every member
// except this node.
constexpr uint64_t kBroadcast = 0;

struct OutMessage {
  uint64_t to = kBroadcast;
  std::string bytes;  // a serialized PaxosMsg; pass it to the peer's OnMessage
  // True for a request that may leave BEFORE its step's persist (or with
  // the others, after it): a proposer's ACCEPT, which carries no vote of
  // this node. Sending it while this node's own vote for it is being synced
  // overlaps the two fsyncs of a proposal (this node's and the acceptors'),
  // as a Raft leader appends to its log in parallel with replicating.
  // Why it is safe:
  // - its replies (ACCEPTED) can reach the core only as inputs of a later
  //   step, and the runtime gives it none before this persist returned, so
  //   no vote of this node is counted, by this node or anyone, before it is
  //   durable; a crash right after it left loses only this node's own vote,
  //   as if its acceptor had never received the request;
  // - its ballot was promised by this node's own acceptor, durably, in an
  //   earlier round, so a crash before this persist cannot make a restart
  //   reuse the ballot for another value. A step, or a merged round
  //   (round.h), that persists a variable (a promise moved) or a trim has
  //   no such message: the core and Round clear the flag then.
  bool before_persist = false;
};

// A chosen value, ready to be applied. They come out in instance order,
// exactly once each (per Core object; see Core::ReadChosen for replay).
struct ChosenValue {
  uint64_t instance = 0;
  // A filler the core chose to close a gap in the log: there is no
  // application value; skip it (its instance id is still used).
  bool noop = false;
  std::string value;     // the proposer's bytes (empty for a noop)
  uint64_t proposer = 0;     // node id of the proposer
  uint64_t proposal_id = 0;  // unique per proposal of that proposer (random)
  bool ours = false;     // proposed through this Core object's Propose()
  uint64_t token = 0;    // the Propose() token, valid when ours
};

// A catch-up batch the core planned but did not read: a lagging peer asked
// for values the core's in-memory cache no longer holds (CoreOptions::
// chosen_cache_size), and reading them from the LogStorage in the step would
// stall the group's loop (and its round's fsync) on the disk. The runtime
// turns it into the LEARN_VALUES reply with ReadCatchup (paxos/catchup.h),
// off its loop; the simulation does it inline. Everything the reply needs is
// here, so serving it needs the LogStorage only, not the core.
struct CatchupRead {
  uint64_t peer = 0;    // the asker: the reply goes to it
  uint64_t first = 0;   // the first instance it asked for
  // The core's chosen_end when it planned the read: the batch holds only
  // instances below it (chosen, their records written no later than the
  // round that holds this read), and the reply's header reports it.
  uint64_t chosen_end = 0;
  size_t max_count = 0;  // CoreOptions::catchup_batch_count
  size_t max_bytes = 0;  // CoreOptions::catchup_batch_bytes
  // The rest of the reply's header, as CoreContext::Send fills it.
  uint64_t cluster_id = 0;
  uint64_t group = 0;
  uint64_t from = 0;  // this node
};

// A peer answered a catch-up request "use a checkpoint" (PaxosMsg::
// log_start): its log starts at log_start, above this node's chosen_end, so
// the values this node needs are in a checkpoint only. The runtime fetches
// that peer's newest checkpoint, loads it into every state machine and
// calls Core::InstallCheckpoint; log catch-up then goes on from there.
struct CheckpointNeeded {
  uint64_t peer = 0;       // the node that answered (it holds the checkpoint)
  uint64_t log_start = 0;  // the first instance its log holds
};

// The end of a proposal: ok with the instance its value was chosen at, or
// Stopped when it was cancelled before its value was chosen, or Stopped
// "outcome unknown: ..." when a checkpoint install (Core::InstallCheckpoint)
// skipped the instance its value was in flight at: it may or may not have
// been chosen there (never re-proposed; report it as indeterminate).
struct ProposalResult {
  uint64_t token = 0;
  uint64_t instance = 0;  // valid when status.ok()
  Status status;
};

// Who this node believes is the group's master (master election only).
struct MasterView {
  uint64_t node = 0;  // the master's node id; 0: none known
  // The master's epoch: the ballot it became master with. Changes at every
  // change of master (a new master always has a higher ballot).
  Ballot epoch;
  // node is this node, its noop committed (it may serve reads) and its lease
  // was valid when the view was taken (Core::HoldsLease()).
  bool self_ready = false;
  // The master's chosen_end as last heard (its heartbeats carry it; this
  // node's own when it is the master).
  uint64_t master_chosen_end = 0;
};

// The end of a Core::ReadBarrier call.
struct BarrierResult {
  uint64_t token = 0;
  // When status.ok(): every value chosen before the ReadBarrier call is at an
  // instance < instance. Read once the state machines executed [0, instance).
  uint64_t instance = 0;
  // OK; Busy (no master known, master not ready or not in its lease, the
  // master refused, or no reply in time: retry); NotSupported (master
  // election is off); Stopped (core halted).
  Status status;
};

struct Outputs {
  // 1. Persist: write `persist` with `sync` and wait until the write
  // returned. `sync` is true when the batch holds a vote or a variable (the
  // write must be durable before anything is sent); false when it holds
  // chosen records only, which a crash may lose (the core learns them again).
  LogWriteBatch persist;
  bool sync = false;
  // 2. Send (best effort, any order).
  std::vector<OutMessage> messages;
  // 2b. Catch-up reads: serve each (ReadCatchup, paxos/catchup.h) and send
  // its reply to read.peer, at any time after the persist above returned (a
  // read may cover records this very round writes), on any thread, or drop
  // it (the asker asks again on its learn tick).
  std::vector<CatchupRead> catchup_reads;
  // 3. Apply, in this order.
  std::vector<ChosenValue> chosen;
  // Proposals that ended in this step (after their value is in `chosen`).
  std::vector<ProposalResult> finished;
  // Read barriers that ended in this step: wake each once the state machines
  // executed [0, barrier.instance) (the values of `chosen` above included).
  std::vector<BarrierResult> barriers;
  // 3b. The master view changed in this step (this node gained or lost the
  // mastership, got ready, or another node is now known as master, or none
  // is): `master` is the new view. Report it (Options::on_master_change).
  bool master_changed = false;
  MasterView master;
  // 3c'. The membership changed in this step (a change was applied, chosen
  // by this node or learned, a checkpoint brought one, or this node learned
  // it was removed): `membership` is the new history. Update the transport's
  // address book and the group's status from it.
  bool membership_changed = false;
  Membership membership;
  // 3c. Checkpoint catch-up: at most one entry per step. The learner goes on
  // asking on its learn ticks, so the same need is reported again while a
  // transfer runs: the runtime ignores repeats (one transfer at a time).
  std::vector<CheckpointNeeded> checkpoint_needed;
  // 4. Timers.
  std::vector<TimerStart> timers;
  std::vector<TimerId> cancel_timers;
  // Problems the core found (e.g. a checksum mismatch during catch-up: the
  // core has halted). For the runtime to log / surface; nothing to execute.
  std::vector<Status> errors;

  void Clear() { *this = Outputs(); }
};

// Makes every message of *out wait for the persist (OutMessage::
// before_persist false): for a step or a round that persists a variable.
inline void HoldEarlyMessages(Outputs* out) {
  for (OutMessage& m : out->messages) m.before_persist = false;
}

}  // namespace paxos
}  // namespace chorus

#endif  // CHORUS_PAXOS_OUTPUTS_H_
