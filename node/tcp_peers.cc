#include "node/tcp_peers.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "node/frame.h"
#include "node/frame_auth.h"
#include "node/socket_util.h"
#include "node/tcp_peer.h"

namespace chorus {
namespace tcp {

namespace {
// Buffers per sendmsg: three a frame (header, payload, tag), so 85 frames
// a call, a round's worth for one peer in one system call, well under
// IOV_MAX (1024) and 4 KiB of stack. The bytes a call writes are bounded by
// the socket's send buffer (the kernel takes what fits, the rest waits for
// EPOLLOUT) and the memory queued by max_queued_bytes_per_peer.
constexpr int kMaxIov = 256;
}  // namespace

TcpPeers::TcpPeers(const TcpTransportOptions& options, Epoll* epoll, Counters* counters,
                   const std::atomic<bool>* stop, std::function<void()> wake)
    : options_(options),
      self_id_(options.self.id()),
      epoll_(epoll),
      counters_(counters),
      stop_(stop),
      wake_(std::move(wake)),
      resolver_(wake_),
      drain_buf_(new char[kReadChunk]) {
  WriterMutexLock l(&book_mu_);
  for (const NodeInfo& n : options_.nodes) {
    if (n.id() != self_id_) book_[n.id()] = NewPeer(n);
  }
  book_size_.store(book_.size() + 1);
  book_version_.store(1);
}

TcpPeers::~TcpPeers() { CloseAll(); }

Status TcpPeers::Init() {
  if (options_.cluster_secret.empty()) return Status::OK();
  tag_bytes_ = kFrameTagSize;
  return FrameAuthenticator::New(options_.cluster_secret, &auth_);
}

void TcpPeers::CloseAll() {
  resolver_.Stop();
  for (auto& entry : live_) CloseFd(&entry.second->fd);
}

void TcpPeers::CollectResolutions() {
  for (Resolver::Result& r : resolver_.TakeResults()) {
    auto it = live_.find(r.key);
    if (it == live_.end()) continue;  // left the book meanwhile
    Peer* peer = it->second.get();
    if (peer->state != Peer::State::kResolving) continue;
    if (!r.status.ok()) {
      Counters::Add(&counters_->resolve_failures);
      Backoff(peer);
      continue;
    }
    peer->state = Peer::State::kIdle;
    peer->addrs = std::move(r.addrs);
    peer->next_addr = 0;
    // Connected by the Service pass that follows (its attempt time passed).
  }
}

int TcpPeers::Service() {
  if (book_version() != applied_version_) ApplyBook();
  CollectResolutions();
  const Clock::time_point now = Clock::now();
  int timeout_ms = -1;
  for (auto& entry : live_) {
    Peer* peer = entry.second.get();
    if (peer->state == Peer::State::kConnected) {
      Flush(peer);
      continue;
    }
    if (peer->state == Peer::State::kResolving) continue;  // the resolver wakes us
    if (peer->state == Peer::State::kAwaitingChallenge) {
      if (now < peer->connect_deadline) {
        timeout_ms = MinTimeout(timeout_ms, MsUntil(now, peer->connect_deadline));
        continue;
      }
      Counters::Add(&counters_->challenge_failures);
      Backoff(peer);
      continue;  // retried after its backoff
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
  MutexLock l(&peer->mu);
  return !peer->queue.empty();
}

void TcpPeers::Connect(Peer* peer) {
  if (peer->next_addr >= peer->addrs.size()) {
    // Every address of the last resolution failed (or there was none yet):
    // resolve again, so that a name that moved is followed.
    SockAddr numeric;
    if (NumericSockAddr(peer->info.host, peer->info.port, &numeric)) {
      peer->addrs.assign(1, numeric);
      peer->next_addr = 0;
    } else {
      peer->state = Peer::State::kResolving;
      if (!resolver_.Request(peer->slot, peer->info.host, peer->info.port).ok()) {
        Counters::Add(&counters_->resolve_failures);
        Backoff(peer);
      }
      return;
    }
  }
  bool connected = false;
  Status s = StartConnect(peer->addrs[peer->next_addr], options_.dead_peer_timeout_ms, &peer->fd,
                          &connected);
  if (!s.ok()) {
    peer->fd = -1;
    Backoff(peer);
    return;
  }
  if (connected) {
    OnConnected(peer);
    return;
  }
  if (!epoll_->Register(peer->fd, EPOLLOUT, Tag(Kind::kPeer, peer->slot), EPOLL_CTL_ADD)) {
    Counters::Add(&counters_->closed_epoll_error);
    Backoff(peer);
    return;
  }
  peer->state = Peer::State::kConnecting;
  peer->registered = EPOLLOUT;
  peer->connect_deadline = Clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
}

void TcpPeers::OnConnected(Peer* peer) {
  const uint64_t tag = Tag(Kind::kPeer, peer->slot);
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
  if (auth_ != nullptr) {
    // The receiver writes its challenge at once; until it is in, nothing
    // is written (ReadChallenge goes on from here).
    peer->state = Peer::State::kAwaitingChallenge;
    peer->challenge_fill = 0;
    peer->connect_deadline =
        Clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
    return;
  }
  OnReady(peer);
}

void TcpPeers::ReadChallenge(Peer* peer) {
  while (peer->challenge_fill < kChallengeSize) {
    // Exactly the challenge: whatever follows it is drained as usual.
    const ssize_t n = read(peer->fd, peer->challenge + peer->challenge_fill,
                           kChallengeSize - peer->challenge_fill);
    if (n > 0) {
      peer->challenge_fill += static_cast<size_t>(n);
      Counters::Add(&counters_->bytes_received, static_cast<uint64_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    const int err = n < 0 ? errno : 0;
    if (n < 0) counters_->CountIfTimedOut(err);
    // Closed before its challenge (a receiver without the secret closes a
    // connection that sends no header within its header_timeout_ms).
    Counters::Add(&counters_->challenge_failures);
    Backoff(peer, err);
    return;
  }
  if (!DecodeChallenge(peer->challenge, &peer->nonce).ok()) {
    Counters::Add(&counters_->challenge_failures);
    Backoff(peer);
    return;
  }
  ++peer->connection;
  peer->next_sequence = 0;
  OnReady(peer);
}

void TcpPeers::OnReady(Peer* peer) {
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
  // A connect that failed moves on to the next address; a connection that
  // was up tries its address again first.
  if (peer->state != Peer::State::kConnected) ++peer->next_addr;
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
  auto it = live_.find(index);
  if (it == live_.end()) return;  // left the book earlier in this batch
  Peer* peer = it->second.get();
  if (peer->state == Peer::State::kConnecting) {
    if (CheckConnected(peer->fd).ok()) {
      OnConnected(peer);
    } else {
      Backoff(peer);
    }
    return;
  }
  if (peer->state == Peer::State::kAwaitingChallenge) {
    ReadChallenge(peer);
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
      MutexLock l(&peer->mu);
      peer->sending.swap(peer->queue);
    }
    if (peer->sending.empty()) break;
    iovec iov[kMaxIov];
    int count = 0;
    size_t skip = peer->front_offset;
    for (size_t i = 0; i < peer->sending.size() && count + 3 <= kMaxIov; ++i) {
      OutFrame& f = peer->sending[i];
      // Tagged in the order written, so the sequence numbers follow the
      // wire; a frame already tagged on this connection (partly written)
      // keeps its tag.
      if (auth_ != nullptr && f.tag_connection != peer->connection) {
        f.tag = auth_->Sign(peer->nonce, peer->info.id(), peer->next_sequence++,
                            f.framed->header.data(), f.framed->payload);
        f.tag_connection = peer->connection;
      }
      const std::string& payload = f.framed->payload;
      const std::pair<const char*, size_t> parts[] = {{f.framed->header.data(), kFrameHeaderSize},
                                                      {payload.data(), payload.size()},
                                                      {f.tag.data(), tag_bytes_}};
      for (const auto& [data, size] : parts) {
        if (skip >= size) {
          skip -= size;
          continue;
        }
        iov[count].iov_base = const_cast<char*>(data) + skip;
        iov[count].iov_len = size - skip;
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
    while (!peer->sending.empty() && written >= peer->sending.front().size() + tag_bytes_) {
      written -= peer->sending.front().size() + tag_bytes_;
      done_bytes += peer->sending.front().size();
      ++done_frames;
      peer->sending.pop_front();
    }
    peer->front_offset = written;
    if (done_frames > 0) {
      Counters::Add(&counters_->frames_sent, done_frames);
      MutexLock l(&peer->mu);
      peer->queued_bytes -= done_bytes;
    }
  }
  SetWriteInterest(peer, false);
}

void TcpPeers::SetWriteInterest(Peer* peer, bool on) {
  const uint32_t events = on ? (peer->registered | EPOLLOUT) : (peer->registered & ~EPOLLOUT);
  if (events == peer->registered) return;
  if (!epoll_->Register(peer->fd, events, Tag(Kind::kPeer, peer->slot), EPOLL_CTL_MOD)) {
    Counters::Add(&counters_->closed_epoll_error);
    Backoff(peer);
    return;
  }
  peer->registered = events;
}

}  // namespace tcp
}  // namespace chorus
