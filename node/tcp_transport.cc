// The TCP transport: one I/O thread ("the loop") running an epoll loop over
// two halves, each in its own file:
//   tcp_peers     outgoing: one persistent connection per peer, used only to
//                 send; Send() queues there and wakes the loop; it also holds
//                 the address book that SetPeers replaces;
//   tcp_incoming  incoming: the listening socket and the accepted
//                 connections, only read; their frames go to the receiver.
// This file is the loop and the lifecycle: Start, Send (to self as well),
// SetPeers, Stop, stats.
//
// Threads: any thread may call Send() and SetPeers(); the loop owns every
// socket, accepts, connects, writes and reads, and calls the receiver; a
// resolver thread (tcp_resolver, started for the first host name to
// resolve) runs getaddrinfo so that nothing else waits for the name service.
//
// Resource failures are survived, not fatal (see the halves). Every socket
// has SO_KEEPALIVE and TCP_USER_TIMEOUT (dead_peer_timeout_ms), so a peer
// gone without a reset breaks its connections instead of leaving them open.
//
// With TcpTransportOptions::cluster_secret set, every frame is authenticated
// (node/frame_auth.h): the receiver challenges each accepted connection with
// a nonce and the sender tags each frame with its HMAC.
#include <errno.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <unordered_set>

#include "chorus/transport.h"
#include "node/frame_auth.h"
#include "node/tcp_epoll.h"
#include "node/tcp_incoming.h"
#include "node/tcp_peers.h"
#include "utils/mutex.h"
#include "utils/thread_name.h"

