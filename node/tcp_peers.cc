#include "node/tcp_peers.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "node/frame.h"
#include "node/socket_util.h"

namespace chorus {
namespace tcp {

namespace {
constexpr int kMaxIov = 64;
}  // namespace

struct TcpPeers::OutFrame {
  std::string header;
  std::string payload;
  size_t size() const { return header.size() + payload.size(); }
};

// One remote member and our outgoing connection to it.
struct TcpPeers::Peer {
  NodeInfo info;
  sockaddr_in addr;

  std::mutex mu;
  std::deque<OutFrame> queue;  // GUARDED_BY(mu)
  // Bytes in `queue` plus bytes in `sending`. GUARDED_BY(mu)
  size_t queued_bytes = 0;

  // The rest is owned by the loop thread.
  enum class State { kIdle, kConnecting, kConnected };
  State state = State::kIdle;
  int fd = -1;
  uint32_t registered = 0;          // epoll events registered for fd
  std::deque<OutFrame> sending;     // taken from `queue`, being written
  size_t front_offset = 0;          // bytes of sending.front() written
  int backoff_ms = 0;               // 0: no attempt failed yet
  Clock::time_point next_attempt;   // no connect before this
  Clock::time_point connect_deadline;  // kConnecting: give up at this time
  Clock::time_point connected_at;      // kConnected: since when
};

TcpPeers::TcpPeers(const TcpTransportOptions& options, Epoll* epoll, Counters* counters,
                   const std::atomic<bool>* stop, std::function<void()> wake)
    : options_(options),
      self_id_(options.self.id()),
      epoll_(epoll),
      counters_(counters),
      stop_(stop),
      wake_(std::move(wake)),
      drain_buf_(new char[kReadChunk]) {
  for (const NodeInfo& n : options_.nodes) {
    if (n.id() == self_id_) continue;
    auto peer = std::make_unique<Peer>();
    peer->info = n;
    ToSockAddr(n, &peer->addr);  // validated by NewTcpTransport
    peer_index_[n.id()] = peers_.size();
    peers_.push_back(std::move(peer));
  }
}

TcpPeers::~TcpPeers() { CloseAll(); }

Status TcpPeers::Enqueue(uint64_t to, std::string message) {
  auto it = peer_index_.find(to);
  if (it == peer_index_.end()) {
    return Status::InvalidArgument("node " + std::to_string(to) + " is not a member");
  }
  Peer* peer = peers_[it->second].get();
  OutFrame frame;
  frame.header = EncodeFrameHeader(options_.cluster_id, self_id_, message);
  frame.payload = std::move(message);
  // The wake happens under the lock: Stop() passes through every peer's
  // lock after setting the stop flag (Barrier), so no Enqueue can wake the
  // loop once Stop goes on to close the wake descriptor.
  std::lock_guard<std::mutex> l(peer->mu);
  if (stop_->load(std::memory_order_relaxed)) return Status::Stopped("transport is stopped");
  if (peer->queued_bytes + frame.size() > options_.max_queued_bytes_per_peer) {
    // The peer is slow or down; the protocol retries.
    Counters::Add(&counters_->sends_dropped_queue_full);
    return Status::OK();
  }
  const bool was_empty = peer->queue.empty();
  peer->queued_bytes += frame.size();
  peer->queue.push_back(std::move(frame));
  if (was_empty) wake_();
  return Status::OK();
}

void TcpPeers::Barrier() {
  for (auto& peer : peers_) std::lock_guard<std::mutex> pl(peer->mu);
}

void TcpPeers::CloseAll() {
  for (auto& peer : peers_) CloseFd(&peer->fd);
}

int TcpPeers::Service() {
  const Clock::time_point now = Clock::now();
  int timeout_ms = -1;
  for (auto& holder : peers_) {
    Peer* peer = holder.get();
    if (peer->state == Peer::State::kConnected) {
      Flush(peer);
      continue;
    }
    if (peer->state == Peer::State::kConnecting) {
      if (now < peer->connect_deadline) {
        timeout_ms = MinTimeout(timeout_ms, MsUntil(now, peer->connect_deadline));
        continue;
      }
      Counters::Add(&counters_->connect_timeouts);
      Backoff(peer);  // now idle, with its next attempt set
    }
    if (!HasPending(peer)) continue;
    if (now < peer->next_attempt) {
      timeout_ms = MinTimeout(timeout_ms, MsUntil(now, peer->next_attempt));
      continue;
    }
    Connect(peer);
    if (peer->state == Peer::State::kIdle) {  // failed at once: backoff set
      timeout_ms = MinTimeout(timeout_ms, peer->backoff_ms);
    } else if (peer->state == Peer::State::kConnecting) {
      timeout_ms = MinTimeout(timeout_ms, options_.connect_timeout_ms);
    }
  }
  return timeout_ms;
}

bool TcpPeers::HasPending(Peer* peer) {
  if (!peer->sending.empty()) return true;
  std::lock_guard<std::mutex> l(peer->mu);
  return !peer->queue.empty();
}

void TcpPeers::Connect(Peer* peer) {
  bool connected = false;
  Status s = StartConnect(peer->addr, options_.dead_peer_timeout_ms, &peer->fd, &connected);
  if (!s.ok()) {
    peer->fd = -1;
    Backoff(peer);
    return;
  }
  if (connected) {
    OnConnected(peer);
    return;
  }
  if (!epoll_->Register(peer->fd, EPOLLOUT, Tag(Kind::kPeer, PeerIndex(peer)), EPOLL_CTL_ADD)) {
    Counters::Add(&counters_->closed_epoll_error);
    Backoff(peer);
    return;
  }
  peer->state = Peer::State::kConnecting;
  peer->registered = EPOLLOUT;
  peer->connect_deadline = Clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
}

size_t TcpPeers::PeerIndex(Peer* peer) const { return peer_index_.at(peer->info.id()); }

void TcpPeers::OnConnected(Peer* peer) {
  const uint64_t tag = Tag(Kind::kPeer, PeerIndex(peer));
  // The peer never writes to us on this connection: EPOLLIN/RDHUP report
  // that it closed it.
  const uint32_t events = EPOLLIN | EPOLLRDHUP;
  if (!epoll_->Register(peer->fd, events, tag,
                        peer->state == Peer::State::kConnecting ? EPOLL_CTL_MOD : EPOLL_CTL_ADD)) {
    Counters::Add(&counters_->closed_epoll_error);
    Backoff(peer);
    return;
  }
  peer->registered = events;
  peer->state = Peer::State::kConnected;
  peer->connected_at = Clock::now();
  Counters::Add(&counters_->connects);
  conn_log_.Up(peer->info);
  // The backoff is not reset here: a peer that accepts and closes at once
  // must not be retried every reconnect_min_ms (see Backoff).
  Flush(peer);
}

void TcpPeers::Backoff(Peer* peer, int err) {
  const Clock::time_point now = Clock::now();
  if (peer->state == Peer::State::kConnected) {  // a lost connection
    Counters::Add(&counters_->disconnects);
    conn_log_.Down(peer->info, err);
  }
  // Only a connection that stayed up for a while proves the peer healthy
  // enough to start the backoff again from its minimum.
  const bool was_stable =
      peer->state == Peer::State::kConnected &&
      now - peer->connected_at >= std::chrono::milliseconds(options_.reconnect_max_ms);
  CloseFd(&peer->fd);
  peer->state = Peer::State::kIdle;
  peer->registered = 0;
  peer->front_offset = 0;  // a partly written frame is sent again whole
  peer->backoff_ms = (peer->backoff_ms == 0 || was_stable)
                         ? options_.reconnect_min_ms
                         : std::min(peer->backoff_ms * 2, options_.reconnect_max_ms);
  peer->next_attempt = now + std::chrono::milliseconds(peer->backoff_ms);
}

void TcpPeers::OnEvent(uint64_t index, uint32_t events) {
  Peer* peer = peers_[index].get();
  if (peer->state == Peer::State::kConnecting) {
    if (CheckConnected(peer->fd).ok()) {
      OnConnected(peer);
    } else {
      Backoff(peer);
    }
    return;
  }
  if (peer->state != Peer::State::kConnected) return;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
    // Drain anything (nothing is expected) and look for EOF or an error.
    while (true) {
      const ssize_t n = read(peer->fd, drain_buf_.get(), kReadChunk);
      if (n > 0) continue;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      const int err = n < 0 ? errno : 0;
      if (n < 0) counters_->CountIfTimedOut(err);
      Backoff(peer, err);  // EOF or error: the peer went away
      return;
    }
  }
  if (events & EPOLLOUT) Flush(peer);
}

void TcpPeers::Flush(Peer* peer) {
  while (true) {
    if (peer->sending.empty()) {
      std::lock_guard<std::mutex> l(peer->mu);
      peer->sending.swap(peer->queue);
    }
    if (peer->sending.empty()) break;
    iovec iov[kMaxIov];
    int count = 0;
    size_t skip = peer->front_offset;
    for (size_t i = 0; i < peer->sending.size() && count + 2 <= kMaxIov; ++i) {
      const OutFrame& f = peer->sending[i];
      for (const std::string* part : {&f.header, &f.payload}) {
        if (skip >= part->size()) {
          skip -= part->size();
          continue;
        }
        iov[count].iov_base = const_cast<char*>(part->data()) + skip;
        iov[count].iov_len = part->size() - skip;
        skip = 0;
        ++count;
      }
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n = sendmsg(peer->fd, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        SetWriteInterest(peer, true);
        return;
      }
      const int err = errno;
      counters_->CountIfTimedOut(err);
      Backoff(peer, err);
      return;
    }
    Counters::Add(&counters_->bytes_sent, static_cast<uint64_t>(n));
    // Retire the frames written completely.
    size_t written = static_cast<size_t>(n) + peer->front_offset;
    size_t done_bytes = 0;
    uint64_t done_frames = 0;
    while (!peer->sending.empty() && written >= peer->sending.front().size()) {
      written -= peer->sending.front().size();
      done_bytes += peer->sending.front().size();
      ++done_frames;
      peer->sending.pop_front();
    }
    peer->front_offset = written;
    if (done_frames > 0) {
      Counters::Add(&counters_->frames_sent, done_frames);
      std::lock_guard<std::mutex> l(peer->mu);
      peer->queued_bytes -= done_bytes;
    }
  }
  SetWriteInterest(peer, false);
}

void TcpPeers::SetWriteInterest(Peer* peer, bool on) {
  const uint32_t events = on ? (peer->registered | EPOLLOUT) : (peer->registered & ~EPOLLOUT);
  if (events == peer->registered) return;
  if (!epoll_->Register(peer->fd, events, Tag(Kind::kPeer, PeerIndex(peer)), EPOLL_CTL_MOD)) {
    Counters::Add(&counters_->closed_epoll_error);
    Backoff(peer);
    return;
  }
  peer->registered = events;
}

}  // namespace tcp
}  // namespace chorus
