// Copyright (c) chorus authors.
//
// Frame authentication for the TCP transport (Options::cluster_secret).
//
// Threat model. An attacker can reach a node's port, knows the cluster id
// and the members' node ids (both travel in clear), can capture every byte
// of a member's connection, and can send any bytes of its own. Without a
// secret the transport believes any header naming a member. With one, the
// attacker must not be able to (1) forge a frame (any sender id), (2) have a
// captured frame accepted again, on a new connection or once more on the same
// one, or (3) get a frame made with another cluster's secret accepted. Out of
// scope: secrecy (frames stay in clear: the MAC authenticates, it does not
// encrypt), an attacker who holds the secret (any member does), and denial of
// service by a man in the middle who drops or resets connections (he can do
// that to any TCP connection; the protocol retries).
//
// Design. A connection carries frames one way only (sender -> receiver).
//   1. Challenge: as soon as it accepts a connection, the receiver writes
//        challenge magic (4) | nonce (16)
//      where the nonce is fresh from the OS random generator (RAND_bytes).
//      The sender writes no frame before the whole challenge is in.
//   2. Frames: the sender's frames are today's frames (frame.h) followed by
//      a 32-byte tag:
//        HMAC-SHA256(secret, "chorus frame v1" | nonce | receiver id (8) |
//                    sequence (8) | the frame's 28 header bytes | payload)
//      where the sequence is the frame's position on the connection (0, 1,
//      ...). It is implicit: TCP delivers in order, so the receiver counts
//      frames and verifies each with the number it expects; nothing about it
//      travels.
// Why it holds: (1) the tag needs the secret. (2) a frame captured from one
// connection carries a tag over that connection's nonce: on a new
// connection the receiver chose a new nonce (128 random bits; never equal
// in practice), and on the same connection the receiver expects the next
// sequence number, which a duplicated, reordered or dropped-and-spliced
// frame does not carry. The receiver id in the tag stops a frame written for
// one node from being accepted by another (a relayed challenge). (3) another
// secret makes another tag. The header (cluster id, sender, length, crc32c)
// is covered, so the identity the transport reports for a frame is the
// identity the secret's holder wrote. A frame whose tag does not verify is
// dropped and counted, and its connection closed; the sender reconnects
// and gets a new challenge.
//
// Cost: one HMAC-SHA256 over each frame (SHA-256 runs at hundreds of MB/s to
// GB/s with the CPU's SHA extensions; a frame of a hundred bytes costs about a
// microsecond) on the sending and on the receiving loop, 32 bytes a frame,
// and 20 bytes plus one round trip per connection. With no secret nothing
// of this exists: the wire is exactly frame.h's.
//
// Thread safety: a FrameAuthenticator is not synchronized (each transport
// loop owns its own); NewNonce and the challenge codec are thread-safe.

#ifndef CHORUS_NODE_FRAME_AUTH_H_
#define CHORUS_NODE_FRAME_AUTH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "chorus/status.h"

namespace chorus {

constexpr size_t kMinClusterSecretBytes = 16;
constexpr size_t kFrameTagSize = 32;  // HMAC-SHA256
constexpr size_t kAuthNonceSize = 16;
constexpr uint32_t kChallengeMagic = 0x4e524843;  // the bytes "CHRN" on the wire
constexpr size_t kChallengeSize = 4 + kAuthNonceSize;

using AuthNonce = std::array<char, kAuthNonceSize>;
using FrameTag = std::array<char, kFrameTagSize>;

// ok when `secret` is usable as a cluster secret: empty (authentication
// off) or at least kMinClusterSecretBytes bytes. InvalidArgument otherwise.
Status ValidateClusterSecret(const std::string& secret);

// Fills *nonce from the OS random generator. IOError when it fails.
Status NewAuthNonce(AuthNonce* nonce);

// The challenge a receiver writes first on an accepted connection.
std::string EncodeChallenge(const AuthNonce& nonce);
// Reads a challenge of kChallengeSize bytes; Corruption when its magic is
// wrong (the other side does not speak the authenticated transport).
Status DecodeChallenge(const char* data, AuthNonce* nonce);

class HmacContext;  // libcrypto's keyed HMAC-SHA256 (frame_auth.cc)

class FrameAuthenticator {
 public:
  // Keyed with `secret` (REQUIRES: ValidateClusterSecret ok, not empty).
  // IOError when libcrypto cannot set up HMAC-SHA256.
  static Status New(const std::string& secret, std::unique_ptr<FrameAuthenticator>* out);
  ~FrameAuthenticator();
  FrameAuthenticator(const FrameAuthenticator&) = delete;
  FrameAuthenticator& operator=(const FrameAuthenticator&) = delete;

  // The tag of frame number `sequence` of a connection whose receiver is
  // `receiver` and sent `nonce`. `header` is the frame's kFrameHeaderSize
  // bytes. Aborts if libcrypto fails (it does not with a valid key).
  FrameTag Sign(const AuthNonce& nonce, uint64_t receiver, uint64_t sequence, const char* header,
                const std::string& payload);
  // Whether `tag` is that tag (compared in constant time).
  bool Verify(const AuthNonce& nonce, uint64_t receiver, uint64_t sequence, const char* header,
              const std::string& payload, const char* tag);

 private:
  explicit FrameAuthenticator(std::unique_ptr<HmacContext> hmac);
  std::unique_ptr<HmacContext> hmac_;
};

// HMAC-SHA256(key, data): the primitive, for tests against published
// vectors. Aborts if libcrypto fails.
std::string HmacSha256(const std::string& key, const std::string& data);

}  // namespace chorus

#endif  // CHORUS_NODE_FRAME_AUTH_H_
