#include "node/socket_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace chorus {

Status ToSockAddr(const NodeInfo& node, sockaddr_in* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sin_family = AF_INET;
  addr->sin_port = htons(node.port);
  if (inet_pton(AF_INET, node.host.c_str(), &addr->sin_addr) != 1) {
    return Status::InvalidArgument("'" + node.host + "' is not a dotted IPv4 address");
  }
  return Status::OK();
}

Status ListenTcp(const NodeInfo& node, int* fd) {
  sockaddr_in addr;
  Status s = ToSockAddr(node, &addr);
  if (!s.ok()) return s;
  int sock = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (sock < 0) return Status::FromErrno("socket() for listening on " + node.ToString(), errno);
  int one = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(sock);
    return Status::FromErrno("cannot bind " + node.ToString(), err);
  }
  if (listen(sock, 128) != 0) {
    const int err = errno;
    close(sock);
    return Status::FromErrno("cannot listen on " + node.ToString(), err);
  }
  *fd = sock;
  return Status::OK();
}

Status StartConnect(const sockaddr_in& addr, int dead_peer_timeout_ms, int* fd, bool* connected) {
  int sock = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
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
    r = connect(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (r != 0 && errno == EINTR);
  if (r == 0) {
    *connected = true;
  } else if (errno == EINPROGRESS) {
    *connected = false;
  } else {
    const int err = errno;
    close(sock);
    return Status::FromErrno("connect", err);
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
