// The pieces of frame authentication (node/frame_auth.h): HMAC-SHA256
// against RFC 4231, what the frame tag binds, the challenge codec, and the
// frame decoder's trailer (node/frame.h).
#include "node/frame_auth.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "node/frame.h"
#include "utils/coding.h"

namespace chorus {
namespace frame_auth_test {
namespace {

constexpr uint64_t kCluster = 4343;
const std::string kSecret = "correct horse battery staple 01";
const std::string kOtherSecret = "another cluster's secret, 32 b.";

std::string Hex(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

TEST(FrameAuthTest, HmacSha256MatchesRfc4231) {
  // RFC 4231, test cases 1, 2 and 6.
  EXPECT_EQ("b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
            Hex(HmacSha256(std::string(20, '\x0b'), "Hi There")));
  EXPECT_EQ("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            Hex(HmacSha256("Jefe", "what do ya want for nothing?")));
  // Test case 6: a key longer than the block is hashed first.
  EXPECT_EQ("60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            Hex(HmacSha256(std::string(131, '\xaa'),
                           "Test Using Larger Than Block-Size Key - Hash Key First")));
}

TEST(FrameAuthTest, SecretsShorterThanSixteenBytesAreRefused) {
  EXPECT_TRUE(ValidateClusterSecret("").ok());
  EXPECT_TRUE(ValidateClusterSecret(std::string(16, 'k')).ok());
  Status s = ValidateClusterSecret(std::string(15, 'k'));
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(std::string::npos, s.message().find("cluster_secret")) << s.ToString();
  std::unique_ptr<FrameAuthenticator> auth;
  EXPECT_TRUE(FrameAuthenticator::New("", &auth).IsInvalidArgument());
  EXPECT_TRUE(FrameAuthenticator::New("short", &auth).IsInvalidArgument());
  EXPECT_EQ(nullptr, auth);
}

TEST(FrameAuthTest, TheTagBindsSecretNonceReceiverSequenceHeaderAndPayload) {
  std::unique_ptr<FrameAuthenticator> auth, other;
  ASSERT_TRUE(FrameAuthenticator::New(kSecret, &auth).ok());
  ASSERT_TRUE(FrameAuthenticator::New(kOtherSecret, &other).ok());
  AuthNonce nonce, nonce2;
  ASSERT_TRUE(NewAuthNonce(&nonce).ok());
  ASSERT_TRUE(NewAuthNonce(&nonce2).ok());
  ASSERT_NE(nonce, nonce2);
  const std::string payload = "accept ballot 7";
  const std::string header = EncodeFrameHeader(kCluster, 11, payload);
  const FrameTag tag = auth->Sign(nonce, 22, 5, header.data(), payload);
  // The same inputs verify, on this object and another with the secret.
  EXPECT_TRUE(auth->Verify(nonce, 22, 5, header.data(), payload, tag.data()));
  std::unique_ptr<FrameAuthenticator> same;
  ASSERT_TRUE(FrameAuthenticator::New(kSecret, &same).ok());
  EXPECT_TRUE(same->Verify(nonce, 22, 5, header.data(), payload, tag.data()));
  // Any one input changed does not.
  EXPECT_FALSE(other->Verify(nonce, 22, 5, header.data(), payload, tag.data()));
  EXPECT_FALSE(auth->Verify(nonce2, 22, 5, header.data(), payload, tag.data()));
  EXPECT_FALSE(auth->Verify(nonce, 23, 5, header.data(), payload, tag.data()));
  EXPECT_FALSE(auth->Verify(nonce, 22, 6, header.data(), payload, tag.data()));
  const std::string other_sender = EncodeFrameHeader(kCluster, 12, payload);
  EXPECT_FALSE(auth->Verify(nonce, 22, 5, other_sender.data(), payload, tag.data()));
  EXPECT_FALSE(auth->Verify(nonce, 22, 5, header.data(), payload + "!", tag.data()));
  FrameTag flipped = tag;
  flipped[31] ^= 1;
  EXPECT_FALSE(auth->Verify(nonce, 22, 5, header.data(), payload, flipped.data()));
}

TEST(FrameAuthTest, ChallengeRoundTripsAndRejectsAnotherMagic) {
  AuthNonce nonce, back{};
  ASSERT_TRUE(NewAuthNonce(&nonce).ok());
  std::string wire = EncodeChallenge(nonce);
  ASSERT_EQ(kChallengeSize, wire.size());
  ASSERT_TRUE(DecodeChallenge(wire.data(), &back).ok());
  EXPECT_EQ(nonce, back);
  // A plain frame's header where a challenge is expected.
  const std::string frame = EncodeFrame(kCluster, 1, "x");
  EXPECT_TRUE(DecodeChallenge(frame.data(), &back).IsCorruption());
}

// The decoder with a trailer hands each frame's parts to its check, in any
// chunking, and a rejected frame is the sticky error.
TEST(FrameAuthTest, DecoderChecksTheTrailerOfEveryFrame) {
  std::vector<std::string> seen;
  int rejections_left = -1;  // < 0: accept all
  FrameDecoder decoder(1024, nullptr, 4,
                       [&](const char* header, const std::string& payload, const char* trailer) {
                         EXPECT_EQ(kFrameMagic, DecodeFixed32(header));
                         seen.push_back(payload + "|" + std::string(trailer, 4));
                         if (rejections_left == 0) return Status::InvalidArgument("bad trailer");
                         if (rejections_left > 0) --rejections_left;
                         return Status::OK();
                       });
  const std::string stream = EncodeFrame(kCluster, 1, "one") + "AAAA" +
                             EncodeFrame(kCluster, 1, "") + "BBBB" +
                             EncodeFrame(kCluster, 1, "three") + "CCCC";
  std::vector<Frame> frames;
  for (char c : stream) ASSERT_TRUE(decoder.Consume(&c, 1, &frames).ok());
  ASSERT_EQ(3u, frames.size());
  EXPECT_EQ("three", frames[2].payload);
  EXPECT_EQ((std::vector<std::string>{"one|AAAA", "|BBBB", "three|CCCC"}), seen);
  EXPECT_TRUE(decoder.idle());

  rejections_left = 1;
  frames.clear();
  const std::string two = EncodeFrame(kCluster, 1, "ok") + "DDDD" + EncodeFrame(kCluster, 1, "no") +
                          "EEEE" + EncodeFrame(kCluster, 1, "after") + "FFFF";
  Status s = decoder.Consume(two.data(), two.size(), &frames);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  ASSERT_EQ(1u, frames.size());  // the one before the rejected frame
  EXPECT_EQ("ok", frames[0].payload);
  EXPECT_TRUE(decoder.Consume("x", 1, &frames).IsInvalidArgument());
}

TEST(FrameAuthTest, DecoderChecksTheCrcBeforeTheTrailer) {
  int checks = 0;
  FrameDecoder decoder(1024, nullptr, 4, [&](const char*, const std::string&, const char*) {
    ++checks;
    return Status::OK();
  });
  std::string frame = EncodeFrame(kCluster, 1, "payload");
  frame.back() ^= 1;
  frame += "TTTT";
  std::vector<Frame> frames;
  EXPECT_TRUE(decoder.Consume(frame.data(), frame.size(), &frames).IsCorruption());
  EXPECT_EQ(0, checks);
  EXPECT_TRUE(frames.empty());
}

}  // namespace
}  // namespace frame_auth_test
}  // namespace chorus
