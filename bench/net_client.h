// propose_bench --clients_on=process: the client process's closed-loop
// clients, each proposing through node 0's propose server over its own TCP
// loopback connection (bench/propose_wire.h has the frames).
//
// One thread per connection, blocking sockets: each client sends a
// request, blocks until its reply, records the latency and sends the next,
// as a plain synchronous RPC client would. That is the shape of the
// in-process clients (one thread each, blocked in Propose), so the
// difference between --clients_on=one and =process is the network hop and
// the server, not a different client model; an epoll loop would cost the
// client process less CPU, but the figure that matters is the nodes'.
#ifndef CHORUS_BENCH_NET_CLIENT_H_
#define CHORUS_BENCH_NET_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "bench/run_dir.h"
#include "chorus/status.h"

namespace chorus {
namespace bench {

struct NetClientsConfig {
  uint16_t port = 0;       // node 0's propose server, on 127.0.0.1
  int clients = 1;         // connections, one thread each
  int groups = 1;          // client i starts at group i % groups, then round-robin
  size_t value_size = 100;
  bool batch = false;      // the server uses BatchProposeAsync
};

class NetClients {
 public:
  explicit NetClients(const NetClientsConfig& config) : config_(config) {}
  ~NetClients();  // closes the connections Run did not
  NetClients(const NetClients&) = delete;
  NetClients& operator=(const NetClients&) = delete;

  // Opens config.clients connections. A refused connect is retried (every
  // 20 ms) until `deadline`: node 0 may not listen yet.
  Status Connect(std::chrono::steady_clock::time_point deadline);

  // From start_ns to end_ns (CLOCK_MONOTONIC) every client proposes back to
  // back; each closes its connection after its last reply (the server
  // counts the closes to tell when the clients are done). Returns one
  // result per client. A client whose connection fails counts the failure
  // (IOError, Timeout after kReplyTimeoutS, Corruption for a bad reply),
  // says so on stderr and stops. REQUIRES: Connect succeeded; called once.
  std::vector<ClientResult> Run(int64_t start_ns, int64_t end_ns);

  // Longer than chorus's propose deadline (Options::propose_timeout_ms,
  // 5 s): a reply is only given up on when the server is stuck.
  static constexpr int kReplyTimeoutS = 60;

 private:
  void RunOne(size_t index, std::chrono::steady_clock::time_point end, ClientResult* out);

  const NetClientsConfig config_;
  std::vector<int> fds_;  // one per client; -1 once closed
};

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_NET_CLIENT_H_
