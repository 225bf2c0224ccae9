#include "node/checkpoint_wire.h"

#include "utils/check.h"
#include "utils/coding.h"
#include "utils/field_reader.h"

namespace chorus {

std::string EncodeCheckpointMessage(const CheckpointMessage& msg) {
  CHORUS_CHECK(msg.group < kCheckpointChannel);
  std::string out;
  out.reserve(64 + msg.manifest.size() + msg.data.size() + msg.reason.size());
  PutFixed32(&out, kCheckpointChannel | msg.group);
  out.push_back(static_cast<char>(msg.type));
  PutFixed64(&out, msg.cluster_id);
  PutFixed32(&out, msg.group);
  PutFixed64(&out, msg.from);
  PutFixed64(&out, msg.transfer_id);
  switch (msg.type) {
    case CheckpointMessage::Type::kFetch:
      PutFixed64(&out, msg.instance);
      PutFixed64(&out, msg.above);
      PutFixed64(&out, msg.offset);
      break;
    case CheckpointMessage::Type::kChunk:
      PutFixed64(&out, msg.instance);
      PutFixed64(&out, msg.offset);
      PutFixed32(&out, msg.crc);
      PutLengthPrefixed(&out, msg.manifest);
      PutLengthPrefixed(&out, msg.data);
      break;
    case CheckpointMessage::Type::kNone:
      PutLengthPrefixed(&out, msg.reason);
      break;
  }
  return out;
}

Status DecodeCheckpointMessage(const char* data, size_t size, size_t max_data_bytes,
                               CheckpointMessage* msg) {
  FieldReader r(data, size);
  CheckpointMessage m;
  uint8_t type = 0;
  bool ok = r.Get8(&type) && r.Get64(&m.cluster_id) && r.Get32(&m.group) && r.Get64(&m.from) &&
            r.Get64(&m.transfer_id);
  if (!ok) return Status::Corruption("checkpoint message: short header");
  if (m.group >= kCheckpointChannel) return Status::Corruption("checkpoint message: bad group");
  switch (type) {
    case static_cast<uint8_t>(CheckpointMessage::Type::kFetch):
      m.type = CheckpointMessage::Type::kFetch;
      ok = r.Get64(&m.instance) && r.Get64(&m.above) && r.Get64(&m.offset);
      break;
    case static_cast<uint8_t>(CheckpointMessage::Type::kChunk):
      m.type = CheckpointMessage::Type::kChunk;
      ok = r.Get64(&m.instance) && r.Get64(&m.offset) && r.Get32(&m.crc) &&
           r.GetString(kMaxManifestBytes, &m.manifest) && r.GetString(max_data_bytes, &m.data);
      break;
    case static_cast<uint8_t>(CheckpointMessage::Type::kNone):
      m.type = CheckpointMessage::Type::kNone;
      ok = r.GetString(kMaxReasonBytes, &m.reason);
      break;
    default:
      return Status::Corruption("checkpoint message: unknown type " + std::to_string(type));
  }
  if (!ok) {
    return Status::Corruption(r.too_long() ? "checkpoint message: a field exceeds its bound"
                                           : "checkpoint message: truncated");
  }
  if (r.left() != 0) {
    return Status::Corruption("checkpoint message: " + std::to_string(r.left()) +
                              " trailing bytes");
  }
  *msg = std::move(m);
  return Status::OK();
}

}  // namespace chorus
