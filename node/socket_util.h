// Copyright (c) chorus authors.
//
// Small helpers over the BSD socket calls used by the TCP transport. Every
// socket they create is non-blocking and close-on-exec.

#ifndef CHORUS_NODE_SOCKET_UTIL_H_
#define CHORUS_NODE_SOCKET_UTIL_H_

#include <netinet/in.h>

#include "chorus/status.h"
#include "chorus/transport.h"

namespace chorus {

// Fills *addr from node. InvalidArgument when node.host is not a dotted IPv4.
Status ToSockAddr(const NodeInfo& node, sockaddr_in* addr);

// Creates a listening socket bound to `node` (SO_REUSEADDR) in *fd.
// IOError naming the address when socket/bind/listen fails.
Status ListenTcp(const NodeInfo& node, int* fd);

// Starts a non-blocking connect to `addr` with TCP_NODELAY and
// SetDeadPeerTimeout(dead_peer_timeout_ms) set. On ok, *fd is
// the socket and *connected says whether the connect already completed
// (else it is in progress: wait for EPOLLOUT, then CheckConnected).
// IOError when it failed at once (nothing to close then).
Status StartConnect(const sockaddr_in& addr, int dead_peer_timeout_ms, int* fd, bool* connected);

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
