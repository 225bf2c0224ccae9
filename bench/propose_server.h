// propose_bench --clients_on=process: the bench-only "propose server" in
// node 0 through which the client process proposes (bench/propose_wire.h
// has the frames).
//
// One thread ("bench-server", so that propose_bench's per-thread CPU split
// names it) runs an epoll loop over the listening socket, every client
// connection and an eventfd: it reads the requests of all connections and
// calls Node::ProposeAsync (BatchProposeAsync for a request with
// kFlagBatch). A done runs on chorus's loop thread, which must not wait on
// a socket: it only queues the reply and wakes the server thread through
// the eventfd (once for all the replies that queue up before it runs); the
// server thread writes the replies. Requests may be pipelined on a
// connection; replies come in the order the proposals finish.
#ifndef CHORUS_BENCH_PROPOSE_SERVER_H_
#define CHORUS_BENCH_PROPOSE_SERVER_H_

#include <chrono>
#include <cstdint>
#include <memory>

#include "chorus/node.h"
#include "chorus/status.h"

namespace chorus {
namespace bench {

class ProposeServer {
 public:
  // Listens on 127.0.0.1:`port` and starts the server thread, which
  // proposes to `node`. REQUIRES: node outlives the server.
  static Status Start(Node* node, uint16_t port, std::unique_ptr<ProposeServer>* server);

  // Stops the thread and closes every connection. The dones of proposals
  // still in flight may run later (they keep what they need alive) and
  // their replies are dropped.
  ~ProposeServer();
  ProposeServer(const ProposeServer&) = delete;
  ProposeServer& operator=(const ProposeServer&) = delete;

  // Waits until `count` connections were accepted in all; false if the
  // deadline passed first.
  bool WaitForAccepted(int count, std::chrono::steady_clock::time_point deadline);
  // Waits until every accepted connection is closed again (the clients
  // close theirs once done); false if the deadline passed first.
  bool WaitForAllClosed(std::chrono::steady_clock::time_point deadline);

 private:
  class Impl;
  explicit ProposeServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_PROPOSE_SERVER_H_
