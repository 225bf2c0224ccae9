#include "node/tcp_incoming.h"

#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "node/socket_util.h"
#include "utils/coding.h"
#include "node/tcp_transport_testing.h"

namespace chorus {
namespace tcp {

namespace {

constexpr int kMaxReadsPerEvent = 16;  // fairness between busy connections
constexpr int kAcceptPauseMs = 100;    // after EMFILE and friends

std::atomic<int> g_fail_incoming_epoll_adds{0};  // tcp_transport_testing

}  // namespace

// An accepted connection. Held by unique_ptr and never moved: the decoder's
// checks capture `this`.
struct TcpIncoming::Connection {
  int fd;
  Clock::time_point accepted_at;
  // One header passed the identity checks (with a secret: one whole frame
  // passed them and its tag verified).
  bool header_passed = false;
  uint64_t sender = 0;         // of the last header that passed
  // With a secret: the nonce of this connection's challenge, and the
  // sequence number the next frame's tag must carry.
  AuthNonce nonce{};
  uint64_t next_sequence = 0;
  FrameDecoder decoder;

  Connection(int f, Clock::time_point at, uint32_t max, TcpIncoming* owner)
      : fd(f), accepted_at(at), decoder(MakeDecoder(max, owner)) {}

 private:
  FrameDecoder MakeDecoder(uint32_t max, TcpIncoming* owner) {
    const bool auth = owner->auth_ != nullptr;
    FrameDecoder::HeaderCheck check = [this, owner, auth](uint64_t cluster_id, uint64_t from) {
      Status s = owner->CheckHeader(cluster_id, from);
      if (s.ok() && !auth) {
        header_passed = true;
        sender = from;
      }
      return s;
    };
    if (!auth) return FrameDecoder(max, std::move(check));
    return FrameDecoder(max, std::move(check), kFrameTagSize,
                        [this, owner](const char* header, const std::string& payload,
                                      const char* tag) {
                          Status s = owner->CheckTag(nonce, next_sequence, header, payload, tag);
                          if (!s.ok()) return s;
                          ++next_sequence;
                          header_passed = true;
                          sender = DecodeFixed64(header + 16);
                          return s;
                        });
  }
};

TcpIncoming::TcpIncoming(const TcpTransportOptions& options, Epoll* epoll, Counters* counters,
                         const std::atomic<bool>* stop, const Transport::Receiver* receiver,
                         const TcpPeers* book)
    : options_(options),
      epoll_(epoll),
      counters_(counters),
      stop_(stop),
      receiver_(receiver),
      book_(book),
      book_version_seen_(book->book_version()),
      read_buf_(new char[kReadChunk]) {}

Status TcpIncoming::Init() {
  if (options_.cluster_secret.empty()) return Status::OK();
  return FrameAuthenticator::New(options_.cluster_secret, &auth_);
}

TcpIncoming::~TcpIncoming() { CloseAll(); }

Status TcpIncoming::Listen() {
  Status s = ListenTcp(options_.self, &listen_fd_);
  if (!s.ok()) return s;
  if (!epoll_->Register(listen_fd_, EPOLLIN, Tag(Kind::kListen, 0), EPOLL_CTL_ADD)) {
    s = Status::FromErrno("epoll_ctl(listening socket)", errno);
    CloseFd(&listen_fd_);
    return s;
  }
  return Status::OK();
}

void TcpIncoming::CloseAll() {
  for (auto& entry : connections_) CloseFd(&entry.second->fd);
  connections_.clear();
  CloseFd(&listen_fd_);
}

Status TcpIncoming::CheckHeader(uint64_t cluster_id, uint64_t sender) {
  if (cluster_id != options_.cluster_id) {
    Counters::Add(&counters_->dropped_foreign_cluster);
    return Status::InvalidArgument("frame of cluster " + std::to_string(cluster_id));
  }
  if (!book_->IsMember(sender)) {
    Counters::Add(&counters_->dropped_non_member);
    return Status::InvalidArgument("frame from non-member " + std::to_string(sender));
  }
  return Status::OK();
}

Status TcpIncoming::CheckTag(const AuthNonce& nonce, uint64_t sequence, const char* header,
                             const std::string& payload, const char* tag) {
  if (auth_->Verify(nonce, options_.self.id(), sequence, header, payload, tag)) {
    return Status::OK();
  }
  Counters::Add(&counters_->dropped_bad_mac);
  return Status::InvalidArgument("frame " + std::to_string(sequence) +
                                 " of the connection has no valid HMAC");
}

int TcpIncoming::Service() {
  if (book_->book_version() != book_version_seen_) CloseRemovedSenders();
  return MinTimeout(ServiceAcceptPause(), ServiceHeaderTimeouts());
}

void TcpIncoming::CloseRemovedSenders() {
  book_version_seen_ = book_->book_version();
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection* conn = it->second.get();
    if (!conn->header_passed || book_->IsMember(conn->sender)) {
      ++it;
      continue;
    }
    Counters::Add(&counters_->closed_removed_peer);
    close(conn->fd);  // also removes it from the epoll set
    it = connections_.erase(it);
  }
}

int TcpIncoming::ServiceAcceptPause() {
  if (!accept_paused_) return -1;
  const Clock::time_point now = Clock::now();
  if (now < accept_resume_at_) return MsUntil(now, accept_resume_at_);
  if (!epoll_->Register(listen_fd_, EPOLLIN, Tag(Kind::kListen, 0), EPOLL_CTL_ADD)) {
    // Still short of memory: try again after another pause.
    accept_resume_at_ = now + std::chrono::milliseconds(kAcceptPauseMs);
    return kAcceptPauseMs;
  }
  accept_paused_ = false;
  return -1;
}

int TcpIncoming::ServiceHeaderTimeouts() {
  if (!header_scan_armed_) return -1;
  const Clock::time_point now = Clock::now();
  if (now < next_header_scan_) return MsUntil(now, next_header_scan_);
  const auto timeout = std::chrono::milliseconds(options_.header_timeout_ms);
  bool pending = false;
  Clock::time_point earliest;
  for (auto it = connections_.begin(); it != connections_.end();) {
    Connection* conn = it->second.get();
    if (conn->header_passed) {
      ++it;
      continue;
    }
    const Clock::time_point deadline = conn->accepted_at + timeout;
    if (deadline <= now) {
      // Counted before the close, which the client can see at once.
      Counters::Add(&counters_->closed_header_timeout);
      close(conn->fd);  // also removes it from the epoll set
      it = connections_.erase(it);
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

void TcpIncoming::PauseAccept() {
  // The listening socket leaves the set; if even that fails it stays (and
  // the loop spins until descriptors free up, which is all it can do).
  if (!epoll_->Remove(listen_fd_)) return;
  accept_paused_ = true;
  accept_resume_at_ = Clock::now() + std::chrono::milliseconds(kAcceptPauseMs);
}

void TcpIncoming::Accept() {
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
      Counters::Add(&counters_->accept_failures);
      PauseAccept();
      return;
    }
    // The default limit follows the book: SetPeers may grow the cluster.
    const size_t max_incoming = options_.max_incoming_connections > 0
                                    ? static_cast<size_t>(options_.max_incoming_connections)
                                    : 4 * book_->book_size() + 16;
    if (connections_.size() >= max_incoming) {
      // Counted before the close, which the client can see at once.
      Counters::Add(&counters_->rejected_over_limit);
      close(fd);
      continue;
    }
    // Best effort: a socket without keepalive still works.
    (void)SetDeadPeerTimeout(fd, options_.dead_peer_timeout_ms);
    const uint64_t id = next_id_++;
    bool registered;
    if (g_fail_incoming_epoll_adds.load(std::memory_order_relaxed) > 0 &&
        g_fail_incoming_epoll_adds.fetch_sub(1, std::memory_order_relaxed) > 0) {
      errno = ENOMEM;  // injected by a test
      registered = false;
    } else {
      registered =
          epoll_->Register(fd, EPOLLIN | EPOLLRDHUP, Tag(Kind::kIncoming, id), EPOLL_CTL_ADD);
    }
    if (!registered) {
      Counters::Add(&counters_->closed_epoll_error);
      close(fd);
      continue;
    }
    const Clock::time_point now = Clock::now();
    auto conn = std::make_unique<Connection>(fd, now, options_.max_frame_bytes, this);
    if (auth_ != nullptr && !SendChallenge(conn.get())) {
      close(fd);  // also removes it from the epoll set
      continue;
    }
    connections_[id] = std::move(conn);
    if (options_.header_timeout_ms > 0 && !header_scan_armed_) {
      // An armed scan is due no later than this connection's deadline.
      header_scan_armed_ = true;
      next_header_scan_ = now + std::chrono::milliseconds(options_.header_timeout_ms);
    }
  }
}

bool TcpIncoming::SendChallenge(Connection* conn) {
  if (!NewAuthNonce(&conn->nonce).ok()) {
    Counters::Add(&counters_->challenge_failures);
    return false;
  }
  const std::string challenge = EncodeChallenge(conn->nonce);
  // A fresh socket's send buffer takes 20 bytes at once; anything else
  // means the connection is already broken.
  ssize_t n;
  do {
    n = send(conn->fd, challenge.data(), challenge.size(), MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(challenge.size())) {
    Counters::Add(&counters_->challenge_failures);
    return false;
  }
  Counters::Add(&counters_->bytes_sent, challenge.size());
  return true;
}

void TcpIncoming::OnEvent(uint64_t id) {
  auto it = connections_.find(id);
  if (it == connections_.end()) return;
  Connection* conn = it->second.get();
  std::vector<Frame> frames;
  for (int i = 0; i < kMaxReadsPerEvent; ++i) {
    const ssize_t n = read(conn->fd, read_buf_.get(), kReadChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // EOF or error: the sender went away
      if (n < 0) counters_->CountIfTimedOut(errno);
      Close(it);
      return;
    }
    Counters::Add(&counters_->bytes_received, static_cast<uint64_t>(n));
    frames.clear();
    Status s = conn->decoder.Consume(read_buf_.get(), static_cast<size_t>(n), &frames);
    for (Frame& f : frames) {
      if (stop_->load(std::memory_order_acquire)) return;
      Deliver(&f);
    }
    if (!s.ok()) {
      // A rejected identity was counted by CheckHeader.
      if (s.IsTooLarge()) {
        Counters::Add(&counters_->dropped_too_large);
      } else if (s.IsCorruption()) {
        Counters::Add(&counters_->dropped_corrupt);
      }
      Counters::Add(&counters_->closed_on_error);
      Close(it);
      return;
    }
    // A short read took all the socket had: instead of a read that would
    // only say EAGAIN, the next epoll_wait (level triggered) reports what
    // arrives meanwhile, an EOF included.
    if (static_cast<size_t>(n) < kReadChunk) return;
  }
}

void TcpIncoming::Deliver(Frame* f) {
  Counters::Add(&counters_->frames_received);
  (*receiver_)(f->sender, std::move(f->payload));
}

void TcpIncoming::Close(Connections::iterator it) {
  close(it->second->fd);  // also removes it from the epoll set
  connections_.erase(it);
}

}  // namespace tcp

namespace tcp_transport_testing {
void FailIncomingEpollAdds(int n) { tcp::g_fail_incoming_epoll_adds.store(n); }
}  // namespace tcp_transport_testing

}  // namespace chorus
