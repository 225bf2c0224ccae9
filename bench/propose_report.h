// What propose_bench's node 0 prints once the window is over: a table, or
// one JSON object with --json (the run's flags are read from gflags: the
// report repeats them). See bench/propose_bench.cc for the run itself.
//
// A "value" is one successful client call (with --batch, one BatchPropose
// call, not the batch it left in); values/s counts them over the measured
// window. Latency percentiles are of the successful calls.
//
// CPU per value: each node's CPU in the window divided by the window's
// values is `cpu_us_per_value_by_node` (node 0 includes the client threads
// or, with --clients_on=process, the propose server); their sum, the three
// nodes only, is `cpu_us_per_value`. The client process's own is
// `cpu_us_per_value_client_process` (-1 without one). A figure that could
// not be measured (a process gone, no values) is -1.
// Per thread (bench/thread_cpu.h): `threads_cpu_us_per_value` is node 0's
// CPU per value by thread name, user and system ("clients": the client
// threads, which live only in the window; "bench-server": the propose
// server), `threads_cpu_us_per_value_by_node` all three nodes.
// MB/s (`mb_per_sec`) is values/s x --value_size / 1e6: payload bytes only,
// without chorus's headers, the batch encoding or the replication fan-out.
#ifndef CHORUS_BENCH_PROPOSE_REPORT_H_
#define CHORUS_BENCH_PROPOSE_REPORT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/run_dir.h"
#include "bench/thread_cpu.h"

namespace chorus {
namespace bench {

// What node 0 measured of the window besides the clients' results.
struct Environment {
  double load_avg_1m = -1;  // at the start of the window
  double node0_cpu = 0;     // CPU cores node 0 (leader + clients) kept busy
  // CPU seconds each node process used in the window; -1 if unknown.
  std::vector<double> cpu_s_by_node;
  // CPU seconds of the client process (--clients_on=process); -1: none.
  double client_process_cpu_s = -1;
  // The clients proposing through each node (wherever they run).
  std::vector<int> clients_by_node;
  // By thread name, per node (empty: not measured).
  std::vector<std::map<std::string, CpuTimes>> threads_by_node;
  int node0_is_master = -1;  // of group 0 at the window's start; -1: election off
  // Node 0, group 0, at the window's end (--checkpoint_interval).
  uint64_t checkpoints_made = 0;
  uint64_t log_start = 0;
  // Instances node 0 executed in the window (all groups): with `executed`,
  // the batch shape (values per instance).
  uint64_t instances = 0;
};

// Prints the report on stdout. node_of[i] is the node results[i]'s clients
// proposed through; `executed` the values node 0 executed in the window.
void Report(double elapsed_s, const std::vector<ClientResult>& results,
            const std::vector<int>& node_of, uint64_t executed, const Environment& env);

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_PROPOSE_REPORT_H_
