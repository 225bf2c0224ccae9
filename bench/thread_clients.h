// propose_bench's closed-loop client threads inside a node process
// (--clients_on=one|all, without --async): one thread per client, each
// calling Propose (BatchPropose with `batch`, ReadBarrier with `reads`)
// back to back and timing every call, as an application thread would.
#ifndef CHORUS_BENCH_THREAD_CLIENTS_H_
#define CHORUS_BENCH_THREAD_CLIENTS_H_

#include <chrono>
#include <vector>

#include "bench/run_dir.h"
#include "chorus/node.h"

namespace chorus {
namespace bench {

struct ThreadClientsConfig {
  int first = 0;   // the global index of the first client (its value's letter, its first group)
  int count = 0;   // threads
  int groups = 1;  // client i starts at group i % groups, then round-robin
  size_t value_size = 100;
  bool batch = false;
  bool reads = false;
};

// Runs the clients until `end`; each stops early on Stopped. Returns one
// result per client.
std::vector<ClientResult> RunThreadClients(Node* node, const ThreadClientsConfig& config,
                                           std::chrono::steady_clock::time_point end);

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_THREAD_CLIENTS_H_
