// propose_bench --async: keeps `outstanding` asynchronous proposals
// (Node::ProposeAsync, or BatchProposeAsync) in flight from a few
// submitting threads, instead of one blocking thread per client.
//
// Each submitting thread owns outstanding / submitters slots (the first
// ones get the remainder). A slot is one proposal in flight at a time: its
// done (on the group's loop thread) records the latency in the slot and
// hands the slot back to its submitter through a small completion queue;
// the submitter wakes once for all the slots that came back meanwhile and
// proposes each again, until the window ends. That is the shape of an
// application with its own event loop: chorus's loop answers, the
// application's loop proposes. The submitter then waits for its last
// proposals to be answered (every call gets exactly one done) before it
// returns, so no done outlives the slots. With `chain`, a done proposes
// its slot's next value itself and hands the slot back only at the end.
#ifndef CHORUS_BENCH_ASYNC_CLIENTS_H_
#define CHORUS_BENCH_ASYNC_CLIENTS_H_

#include <chrono>
#include <cstdint>
#include <vector>

#include "bench/run_dir.h"
#include "chorus/node.h"

namespace chorus {
namespace bench {

struct AsyncClientsConfig {
  int outstanding = 100;  // proposals kept in flight in all
  int submitters = 1;     // submitting threads
  int groups = 1;         // round-robin over groups 0..groups-1
  size_t value_size = 100;
  bool batch = false;     // BatchProposeAsync instead of ProposeAsync
  // Each done proposes its slot's next value itself, on the loop thread,
  // instead of handing the slot back to its submitter: no application
  // thread runs at all in the window (the core's own throughput).
  bool chain = false;
};

// Runs until `end` (steady clock), then until every proposal made was
// answered. Returns one result per slot (`outstanding` of them; a latency
// is from submit to done), and prints to stderr the mean time a done took
// (on the loop thread, mostly).
std::vector<ClientResult> RunAsyncClients(Node* node, const AsyncClientsConfig& config,
                                          std::chrono::steady_clock::time_point end);

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_ASYNC_CLIENTS_H_
