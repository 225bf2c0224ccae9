// The TCP transport: one I/O thread running an epoll loop.
//
// Threads: any thread may call Send(); the I/O thread ("the loop") owns every
// socket, accepts, connects, writes and reads, and calls the receiver.
//
// Outgoing: one persistent connection per peer, used only to send. Send()
// appends the frame to the peer's queue under the peer's mutex and wakes the
// loop through the eventfd only when the queue was empty (a non-empty queue
// means the loop already has a reason to come back to it: a pending wake, an
// EPOLLOUT registration, a connect in progress or a reconnect deadline). The
// loop connects lazily (only when something waits to be sent), takes the
// whole queue at once and writes it with sendmsg; on a failed connect or a
// broken connection it retries after a backoff that doubles from
// reconnect_min_ms up to reconnect_max_ms (and starts again from min only
// once a connection stayed up for reconnect_max_ms); a connect still pending
// after connect_timeout_ms counts as failed. Queued frames survive reconnects
// (a partly written frame is written again from its start); the queue is
// bounded in bytes and Send drops (and counts) what does not fit.
//
// Incoming: accepted connections are only read; at most
// max_incoming_connections are open (more are closed at once). Each has a
// FrameDecoder; every header is checked (magic, length, cluster id, sender is
// a member) as soon as it is complete, before any of its payload is read, and
// the crc32c once the payload is in, before the receiver sees the frame. A
// bad frame is counted and closes its connection; other connections are
// unaffected. An incoming connection must deliver one header that passes
// those checks within header_timeout_ms of its accept, or it is closed (a
// silent non-member must not hold a slot of the cap forever); once one has
// passed it is exempt. There is no timer per connection: each records its
// accept time and whether a header passed, and the loop scans the incoming
// connections when the earliest deadline is due (at most every quarter of
// the timeout, and not at all while every connection has passed).
//
// Resource failures are survived, not fatal: accept() failing for lack of
// descriptors or memory takes the listening socket out of epoll for
// kAcceptPauseMs (the loop's timeout puts it back), and an epoll_ctl that
// fails for one connection closes that connection. Every socket has
// SO_KEEPALIVE and TCP_USER_TIMEOUT (dead_peer_timeout_ms), so a peer gone
// without a reset breaks its connections instead of leaving them open.
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "chorus/transport.h"
#include "node/frame.h"
#include "node/socket_util.h"
#include "node/tcp_transport_testing.h"

namespace chorus {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxEvents = 64;
constexpr size_t kReadChunk = 64 * 1024;
constexpr int kMaxReadsPerEvent = 16;  // fairness between busy connections
constexpr int kMaxIov = 64;
constexpr int kAcceptPauseMs = 100;  // after EMFILE and friends

std::atomic<int> g_fail_incoming_epoll_adds{0};  // tcp_transport_testing

// epoll_event.data.u64 = kind << 56 | index.
enum class Kind : uint64_t { kWake = 0, kListen = 1, kPeer = 2, kIncoming = 3 };
uint64_t Tag(Kind kind, uint64_t index) { return static_cast<uint64_t>(kind) << 56 | index; }
Kind KindOf(uint64_t tag) { return static_cast<Kind>(tag >> 56); }
uint64_t IndexOf(uint64_t tag) { return tag & ((uint64_t{1} << 56) - 1); }

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "chorus tcp transport: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

struct OutFrame {
  std::string header;
  std::string payload;
  size_t size() const { return header.size() + payload.size(); }
};

// One remote member and our outgoing connection to it.
struct Peer {
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

// An accepted connection. Held by unique_ptr and never moved: the decoder's
// check captures `this`.
struct Incoming {
  int fd;
  Clock::time_point accepted_at;
  bool header_passed = false;  // one header passed the identity checks
  FrameDecoder decoder;
  Incoming(int f, Clock::time_point at, uint32_t max, FrameDecoder::HeaderCheck check)
      : fd(f),
        accepted_at(at),
        decoder(max, [this, check = std::move(check)](uint64_t cluster_id, uint64_t sender) {
          Status s = check(cluster_id, sender);
          if (s.ok()) header_passed = true;
          return s;
        }) {}
};

class TcpTransportImpl : public TcpTransport {
 public:
  explicit TcpTransportImpl(const TcpTransportOptions& options)
      : options_(options),
        self_id_(options.self.id()),
        max_incoming_(options.max_incoming_connections > 0
                          ? static_cast<size_t>(options.max_incoming_connections)
                          : 4 * options.nodes.size() + 16) {
    // Runs on the loop thread for every complete incoming header.
    header_check_ = [this](uint64_t cluster_id, uint64_t sender) {
      if (cluster_id != options_.cluster_id) {
        dropped_foreign_cluster_.fetch_add(1, std::memory_order_relaxed);
        return Status::InvalidArgument("frame of cluster " + std::to_string(cluster_id));
      }
      if (members_.count(sender) == 0) {
        dropped_non_member_.fetch_add(1, std::memory_order_relaxed);
        return Status::InvalidArgument("frame from non-member " + std::to_string(sender));
      }
      return Status::OK();
    };
    for (const NodeInfo& n : options_.nodes) {
      members_.insert(n.id());
      if (n.id() == self_id_) continue;
      auto peer = std::make_unique<Peer>();
      peer->info = n;
      ToSockAddr(n, &peer->addr);  // validated by NewTcpTransport
      peer_index_[n.id()] = peers_.size();
      peers_.push_back(std::move(peer));
    }
  }

