// TcpIncoming: the incoming half of the TCP transport: the listening socket
// and the accepted connections, which are only read.
//
// At most max_incoming_connections are open (more are closed at once; the
// default limit follows the size of the address book). Each has a
// FrameDecoder; every header is checked (magic, length, cluster id, sender is
// in the address book, see TcpPeers) as soon as it is complete, before any
// of its payload is read, and the crc32c once the payload is in, before the receiver sees
// the frame. A bad frame is counted and closes its connection; other
// connections are unaffected. An incoming connection must deliver one header
// that passes those checks within header_timeout_ms of its accept, or it is
// closed (a silent non-member must not hold a slot of the cap forever); once
// one has passed it is exempt. When the address book changes, the
// connections whose last verified sender left it are closed. There is no timer per connection: each
// records its accept time and whether a header passed, and Service scans the
// connections when the earliest deadline is due (at most every quarter of
// the timeout, and not at all while every connection has passed).
//
// With a cluster secret (frame_auth.h), every accepted connection is sent a
// challenge with a fresh nonce at once, and every frame must be followed by
// the tag of its sequence number on the connection: a frame whose tag does
// not verify is dropped, counted (dropped_bad_mac) and closes its
// connection. A connection then counts as having passed its header (for
// header_timeout_ms and the book) only once a whole frame verified.
//
// accept() failing for lack of descriptors or memory takes the listening
// socket out of epoll for kAcceptPauseMs (Service puts it back), and an
// epoll_ctl that fails for one connection closes that connection.
//
// Thread safety: Listen and CloseAll while the loop is not running; the rest
// on the loop thread only.
#ifndef CHORUS_NODE_TCP_INCOMING_H_
#define CHORUS_NODE_TCP_INCOMING_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "chorus/transport.h"
#include "node/frame.h"
#include "node/frame_auth.h"
#include "node/tcp_epoll.h"
#include "node/tcp_peers.h"

namespace chorus {
namespace tcp {

class TcpIncoming {
 public:
  // `receiver` gets every verified frame (set before the loop runs); `stop`
  // is the transport's stop flag; `book` says who is a member (any thread).
  // All borrowed ones outlive this object.
  TcpIncoming(const TcpTransportOptions& options, Epoll* epoll, Counters* counters,
              const std::atomic<bool>* stop, const Transport::Receiver* receiver,
              const TcpPeers* book);
  ~TcpIncoming();

  // Sets up the frame authenticator when options.cluster_secret is set.
  Status Init();

  // Binds and listens on options.self and adds the socket to epoll.
  Status Listen();

  // Loop thread. The listening socket is readable: accepts what waits.
  void Accept();
  // Loop thread. The connection tagged `id` is readable (or closed).
  void OnEvent(uint64_t id);
  // Loop thread. Ends an accept pause, closes the connections past their
  // header deadline when due, and, after the book changed, those whose
  // sender left it. Returns the epoll timeout until the next of those, or -1.
  int Service();

  // Closes every connection and the listening socket. REQUIRES: the loop is
  // not running.
  void CloseAll();

 private:
  struct Connection;
  using Connections = std::unordered_map<uint64_t, std::unique_ptr<Connection>>;

  // Runs for every complete incoming header.
  Status CheckHeader(uint64_t cluster_id, uint64_t sender);
  // With a secret: runs for every complete frame whose crc32c matched.
  Status CheckTag(const AuthNonce& nonce, uint64_t sequence, const char* header,
                  const std::string& payload, const char* tag);
  // With a secret: writes the challenge to a just accepted connection.
  // False (counted) when it could not.
  bool SendChallenge(Connection* conn);
  int ServiceAcceptPause();
  void CloseRemovedSenders();
  int ServiceHeaderTimeouts();
  // Stops watching the listening socket for kAcceptPauseMs: with no
  // descriptor to accept into it stays readable and would spin the loop.
  void PauseAccept();
  // Hands a decoded frame to the receiver. Its identity was checked from
  // its header (CheckHeader) and its crc32c by the decoder.
  void Deliver(Frame* f);
  void Close(Connections::iterator it);

  const TcpTransportOptions& options_;
  Epoll* const epoll_;
  Counters* const counters_;
  const std::atomic<bool>* const stop_;
  const Transport::Receiver* const receiver_;
  const TcpPeers* const book_;
  std::unique_ptr<FrameAuthenticator> auth_;  // null: no secret

  // Loop thread only (and CloseAll once the loop has joined).
  int listen_fd_ = -1;
  Connections connections_;
  uint64_t next_id_ = 0;
  uint64_t book_version_seen_ = 0;      // of book_, when last scanned
  bool accept_paused_ = false;          // listen_fd_ is out of epoll until...
  Clock::time_point accept_resume_at_;  // ...this time
  // Some connection has not passed a header (header_timeout_ms > 0):
  // ServiceHeaderTimeouts scans connections_ at next_header_scan_.
  bool header_scan_armed_ = false;
  Clock::time_point next_header_scan_;
  std::unique_ptr<char[]> read_buf_;
};

}  // namespace tcp
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_INCOMING_H_
