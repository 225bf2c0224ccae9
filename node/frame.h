// Copyright (c) chorus authors.
//
// The wire frame of the TCP transport, and an incremental decoder for it.
//
//   magic (4) | payload length (4) | cluster id (8) | sender node id (8) |
//   crc32c (4) | payload (length bytes)
//
// Integers are little-endian (utils/coding.h). The crc32c covers the first 24
// header bytes (magic .. sender) followed by the payload, so a flipped bit
// anywhere in a frame is caught. The header is checked as soon as its 28
// bytes are in (magic, length against the limit, then the caller's
// HeaderCheck, e.g. cluster id and sender membership), before any byte of the
// payload is read, and the payload buffer grows with the bytes that actually
// arrive: a header alone never makes the decoder allocate its announced length.
//
// A decoder made with a trailer size (the authenticated transport:
// frame_auth.h) expects that many bytes after each payload, and hands the
// header, payload and trailer to its FrameCheck once the crc32c matched,
// before the frame is appended. Without one the wire is as above.
//
// Thread safety: FrameDecoder is not synchronized; one connection owns one.

#ifndef CHORUS_NODE_FRAME_H_
#define CHORUS_NODE_FRAME_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {

constexpr uint32_t kFrameMagic = 0x53524843;  // the bytes "CHRS" on the wire
constexpr size_t kFrameHeaderSize = 28;
constexpr size_t kMaxFrameTrailer = 64;

struct Frame {
  uint64_t cluster_id = 0;
  uint64_t sender = 0;
  std::string payload;
};

using FrameHeader = std::array<char, kFrameHeaderSize>;

// Returns the 28-byte header of a frame carrying `payload`; it names the
// sender, not the receiver, so one header serves every node the payload
// goes to. REQUIRES: payload.size() fits in 32 bits (callers check their
// own limit).
FrameHeader MakeFrameHeader(uint64_t cluster_id, uint64_t sender, const std::string& payload);
// The same as a string.
std::string EncodeFrameHeader(uint64_t cluster_id, uint64_t sender, const std::string& payload);

// Returns header + payload in one string (tests, small frames).
std::string EncodeFrame(uint64_t cluster_id, uint64_t sender, const std::string& payload);

// Splits a byte stream into frames. Bytes may arrive in any chunking.
class FrameDecoder {
 public:
  // Called with every complete header that passed the magic and length
  // checks, before its payload is read. Any status but ok rejects the frame
  // and becomes the decoder's sticky error (Consume returns it as is).
  using HeaderCheck = std::function<Status(uint64_t cluster_id, uint64_t sender)>;

  // Called with every complete frame (its kFrameHeaderSize header bytes,
  // payload and trailer) whose crc32c matched; any status but ok rejects it
  // and becomes the sticky error.
  using FrameCheck =
      std::function<Status(const char* header, const std::string& payload, const char* trailer)>;

  // Frames whose payload is longer than max_payload_bytes are rejected.
  // An empty `check` accepts every header.
  explicit FrameDecoder(uint32_t max_payload_bytes, HeaderCheck check = nullptr);
  // Frames followed by `trailer_bytes` (1 .. kMaxFrameTrailer) checked by
  // `frame_check` (REQUIRED).
  FrameDecoder(uint32_t max_payload_bytes, HeaderCheck check, size_t trailer_bytes,
               FrameCheck frame_check);

  // Consumes data[0, n) and appends every frame completed by it to *frames.
  // Returns ok, or (once the stream is known to be bad, and from then on):
  //   Corruption - bad magic or a crc32c mismatch;
  //   TooLarge   - the header announces a payload above the limit;
  //   whatever the HeaderCheck returned when it rejected a header, or the
  //   FrameCheck when it rejected a frame.
  // After an error the decoder accepts nothing more: close the connection.
  // The frames appended before the error are intact and verified.
  Status Consume(const char* data, size_t n, std::vector<Frame>* frames);

  // True when no partial frame is buffered.
  bool idle() const { return header_fill_ == 0 && !in_payload_; }

  // Bytes of memory held for the partial payload (its buffer's capacity).
  size_t payload_capacity() const { return current_.payload.capacity(); }

 private:
  const uint32_t max_payload_bytes_;
  const HeaderCheck check_;
  const size_t trailer_bytes_;       // 0: no trailer
  const FrameCheck frame_check_;
  Status error_;                     // sticky
  char header_[kFrameHeaderSize];    // the header being filled
  size_t header_fill_ = 0;           // bytes of header_ filled
  bool in_payload_ = false;          // header complete, payload being filled
  uint32_t payload_len_ = 0;         // from the current header
  uint32_t expected_crc_ = 0;        // from the current header
  char trailer_[kMaxFrameTrailer];   // the trailer being filled
  size_t trailer_fill_ = 0;          // bytes of trailer_ filled
  Frame current_;                    // the frame being filled
};

}  // namespace chorus

#endif  // CHORUS_NODE_FRAME_H_