  ~TcpTransportImpl() override { Stop(); }

  // Creates the epoll and eventfd descriptors (before any Send can wake).
  Status Init() {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) return Status::FromErrno("epoll_create1", errno);
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return Status::FromErrno("eventfd", errno);
    if (!Register(wake_fd_, EPOLLIN, Tag(Kind::kWake, 0), EPOLL_CTL_ADD)) {
      return Status::FromErrno("epoll_ctl(eventfd)", errno);
    }
    return Status::OK();
  }

  Status Start(Receiver receiver) override {
    std::lock_guard<std::mutex> l(lifecycle_mu_);
    if (stopped_) return Status::Stopped("transport is stopped");
    if (started_) return Status::InvalidArgument("transport already started");
    if (!receiver) return Status::InvalidArgument("receiver is empty");
    Status s = ListenTcp(options_.self, &listen_fd_);
    if (!s.ok()) return s;
    if (!Register(listen_fd_, EPOLLIN, Tag(Kind::kListen, 0), EPOLL_CTL_ADD)) {
      s = Status::FromErrno("epoll_ctl(listening socket)", errno);
      CloseFd(&listen_fd_);
      return s;
    }
    receiver_ = std::move(receiver);
    started_ = true;
    loop_ = std::thread([this] { Loop(); });
    return Status::OK();
  }

  Status Send(uint64_t to, std::string message) override {
    if (message.size() > options_.max_frame_bytes) {
      return Status::TooLarge("message of " + std::to_string(message.size()) +
                              " bytes exceeds max_frame_bytes " +
                              std::to_string(options_.max_frame_bytes));
    }
    if (to == self_id_) return SendToSelf(std::move(message));
    auto it = peer_index_.find(to);
    if (it == peer_index_.end()) {
      return Status::InvalidArgument("node " + std::to_string(to) + " is not a member");
    }
    Peer* peer = peers_[it->second].get();
    OutFrame frame;
    frame.header = EncodeFrameHeader(options_.cluster_id, self_id_, message);
    frame.payload = std::move(message);
    // The wake happens under the lock: Stop() passes through every peer's
    // lock after setting stop_, so no Send can touch wake_fd_ once Stop
    // goes on to close it.
    std::lock_guard<std::mutex> l(peer->mu);
    if (stop_.load(std::memory_order_relaxed)) return Status::Stopped("transport is stopped");
    if (peer->queued_bytes + frame.size() > options_.max_queued_bytes_per_peer) {
      // The peer is slow or down; the protocol retries.
      sends_dropped_queue_full_.fetch_add(1, std::memory_order_relaxed);
      return Status::OK();
    }
    const bool was_empty = peer->queue.empty();
    peer->queued_bytes += frame.size();
    peer->queue.push_back(std::move(frame));
    if (was_empty) Wake();
    return Status::OK();
  }

