#include "node/socket_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace chorus {

Status ToSockAddr(const NodeInfo& node, sockaddr_in* addr) {
  std::memset(addr, 0, sizeof(*addr));
  addr->sin_family = AF_INET;
  addr->sin_port = htons(node.port);
  if (inet_pton(AF_INET, node.ip.c_str(), &addr->sin_addr) != 1) {
    return Status::InvalidArgument("'" + node.ip + "' is not a dotted IPv4 address");
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

Status StartConnect(const sockaddr_in& addr, int* fd, bool* connected) {
  int sock = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (sock < 0) return Status::FromErrno("socket() for connecting", errno);
  int one = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
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
