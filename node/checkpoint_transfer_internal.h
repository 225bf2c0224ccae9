// The per-group state of CheckpointTransfer, shared by its three .cc files
// (checkpoint_transfer.cc: threads and routing; checkpoint_transfer_receive.cc;
// checkpoint_transfer_send.cc). Not part of any interface.
#ifndef CHORUS_NODE_CHECKPOINT_TRANSFER_INTERNAL_H_
#define CHORUS_NODE_CHECKPOINT_TRANSFER_INTERNAL_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "node/checkpoint_transfer.h"

namespace chorus {

// A running transfer. Receive thread only (Stop cleans up after the join).
struct CheckpointTransfer::Receive {
  uint64_t id = 0;     // transfer_id of our FETCHes
  uint64_t above = 0;  // only a checkpoint above this helps (the group's chosen_end)
  std::vector<uint64_t> peers;  // the peer named by the request first
  size_t peer_index = 0;
  int failures = 0;        // in a row, on the current peer
  int total_failures = 0;  // since the last chunk written
  size_t nones = 0;        // peers that answered NONE since the last chunk written
  bool have_manifest = false;
  CheckpointManifest manifest;  // the sender's: Commit verifies the files against it
  std::string staging;          // our staging dir in the group's store
  uint64_t offset = 0;          // bytes written so far
  Clock::time_point deadline;   // FETCH again when no reply came by then
  uint64_t peer() const { return peers[peer_index]; }
};

// What the send thread serves one (group, peer). Send thread only.
struct CheckpointTransfer::Serving {
  CheckpointManifest manifest;  // pinned in the store while this exists
  Clock::time_point last_fetch;
  bool counted = false;  // its last chunk was sent (GroupState::sent)
};

struct CheckpointTransfer::GroupState {
  uint32_t group = 0;
  CheckpointStore* store = nullptr;
  Deliver deliver;
  std::unique_ptr<Receive> receive;  // receive thread only
  // A Request was taken and its transfer has not ended: further Requests are
  // ignored. Set by Request (any thread), cleared by the receive thread.
  std::atomic<bool> running{false};
  // Progress, written by the receive thread (sent: by the send thread).
  std::atomic<uint64_t> instance{0}, done{0}, total{0}, received{0}, sent{0};
};

}  // namespace chorus

#endif  // CHORUS_NODE_CHECKPOINT_TRANSFER_INTERNAL_H_
