#include "node/socket_util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace chorus {

std::string SockAddr::ToString() const {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (family() == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&storage);
    inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof(buf));
    return "[" + std::string(buf) + "]:" + std::to_string(ntohs(a->sin6_port));
  }
  const auto* a = reinterpret_cast<const sockaddr_in*>(&storage);
  inet_ntop(AF_INET, &a->sin_addr, buf, sizeof(buf));
  return std::string(buf) + ":" + std::to_string(ntohs(a->sin_port));
}

bool NumericSockAddr(const std::string& host, uint16_t port, SockAddr* addr) {
  *addr = SockAddr();
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr->storage);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    addr->len = sizeof(sockaddr_in);
    return true;
  }
  *addr = SockAddr();
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr->storage);
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    addr->len = sizeof(sockaddr_in6);
    return true;
  }
  *addr = SockAddr();
  return false;
}

Status ResolveTcp(const std::string& host, uint16_t port, std::vector<SockAddr>* addrs) {
  addrs->clear();
  SockAddr numeric;
  if (NumericSockAddr(host, port, &numeric)) {
    addrs->push_back(numeric);
    return Status::OK();
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  // No AI_ADDRCONFIG: it hides ::1 and 127.0.0.1 on a host whose only
  // addresses are loopback ones, which is exactly a test machine.
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* result = nullptr;
  const std::string service = std::to_string(port);
  const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &result);
  if (rc != 0) {
    const int err = errno;
    return Status::IOError("cannot resolve '" + host + "': " +
                           (rc == EAI_SYSTEM ? std::strerror(err) : gai_strerror(rc)));
  }
  for (const addrinfo* ai = result; ai != nullptr; ai = ai->ai_next) {
    if ((ai->ai_family != AF_INET && ai->ai_family != AF_INET6) ||
        ai->ai_addrlen > sizeof(sockaddr_storage)) {
      continue;
    }
    SockAddr a;
    std::memcpy(&a.storage, ai->ai_addr, ai->ai_addrlen);
    a.len = ai->ai_addrlen;
    // getaddrinfo repeats an address per protocol on some systems.
    bool seen = false;
    for (const SockAddr& b : *addrs) {
      seen = seen || (b.len == a.len && std::memcmp(&b.storage, &a.storage, a.len) == 0);
    }
    if (!seen) addrs->push_back(a);
  }
  freeaddrinfo(result);
  if (addrs->empty()) return Status::IOError("'" + host + "' resolves to no IPv4 or IPv6 address");
  return Status::OK();
}

namespace {

// Binds and listens on `addr`; IOError naming `what` otherwise.
Status ListenOn(const SockAddr& addr, const std::string& what, int* fd) {
  int sock = socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (sock < 0) return Status::FromErrno("socket() for listening on " + what, errno);
  int one = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(sock, addr.get(), addr.len) != 0) {
    const int err = errno;
    close(sock);
    return Status::FromErrno("cannot bind " + what, err);
  }
  if (listen(sock, 128) != 0) {
    const int err = errno;
    close(sock);
    return Status::FromErrno("cannot listen on " + what, err);
  }
  *fd = sock;
  return Status::OK();
}

}  // namespace

Status ListenTcp(const NodeInfo& node, int* fd) {
  std::vector<SockAddr> addrs;
  Status s = ResolveTcp(node.host, node.port, &addrs);
  if (!s.ok()) return Status::IOError("cannot listen on " + node.ToString() + ": " + s.message());
  Status first_error;
  for (const SockAddr& addr : addrs) {
    const std::string what = addrs.size() == 1 && addr.ToString() == node.ToString()
                                 ? node.ToString()
                                 : node.ToString() + " (" + addr.ToString() + ")";
    s = ListenOn(addr, what, fd);
    if (s.ok()) return s;
    if (first_error.ok()) first_error = s;
  }
  return first_error;
}

Status StartConnect(const SockAddr& addr, int dead_peer_timeout_ms, int* fd, bool* connected) {
  int sock = socket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (sock < 0) return Status::FromErrno("socket() for connecting", errno);
  int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  Status s = SetDeadPeerTimeout(sock, dead_peer_timeout_ms);
  if (!s.ok()) {
    close(sock);
    return s;
  }
  int r;
  do {
    r = connect(sock, addr.get(), addr.len);
  } while (r != 0 && errno == EINTR);
  if (r == 0) {
    *connected = true;
  } else if (errno == EINPROGRESS) {
    *connected = false;
  } else {
    const int err = errno;
    close(sock);
    return Status::FromErrno("connect to " + addr.ToString(), err);
  }
  *fd = sock;
  return Status::OK();
}

Status SetDeadPeerTimeout(int fd, int timeout_ms) {
  if (timeout_ms <= 0) return Status::OK();
  const int seconds = timeout_ms / 1000;
  const int one = 1;
  const int idle = std::max(1, seconds / 3);
  const int interval = std::max(1, seconds / 6);
  const int count = 3;
  const unsigned int user_timeout = static_cast<unsigned int>(timeout_ms);
  struct Opt {
    int level;
    int name;
    const void* value;
    socklen_t len;
    const char* what;
  };
  const Opt opts[] = {
      {SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one), "SO_KEEPALIVE"},
      {IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle), "TCP_KEEPIDLE"},
      {IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval), "TCP_KEEPINTVL"},
      {IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count), "TCP_KEEPCNT"},
      {IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof(user_timeout), "TCP_USER_TIMEOUT"},
  };
  for (const Opt& o : opts) {
    if (setsockopt(fd, o.level, o.name, o.value, o.len) != 0) {
      return Status::FromErrno(std::string("setsockopt(") + o.what + ")", errno);
    }
  }
  return Status::OK();
}

Status CheckConnected(int fd) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
    return Status::FromErrno("getsockopt(SO_ERROR)", errno);
  }
  if (err != 0) return Status::FromErrno("connect", err);
  return Status::OK();
}

}  // namespace chorus