  void Stop() override {
    std::lock_guard<std::mutex> l(lifecycle_mu_);
    if (stopped_) return;
    stopped_ = true;
    stop_.store(true);
    // Barrier: a Send that holds a queue lock finishes its wake now; any later
    // Send sees stop_ (see Send).
    for (auto& peer : peers_) std::lock_guard<std::mutex> pl(peer->mu);
    { std::lock_guard<std::mutex> sl(self_mu_); }
    if (loop_.joinable()) {
      if (loop_.get_id() == std::this_thread::get_id()) {
        std::fprintf(stderr, "chorus tcp transport: Stop() called from the receiver\n");
        std::abort();
      }
      Wake();
      loop_.join();
    }
    for (auto& peer : peers_) CloseFd(&peer->fd);
    for (auto& entry : incoming_) CloseFd(&entry.second->fd);
    incoming_.clear();
    CloseFd(&listen_fd_);
    CloseFd(&wake_fd_);
    CloseFd(&epoll_fd_);
  }

  TransportStats stats() const override {
    TransportStats s;
    s.frames_sent = frames_sent_.load(std::memory_order_relaxed);
    s.frames_received = frames_received_.load(std::memory_order_relaxed);
    s.frames_dropped_corrupt = dropped_corrupt_.load(std::memory_order_relaxed);
    s.frames_dropped_too_large = dropped_too_large_.load(std::memory_order_relaxed);
    s.frames_dropped_foreign_cluster = dropped_foreign_cluster_.load(std::memory_order_relaxed);
    s.frames_dropped_non_member = dropped_non_member_.load(std::memory_order_relaxed);
    s.sends_dropped_queue_full = sends_dropped_queue_full_.load(std::memory_order_relaxed);
    s.connections_closed_on_error = closed_on_error_.load(std::memory_order_relaxed);
    s.connections_rejected_over_limit = rejected_over_limit_.load(std::memory_order_relaxed);
    s.accept_failures = accept_failures_.load(std::memory_order_relaxed);
    s.connections_closed_epoll_error = closed_epoll_error_.load(std::memory_order_relaxed);
    s.connect_timeouts = connect_timeouts_.load(std::memory_order_relaxed);
    s.connections_timed_out = timed_out_.load(std::memory_order_relaxed);
    s.connections_closed_header_timeout =
        closed_header_timeout_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  Status SendToSelf(std::string message) {
    std::lock_guard<std::mutex> l(self_mu_);
    if (stop_.load(std::memory_order_relaxed)) return Status::Stopped("transport is stopped");
    if (self_queued_bytes_ + message.size() > options_.max_queued_bytes_per_peer) {
      sends_dropped_queue_full_.fetch_add(1, std::memory_order_relaxed);
      return Status::OK();
    }
    const bool was_empty = self_queue_.empty();
    self_queued_bytes_ += message.size();
    self_queue_.push_back(std::move(message));
    if (was_empty) Wake();
    return Status::OK();
  }

  void Wake() {
    const uint64_t one = 1;
    // EAGAIN means the counter is saturated: the loop is woken anyway.
    if (write(wake_fd_, &one, sizeof(one)) < 0 && errno != EAGAIN) Die("eventfd write");
  }

  // epoll_ctl; false (errno set) when it failed. The callers give up the one
  // socket concerned rather than the process.
  bool Register(int fd, uint32_t events, uint64_t tag, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    return epoll_ctl(epoll_fd_, op, fd, &ev) == 0;
  }

  static void CloseFd(int* fd) {
    if (*fd >= 0) {
      close(*fd);
      *fd = -1;
    }
  }

  // ---- the loop thread ----

  void Loop() {
    epoll_event events[kMaxEvents];
    read_buf_.reset(new char[kReadChunk]);
    while (!stop_.load(std::memory_order_acquire)) {
      const int timeout_ms = MinTimeout(MinTimeout(ServicePeers(), ServiceAcceptPause()),
                                        ServiceHeaderTimeouts());
      const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout_ms);
      if (n < 0) {
        if (errno == EINTR) continue;
        Die("epoll_wait");
      }
      for (int i = 0; i < n && !stop_.load(std::memory_order_acquire); ++i) {
        const uint64_t tag = events[i].data.u64;
        switch (KindOf(tag)) {
          case Kind::kWake: {
            uint64_t v;
            while (read(wake_fd_, &v, sizeof(v)) > 0) {
            }
            DeliverSelfMessages();
            break;
          }
          case Kind::kListen:
            Accept();
            break;
          case Kind::kPeer:
            OnPeerEvent(peers_[IndexOf(tag)].get(), events[i].events);
            break;
          case Kind::kIncoming:
            OnIncoming(IndexOf(tag));
            break;
        }
      }
    }
  }

