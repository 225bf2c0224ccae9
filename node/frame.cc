#include "node/frame.h"

#include <algorithm>
#include <utility>

#include "utils/coding.h"
#include "utils/crc32c.h"

namespace chorus {

namespace {
constexpr size_t kCrcOffset = 24;  // the crc32c follows magic, length, cluster, sender
// The first reservation for a payload: enough for most frames at once, small
// enough that an announced length costs nothing until its bytes arrive.
constexpr size_t kInitialPayloadReserve = 64 * 1024;
}  // namespace

FrameHeader MakeFrameHeader(uint64_t cluster_id, uint64_t sender, const std::string& payload) {
  FrameHeader header;
  char* buf = header.data();
  EncodeFixed32(buf, kFrameMagic);
  EncodeFixed32(buf + 4, static_cast<uint32_t>(payload.size()));
  EncodeFixed64(buf + 8, cluster_id);
  EncodeFixed64(buf + 16, sender);
  uint32_t crc = crc32c::Extend(0, buf, kCrcOffset);
  crc = crc32c::Extend(crc, payload.data(), payload.size());
  EncodeFixed32(buf + kCrcOffset, crc);
  return header;
}

std::string EncodeFrameHeader(uint64_t cluster_id, uint64_t sender, const std::string& payload) {
  const FrameHeader header = MakeFrameHeader(cluster_id, sender, payload);
  return std::string(header.data(), header.size());
}

std::string EncodeFrame(uint64_t cluster_id, uint64_t sender, const std::string& payload) {
  std::string out = EncodeFrameHeader(cluster_id, sender, payload);
  out.append(payload);
  return out;
}

FrameDecoder::FrameDecoder(uint32_t max_payload_bytes, HeaderCheck check)
    : FrameDecoder(max_payload_bytes, std::move(check), 0, nullptr) {}

FrameDecoder::FrameDecoder(uint32_t max_payload_bytes, HeaderCheck check, size_t trailer_bytes,
                           FrameCheck frame_check)
    : max_payload_bytes_(max_payload_bytes),
      check_(std::move(check)),
      trailer_bytes_(std::min(trailer_bytes, kMaxFrameTrailer)),
      frame_check_(std::move(frame_check)) {}

Status FrameDecoder::Consume(const char* data, size_t n, std::vector<Frame>* frames) {
  if (!error_.ok()) return error_;
  while (n > 0) {
    if (!in_payload_) {
      const size_t take = std::min(n, kFrameHeaderSize - header_fill_);
      std::copy(data, data + take, header_ + header_fill_);
      header_fill_ += take;
      data += take;
      n -= take;
      if (header_fill_ < kFrameHeaderSize) break;
      // A whole header: check it before trusting the length.
      const uint32_t magic = DecodeFixed32(header_);
      if (magic != kFrameMagic) {
        error_ = Status::Corruption("bad frame magic");
        return error_;
      }
      payload_len_ = DecodeFixed32(header_ + 4);
      if (payload_len_ > max_payload_bytes_) {
        error_ = Status::TooLarge("frame payload of " + std::to_string(payload_len_) +
                                  " bytes exceeds the limit of " +
                                  std::to_string(max_payload_bytes_));
        return error_;
      }
      current_.cluster_id = DecodeFixed64(header_ + 8);
      current_.sender = DecodeFixed64(header_ + 16);
      expected_crc_ = DecodeFixed32(header_ + kCrcOffset);
      if (check_) {
        Status s = check_(current_.cluster_id, current_.sender);
        if (!s.ok()) {
          error_ = s;
          return error_;
        }
      }
      current_.payload.clear();
      // Grows as bytes arrive (append doubles), never to the announced
      // length up front.
      current_.payload.reserve(std::min<size_t>(payload_len_, kInitialPayloadReserve));
      in_payload_ = true;
    } else if (current_.payload.size() < payload_len_) {
      const size_t take = std::min<size_t>(n, payload_len_ - current_.payload.size());
      current_.payload.append(data, take);
      data += take;
      n -= take;
    } else {
      const size_t take = std::min(n, trailer_bytes_ - trailer_fill_);
      std::copy(data, data + take, trailer_ + trailer_fill_);
      trailer_fill_ += take;
      data += take;
      n -= take;
    }
    if (in_payload_ && current_.payload.size() == payload_len_ && trailer_fill_ == trailer_bytes_) {
      uint32_t crc = crc32c::Extend(0, header_, kCrcOffset);
      crc = crc32c::Extend(crc, current_.payload.data(), current_.payload.size());
      if (crc != expected_crc_) {
        error_ = Status::Corruption("frame crc32c mismatch");
        return error_;
      }
      if (trailer_bytes_ > 0) {
        Status s = frame_check_(header_, current_.payload, trailer_);
        if (!s.ok()) {
          error_ = s;
          return error_;
        }
      }
      frames->push_back(std::move(current_));
      current_ = Frame();
      in_payload_ = false;
      header_fill_ = 0;
      trailer_fill_ = 0;
    }
  }
  return Status::OK();
}

}  // namespace chorus
