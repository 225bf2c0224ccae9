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

// One remote node at one address, and our outgoing connection to it.
struct TcpPeers::Peer {
  NodeInfo info;      // immutable: another address is another Peer
  uint64_t slot = 0;  // its epoll tag index; immutable, never reused

  Mutex mu;
  std::deque<OutFrame> queue GUARDED_BY(mu);
  // Bytes in `queue` plus bytes in `sending`.
  size_t queued_bytes GUARDED_BY(mu) = 0;

  // The rest is owned by the loop thread.
  enum class State { kIdle, kResolving, kConnecting, kConnected };
  State state = State::kIdle;
  int fd = -1;
  uint32_t registered = 0;          // epoll events registered for fd
  std::deque<OutFrame> sending;     // taken from `queue`, being written
  size_t front_offset = 0;          // bytes of sending.front() written
  std::vector<SockAddr> addrs;      // from the last resolution
  size_t next_addr = 0;             // the one the next connect tries
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

std::shared_ptr<TcpPeers::Peer> TcpPeers::NewPeer(const NodeInfo& info) {
  auto peer = std::make_shared<Peer>();
  peer->info = info;
  peer->slot = next_slot_++;
  return peer;
}

Status TcpPeers::Enqueue(uint64_t to, std::string message) {
  OutFrame frame;
  frame.header = EncodeFrameHeader(options_.cluster_id, self_id_, message);
  frame.payload = std::move(message);
  // Shared: Sends from many threads go on together; SetBook waits for them.
  ReaderMutexLock bl(&book_mu_);
  // The wake happens under the locks: Stop() passes through book_mu_ after
  // setting the stop flag (Barrier), so no Enqueue can wake the loop once
  // Stop goes on to close the wake descriptor.
  if (stop_->load(std::memory_order_relaxed)) return Status::Stopped("transport is stopped");
  auto it = book_.find(to);
  if (it == book_.end()) {
    return Status::InvalidArgument("node " + std::to_string(to) + " is not a member");
  }
  Peer* peer = it->second.get();
  MutexLock l(&peer->mu);
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

Status TcpPeers::SetBook(const std::vector<NodeInfo>& nodes) {
  WriterMutexLock bl(&book_mu_);
  if (stop_->load(std::memory_order_relaxed)) return Status::Stopped("transport is stopped");
  Book next;
  bool changed = false;
  for (const NodeInfo& n : nodes) {
    const uint64_t id = n.id();
    if (id == self_id_) continue;
    auto old = book_.find(id);
    if (old == book_.end()) {
      next[id] = NewPeer(n);
      changed = true;
      continue;
    }
    Peer* was = old->second.get();
    // The id is the identity; only the address matters here (an IPv4 node
    // named with or without its derived id is the same node).
    if (was->info.host == n.host && was->info.port == n.port) {
      next[id] = old->second;
      continue;
    }
    // Moved: what waits for it goes to the new address.
    std::shared_ptr<Peer> moved = NewPeer(n);
    {
      MutexLock l(&was->mu);
      MutexLock ml(&moved->mu);  // not shared yet: uncontended
      for (const OutFrame& f : was->queue) was->queued_bytes -= f.size();
      moved->queue.swap(was->queue);
      for (const OutFrame& f : moved->queue) moved->queued_bytes += f.size();
    }
    next[id] = std::move(moved);
    changed = true;
  }
  for (auto& [id, peer] : book_) {
    if (next.count(id) != 0) continue;
    // Removed: its frames are dropped (the loop closes its connection).
    MutexLock l(&peer->mu);
    for (const OutFrame& f : peer->queue) peer->queued_bytes -= f.size();
    peer->queue.clear();
    changed = true;
  }
  if (!changed) return Status::OK();
  book_.swap(next);
  book_size_.store(book_.size() + 1, std::memory_order_relaxed);
  book_version_.fetch_add(1, std::memory_order_release);
  wake_();
  return Status::OK();
}

bool TcpPeers::IsMember(uint64_t sender) const {
  if (sender == self_id_) return true;
  ReaderMutexLock bl(&book_mu_);
  return book_.count(sender) != 0;
}

void TcpPeers::Barrier() { WriterMutexLock bl(&book_mu_); }

void TcpPeers::CloseAll() {
  resolver_.Stop();
  for (auto& entry : live_) CloseFd(&entry.second->fd);
}

void TcpPeers::ApplyBook() {
  std::vector<std::shared_ptr<Peer>> current;
  {
    ReaderMutexLock bl(&book_mu_);
    applied_version_ = book_version_.load(std::memory_order_relaxed);
    for (auto& entry : book_) current.push_back(entry.second);
  }
  std::unordered_map<uint64_t, Peer*> by_id;  // the book's Peers, by node id
  for (auto& peer : current) by_id[peer->info.id()] = peer.get();
  for (auto it = live_.begin(); it != live_.end();) {
    Peer* peer = it->second.get();
    auto now_in_book = by_id.find(peer->info.id());
    if (now_in_book != by_id.end() && now_in_book->second == peer) {
      ++it;
      continue;
    }
    if (peer->fd >= 0) {
      // Closing also takes the socket out of the epoll set.
      Counters::Add(&counters_->closed_removed_peer);
      CloseFd(&peer->fd);
    }
    conn_log_.Changed(peer->info, now_in_book == by_id.end()
                                      ? "removed from the address book"
                                      : "moved to " + now_in_book->second->info.ToString());
    it = live_.erase(it);
  }
  for (auto& peer : current) {
    if (live_.count(peer->slot) != 0) continue;
    live_[peer->slot] = peer;
    if (applied_version_ > 1) conn_log_.Changed(peer->info, "added to the address book");
  }
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
