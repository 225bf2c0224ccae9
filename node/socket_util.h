// Copyright (c) chorus authors.
//
// Small helpers over the BSD socket calls used by the TCP transport, for
// IPv4 and IPv6 alike. Every socket they create is non-blocking and
// close-on-exec.

#ifndef CHORUS_NODE_SOCKET_UTIL_H_
#define CHORUS_NODE_SOCKET_UTIL_H_

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

#include "chorus/status.h"
#include "chorus/transport.h"

namespace chorus {

// A socket address of either family (sockaddr_in or sockaddr_in6).
struct SockAddr {
  sockaddr_storage storage{};
  socklen_t len = 0;

  const sockaddr* get() const { return reinterpret_cast<const sockaddr*>(&storage); }
  int family() const { return storage.ss_family; }
  // "1.2.3.4:80" or "[::1]:80".
  std::string ToString() const;
};

// Fills *addr and returns true when `host` is a numeric IPv4 or IPv6
// address (no brackets); false for anything else (a host name), which then
// needs ResolveTcp. Never blocks.
bool NumericSockAddr(const std::string& host, uint16_t port, SockAddr* addr);

// The TCP addresses of `host` (numeric or a name) and `port`, in the order
// getaddrinfo gives them. May block on the name service: never call it on a
// path that must not wait. IOError naming the host (and getaddrinfo's
// reason) when the resolution fails or gives no address.
Status ResolveTcp(const std::string& host, uint16_t port, std::vector<SockAddr>* addrs);

// Creates a listening socket bound to `node` (SO_REUSEADDR) in *fd. A host
// name is resolved (blocking) and the first of its addresses that can be
// bound is used (a name with several addresses listens on one of them, so
// peers that connect to the others fail over to it: see TcpPeers). IOError
// naming the address when resolution, socket, bind or listen fails.
Status ListenTcp(const NodeInfo& node, int* fd);

// Starts a non-blocking connect to `addr` with TCP_NODELAY and
// SetDeadPeerTimeout(dead_peer_timeout_ms) set. On ok, *fd is
// the socket and *connected says whether the connect already completed
// (else it is in progress: wait for EPOLLOUT, then CheckConnected).
// IOError when it failed at once (nothing to close then).
Status StartConnect(const SockAddr& addr, int dead_peer_timeout_ms, int* fd, bool* connected);

// Makes a dead peer show up as an error on `fd` within about timeout_ms:
// SO_KEEPALIVE with TCP_KEEPIDLE = max(1 s, timeout/3), TCP_KEEPINTVL =
// max(1 s, timeout/6), TCP_KEEPCNT = 3, and TCP_USER_TIMEOUT = timeout_ms
// (unacknowledged data or probes for that long reset the connection, and
// reads then fail with ETIMEDOUT). timeout_ms <= 0 leaves the socket as is.
// IOError naming the option that could not be set.
Status SetDeadPeerTimeout(int fd, int timeout_ms);

// After EPOLLOUT on a connecting socket: ok when the connect succeeded,
// IOError with the reason otherwise.
Status CheckConnected(int fd);

}  // namespace chorus

#endif  // CHORUS_NODE_SOCKET_UTIL_H_