  void DeliverSelfMessages() {
    std::deque<std::string> batch;
    {
      std::lock_guard<std::mutex> l(self_mu_);
      batch.swap(self_queue_);
      self_queued_bytes_ = 0;
    }
    for (std::string& m : batch) {
      if (stop_.load(std::memory_order_acquire)) return;
      receiver_(self_id_, std::move(m));
    }
  }

  // The smaller of two epoll timeouts, -1 meaning none.
  static int MinTimeout(int a, int b) {
    if (a < 0) return b;
    if (b < 0) return a;
    return std::min(a, b);
  }

  // Milliseconds from now until `t` (rounded up), at least 0.
  static int MsUntil(Clock::time_point now, Clock::time_point t) {
    if (t <= now) return 0;
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1);
  }

  // Connects idle peers that have something to send and whose backoff has
  // passed, gives up connects that took too long, and flushes connected
  // peers. Returns the epoll timeout: the time to the earliest reconnect or
  // connect deadline, or -1.
  int ServicePeers() {
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
        connect_timeouts_.fetch_add(1, std::memory_order_relaxed);
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

  // Puts the listening socket back into epoll once an accept pause is over.
  // Returns the epoll timeout for the pause: the time left, or -1.
  int ServiceAcceptPause() {
    if (!accept_paused_) return -1;
    const Clock::time_point now = Clock::now();
    if (now < accept_resume_at_) return MsUntil(now, accept_resume_at_);
    if (!Register(listen_fd_, EPOLLIN, Tag(Kind::kListen, 0), EPOLL_CTL_ADD)) {
      // Still short of memory: try again after another pause.
      accept_resume_at_ = now + std::chrono::milliseconds(kAcceptPauseMs);
      return kAcceptPauseMs;
    }
    accept_paused_ = false;
    return -1;
  }

  // Closes the incoming connections that did not pass a header within
  // header_timeout_ms of their accept, when the scan is due. Returns the
  // epoll timeout until the next scan, or -1 when none is needed (the
  // timeout is off, or every open connection has passed a header).
  int ServiceHeaderTimeouts() {
    if (!header_scan_armed_) return -1;
    const Clock::time_point now = Clock::now();
    if (now < next_header_scan_) return MsUntil(now, next_header_scan_);
    const auto timeout = std::chrono::milliseconds(options_.header_timeout_ms);
    bool pending = false;
    Clock::time_point earliest;
    for (auto it = incoming_.begin(); it != incoming_.end();) {
      Incoming* conn = it->second.get();
      if (conn->header_passed) {
        ++it;
        continue;
      }
      const Clock::time_point deadline = conn->accepted_at + timeout;
      if (deadline <= now) {
        // Counted before the close, which the client can see at once.
        closed_header_timeout_.fetch_add(1, std::memory_order_relaxed);
        close(conn->fd);  // also removes it from the epoll set
        it = incoming_.erase(it);
        continue;
      }
      if (!pending || deadline < earliest) earliest = deadline;
      pending = true;
      ++it;
    }
    header_scan_armed_ = pending;
    if (!pending) return -1;
    // Coarse: a burst of accepts is handled by one scan, not one each.
    const auto min_interval = std::max(timeout / 4, std::chrono::milliseconds(1));
    next_header_scan_ = std::max(earliest, now + min_interval);
    return MsUntil(now, next_header_scan_);
  }

  // Stops watching the listening socket for kAcceptPauseMs: with no
  // descriptor to accept into it stays readable and would spin the loop.
  void PauseAccept() {
    // The listening socket leaves the set; if even that fails it stays (and
    // the loop spins until descriptors free up, which is all it can do).
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr) != 0) return;
    accept_paused_ = true;
    accept_resume_at_ = Clock::now() + std::chrono::milliseconds(kAcceptPauseMs);
  }

  bool HasPending(Peer* peer) {
    if (!peer->sending.empty()) return true;
    std::lock_guard<std::mutex> l(peer->mu);
    return !peer->queue.empty();
  }

  void Connect(Peer* peer) {
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
    if (!Register(peer->fd, EPOLLOUT, Tag(Kind::kPeer, PeerIndex(peer)), EPOLL_CTL_ADD)) {
      closed_epoll_error_.fetch_add(1, std::memory_order_relaxed);
      Backoff(peer);
      return;
    }
    peer->state = Peer::State::kConnecting;
    peer->registered = EPOLLOUT;
    peer->connect_deadline = Clock::now() + std::chrono::milliseconds(options_.connect_timeout_ms);
  }

  size_t PeerIndex(Peer* peer) { return peer_index_.at(peer->info.id()); }

  void OnConnected(Peer* peer) {
    const uint64_t tag = Tag(Kind::kPeer, PeerIndex(peer));
    // The peer never writes to us on this connection: EPOLLIN/RDHUP report
    // that it closed it.
    const uint32_t events = EPOLLIN | EPOLLRDHUP;
    if (!Register(peer->fd, events, tag,
                  peer->state == Peer::State::kConnecting ? EPOLL_CTL_MOD : EPOLL_CTL_ADD)) {
      closed_epoll_error_.fetch_add(1, std::memory_order_relaxed);
      Backoff(peer);
      return;
    }
    peer->registered = events;
    peer->state = Peer::State::kConnected;
    peer->connected_at = Clock::now();
    // The backoff is not reset here: a peer that accepts and closes at once
    // must not be retried every reconnect_min_ms (see Backoff).
    Flush(peer);
  }

  // Closes the connection and schedules the next attempt.
  void Backoff(Peer* peer) {
    const Clock::time_point now = Clock::now();
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

  // Counts an error that broke a connection when it is the dead-peer
  // detection at work.
  void CountIfTimedOut(int err) {
    if (err == ETIMEDOUT) timed_out_.fetch_add(1, std::memory_order_relaxed);
  }

  void OnPeerEvent(Peer* peer, uint32_t events) {
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
        const ssize_t n = read(peer->fd, read_buf_.get(), kReadChunk);
        if (n > 0) continue;
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) CountIfTimedOut(errno);
        Backoff(peer);  // EOF or error: the peer went away
        return;
      }
    }
    if (events & EPOLLOUT) Flush(peer);
  }

  // Writes as much as the socket takes. REQUIRES: peer connected.
  void Flush(Peer* peer) {
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
        CountIfTimedOut(errno);
        Backoff(peer);
        return;
      }
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
        frames_sent_.fetch_add(done_frames, std::memory_order_relaxed);
        std::lock_guard<std::mutex> l(peer->mu);
        peer->queued_bytes -= done_bytes;
      }
    }
    SetWriteInterest(peer, false);
  }

  // Closes the connection (see Backoff) when epoll refuses the change.
  void SetWriteInterest(Peer* peer, bool on) {
    const uint32_t events = on ? (peer->registered | EPOLLOUT) : (peer->registered & ~EPOLLOUT);
    if (events == peer->registered) return;
    if (!Register(peer->fd, events, Tag(Kind::kPeer, PeerIndex(peer)), EPOLL_CTL_MOD)) {
      closed_epoll_error_.fetch_add(1, std::memory_order_relaxed);
      Backoff(peer);
      return;
    }
    peer->registered = events;
  }

  void Accept() {
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        const int err = errno;
        if (err == EAGAIN || err == EWOULDBLOCK) return;  // done
        if (err == EINTR || err == ECONNABORTED || err == EPROTO || err == EPERM ||
            err == ENETDOWN || err == ENETUNREACH || err == EHOSTDOWN ||
            err == EHOSTUNREACH || err == ENONET || err == ENOPROTOOPT || err == EOPNOTSUPP) {
          continue;  // that one connection failed (accept(2) says: retry)
        }
        // EMFILE, ENFILE, ENOBUFS, ENOMEM (or anything unexpected): the
        // pending connections wait in the backlog while we pause.
        accept_failures_.fetch_add(1, std::memory_order_relaxed);
        PauseAccept();
        return;
      }
      if (incoming_.size() >= max_incoming_) {
        // Counted before the close, which the client can see at once.
        rejected_over_limit_.fetch_add(1, std::memory_order_relaxed);
        close(fd);
        continue;
      }
      // Best effort: a socket without keepalive still works.
      (void)SetDeadPeerTimeout(fd, options_.dead_peer_timeout_ms);
      const uint64_t id = next_incoming_id_++;
      bool registered;
      if (g_fail_incoming_epoll_adds.load(std::memory_order_relaxed) > 0 &&
          g_fail_incoming_epoll_adds.fetch_sub(1, std::memory_order_relaxed) > 0) {
        errno = ENOMEM;  // injected by a test
        registered = false;
      } else {
        registered = Register(fd, EPOLLIN | EPOLLRDHUP, Tag(Kind::kIncoming, id), EPOLL_CTL_ADD);
      }
      if (!registered) {
        closed_epoll_error_.fetch_add(1, std::memory_order_relaxed);
        close(fd);
        continue;
      }
      const Clock::time_point now = Clock::now();
      incoming_[id] =
          std::make_unique<Incoming>(fd, now, options_.max_frame_bytes, header_check_);
      if (options_.header_timeout_ms > 0 && !header_scan_armed_) {
        // An armed scan is due no later than this connection's deadline.
        header_scan_armed_ = true;
        next_header_scan_ = now + std::chrono::milliseconds(options_.header_timeout_ms);
      }
    }
  }

  void OnIncoming(uint64_t id) {
    auto it = incoming_.find(id);
    if (it == incoming_.end()) return;
    Incoming* conn = it->second.get();
    std::vector<Frame> frames;
    for (int i = 0; i < kMaxReadsPerEvent; ++i) {
      const ssize_t n = read(conn->fd, read_buf_.get(), kReadChunk);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) {  // EOF or error: the sender went away
        if (n < 0) CountIfTimedOut(errno);
        CloseIncoming(it);
        return;
      }
      frames.clear();
      Status s = conn->decoder.Consume(read_buf_.get(), static_cast<size_t>(n), &frames);
      for (Frame& f : frames) {
        if (stop_.load(std::memory_order_acquire)) return;
        Deliver(&f);
      }
      if (!s.ok()) {
        // A rejected identity was counted by header_check_.
        if (s.IsTooLarge()) {
          dropped_too_large_.fetch_add(1, std::memory_order_relaxed);
        } else if (s.IsCorruption()) {
          dropped_corrupt_.fetch_add(1, std::memory_order_relaxed);
        }
        closed_on_error_.fetch_add(1, std::memory_order_relaxed);
        CloseIncoming(it);
        return;
      }
    }
  }

  // Hands a decoded frame to the receiver. Its identity was checked from
  // its header (header_check_) and its crc32c by the decoder.
  void Deliver(Frame* f) {
    frames_received_.fetch_add(1, std::memory_order_relaxed);
    receiver_(f->sender, std::move(f->payload));
  }

  void CloseIncoming(std::unordered_map<uint64_t, std::unique_ptr<Incoming>>::iterator it) {
    close(it->second->fd);  // also removes it from the epoll set
    incoming_.erase(it);
  }

  const TcpTransportOptions options_;
  const uint64_t self_id_;
  std::unordered_set<uint64_t> members_;              // immutable after construction
  std::vector<std::unique_ptr<Peer>> peers_;          // every member but self; immutable
  std::unordered_map<uint64_t, size_t> peer_index_;   // node id -> index in peers_; immutable
  const size_t max_incoming_;                         // resolved max_incoming_connections
  FrameDecoder::HeaderCheck header_check_;            // set by the constructor; loop only

  std::mutex lifecycle_mu_;   // serializes Start and Stop
  bool started_ = false;      // GUARDED_BY(lifecycle_mu_)
  bool stopped_ = false;      // GUARDED_BY(lifecycle_mu_)
  std::atomic<bool> stop_{false};
  std::thread loop_;
  Receiver receiver_;         // set by Start before the loop runs; loop only after

  int epoll_fd_ = -1;         // created by Init, closed by Stop
  int wake_fd_ = -1;          // eventfd, created by Init, closed by Stop
  int listen_fd_ = -1;        // created by Start, loop only, closed by Stop

  std::mutex self_mu_;
  std::deque<std::string> self_queue_;  // GUARDED_BY(self_mu_)
  size_t self_queued_bytes_ = 0;        // GUARDED_BY(self_mu_)

  // Loop thread only (and Stop after the join).
  std::unordered_map<uint64_t, std::unique_ptr<Incoming>> incoming_;
  uint64_t next_incoming_id_ = 0;
  bool accept_paused_ = false;            // listen_fd_ is out of epoll until...
  Clock::time_point accept_resume_at_;    // ...this time
  // Some incoming connection has not passed a header (header_timeout_ms > 0):
  // ServiceHeaderTimeouts scans incoming_ at next_header_scan_.
  bool header_scan_armed_ = false;
  Clock::time_point next_header_scan_;
  std::unique_ptr<char[]> read_buf_;

  std::atomic<uint64_t> frames_sent_{0};
  std::atomic<uint64_t> frames_received_{0};
  std::atomic<uint64_t> dropped_corrupt_{0};
  std::atomic<uint64_t> dropped_too_large_{0};
  std::atomic<uint64_t> dropped_foreign_cluster_{0};
  std::atomic<uint64_t> dropped_non_member_{0};
  std::atomic<uint64_t> sends_dropped_queue_full_{0};
  std::atomic<uint64_t> closed_on_error_{0};
  std::atomic<uint64_t> rejected_over_limit_{0};
  std::atomic<uint64_t> accept_failures_{0};
  std::atomic<uint64_t> closed_epoll_error_{0};
  std::atomic<uint64_t> connect_timeouts_{0};
  std::atomic<uint64_t> timed_out_{0};
  std::atomic<uint64_t> closed_header_timeout_{0};
};

