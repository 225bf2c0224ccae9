// TcpPeers: the outgoing half of the TCP transport: one persistent
// connection per peer, used only to send; and the address book (the peers
// sent to, whose frames TcpIncoming accepts), which SetBook replaces.
//
// Enqueue() (any thread, from Transport::Send) appends the frame to the
// peer's queue under the peer's mutex and wakes the loop only when the queue
// was empty (a non-empty queue means the loop already has a reason to come
// back to it: a pending wake, an EPOLLOUT registration, a connect or a
// resolution in progress, or a reconnect deadline). EnqueueBatch (from
// Transport::SendBatch: a group's round) queues many frames for many peers
// with one wake, so the loop finds a round's frames for a peer together
// instead of waking for the first and writing the rest one by one; a message
// for several peers is framed once (the header names the sender, not the
// receiver) and its bytes shared by their queues. The loop (Service,
// OnEvent) connects lazily (only when something waits to be sent), takes the
// whole queue at once and writes it with sendmsg, up to kMaxIov buffers
// (header, payload, tag: 85 frames) a call; on a failed connect or a
// broken connection it retries after a backoff that doubles from
// reconnect_min_ms up to reconnect_max_ms (and starts again from min only
// once a connection stayed up for reconnect_max_ms); a connect still pending
// after connect_timeout_ms counts as failed. Queued frames survive
// reconnects (a partly written frame is written again from its start); the
// queue is bounded in bytes and Enqueue drops (and counts) what does not fit.
//
// Addresses: a numeric host is used as is; a host name is resolved by the
// Resolver thread when a connect needs an address and none of the last
// resolution's is left untried (a failed connect moves on to the next
// address; a connection that broke after it was up tries the same address
// first). A failed resolution is a failed connect.
//
// The book: a Peer object has one fixed address. SetBook (any thread)
// replaces the id -> Peer map under book_mu_: a new id gets a new Peer, a
// changed address a new Peer that takes over the old one's queue, a removed
// id loses its Peer and its queue. The loop notices the new version
// (Service) and brings its sockets in line: it closes the connections of the
// Peers no longer in the book and starts serving the new ones. Enqueue holds
// book_mu_ shared, so it always finds the current book.
//
// With a cluster secret (frame_auth.h), a new connection first reads the
// receiver's challenge (its nonce; it must arrive within connect_timeout_ms
// or the attempt counts as failed: challenge_failures, then the backoff),
// and each frame is tagged when it is first written on a connection, with
// the next sequence number of that connection.
//
// Files: tcp_peers.cc (connections, writes), tcp_peers_book.cc (Enqueue and
// the book), tcp_peer.h (the per-peer records both use).
//
// Thread safety: Enqueue, SetBook, IsMember, book_version and book_size from
// any thread; Barrier from Stop; the rest on the loop thread only (CloseAll
// once the loop has joined).
#ifndef CHORUS_NODE_TCP_PEERS_H_
#define CHORUS_NODE_TCP_PEERS_H_

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chorus/transport.h"
#include "node/frame.h"
#include "node/frame_auth.h"
#include "node/tcp_conn_log.h"
#include "node/tcp_epoll.h"
#include "node/tcp_resolver.h"
#include "utils/mutex.h"

namespace chorus {
namespace tcp {

class TcpPeers {
 public:
  // options.nodes but self is the initial book (validated by the caller).
  // `wake` wakes the loop (called under locks); `stop` is the transport's
  // stop flag. All borrowed ones outlive this object.
  TcpPeers(const TcpTransportOptions& options, Epoll* epoll, Counters* counters,
           const std::atomic<bool>* stop, std::function<void()> wake);
  ~TcpPeers();

  // Sets up the frame authenticator when options.cluster_secret is set.
  Status Init();

  // A message framed once (header and payload, immutable), shared by the
  // queues of every peer it goes to.
  struct Framed {
    FrameHeader header;
    std::string payload;
  };
  using FramedPtr = std::shared_ptr<const Framed>;
  // Any thread. Frames `message` (at most max_frame_bytes: the caller
  // checked) as this node's.
  FramedPtr Frame(std::string message) const;

