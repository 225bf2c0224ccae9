// CheckpointTransfer: catch-up by checkpoint for every group of a Node
// (issue 10). A replica that fell behind every peer's log (the core reports
// Outputs::checkpoint_needed) fetches a peer's newest checkpoint, chunk by
// chunk, into a staging dir of its own CheckpointStore, commits it there
// (which verifies every file's size and crc32c), and hands it to its group,
// which loads it on its loop (StateMachine::LoadCheckpoint, then
// Core::InstallCheckpoint). The same object serves the peers that fetch
// from this node. Wire format: checkpoint_wire.h.
//
// Receiver-driven, one chunk outstanding per transfer: the receiver asks for
// the next chunk only once the previous one is written, so each side holds
// at most one chunk of a transfer in memory. A chunk whose crc32c does not
// match is dropped (counted) and asked for again. A FETCH that got no reply
// within fetch_timeout_ms is sent again from the same offset (resume);
// after failures_per_peer failures in a row the next peer is asked for the
// same instance from the same offset; a peer that no longer has it answers
// with its newest one, and the transfer restarts from byte 0 of that one.
// The old state stays untouched throughout: nothing reaches the group
// before the store committed the whole checkpoint.
//
// Threads: NodeImpl's transport thread calls OnMessage; the group loops call
// Request; everything else runs on two threads of this object: the receive
// thread (writes chunks, commits, times out FETCHes) and the send thread
// (reads chunks from the store, rate limited over all transfers by a token
// bucket, pins what it serves). Neither ever runs on a group's loop, so a
// transfer never stalls the group it is for, nor any other.
#ifndef CHORUS_NODE_CHECKPOINT_TRANSFER_H_
#define CHORUS_NODE_CHECKPOINT_TRANSFER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "chorus/status.h"
#include "chorus/transport.h"
#include "node/checkpoint_store.h"
#include "node/checkpoint_wire.h"
#include "utils/logging.h"
#include "utils/mutex.h"

namespace chorus {

struct CheckpointTransferOptions {
  uint64_t cluster_id = 0;
  uint64_t self = 0;              // this node's id
  std::vector<uint64_t> peers;    // every member but self
  uint32_t chunk_bytes = 1u << 20;  // Options::checkpoint_chunk_bytes
  // The largest CHUNK data accepted from a peer (its chunk size may differ
  // from ours): Options::max_frame_bytes / 2.
  size_t max_chunk_bytes = 32u << 20;
  uint64_t send_bytes_per_sec = 200u << 20;  // 0: unlimited
  int fetch_timeout_ms = 3000;  // no CHUNK / NONE for this long: FETCH again
  int failures_per_peer = 3;    // then ask the next peer
  int pin_idle_ms = 30000;      // a served checkpoint is unpinned after this long without a FETCH
};

// Where a group's transfer stands (GroupStatus transfer_*, checkpoints_sent).
struct CheckpointTransferProgress {
  uint64_t instance = 0;  // the checkpoint being received; 0: none
  uint64_t bytes_done = 0;
  uint64_t bytes_total = 0;
  uint64_t received = 0;  // checkpoints received and committed (handed to the group)
  uint64_t sent = 0;      // checkpoints whose last chunk this node sent
};

// Counters over all groups (monotonic).
struct CheckpointTransferStats {
  uint64_t malformed = 0;       // frames that did not decode, or a bad manifest
  uint64_t foreign = 0;         // another cluster, a sender speaking for another node
  uint64_t unknown_group = 0;   // a group this node does not have (or without checkpoints)
  uint64_t stale = 0;           // CHUNK / NONE of no running transfer, or out of order
  uint64_t bad_chunks = 0;      // crc32c mismatch
  uint64_t timeouts = 0;        // FETCHes sent again after fetch_timeout_ms
  uint64_t peer_switches = 0;   // another peer asked after failures_per_peer
  uint64_t restarts = 0;        // a transfer started over (new instance, failed commit)
  uint64_t nones = 0;           // NONE answers received
  uint64_t dropped = 0;         // work refused: a queue was full, or stopping
  uint64_t chunks_sent = 0;
  uint64_t bytes_sent = 0;
  uint64_t chunks_received = 0;
};

class CheckpointTransfer {
 public:
  // Called on the receive thread once group g's store committed a
  // checkpoint received from a peer. It must be quick (post to the loop).
  using Deliver = std::function<void(const CheckpointManifest& m)>;

  // `transport` and `logger` are borrowed and must outlive this object.
  CheckpointTransfer(const CheckpointTransferOptions& options, Transport* transport,
                     Logger* logger);
  // Stops (see Stop).
  ~CheckpointTransfer();
  CheckpointTransfer(const CheckpointTransfer&) = delete;
  CheckpointTransfer& operator=(const CheckpointTransfer&) = delete;

  // Registers group `group`: its store (borrowed: it must outlive Stop())
  // and what to call with a received checkpoint. REQUIRES: before Start(),
  // once per group.
  void AddGroup(uint32_t group, CheckpointStore* store, Deliver deliver);