Status ValidateTcpTransportOptions(const TcpTransportOptions& o) {
  if (o.self.id() == 0 || o.self.port == 0) {
    return Status::InvalidArgument("self '" + o.self.ToString() + "' is not a valid ip:port");
  }
  std::unordered_set<uint64_t> ids;
  bool self_found = false;
  for (const NodeInfo& n : o.nodes) {
    if (n.id() == 0 || n.port == 0) {
      return Status::InvalidArgument("node '" + n.ToString() + "' is not a valid ip:port");
    }
    if (!ids.insert(n.id()).second) {
      return Status::InvalidArgument("node '" + n.ToString() + "' is listed twice");
    }
    if (n == o.self) self_found = true;
  }
  if (!self_found) {
    return Status::InvalidArgument("self '" + o.self.ToString() + "' is not in nodes");
  }
  if (o.max_frame_bytes == 0) return Status::InvalidArgument("max_frame_bytes is 0");
  if (o.reconnect_min_ms <= 0 || o.reconnect_max_ms < o.reconnect_min_ms) {
    return Status::InvalidArgument("reconnect backoff needs 0 < reconnect_min_ms <= "
                                   "reconnect_max_ms (got " +
                                   std::to_string(o.reconnect_min_ms) + ", " +
                                   std::to_string(o.reconnect_max_ms) + ")");
  }
  if (o.max_queued_bytes_per_peer == 0) {
    return Status::InvalidArgument("max_queued_bytes_per_peer is 0");
  }
  if (o.connect_timeout_ms <= 0) {
    return Status::InvalidArgument("connect_timeout_ms must be > 0 (got " +
                                   std::to_string(o.connect_timeout_ms) + ")");
  }
  if (o.dead_peer_timeout_ms < 0) {
    return Status::InvalidArgument("dead_peer_timeout_ms must be >= 0 (got " +
                                   std::to_string(o.dead_peer_timeout_ms) + ")");
  }
  if (o.header_timeout_ms < 0) {
    return Status::InvalidArgument("header_timeout_ms must be >= 0 (got " +
                                   std::to_string(o.header_timeout_ms) + ")");
  }
  if (o.max_incoming_connections < 0) {
    return Status::InvalidArgument("max_incoming_connections must be >= 0 (got " +
                                   std::to_string(o.max_incoming_connections) + ")");
  }
  return Status::OK();
}

}  // namespace

namespace tcp_transport_testing {
void FailIncomingEpollAdds(int n) { g_fail_incoming_epoll_adds.store(n); }
}  // namespace tcp_transport_testing

Status NewTcpTransport(const TcpTransportOptions& options, std::unique_ptr<TcpTransport>* out) {
  Status s = ValidateTcpTransportOptions(options);
  if (!s.ok()) return s;
  auto transport = std::make_unique<TcpTransportImpl>(options);
  s = transport->Init();
  if (!s.ok()) return s;  // the destructor closes what Init opened
  *out = std::move(transport);
  return Status::OK();
}

}  // namespace chorus
