#include "node/value_codec.h"

#include "utils/coding.h"

namespace chorus {

namespace {
constexpr char kSingleV1 = 0x01;
constexpr char kBatchV1 = 0x02;
constexpr char kSingle = 0x03;
constexpr char kBatch = 0x04;
constexpr size_t kHeaderBytes = 5;  // format byte + sm id or count
}  // namespace

std::string EncodeSingleValue(int state_machine_id, uint64_t proposal_id,
                              const std::string& payload) {
  std::string out;
  out.reserve(kHeaderBytes + 8 + payload.size());
  out.push_back(kSingle);
  PutFixed32(&out, static_cast<uint32_t>(state_machine_id));
  PutFixed64(&out, proposal_id);
  out.append(payload);
  return out;
}

std::string EncodeBatchValue(const std::vector<const AppValue*>& values) {
  size_t total = kHeaderBytes;
  for (const AppValue* v : values) total += kBatchEntryOverheadBytes + v->payload.size();
  std::string out;
  out.reserve(total);
  out.push_back(kBatch);
  PutFixed32(&out, static_cast<uint32_t>(values.size()));
  for (const AppValue* v : values) {
    PutFixed32(&out, static_cast<uint32_t>(v->state_machine_id));
    PutFixed64(&out, v->proposal_id);
    PutFixed32(&out, static_cast<uint32_t>(v->payload.size()));
    out.append(v->payload);
  }
  return out;
}

namespace {

// DecodeAppValues, except that *out may hold a prefix of the values on error.
Status DecodeInto(const std::string& value, std::vector<AppValue>* out) {
  if (value.size() < kHeaderBytes) return Status::Corruption("paxos value too short to hold a header");
  const char format = value[0];
  const char* p = value.data() + 1;
  if (format == kSingleV1) {
    out->push_back(AppValue{static_cast<int>(DecodeFixed32(p)), value.substr(kHeaderBytes), 0});
    return Status::OK();
  }
  if (format == kSingle) {
    if (value.size() < kHeaderBytes + 8) return Status::Corruption("single value truncated in its header");
    out->push_back(AppValue{static_cast<int>(DecodeFixed32(p)), value.substr(kHeaderBytes + 8),
                            DecodeFixed64(p + 4)});
    return Status::OK();
  }
  if (format != kBatch && format != kBatchV1) {
    return Status::Corruption("paxos value has an unknown format byte");
  }
  const bool with_ids = format == kBatch;
  const size_t entry_header = with_ids ? kBatchEntryOverheadBytes : 8;
  size_t left = value.size() - kHeaderBytes;
  const uint32_t count = DecodeFixed32(p);
  p += 4;
  // Each entry takes at least its header: a count larger than that is
  // corrupt and must not drive a huge reserve().
  if (count > left / entry_header) return Status::Corruption("batch value count exceeds its size");
  out->reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    if (left < entry_header) return Status::Corruption("batch value truncated in an entry header");
    AppValue v;
    v.state_machine_id = static_cast<int>(DecodeFixed32(p));
    p += 4;
    if (with_ids) {
      v.proposal_id = DecodeFixed64(p);
      p += 8;
    }
    const uint32_t len = DecodeFixed32(p);
    p += 4;
    left -= entry_header;
    if (len > left) return Status::Corruption("batch value truncated in an entry payload");
    v.payload.assign(p, len);
    p += len;
    left -= len;
    out->push_back(std::move(v));
  }
  if (left != 0) return Status::Corruption("batch value has trailing bytes");
  return Status::OK();
}

}  // namespace

Status DecodeAppValues(const std::string& value, std::vector<AppValue>* out) {
  // Decoded aside: a value that fails anywhere yields none of its entries
  // (Group::Apply then treats the instance as a noop on every replica).
  std::vector<AppValue> values;
  Status s = DecodeInto(value, &values);
  if (s.ok()) {
    out->swap(values);
  } else {
    out->clear();
  }
  return s;
}

}  // namespace chorus
