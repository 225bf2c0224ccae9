#include "node/membership_wire.h"

#include "node/checkpoint_wire.h"
#include "utils/check.h"
#include "utils/coding.h"
#include "utils/field_reader.h"

namespace chorus {

const char* MembershipOpName(MembershipOp op) {
  switch (op) {
    case MembershipOp::kAddFollower: return "AddFollower";
    case MembershipOp::kPromote: return "PromoteFollower";
    case MembershipOp::kAddMember: return "AddMember";
    case MembershipOp::kRemove: return "RemoveMember";
    case MembershipOp::kChange: return "ChangeMember";
  }
  return "?";
}

std::string EncodeMembershipMessage(const MembershipMessage& msg) {
  CHORUS_CHECK(msg.group < kCheckpointChannel);
  std::string out;
  PutFixed32(&out, kCheckpointChannel | msg.group);
  out.push_back(static_cast<char>(msg.type));
  PutFixed64(&out, msg.cluster_id);
  PutFixed32(&out, msg.group);
  PutFixed64(&out, msg.from);
  PutFixed64(&out, msg.request_id);
  if (msg.type == kMembershipRequestType) {
    out.push_back(static_cast<char>(msg.op));
    out.push_back(msg.retry ? 1 : 0);
    PutFixed64(&out, msg.node_id);
    PutFixed32(&out, msg.timeout_ms);
    PutLengthPrefixed(&out, msg.address.substr(0, kMaxMembershipText));
  } else {
    out.push_back(static_cast<char>(msg.status.code()));
    PutLengthPrefixed(&out, msg.status.message().substr(0, kMaxMembershipText));
  }
  return out;
}

Status DecodeMembershipMessage(const char* data, size_t size, MembershipMessage* msg) {
  FieldReader r(data, size);
  MembershipMessage m;
  bool ok = r.Get8(&m.type) && r.Get64(&m.cluster_id) && r.Get32(&m.group) && r.Get64(&m.from) &&
            r.Get64(&m.request_id);
  if (!ok) return Status::Corruption("membership message: short header");
  if (m.type == kMembershipRequestType) {
    uint8_t op = 0;
    uint8_t retry = 0;
    ok = r.Get8(&op) && r.Get8(&retry) && r.Get64(&m.node_id) && r.Get32(&m.timeout_ms) &&
         r.GetString(kMaxMembershipText, &m.address);
    if (ok && (op < 1 || op > 5 || retry > 1)) {
      return Status::Corruption("membership message: bad op " + std::to_string(op));
    }
    m.op = static_cast<MembershipOp>(op);
    m.retry = retry == 1;
  } else if (m.type == kMembershipReplyType) {
    uint8_t code = 0;
    std::string text;
    ok = r.Get8(&code) && r.GetString(kMaxMembershipText, &text);
    if (ok) m.status = StatusFromCode(code, text);
  } else {
    return Status::Corruption("membership message: unknown type " + std::to_string(m.type));
  }
  if (!ok) return Status::Corruption("membership message: truncated or oversized");
  if (r.left() != 0) return Status::Corruption("membership message: trailing bytes");
  *msg = std::move(m);
  return Status::OK();
}

Status StatusFromCode(int code, const std::string& message) {
  using C = Status::Code;
  switch (static_cast<C>(code)) {
    case C::kOk: return Status::OK();
    case C::kNotFound: return Status::NotFound(message);
    case C::kCorruption: return Status::Corruption(message);
    case C::kInvalidArgument: return Status::InvalidArgument(message);
    case C::kIOError: return Status::IOError(message);
    case C::kTimeout: return Status::Timeout(message);
    case C::kBusy: return Status::Busy(message);
    case C::kStopped: return Status::Stopped(message);
    case C::kTooLarge: return Status::TooLarge(message);
    case C::kConflict: return Status::Conflict(message);
    case C::kNotSupported: return Status::NotSupported(message);
    case C::kNotMaster: return Status::NotMaster(message);
  }
  return Status::Corruption("membership reply with unknown status code " + std::to_string(code) +
                            ": " + message);
}

}  // namespace chorus
