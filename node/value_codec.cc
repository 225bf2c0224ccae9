#include "node/value_codec.h"

#include "utils/coding.h"

namespace chorus {

namespace {
constexpr char kSingle = 0x01;
constexpr char kBatch = 0x02;
}  // namespace

std::string EncodeSingleValue(int state_machine_id, const std::string& payload) {
  std::string out;
  out.reserve(5 + payload.size());
  out.push_back(kSingle);
  PutFixed32(&out, static_cast<uint32_t>(state_machine_id));
  out.append(payload);
  return out;
}

std::string EncodeBatchValue(const std::vector<const AppValue*>& values) {
  size_t total = 5;
  for (const AppValue* v : values) total += 8 + v->payload.size();
  std::string out;
  out.reserve(total);
  out.push_back(kBatch);
  PutFixed32(&out, static_cast<uint32_t>(values.size()));
  for (const AppValue* v : values) {
    PutFixed32(&out, static_cast<uint32_t>(v->state_machine_id));
    PutFixed32(&out, static_cast<uint32_t>(v->payload.size()));
    out.append(v->payload);
  }
  return out;
}

Status DecodeAppValues(const std::string& value, std::vector<AppValue>* out) {
  out->clear();
  if (value.size() < 5) return Status::Corruption("paxos value too short to hold a header");
  const char* p = value.data() + 1;
  size_t left = value.size() - 5;
  if (value[0] == kSingle) {
    out->push_back(AppValue{static_cast<int>(DecodeFixed32(p)), value.substr(5)});
    return Status::OK();
  }
  if (value[0] != kBatch) return Status::Corruption("paxos value has an unknown format byte");
  const uint32_t count = DecodeFixed32(p);
  p += 4;
  // Each entry takes at least 8 bytes: a count larger than that is corrupt
  // and must not drive a huge reserve().
  if (count > left / 8) return Status::Corruption("batch value count exceeds its size");
  out->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (left < 8) return Status::Corruption("batch value truncated in an entry header");
    AppValue v;
    v.state_machine_id = static_cast<int>(DecodeFixed32(p));
    const uint32_t len = DecodeFixed32(p + 4);
    p += 8;
    left -= 8;
    if (len > left) return Status::Corruption("batch value truncated in an entry payload");
    v.payload.assign(p, len);
    p += len;
    left -= len;
    out->push_back(std::move(v));
  }
  if (left != 0) return Status::Corruption("batch value has trailing bytes");
  return Status::OK();
}

}  // namespace chorus
