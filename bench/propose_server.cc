#include "bench/propose_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench/propose_wire.h"
#include "utils/mutex.h"
#include "utils/thread_name.h"

namespace chorus {
namespace bench {

// Named, not anonymous: ProposeServer::Impl (declared in the header) holds
// these, and GCC warns of a member whose type has internal linkage
// (-Wsubobject-linkage), which a unity build makes an error.
namespace propose_server_internal {

// epoll_event.data.u64 of the listening socket and the eventfd; a
// connection's is its id, never reused (a reply for a connection that
// closed meanwhile then finds none, where a reused fd would find another).
constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr uint64_t kFirstConnectionId = 2;

// An fd closed on scope exit unless released.
class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  ~OwnedFd() {
    if (fd_ >= 0) close(fd_);
  }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

struct QueuedReply {
  uint64_t connection = 0;
  ProposeReply reply;
};

// The replies dones queue for the server thread, and the eventfd that wakes
// it. Every done in flight holds a reference (std::shared_ptr): a done may
// run after the server is gone (Node::Stop runs the outstanding ones), so
// it must not point into the server itself.
class ReplyQueue {
 public:
  explicit ReplyQueue(int event_fd) : event_fd_(event_fd) {}
  ~ReplyQueue() { close(event_fd_); }
  ReplyQueue(const ReplyQueue&) = delete;
  ReplyQueue& operator=(const ReplyQueue&) = delete;

  int fd() const { return event_fd_; }

  // From a done (chorus's loop thread, or the server thread for a refusal).
  // Writes the eventfd only when the server thread was not woken already:
  // one wake-up for every reply queued before it runs.
  void Push(const QueuedReply& r) EXCLUDES(mu_) {
    bool wake = false;
    {
      MutexLock lock(&mu_);
      replies_.push_back(r);
      wake = !woken_;
      woken_ = true;
    }
    if (wake) Wake();
  }

  void Wake() {
    const uint64_t one = 1;
    ssize_t n;
    do {
      n = write(event_fd_, &one, sizeof(one));
    } while (n < 0 && errno == EINTR);
    // EAGAIN would mean the counter is near 2^64: the thread is woken anyway.
    if (n < 0 && errno != EAGAIN) std::perror("propose_server: write(eventfd)");
  }

  // The server thread, once the eventfd is readable: clears it, then takes
  // every reply queued so far. A Push after the clear and before the lock
  // is taken here too; one after the lock writes the eventfd again.
  std::vector<QueuedReply> Take() EXCLUDES(mu_) {
    uint64_t count = 0;
    ssize_t n;
    do {
      n = read(event_fd_, &count, sizeof(count));
    } while (n < 0 && errno == EINTR);
    if (n < 0 && errno != EAGAIN) std::perror("propose_server: read(eventfd)");
    std::vector<QueuedReply> out;
    MutexLock lock(&mu_);
    woken_ = false;
    out.swap(replies_);
    return out;
  }

 private:
  const int event_fd_;
  Mutex mu_;
  std::vector<QueuedReply> replies_ GUARDED_BY(mu_);
  bool woken_ GUARDED_BY(mu_) = false;  // written to the eventfd, not yet taken
};

}  // namespace propose_server_internal

using namespace propose_server_internal;  // NOLINT: this file's own helpers

class ProposeServer::Impl {
 public:
  Impl(Node* node, int listen_fd, int epoll_fd, std::shared_ptr<ReplyQueue> queue)
      : node_(node), listen_fd_(listen_fd), epoll_fd_(epoll_fd), queue_(std::move(queue)) {
    thread_ = std::thread([this] { Run(); });
  }

  ~Impl() {
    stopping_.store(true, std::memory_order_release);
    queue_->Wake();
    thread_.join();
    for (auto& [id, c] : connections_) close(c.fd);
    close(listen_fd_);
    close(epoll_fd_);
  }

  bool WaitForAccepted(int count, std::chrono::steady_clock::time_point deadline) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return changed_.WaitUntil(&mu_, deadline, [&]() REQUIRES(mu_) { return accepted_ >= count; });
  }

  bool WaitForAllClosed(std::chrono::steady_clock::time_point deadline) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return changed_.WaitUntil(&mu_, deadline, [&]() REQUIRES(mu_) { return open_ == 0; });
  }

 private:
  struct Connection {
    int fd = -1;
    std::string in;         // received bytes not yet parsed into requests
    std::string out;        // replies not yet written
    size_t out_sent = 0;    // bytes of `out` written so far
    bool writing = false;   // EPOLLOUT registered: `out` did not fit in the socket
  };

