// The checkpoint channel's messages (catch-up by checkpoint, issue 10).
//
// A group's paxos messages travel behind the u32 group index (Group::
// SendMessages); the checkpoint channel of group g uses the prefix
// kCheckpointChannel | g, so NodeImpl routes it to the node's
// CheckpointTransfer instead of the group's core. Three messages, all
// receiver-driven (the receiver asks for each chunk, one outstanding):
//
//   FETCH  receiver -> sender: "send me `instance` (0: your newest, which
//          must be above `above`) from byte `offset`".
//   CHUNK  sender -> receiver: bytes [offset, offset + data.size()) of the
//          concatenation of the checkpoint's files (manifest order), with
//          their crc32c; it carries the manifest when offset is 0 and when
//          the instance is not the one asked for (the sender no longer has
//          it: the receiver restarts on the new one).
//   NONE   sender -> receiver: no checkpoint to send (none above `above`,
//          or it cannot be read); `reason` says why.
//
// Encoding (little-endian, utils/coding.h), after the u32 channel prefix:
//   u8 type, u64 cluster_id, u32 group, u64 from, u64 transfer_id, then
//   FETCH: u64 instance, u64 above, u64 offset
//   CHUNK: u64 instance, u64 offset, u32 crc32c(data), u32 len + manifest,
//          u32 len + data
//   NONE:  u32 len + reason
// and nothing more. Every length is bounded (DecodeCheckpointMessage's
// limits); a frame that does not parse exactly is Corruption: the caller
// drops and counts it. Decoding checks the shape only: whether the cluster,
// the group and the sender are right is the transfer's check.
#ifndef CHORUS_NODE_CHECKPOINT_WIRE_H_
#define CHORUS_NODE_CHECKPOINT_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "chorus/status.h"

namespace chorus {

// The top bit of the u32 prefix marks the checkpoint channel. Group indexes
// stay below it (Options::group_count is an int).
constexpr uint32_t kCheckpointChannel = 0x80000000u;

// Largest encoded manifest accepted (a manifest lists files: a few dozen
// bytes each).
constexpr size_t kMaxManifestBytes = 4u << 20;
// Largest NONE reason accepted.
constexpr size_t kMaxReasonBytes = 512;

struct CheckpointMessage {
  enum class Type : uint8_t { kFetch = 1, kChunk = 2, kNone = 3 };
  Type type = Type::kFetch;
  uint64_t cluster_id = 0;
  uint32_t group = 0;
  uint64_t from = 0;         // the sender's node id (checked against the transport's)
  uint64_t transfer_id = 0;  // chosen by the receiver; echoed in CHUNK / NONE
  uint64_t instance = 0;     // FETCH: wanted (0: newest); CHUNK: the one sent
  uint64_t above = 0;        // FETCH only
  uint64_t offset = 0;       // FETCH, CHUNK
  uint32_t crc = 0;          // CHUNK: crc32c of data
  std::string manifest;      // CHUNK: CheckpointManifest::Encode(), or empty
  std::string data;          // CHUNK
  std::string reason;        // NONE
};

// The frame to hand to Transport::Send: the channel prefix of msg.group,
// then the message. REQUIRES: msg.group < kCheckpointChannel.
std::string EncodeCheckpointMessage(const CheckpointMessage& msg);

// Parses a frame WITHOUT its u32 prefix (NodeImpl strips it). OK, or
// Corruption (naming what is wrong) for an unknown type, a short or long
// frame, or a field above its bound: data above max_data_bytes, manifest
// above kMaxManifestBytes, reason above kMaxReasonBytes. *msg is valid only
// on OK.
Status DecodeCheckpointMessage(const char* data, size_t size, size_t max_data_bytes,
                               CheckpointMessage* msg);

}  // namespace chorus

#endif  // CHORUS_NODE_CHECKPOINT_WIRE_H_
