#include "node/frame.h"

#include <gtest/gtest.h>

#include <random>

#include "utils/coding.h"

namespace chorus {
namespace frame_test {
namespace {

std::string RandomBytes(std::mt19937_64* rng, size_t n) {
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>((*rng)() & 0xFF);
  return s;
}

TEST(FrameTest, HeaderLayout) {
  const std::string payload = "hello";
  const std::string f = EncodeFrame(0x1122334455667788ull, 42, payload);
  ASSERT_EQ(kFrameHeaderSize + payload.size(), f.size());
  EXPECT_EQ("CHRS", f.substr(0, 4));
  EXPECT_EQ(payload.size(), DecodeFixed32(f.data() + 4));
  EXPECT_EQ(0x1122334455667788ull, DecodeFixed64(f.data() + 8));
  EXPECT_EQ(42u, DecodeFixed64(f.data() + 16));
  EXPECT_EQ(payload, f.substr(kFrameHeaderSize));
}

TEST(FrameTest, DecodesWholeFrames) {
  FrameDecoder d(1 << 20);
  std::string stream = EncodeFrame(7, 1, "a") + EncodeFrame(7, 2, "") + EncodeFrame(8, 3, "xyz");
  std::vector<Frame> frames;
  ASSERT_TRUE(d.Consume(stream.data(), stream.size(), &frames).ok());
  ASSERT_EQ(3u, frames.size());
  EXPECT_EQ(7u, frames[0].cluster_id);
  EXPECT_EQ(1u, frames[0].sender);
  EXPECT_EQ("a", frames[0].payload);
  EXPECT_EQ(2u, frames[1].sender);
  EXPECT_EQ("", frames[1].payload);
  EXPECT_EQ(8u, frames[2].cluster_id);
  EXPECT_EQ("xyz", frames[2].payload);
  EXPECT_TRUE(d.idle());
}

TEST(FrameTest, DecodesAnyChunking) {
  std::mt19937_64 rng(1234);
  std::vector<std::string> payloads;
  std::string stream;
  for (int i = 0; i < 50; ++i) {
    payloads.push_back(RandomBytes(&rng, rng() % 3000));
    stream += EncodeFrame(99, static_cast<uint64_t>(i), payloads.back());
  }
  for (int round = 0; round < 20; ++round) {
    FrameDecoder d(1 << 20);
    std::vector<Frame> frames;
    size_t pos = 0;
    while (pos < stream.size()) {
      // Chunks of 1 byte up to a few frames.
      size_t n = std::min<size_t>(stream.size() - pos, 1 + rng() % (round < 5 ? 3 : 9000));
      ASSERT_TRUE(d.Consume(stream.data() + pos, n, &frames).ok());
      pos += n;
    }
    ASSERT_EQ(payloads.size(), frames.size());
    for (size_t i = 0; i < frames.size(); ++i) {
      EXPECT_EQ(i, frames[i].sender);
      EXPECT_EQ(payloads[i], frames[i].payload);
    }
    EXPECT_TRUE(d.idle());
  }
}

TEST(FrameTest, PartialFrameIsNotDelivered) {
  FrameDecoder d(1 << 20);
  std::string f = EncodeFrame(1, 2, "payload");
  std::vector<Frame> frames;
  ASSERT_TRUE(d.Consume(f.data(), f.size() - 1, &frames).ok());
  EXPECT_TRUE(frames.empty());
  EXPECT_FALSE(d.idle());
  ASSERT_TRUE(d.Consume(f.data() + f.size() - 1, 1, &frames).ok());
  ASSERT_EQ(1u, frames.size());
  EXPECT_EQ("payload", frames[0].payload);
}

TEST(FrameTest, BadMagicIsCorruption) {
  FrameDecoder d(1 << 20);
  std::string f = EncodeFrame(1, 2, "payload");
  f[0] ^= 1;
  std::vector<Frame> frames;
  EXPECT_TRUE(d.Consume(f.data(), f.size(), &frames).IsCorruption());
  EXPECT_TRUE(frames.empty());
}

TEST(FrameTest, EveryFlippedBitIsCaught) {
  const std::string good = EncodeFrame(5, 6, "some payload bytes");
  for (size_t byte = 0; byte < good.size(); ++byte) {
    if (byte >= 4 && byte < 8) continue;  // the length: changes framing, tested below
    for (int bit = 0; bit < 8; ++bit) {
      std::string f = good;
      f[byte] = static_cast<char>(f[byte] ^ (1 << bit));
      FrameDecoder d(1 << 20);
      std::vector<Frame> frames;
      Status s = d.Consume(f.data(), f.size(), &frames);
      EXPECT_TRUE(s.IsCorruption()) << "byte " << byte << " bit " << bit << ": " << s.ToString();
      EXPECT_TRUE(frames.empty());
    }
  }
}

TEST(FrameTest, AlteredLengthIsCaught) {
  // A shorter length: the crc is checked over fewer bytes and fails.
  std::string f = EncodeFrame(5, 6, "some payload bytes");
  EncodeFixed32(&f[4], 4);
  FrameDecoder d(1 << 20);
  std::vector<Frame> frames;
  EXPECT_TRUE(d.Consume(f.data(), f.size(), &frames).IsCorruption());
  EXPECT_TRUE(frames.empty());
}

TEST(FrameTest, TooLargeIsRejectedFromTheHeader) {
  FrameDecoder d(100);
  std::string ok = EncodeFrame(1, 2, std::string(100, 'x'));
  std::vector<Frame> frames;
  ASSERT_TRUE(d.Consume(ok.data(), ok.size(), &frames).ok());
  ASSERT_EQ(1u, frames.size());
  // Only the header of a huge frame: rejected before any payload arrives
  // (and without allocating 4 GiB).
  std::string header = EncodeFrameHeader(1, 2, std::string(101, 'x'));
  EncodeFixed32(&header[4], 0xFFFFFFFFu);
  Status s = d.Consume(header.data(), header.size(), &frames);
  EXPECT_TRUE(s.IsTooLarge()) << s.ToString();
  EXPECT_EQ(1u, frames.size());
}

TEST(FrameTest, ErrorIsSticky) {
  FrameDecoder d(1 << 20);
  std::string bad(kFrameHeaderSize, 'z');
  std::vector<Frame> frames;
  EXPECT_TRUE(d.Consume(bad.data(), bad.size(), &frames).IsCorruption());
  std::string good = EncodeFrame(1, 2, "x");
  EXPECT_TRUE(d.Consume(good.data(), good.size(), &frames).IsCorruption());
  EXPECT_TRUE(frames.empty());
}

TEST(FrameTest, FramesBeforeAnErrorAreDelivered) {
  FrameDecoder d(1 << 20);
  std::string stream = EncodeFrame(1, 2, "first") + std::string(kFrameHeaderSize, 'z');
  std::vector<Frame> frames;
  EXPECT_TRUE(d.Consume(stream.data(), stream.size(), &frames).IsCorruption());
  ASSERT_EQ(1u, frames.size());
  EXPECT_EQ("first", frames[0].payload);
}

TEST(FrameTest, HeaderCheckRunsBeforeThePayloadIsRead) {
  std::vector<std::pair<uint64_t, uint64_t>> seen;
  FrameDecoder d(64u << 20, [&](uint64_t cluster, uint64_t sender) {
    seen.emplace_back(cluster, sender);
    return sender == 666 ? Status::InvalidArgument("stranger") : Status::OK();
  });
  std::vector<Frame> frames;
  const std::string good = EncodeFrame(1, 2, "fine");
  ASSERT_TRUE(d.Consume(good.data(), good.size(), &frames).ok());
  ASSERT_EQ(1u, frames.size());
  ASSERT_EQ(1u, seen.size());
  EXPECT_EQ(1u, seen[0].first);
  EXPECT_EQ(2u, seen[0].second);
  // Only the header of a 50 MiB frame from a rejected sender: refused at
  // once, with the check's own status, before any payload byte.
  std::string header = EncodeFrameHeader(1, 666, "");
  EncodeFixed32(&header[4], 50u << 20);
  Status s = d.Consume(header.data(), header.size(), &frames);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_EQ(2u, seen.size());
  EXPECT_EQ(1u, frames.size());
  EXPECT_LT(d.payload_capacity(), 1u << 20);
  // Sticky.
  EXPECT_TRUE(d.Consume(good.data(), good.size(), &frames).IsInvalidArgument());
  EXPECT_EQ(2u, seen.size());
}

TEST(FrameTest, AnnouncedLengthIsNotReservedUpFront) {
  FrameDecoder d(64u << 20);
  const std::string payload(3u << 20, 'p');
  const std::string f = EncodeFrame(1, 2, payload);
  std::vector<Frame> frames;
  // The header and a few bytes of a 3 MiB payload hold far less than 3 MiB.
  ASSERT_TRUE(d.Consume(f.data(), kFrameHeaderSize + 10, &frames).ok());
  EXPECT_LT(d.payload_capacity(), 1u << 20);
  // The rest in small pieces still decodes.
  size_t pos = kFrameHeaderSize + 10;
  while (pos < f.size()) {
    const size_t n = std::min<size_t>(f.size() - pos, 4093);
    ASSERT_TRUE(d.Consume(f.data() + pos, n, &frames).ok());
    pos += n;
  }
  ASSERT_EQ(1u, frames.size());
  EXPECT_TRUE(frames[0].payload == payload);
  EXPECT_TRUE(d.idle());
}

}  // namespace
}  // namespace frame_test
}  // namespace chorus