  // Any thread. Queues `message` (at most max_frame_bytes: the caller
  // checked) for peer `to`. InvalidArgument for a node not in the book,
  // Stopped once the stop flag is set; ok also when the queue was full and
  // it was dropped.
  Status Enqueue(uint64_t to, std::string message);
  // Any thread. Queues each (peer, frame) of `sends`, in order per peer, as
  // Enqueue does, taking each peer's lock once and waking the loop at most
  // once: the loop then writes a peer's frames together. Returns the first
  // error Enqueue would have returned; the other sends are queued.
  Status EnqueueBatch(const std::vector<std::pair<uint64_t, FramedPtr>>& sends);

  // Any thread. Makes `nodes` (valid, unique ids: the caller checked; self
  // is skipped) the book; see the file comment. Stopped once the stop flag
  // is set.
  Status SetBook(const std::vector<NodeInfo>& nodes);
  // Any thread. Whether frames from `sender` are accepted: self or a peer
  // in the book.
  bool IsMember(uint64_t sender) const;
  // Any thread. Changes whenever the book does.
  uint64_t book_version() const { return book_version_.load(std::memory_order_acquire); }
  // Any thread. The nodes in the book, self included.
  size_t book_size() const { return book_size_.load(std::memory_order_relaxed); }

  // Stop: after the stop flag is set, passes through book_mu_, so a
  // concurrent Enqueue or SetBook has finished its wake and any later one
  // sees the flag.
  void Barrier();

  // Loop thread. Applies a new book, collects resolutions, connects idle
  // peers that have something to send and whose backoff has passed, gives
  // up connects that took too long, and flushes connected peers. Returns the
  // epoll timeout: the time to the earliest reconnect or connect deadline,
  // or -1.
  int Service();
  // Loop thread. epoll reported `events` for the peer tagged `index`.
  void OnEvent(uint64_t index, uint32_t events);

  // Closes every connection and stops the resolver. REQUIRES: the loop is
  // not running.
  void CloseAll();

 private:
  struct OutFrame;
  struct Peer;
  using Book = std::unordered_map<uint64_t, std::shared_ptr<Peer>>;  // by node id

  std::shared_ptr<Peer> NewPeer(const NodeInfo& info) REQUIRES(book_mu_);
  void ApplyBook();
  void CollectResolutions();
  bool HasPending(Peer* peer);
  void Connect(Peer* peer);
  void OnConnected(Peer* peer);
  // With a secret: reads what the socket has of the challenge.
  void ReadChallenge(Peer* peer);
  // The connection can carry frames.
  void OnReady(Peer* peer);
  // Closes the connection and schedules the next attempt.
  void Backoff(Peer* peer, int err = 0);
  // Writes as much as the socket takes. REQUIRES: peer connected.
  void Flush(Peer* peer);
  // Closes the connection (see Backoff) when epoll refuses the change.
  void SetWriteInterest(Peer* peer, bool on);

  const TcpTransportOptions& options_;
  const uint64_t self_id_;
  Epoll* const epoll_;
  Counters* const counters_;
  const std::atomic<bool>* const stop_;
  const std::function<void()> wake_;

  mutable SharedMutex book_mu_;
  Book book_ GUARDED_BY(book_mu_);
  uint64_t next_slot_ GUARDED_BY(book_mu_) = 0;
  std::atomic<uint64_t> book_version_{0};      // written under book_mu_
  std::atomic<size_t> book_size_{0};           // written under book_mu_

  // Loop only (and CloseAll once the loop has joined).
  std::unordered_map<uint64_t, std::shared_ptr<Peer>> live_;  // by slot (epoll tag)
  uint64_t applied_version_ = 0;
  Resolver resolver_;
  std::unique_ptr<char[]> drain_buf_;
  ConnectionLog conn_log_{options_};
  std::unique_ptr<FrameAuthenticator> auth_;  // null: no secret
  size_t tag_bytes_ = 0;                      // written after each frame
};

}  // namespace tcp
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_PEERS_H_
