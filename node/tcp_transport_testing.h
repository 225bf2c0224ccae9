// Copyright (c) chorus authors.
//
// Fault injection for the TCP transport's tests. Not part of the public API.

#ifndef CHORUS_NODE_TCP_TRANSPORT_TESTING_H_
#define CHORUS_NODE_TCP_TRANSPORT_TESTING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "chorus/status.h"
#include "node/socket_util.h"

namespace chorus {
namespace tcp_transport_testing {

// Makes the next n registrations of accepted connections with epoll fail as
// if epoll_ctl returned ENOMEM. Process wide; for tests only.
void FailIncomingEpollAdds(int n);

// Replaces ResolveTcp for the host names the transport's resolver thread
// resolves (numeric hosts never go there); empty: back to ResolveTcp.
// Process wide; for tests only.
using ResolveFn =
    std::function<Status(const std::string& host, uint16_t port, std::vector<SockAddr>* addrs)>;
void SetResolver(ResolveFn fn);

}  // namespace tcp_transport_testing
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_TRANSPORT_TESTING_H_
