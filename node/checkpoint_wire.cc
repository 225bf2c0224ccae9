#include "node/checkpoint_wire.h"

#include "utils/check.h"
#include "utils/coding.h"

namespace chorus {

namespace {

void PutString(std::string* dst, const std::string& s) {
  PutFixed32(dst, static_cast<uint32_t>(s.size()));
  dst->append(s);
}

// Reads fields off a frame; every Get fails (and stays failed) once the
// frame is too short, so a caller checks ok() once at the end.
class Reader {
 public:
  Reader(const char* p, size_t n) : p_(p), left_(n) {}
  bool Get8(uint8_t* v) {
    if (!Need(1)) return false;
    *v = static_cast<uint8_t>(*p_);
    Skip(1);
    return true;
  }
  bool Get32(uint32_t* v) {
    if (!Need(4)) return false;
    *v = DecodeFixed32(p_);
    Skip(4);
    return true;
  }
  bool Get64(uint64_t* v) {
    if (!Need(8)) return false;
    *v = DecodeFixed64(p_);
    Skip(8);
    return true;
  }
  // A u32 length then that many bytes; fails when the length exceeds `max`
  // (before anything is copied) or the frame.
  bool GetString(size_t max, std::string* s) {
    uint32_t len = 0;
    if (!Get32(&len)) return false;
    if (len > max) {
      too_long_ = true;
      return false;
    }
    if (!Need(len)) return false;
    s->assign(p_, len);
    Skip(len);
    return true;
  }
  size_t left() const { return left_; }
  bool too_long() const { return too_long_; }

 private:
  bool Need(size_t n) const { return left_ >= n; }
  void Skip(size_t n) {
    p_ += n;
    left_ -= n;
  }
  const char* p_;
  size_t left_;
  bool too_long_ = false;
};

}  // namespace

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
      PutString(&out, msg.manifest);
      PutString(&out, msg.data);
      break;
    case CheckpointMessage::Type::kNone:
      PutString(&out, msg.reason);
      break;
  }
  return out;
}

Status DecodeCheckpointMessage(const char* data, size_t size, size_t max_data_bytes,
                               CheckpointMessage* msg) {
  Reader r(data, size);
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
