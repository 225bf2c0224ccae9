// Fuzzes the TCP frame decoder (node/frame.h) the way tcp_incoming uses it:
// a byte stream, read in chunks, through the header check (magic, length
// limit, cluster id, sender membership) and the crc32c over header and
// payload. Input: byte 0's low 7 bits pick the chunk size (1..128), its top
// bit the trailer mode of the authenticated transport (frame_auth.h): each
// payload is then followed by kTrailer bytes that a FrameCheck accepts only
// when byte i is (payload size + i) mod 256 (a rule the fuzzer can meet: the
// decoder's trailer handling is under test here, not HMAC). The rest is the
// stream. Properties (a break is __builtin_trap()):
//   - the frames decoded are exactly the stream's prefix: re-encoding them
//     gives those bytes back;
//   - chunking changes nothing: a decoder fed the whole stream at once
//     returns the same frames and the same status;
//   - only frames of the cluster from a member come out;
//   - the partial payload's buffer grows with the bytes that arrived, never
//     to an announced length.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "node/frame.h"
#include "unittest/fuzz/fuzz_require.h"

namespace chorus {
namespace {

constexpr uint64_t kCluster = 7;
constexpr uint32_t kMaxPayload = 1 << 20;
constexpr size_t kInitialReserve = 64 * 1024;  // FrameDecoder's first reservation

using chorus::fuzz::Require;

Status Check(uint64_t cluster_id, uint64_t sender) {
  if (cluster_id != kCluster) return Status::InvalidArgument("foreign cluster");
  if (sender < 1 || sender > 3) return Status::InvalidArgument("non-member");
  return Status::OK();
}

constexpr size_t kTrailer = 8;

std::string TrailerOf(size_t payload_size) {
  std::string t(kTrailer, '\0');
  for (size_t i = 0; i < kTrailer; ++i) t[i] = static_cast<char>((payload_size + i) & 0xff);
  return t;
}

Status CheckTrailer(const char* header, const std::string& payload, const char* trailer) {
  Require(header != nullptr);
  if (std::string(trailer, kTrailer) != TrailerOf(payload.size())) {
    return Status::Corruption("bad trailer");
  }
  return Status::OK();
}

FrameDecoder MakeDecoder(bool trailer) {
  if (!trailer) return FrameDecoder(kMaxPayload, Check);
  return FrameDecoder(kMaxPayload, Check, kTrailer, CheckTrailer);
}

}  // namespace
}  // namespace chorus

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using chorus::Frame;
  using chorus::FrameDecoder;
  using chorus::Status;
  if (size == 0) return 0;
  const size_t chunk = 1 + (data[0] & 0x7f);
  const bool trailer = (data[0] & 0x80) != 0;
  const std::string stream(reinterpret_cast<const char*>(data + 1), size - 1);

  FrameDecoder chunked = chorus::MakeDecoder(trailer);
  std::vector<Frame> frames;
  Status s;
  size_t fed = 0;
  while (fed < stream.size()) {
    const size_t n = std::min(chunk, stream.size() - fed);
    s = chunked.Consume(stream.data() + fed, n, &frames);
    fed += n;
    chorus::Require(chunked.payload_capacity() <= chorus::kInitialReserve + 2 * fed);
    if (!s.ok()) break;
  }
  // Sticky: once bad, always bad.
  if (!s.ok()) {
    std::vector<Frame> more;
    chorus::Require(chunked.Consume("x", 1, &more).code() == s.code() && more.empty());
  }

  std::string encoded;
  for (const Frame& f : frames) {
    chorus::Require(f.cluster_id == chorus::kCluster && f.sender >= 1 && f.sender <= 3);
    chorus::Require(f.payload.size() <= chorus::kMaxPayload);
    encoded += chorus::EncodeFrame(f.cluster_id, f.sender, f.payload);
    if (trailer) encoded += chorus::TrailerOf(f.payload.size());
  }
  chorus::Require(stream.compare(0, encoded.size(), encoded) == 0);
  if (s.ok()) chorus::Require(chunked.idle() == (encoded.size() == stream.size()));

  FrameDecoder whole = chorus::MakeDecoder(trailer);
  std::vector<Frame> at_once;
  const Status w = whole.Consume(stream.data(), stream.size(), &at_once);
  chorus::Require(w.code() == s.code());
  chorus::Require(at_once.size() == frames.size());
  for (size_t i = 0; i < frames.size(); ++i) {
    chorus::Require(at_once[i].cluster_id == frames[i].cluster_id &&
                    at_once[i].sender == frames[i].sender &&
                    at_once[i].payload == frames[i].payload);
  }
  return 0;
}
