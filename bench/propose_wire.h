// The frames between propose_bench's client process and node 0's propose
// server (--clients_on=process): a bench-only format, not chorus's.
//
// Every frame is a 4-byte length, then that many bytes of body. All
// integers are little-endian fixed width (utils/coding.h).
//
//   request:  u32 body_length  (kRequestHeader + the value's size, at most kMaxRequestBody)
//             u32 request_id   (the client's; the reply echoes it)
//             u32 group
//             u8  flags        (kFlagBatch: BatchProposeAsync, else ProposeAsync;
//                               every other bit must be 0)
//             the value        (body_length - kRequestHeader bytes)
//   reply:    u32 body_length  (always kReplyBody)
//             u32 request_id
//             u8  status code  (chorus::Status::Code; 0 = OK)
//             u64 instance     (ProposeResult::instance; 0 unless OK)
//             u32 batch_index  (ProposeResult::batch_index)
//
// A peer that sends anything else (a length out of range, unknown flags,
// a reply that is not kReplyBody long or answers another request) is
// dropped: the connection is closed with a message on stderr.
#ifndef CHORUS_BENCH_PROPOSE_WIRE_H_
#define CHORUS_BENCH_PROPOSE_WIRE_H_

#include <cstdint>
#include <string>

#include "chorus/status.h"
#include "utils/coding.h"

namespace chorus {
namespace bench {

constexpr size_t kFrameLength = 4;     // the u32 in front of every body
constexpr size_t kRequestHeader = 9;   // request_id, group, flags
constexpr size_t kReplyBody = 17;      // request_id, code, instance, batch_index
constexpr uint8_t kFlagBatch = 1;
// Options::max_value_bytes' default (8 MiB) plus the header: a larger value
// would be refused by chorus anyway, and the server never buffers more
// than this for one frame.
constexpr uint32_t kMaxRequestBody = (8u << 20) + kRequestHeader;

struct ProposeRequest {
  uint32_t request_id = 0;
  uint32_t group = 0;
  uint8_t flags = 0;
};

struct ProposeReply {
  uint32_t request_id = 0;
  uint8_t code = 0;
  uint64_t instance = 0;
  uint32_t batch_index = 0;
};

// Appends a whole request frame carrying `value` to *out.
inline void AppendRequest(const ProposeRequest& r, const std::string& value, std::string* out) {
  PutFixed32(out, static_cast<uint32_t>(kRequestHeader + value.size()));
  PutFixed32(out, r.request_id);
  PutFixed32(out, r.group);
  out->push_back(static_cast<char>(r.flags));
  out->append(value);
}

// Parses a request body (the bytes after the length); false when the
// header is short or carries unknown flags.
inline bool ParseRequestHeader(const char* body, size_t size, ProposeRequest* r) {
  if (size < kRequestHeader) return false;
  r->request_id = DecodeFixed32(body);
  r->group = DecodeFixed32(body + 4);
  r->flags = static_cast<uint8_t>(body[8]);
  return (r->flags & ~kFlagBatch) == 0;
}

// Appends a whole reply frame to *out.
inline void AppendReply(const ProposeReply& r, std::string* out) {
  PutFixed32(out, kReplyBody);
  PutFixed32(out, r.request_id);
  out->push_back(static_cast<char>(r.code));
  PutFixed64(out, r.instance);
  PutFixed32(out, r.batch_index);
}

// Parses a whole reply frame (kFrameLength + kReplyBody bytes); false when
// its length is not kReplyBody or its code is not a chorus Status code.
inline bool ParseReply(const char* frame, ProposeReply* r) {
  if (DecodeFixed32(frame) != kReplyBody) return false;
  const char* body = frame + kFrameLength;
  r->request_id = DecodeFixed32(body);
  r->code = static_cast<uint8_t>(body[4]);
  r->instance = DecodeFixed64(body + 5);
  r->batch_index = DecodeFixed32(body + 13);
  return r->code <= static_cast<uint8_t>(Status::Code::kNotMaster);
}

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_PROPOSE_WIRE_H_