  // Starts both threads. IOError if one cannot be created. Call once.
  Status Start();
  // Drops queued work, unpins what the sender pinned, aborts the staging
  // dirs of unfinished transfers, joins both threads. After it returns
  // nothing is sent and no store is touched. Idempotent; thread-safe.
  void Stop();

  // Thread-safe (the transport thread). A frame of the checkpoint channel
  // of `group` (the u32 prefix removed) from `from`, the sender the
  // transport verified. Bad input is dropped and counted (stats()).
  void OnMessage(uint64_t from, uint32_t group, std::string bytes);

  // Thread-safe (a group loop, on Outputs::checkpoint_needed). Starts a
  // transfer of `group` from `peer` (then from the others) of its newest
  // checkpoint above `above` (the group's chosen_end), unless one runs.
  void Request(uint32_t group, uint64_t peer, uint64_t above);

  // Thread-safe.
  CheckpointTransferProgress Progress(uint32_t group) const;
  CheckpointTransferStats stats() const;
  // True while group `group` has a transfer running (for tests).
  bool active(uint32_t group) const { return Progress(group).instance != 0 || pending(group); }

 private:
  struct GroupState;   // per group; in the .cc
  struct Receive;      // a running transfer (receive thread only)
  struct Serving;      // what the sender serves one peer (send thread only)
  struct Job {
    enum class Kind : uint8_t { kMessage, kRequest } kind = Kind::kMessage;
    uint64_t from = 0;  // kMessage: the verified sender; kRequest: the peer to ask
    uint64_t above = 0;
    uint32_t group = 0;
    CheckpointMessage msg;
  };
  using Clock = std::chrono::steady_clock;

  bool pending(uint32_t group) const;
  GroupState* FindGroup(uint32_t group) const;
  bool Push(std::deque<Job>* queue, CondVar* wake, Job job, size_t max);
  // Waits for a job of `queue` until `next` (max(): no deadline): 1 with
  // *job taken, 0 when the deadline passed, -1 when stopping.
  int TakeJob(std::deque<Job>* queue, CondVar* wake, Clock::time_point next,
              Job* job);
  // A message of this node about group's transfer `transfer_id`.
  CheckpointMessage Header(CheckpointMessage::Type type, uint32_t group,
                           uint64_t transfer_id) const;
  void ReceiveLoop();
  void SendLoop();
  // Receive side.
  void HandleRequest(const Job& job);
  // Whether a CHUNK / NONE answers the group's running transfer (its id,
  // the peer we ask now); counts it stale otherwise.
  bool Answers(uint64_t from, const CheckpointMessage& msg);
  void HandleChunk(uint64_t from, const CheckpointMessage& msg);
  void HandleNone(uint64_t from, const CheckpointMessage& msg);
  void CheckTimeouts(Clock::time_point now);
  void SendFetch(GroupState* g);
  void Fail(GroupState* g, bool count_timeout);
  void NextPeer(GroupState* g);
  void Finish(GroupState* g, bool abort);
  Status AcceptManifest(GroupState* g, const CheckpointMessage& msg);
  Status WriteChunk(GroupState* g, const std::string& data);
  void PublishProgress(GroupState* g);
  // Send side.
  void HandleFetch(uint64_t from, const CheckpointMessage& msg);
  void SendNone(uint64_t to, const CheckpointMessage& fetch, const std::string& reason);
  void Throttle(size_t bytes);
  void UnpinIdle(Clock::time_point now);
  void Count(std::atomic<uint64_t>* c) { c->fetch_add(1, std::memory_order_relaxed); }

  const CheckpointTransferOptions options_;
  Transport* const transport_;
  Logger* const logger_;

  // Filled by AddGroup before Start, read-only afterwards.
  std::map<uint32_t, std::unique_ptr<GroupState>> groups_;

  Mutex mu_;
  CondVar receive_wake_;  // receive_jobs_ non-empty, or stopping_
  CondVar send_wake_;     // send_jobs_ non-empty, or stopping_
  std::deque<Job> receive_jobs_ GUARDED_BY(mu_);
  size_t receive_bytes_ GUARDED_BY(mu_) = 0;  // CHUNK data in receive_jobs_
  std::deque<Job> send_jobs_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread receive_thread_;
  std::thread send_thread_;
  Mutex stop_mu_;  // serialises Stop (the joins)

  // ---- Send thread only ----
  std::map<std::pair<uint32_t, uint64_t>, Serving> serving_;  // (group, peer)
  double tokens_ = 0;  // the token bucket, in bytes (negative: debt)
  Clock::time_point refilled_;

  uint64_t next_transfer_id_ = 0;  // receive thread only

  std::atomic<uint64_t> malformed_{0}, foreign_{0}, unknown_group_{0}, stale_{0},
      bad_chunks_{0}, timeouts_{0}, peer_switches_{0}, restarts_{0}, nones_{0}, dropped_{0},
      chunks_sent_{0}, bytes_sent_{0}, chunks_received_{0};
};

}  // namespace chorus

#endif  // CHORUS_NODE_CHECKPOINT_TRANSFER_H_
