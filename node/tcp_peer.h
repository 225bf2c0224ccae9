// The two per-peer records of TcpPeers (tcp_peers.h): a frame waiting to
// be written, and one remote node at one address with its outgoing
// connection. Shared by tcp_peers.cc (connections and writes) and
// tcp_peers_book.cc (the address book and Enqueue); nothing else includes it.
#ifndef CHORUS_NODE_TCP_PEER_H_
#define CHORUS_NODE_TCP_PEER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "node/frame.h"
#include "node/frame_auth.h"
#include "node/socket_util.h"
#include "node/tcp_peers.h"
#include "utils/mutex.h"

namespace chorus {
namespace tcp {

struct TcpPeers::OutFrame {
  // Header and payload, shared by every peer the message goes to.
  FramedPtr framed;
  // With a secret: the tag, made for the connection numbered
  // `tag_connection` (0: none yet). A frame written again on a new
  // connection gets a new tag there.
  FrameTag tag{};
  uint64_t tag_connection = 0;
  // Bytes counted against max_queued_bytes_per_peer (the tag is not).
  size_t size() const { return kFrameHeaderSize + framed->payload.size(); }
};

// One remote node at one address, and our outgoing connection to it.
struct TcpPeers::Peer {
  NodeInfo info;      // immutable: another address is another Peer
  uint64_t slot = 0;  // its epoll tag index; immutable, never reused

  Mutex mu;
  std::deque<OutFrame> queue GUARDED_BY(mu);
  // Bytes in `queue` plus bytes in `sending`.
  size_t queued_bytes GUARDED_BY(mu) = 0;

  // The rest is owned by the loop thread.
  // kAwaitingChallenge (with a secret only): connected, reading the
  // receiver's challenge; nothing is written before it is complete.
  enum class State { kIdle, kResolving, kConnecting, kAwaitingChallenge, kConnected };
  State state = State::kIdle;
  int fd = -1;
  uint32_t registered = 0;          // epoll events registered for fd
  std::deque<OutFrame> sending;     // taken from `queue`, being written
  size_t front_offset = 0;          // bytes of sending.front() written
  std::vector<SockAddr> addrs;      // from the last resolution
  size_t next_addr = 0;             // the one the next connect tries
  int backoff_ms = 0;               // 0: no attempt failed yet
  Clock::time_point next_attempt;   // no connect before this
  // kConnecting, kAwaitingChallenge: give up at this time.
  Clock::time_point connect_deadline;
  Clock::time_point connected_at;      // kConnected: since when
  // With a secret: the challenge being read, and once it is in, the
  // connection's nonce, number (counted from 1 per peer) and the sequence
  // number of the next frame tagged on it.
  char challenge[kChallengeSize];
  size_t challenge_fill = 0;
  AuthNonce nonce{};
  uint64_t connection = 0;
  uint64_t next_sequence = 0;
};

}  // namespace tcp
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_PEER_H_