  void Run() {
    SetThreadName("bench-server");
    epoll_event events[64];
    while (!stopping_.load(std::memory_order_acquire)) {
      const int n = epoll_wait(epoll_fd_, events, 64, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::perror("propose_server: epoll_wait (the server stops)");
        return;
      }
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kListenId) {
          Accept();
        } else if (id == kWakeId) {
          DeliverReplies();
        } else {
          if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) OnReadable(id);
          // Looked up again: reading may have closed it.
          auto it = connections_.find(id);
          if (it != connections_.end() && (events[i].events & EPOLLOUT)) Flush(id, &it->second);
        }
      }
    }
  }

  void Accept() {
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        // Out of fds or memory: the listening socket would stay readable
        // and spin the loop, so stop accepting.
        std::fprintf(stderr, "propose_server: accept: %s; accepting no more connections\n",
                     std::strerror(errno));
        if (epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, listen_fd_, nullptr) != 0) {
          std::perror("propose_server: epoll_ctl(DEL listen)");
        }
        return;
      }
      // A request and its reply are one small write each: without
      // TCP_NODELAY, Nagle's algorithm and delayed ACKs add up to 40 ms.
      const int on = 1;
      if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) != 0) {
        std::perror("propose_server: setsockopt(TCP_NODELAY)");
      }
      const uint64_t id = next_id_++;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = id;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        std::perror("propose_server: epoll_ctl(ADD connection)");
        close(fd);
        continue;
      }
      connections_[id].fd = fd;
      MutexLock lock(&mu_);
      ++accepted_;
      ++open_;
      changed_.SignalAll();
    }
  }

  // One read per readiness (level-triggered: epoll reports the rest again),
  // parsed at once, so a bad length is refused before its body is buffered.
  void OnReadable(uint64_t id) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    Connection& c = it->second;
    char buf[65536];
    ssize_t n;
    do {
      n = read(c.fd, buf, sizeof(buf));
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK) Close(id, std::strerror(errno));
      return;
    }
    if (n == 0) {
      Close(id, c.in.empty() ? nullptr : "closed in the middle of a request");
      return;
    }
    c.in.append(buf, static_cast<size_t>(n));
    ParseRequests(id, &c);
  }

  // Proposes every whole request in c->in; closes the connection at the
  // first malformed one.
  void ParseRequests(uint64_t id, Connection* c) {
    size_t pos = 0;
    while (c->in.size() - pos >= kFrameLength) {
      const uint32_t length = DecodeFixed32(c->in.data() + pos);
      if (length < kRequestHeader || length > kMaxRequestBody) {
        Close(id, ("a request of " + std::to_string(length) + " bytes (allowed: " +
                   std::to_string(kRequestHeader) + " to " + std::to_string(kMaxRequestBody) + ")")
                      .c_str());
        return;
      }
      if (c->in.size() - pos - kFrameLength < length) break;
      const char* body = c->in.data() + pos + kFrameLength;
      ProposeRequest request;
      if (!ParseRequestHeader(body, length, &request)) {
        Close(id, ("a request with unknown flags " + std::to_string(request.flags)).c_str());
        return;
      }
      Propose(id, request, std::string(body + kRequestHeader, length - kRequestHeader));
      pos += kFrameLength + length;
    }
    c->in.erase(0, pos);
  }

  void Propose(uint64_t id, const ProposeRequest& request, const std::string& value) {
    // On chorus's loop thread: no socket I/O here, only the queue (and an
    // eventfd write when the server thread was not woken yet).
    ProposeCallback done = [queue = queue_, id, request_id = request.request_id](
                               const Status& s, ProposeResult* result) {
      QueuedReply r;
      r.connection = id;
      r.reply.request_id = request_id;
      r.reply.code = static_cast<uint8_t>(s.code());
      if (s.ok() && result != nullptr) {
        r.reply.instance = result->instance;
        r.reply.batch_index = result->batch_index;
      }
      queue->Push(r);
    };
    if (request.flags & kFlagBatch) {
      node_->BatchProposeAsync(request.group, value, std::move(done));
    } else {
      node_->ProposeAsync(request.group, value, std::move(done));
    }
  }

  void DeliverReplies() {
    std::vector<uint64_t> touched;
    for (const QueuedReply& r : queue_->Take()) {
      auto it = connections_.find(r.connection);
      if (it == connections_.end()) continue;  // closed meanwhile: nobody to answer
      if (it->second.out.empty()) touched.push_back(r.connection);
      AppendReply(r.reply, &it->second.out);
    }
    for (uint64_t id : touched) {
      auto it = connections_.find(id);
      // Registered for EPOLLOUT already: the socket is full, epoll says when not.
      if (it != connections_.end() && !it->second.writing) Flush(id, &it->second);
    }
  }

  // Writes what the socket takes of c->out; the rest waits for EPOLLOUT.
  void Flush(uint64_t id, Connection* c) {
    while (c->out_sent < c->out.size()) {
      const ssize_t n =
          send(c->fd, c->out.data() + c->out_sent, c->out.size() - c->out_sent, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
          if (!c->writing) Watch(id, c, true);
          return;
        }
        Close(id, std::strerror(errno));
        return;
      }
      c->out_sent += static_cast<size_t>(n);
    }
    c->out.clear();
    c->out_sent = 0;
    if (c->writing) Watch(id, c, false);
  }

  // Adds or removes EPOLLOUT for the connection.
  void Watch(uint64_t id, Connection* c, bool writable) {
    epoll_event ev{};
    ev.events = writable ? EPOLLIN | EPOLLOUT : EPOLLIN;
    ev.data.u64 = id;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
      Close(id, (std::string("epoll_ctl(MOD): ") + std::strerror(errno)).c_str());
      return;
    }
    c->writing = writable;
  }

  // why: nullptr when the client closed it (the normal end), else what went
  // wrong, printed.
  void Close(uint64_t id, const char* why) {
    auto it = connections_.find(id);
    if (it == connections_.end()) return;
    if (why != nullptr) {
      std::fprintf(stderr, "propose_server: connection %llu: %s; closing it\n",
                   static_cast<unsigned long long>(id), why);
    }
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr) != 0) {
      std::perror("propose_server: epoll_ctl(DEL connection)");
    }
    close(it->second.fd);
    connections_.erase(it);
    MutexLock lock(&mu_);
    --open_;
    changed_.SignalAll();
  }

  Node* const node_;
  const int listen_fd_;
  const int epoll_fd_;
  const std::shared_ptr<ReplyQueue> queue_;
  std::atomic<bool> stopping_{false};  // set by the destructor, then the eventfd is written

  // The server thread's alone.
  std::map<uint64_t, Connection> connections_;
  uint64_t next_id_ = kFirstConnectionId;

  Mutex mu_;
  CondVar changed_;  // accepted_ or open_ changed
  int accepted_ GUARDED_BY(mu_) = 0;
  int open_ GUARDED_BY(mu_) = 0;

  std::thread thread_;  // last: started once every member above exists
};

