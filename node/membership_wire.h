// The membership calls' request and reply (Node::AddMember and friends go to
// the group's master).
//
// They travel on the group's control channel, the checkpoint channel's
// prefix (kCheckpointChannel | group, checkpoint_wire.h), with their own
// message types, so NodeImpl tells them from the checkpoint messages by the
// type byte that follows the prefix:
//   REQUEST  caller -> master: do `op` (node id, address), answer before
//            `timeout_ms`; `request_id` (random, chosen by the caller)
//            identifies the call: the caller sends it again while it waits
//            (a lost frame, a new master), and the master attaches a repeat
//            to the change it runs for it instead of refusing it as Busy.
//            `retry`: sent again to another master than the first, so a
//            change that already holds (the first master made it) is OK.
//   REPLY    master -> caller: the call's Status (code and message).
//
// Encoding (little-endian), after the u32 prefix:
//   u8 type, u64 cluster_id, u32 group, u64 from, u64 request_id, then
//   REQUEST: u8 op, u8 retry, u64 node_id, u32 timeout_ms, u32 len + address
//   REPLY:   u8 code, u32 len + message
// A frame that does not parse exactly is Corruption (dropped and counted).
#ifndef CHORUS_NODE_MEMBERSHIP_WIRE_H_
#define CHORUS_NODE_MEMBERSHIP_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "chorus/status.h"

namespace chorus {

// The type bytes (the checkpoint channel's own are 1..3).
constexpr uint8_t kMembershipRequestType = 16;
constexpr uint8_t kMembershipReplyType = 17;
constexpr size_t kMaxMembershipText = 1024;

enum class MembershipOp : uint8_t {
  kAddFollower = 1,  // address: the new node
  kPromote = 2,      // node_id: the follower
  kAddMember = 3,    // address: the new node
  kRemove = 4,       // node_id: the member
  kChange = 5,       // node_id: the voter replaced; address: the new node
};
const char* MembershipOpName(MembershipOp op);

struct MembershipMessage {
  uint8_t type = kMembershipRequestType;
  uint64_t cluster_id = 0;
  uint32_t group = 0;
  uint64_t from = 0;  // the sender (checked against the transport's)
  uint64_t request_id = 0;
  // REQUEST
  MembershipOp op = MembershipOp::kAddFollower;
  bool retry = false;
  uint64_t node_id = 0;
  uint32_t timeout_ms = 0;
  std::string address;  // NodeInfo text
  // REPLY
  Status status;
};

// With the u32 channel prefix of msg.group. REQUIRES: msg.group < kCheckpointChannel.
std::string EncodeMembershipMessage(const MembershipMessage& msg);
// Parses a frame WITHOUT its u32 prefix. OK or Corruption.
Status DecodeMembershipMessage(const char* data, size_t size, MembershipMessage* msg);
// Whether a frame of the control channel (prefix removed) is one of these.
inline bool IsMembershipMessage(const std::string& frame) {
  return !frame.empty() && (static_cast<uint8_t>(frame[0]) == kMembershipRequestType ||
                            static_cast<uint8_t>(frame[0]) == kMembershipReplyType);
}

// A Status of `code` with `message` (the reply's decoding); an unknown code
// is Corruption.
Status StatusFromCode(int code, const std::string& message);

}  // namespace chorus

#endif  // CHORUS_NODE_MEMBERSHIP_WIRE_H_
