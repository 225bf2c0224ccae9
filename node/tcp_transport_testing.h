// Copyright (c) chorus authors.
//
// Fault injection for the TCP transport's tests. Not part of the public API.

#ifndef CHORUS_NODE_TCP_TRANSPORT_TESTING_H_
#define CHORUS_NODE_TCP_TRANSPORT_TESTING_H_

namespace chorus {
namespace tcp_transport_testing {

// Makes the next n registrations of accepted connections with epoll fail as
// if epoll_ctl returned ENOMEM. Process wide; for tests only.
void FailIncomingEpollAdds(int n);

}  // namespace tcp_transport_testing
}  // namespace chorus

#endif  // CHORUS_NODE_TCP_TRANSPORT_TESTING_H_