Status ProposeServer::Start(Node* node, uint16_t port, std::unique_ptr<ProposeServer>* server) {
  OwnedFd listen_fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (listen_fd.get() < 0) return Status::FromErrno("propose_server: socket", errno);
  const int on = 1;
  if (setsockopt(listen_fd.get(), SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0) {
    return Status::FromErrno("propose_server: setsockopt(SO_REUSEADDR)", errno);
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (bind(listen_fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno("propose_server: bind 127.0.0.1:" + std::to_string(port), errno);
  }
  if (listen(listen_fd.get(), SOMAXCONN) != 0) {
    return Status::FromErrno("propose_server: listen", errno);
  }
  OwnedFd event_fd(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (event_fd.get() < 0) return Status::FromErrno("propose_server: eventfd", errno);
  OwnedFd epoll_fd(epoll_create1(EPOLL_CLOEXEC));
  if (epoll_fd.get() < 0) return Status::FromErrno("propose_server: epoll_create1", errno);
  for (const auto& [fd, id] : {std::pair<int, uint64_t>{listen_fd.get(), kListenId},
                               std::pair<int, uint64_t>{event_fd.get(), kWakeId}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (epoll_ctl(epoll_fd.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return Status::FromErrno("propose_server: epoll_ctl(ADD)", errno);
    }
  }
  auto queue = std::make_shared<ReplyQueue>(event_fd.Release());
  auto impl =
      std::make_unique<Impl>(node, listen_fd.Release(), epoll_fd.Release(), std::move(queue));
  server->reset(new ProposeServer(std::move(impl)));
  return Status::OK();
}

ProposeServer::ProposeServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProposeServer::~ProposeServer() = default;

bool ProposeServer::WaitForAccepted(int count, std::chrono::steady_clock::time_point deadline) {
  return impl_->WaitForAccepted(count, deadline);
}

bool ProposeServer::WaitForAllClosed(std::chrono::steady_clock::time_point deadline) {
  return impl_->WaitForAllClosed(deadline);
}

}  // namespace bench
}  // namespace chorus
