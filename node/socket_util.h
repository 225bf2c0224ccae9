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

// Fills *addr from node. InvalidArgument when node.ip is not a dotted IPv4.
Status ToSockAddr(const NodeInfo& node, sockaddr_in* addr);

// Creates a listening socket bound to `node` (SO_REUSEADDR) in *fd.
// IOError naming the address when socket/bind/listen fails.
Status ListenTcp(const NodeInfo& node, int* fd);

// Starts a non-blocking connect to `addr` with TCP_NODELAY set. On ok, *fd is
// the socket and *connected says whether the connect already completed
// (else it is in progress: wait for EPOLLOUT, then CheckConnected).
// IOError when it failed at once (nothing to close then).
Status StartConnect(const sockaddr_in& addr, int* fd, bool* connected);

// After EPOLLOUT on a connecting socket: ok when the connect succeeded,
// IOError with the reason otherwise.
Status CheckConnected(int fd);

}  // namespace chorus

#endif  // CHORUS_NODE_SOCKET_UTIL_H_