namespace chorus {

namespace {

using tcp::Kind;

constexpr int kMaxEvents = 64;

[[noreturn]] void DieOfErrno(const char* what) {
  std::fprintf(stderr, "chorus tcp transport: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

// Every entry valid, ids unique. With `self` (the initial book), an entry
// with self's id must have self's address: a typo there would otherwise go
// unnoticed (SetPeers ignores self's entry, whose address the node's
// membership may still record from before a move).
Status ValidateBook(const std::vector<NodeInfo>& nodes, const NodeInfo* self) {
  std::unordered_set<uint64_t> ids;
  for (const NodeInfo& n : nodes) {
    Status s = n.Validate();
    if (!s.ok()) return s;
    if (!ids.insert(n.id()).second) {
      return Status::InvalidArgument("node id " + std::to_string(n.id()) + " is listed twice (" +
                                     n.ToString() + ")");
    }
    if (self != nullptr && n.id() == self->id() &&
        (n.host != self->host || n.port != self->port)) {
      return Status::InvalidArgument("node '" + n.ToString() + "' has self's id but self is '" +
                                     self->ToString() + "'");
    }
  }
  return Status::OK();
}

class TcpTransportImpl : public TcpTransport {
 public:
  explicit TcpTransportImpl(const TcpTransportOptions& options)
      : options_(options),
        self_id_(options.self.id()),
        peers_(options_, &epoll_, &counters_, &stop_, [this] { Wake(); }),
        incoming_(options_, &epoll_, &counters_, &stop_, &receiver_, &peers_) {}

  ~TcpTransportImpl() override { Stop(); }

  // Creates the epoll and eventfd descriptors (before any Send can wake).
  Status Init() {
    Status s = epoll_.Init();
    if (!s.ok()) return s;
    s = peers_.Init();
    if (!s.ok()) return s;
    s = incoming_.Init();
    if (!s.ok()) return s;
    wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd_ < 0) return Status::FromErrno("eventfd", errno);
    if (!epoll_.Register(wake_fd_, EPOLLIN, tcp::Tag(Kind::kWake, 0), EPOLL_CTL_ADD)) {
      return Status::FromErrno("epoll_ctl(eventfd)", errno);
    }
    return Status::OK();
  }

  Status Start(Receiver receiver) override {
    MutexLock l(&lifecycle_mu_);
    if (stopped_) return Status::Stopped("transport is stopped");
    if (started_) return Status::InvalidArgument("transport already started");
    if (!receiver) return Status::InvalidArgument("receiver is empty");
    Status s = incoming_.Listen();
    if (!s.ok()) return s;
    receiver_ = std::move(receiver);
    started_ = true;
    loop_ = std::thread([this] {
      SetThreadName("chorus-tcp");
      Loop();
    });
    return Status::OK();
  }

  Status Send(uint64_t to, std::string message) override {
    Status s = CheckSize(message);
    if (!s.ok()) return s;
    if (to == self_id_) return SendToSelf(std::move(message));
    return peers_.Enqueue(to, std::move(message));
  }

  Status SendBatch(MessageBatch batch) override {
    Status first;
    auto note = [&first](const Status& s) {
      if (first.ok() && !s.ok()) first = s;
    };
    // Each message is framed once, at its first send to a peer, and shared.
    std::vector<tcp::TcpPeers::FramedPtr> framed(batch.messages.size());
    std::vector<std::pair<uint64_t, tcp::TcpPeers::FramedPtr>> sends;
    sends.reserve(batch.sends.size());
    for (const auto& [to, index] : batch.sends) {
      if (index >= batch.messages.size()) {
        note(Status::InvalidArgument("MessageBatch send names no message"));
        continue;
      }
      const std::string& bytes = framed[index] ? framed[index]->payload : batch.messages[index];
      Status s = CheckSize(bytes);
      if (!s.ok()) {
        note(s);
        continue;
      }
      if (to == self_id_) {
        note(SendToSelf(bytes));  // a copy: delivered as a string of its own
        continue;
      }
      if (!framed[index]) framed[index] = peers_.Frame(std::move(batch.messages[index]));
      sends.emplace_back(to, framed[index]);
    }
    if (!sends.empty()) note(peers_.EnqueueBatch(sends));
    return first;
  }

  void Stop() override {
    MutexLock l(&lifecycle_mu_);
    if (stopped_) return;
    stopped_ = true;
    stop_.store(true);
    // Barrier: a Send that holds a queue lock finishes its wake now; any later
    // Send sees stop_ (see TcpPeers::Enqueue and SendToSelf).
    peers_.Barrier();
    { MutexLock sl(&self_mu_); }
    if (loop_.joinable()) {
      if (loop_.get_id() == std::this_thread::get_id()) {
        std::fprintf(stderr, "chorus tcp transport: Stop() called from the receiver\n");
        std::abort();
      }
      Wake();
      loop_.join();
    }
    peers_.CloseAll();
    incoming_.CloseAll();
    tcp::CloseFd(&wake_fd_);
    epoll_.Close();
  }

  Status SetPeers(const std::vector<NodeInfo>& peers) override {
    Status s = ValidateBook(peers, nullptr);
    if (!s.ok()) return s;
    return peers_.SetBook(peers);
  }

  TransportStats stats() const override { return counters_.Snapshot(); }

 private:
  Status CheckSize(const std::string& message) const {
    if (message.size() <= options_.max_frame_bytes) return Status::OK();
    return Status::TooLarge("message of " + std::to_string(message.size()) +
                            " bytes exceeds max_frame_bytes " +
                            std::to_string(options_.max_frame_bytes));
  }

  Status SendToSelf(std::string message) {
    MutexLock l(&self_mu_);
    if (stop_.load(std::memory_order_relaxed)) return Status::Stopped("transport is stopped");
    if (self_queued_bytes_ + message.size() > options_.max_queued_bytes_per_peer) {
      tcp::Counters::Add(&counters_.sends_dropped_queue_full);
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
    if (write(wake_fd_, &one, sizeof(one)) < 0 && errno != EAGAIN) DieOfErrno("eventfd write");
  }

  // ---- the loop thread ----

  void Loop() {
    epoll_event events[kMaxEvents];
    while (!stop_.load(std::memory_order_acquire)) {
      const int timeout_ms = tcp::MinTimeout(peers_.Service(), incoming_.Service());
      const int n = epoll_wait(epoll_.fd(), events, kMaxEvents, timeout_ms);
      if (n < 0) {
        if (errno == EINTR) continue;
        DieOfErrno("epoll_wait");
      }
      for (int i = 0; i < n && !stop_.load(std::memory_order_acquire); ++i) {
        const uint64_t tag = events[i].data.u64;
        switch (tcp::KindOf(tag)) {
          case Kind::kWake: {
            // One read resets the eventfd's counter, however many wakes
            // it added up. A failed one (EINTR) leaves it set: epoll (level
            // triggered) reports it again.
            uint64_t v;
            if (read(wake_fd_, &v, sizeof(v)) < 0) {
            }
            DeliverSelfMessages();
            break;
          }
          case Kind::kListen:
            incoming_.Accept();
            break;
          case Kind::kPeer:
            peers_.OnEvent(tcp::IndexOf(tag), events[i].events);
            break;
          case Kind::kIncoming:
            incoming_.OnEvent(tcp::IndexOf(tag));
            break;
        }
      }
    }
  }

  void DeliverSelfMessages() {
    std::deque<std::string> batch;
    {
      MutexLock l(&self_mu_);
      batch.swap(self_queue_);
      self_queued_bytes_ = 0;
    }
    for (std::string& m : batch) {
      if (stop_.load(std::memory_order_acquire)) return;
      receiver_(self_id_, std::move(m));
    }
  }

  const TcpTransportOptions options_;
  const uint64_t self_id_;
  tcp::Epoll epoll_;          // created by Init, closed by Stop
  tcp::Counters counters_;
  std::atomic<bool> stop_{false};
  Receiver receiver_;         // set by Start before the loop runs; loop only after
  int wake_fd_ = -1;          // eventfd, created by Init, closed by Stop
  // Both halves borrow the members above, declared before them.
  tcp::TcpPeers peers_;
  tcp::TcpIncoming incoming_;

  Mutex lifecycle_mu_;   // serializes Start and Stop
  bool started_ GUARDED_BY(lifecycle_mu_) = false;
  bool stopped_ GUARDED_BY(lifecycle_mu_) = false;
  std::thread loop_;

  Mutex self_mu_;
  std::deque<std::string> self_queue_ GUARDED_BY(self_mu_);
  size_t self_queued_bytes_ GUARDED_BY(self_mu_) = 0;
};

Status ValidateTcpTransportOptions(const TcpTransportOptions& o) {
  Status s = o.self.Validate();
  if (!s.ok()) return Status::InvalidArgument("self: " + s.message());
  s = ValidateBook(o.nodes, &o.self);
  if (!s.ok()) return s;
  if (o.max_frame_bytes == 0) return Status::InvalidArgument("max_frame_bytes is 0");
  s = ValidateClusterSecret(o.cluster_secret);
  if (!s.ok()) return s;
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
