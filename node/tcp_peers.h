// TcpPeers: the outgoing half of the TCP transport: one persistent
// connection per peer, used only to send.
//
// Enqueue() (any thread, from Transport::Send) appends the frame to the
// peer's queue under the peer's mutex and wakes the loop only when the queue
// was empty (a non-empty queue means the loop already has a reason to come
// back to it: a pending wake, an EPOLLOUT registration, a connect in progress
// or a reconnect deadline). The loop (Service, OnEvent) connects lazily (only
// when something waits to be sent), takes the whole queue at once and writes
// it with sendmsg; on a failed connect or a broken connection it retries
// after a backoff that doubles from reconnect_min_ms up to reconnect_max_ms
// (and starts again from min only once a connection stayed up for
// reconnect_max_ms); a connect still pending after connect_timeout_ms counts
// as failed. Queued frames survive reconnects (a partly written frame is
// written again from its start); the queue is bounded in bytes and Enqueue
// drops (and counts) what does not fit.
//
// Thread safety: Enqueue from any thread; Barrier from Stop; the rest on the
// loop thread only (CloseAll once the loop has joined).
#ifndef CHORUS_NODE_TCP_PEERS_H_
#define CHORUS_NODE_TCP_PEERS_H_

#include <netinet/in.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "chorus/transport.h"
#include "node/tcp_conn_log.h"
#include "node/tcp_epoll.h"

namespace chorus {
namespace tcp {

class TcpPeers {
 public:
  // Every member of options.nodes but self becomes a peer. `wake` wakes the
  // loop (called under a peer's lock); `stop` is the transport's stop flag.
  // All borrowed ones outlive this object.
  TcpPeers(const TcpTransportOptions& options, Epoll* epoll, Counters* counters,
           const std::atomic<bool>* stop, std::function<void()> wake);
  ~TcpPeers();

  // Any thread. Queues `message` (at most max_frame_bytes: the caller
  // checked) for peer `to`. InvalidArgument for a non-member, Stopped once
  // the stop flag is set; ok also when the queue was full and it was dropped.
  Status Enqueue(uint64_t to, std::string message);

  // Stop: after the stop flag is set, passes through every peer's lock, so a
  // concurrent Enqueue has finished its wake and any later one sees the flag.
  void Barrier();

  // Loop thread. Connects idle peers that have something to send and whose
  // backoff has passed, gives up connects that took too long, and flushes
  // connected peers. Returns the epoll timeout: the time to the earliest
  // reconnect or connect deadline, or -1.
  int Service();
  // Loop thread. epoll reported `events` for the peer tagged `index`.
  void OnEvent(uint64_t index, uint32_t events);

  // Closes every connection. REQUIRES: the loop is not running.
  void CloseAll();

 private:
  struct OutFrame;
  struct Peer;

  bool HasPending(Peer* peer);
  void Connect(Peer* peer);
  void OnConnected(Peer* peer);
  // Closes the connection and schedules the next attempt.
  void Backoff(Peer* peer, int err = 0);
  // Writes as much as the socket takes. REQUIRES: peer connected.
  void Flush(Peer* peer);
  // Closes the connection (see Backoff) when epoll refuses the change.
  void SetWriteInterest(Peer* peer, bool on);
  size_t PeerIndex(Peer* peer) const;

  const TcpTransportOptions& options_;
  const uint64_t self_id_;
  Epoll* const epoll_;
  Counters* const counters_;
  const std::atomic<bool>* const stop_;
  const std::function<void()> wake_;
  std::vector<std::unique_ptr<Peer>> peers_;         // every member but self; immutable
  std::unordered_map<uint64_t, size_t> peer_index_;  // node id -> index in peers_; immutable
  std::unique_ptr<char[]> drain_buf_;                // loop only
  ConnectionLog conn_log_{options_};                 // loop only
};

}  // namespace tcp
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_PEERS_H_
