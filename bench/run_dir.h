// How the processes of one propose_bench run meet: files in the run's temp
// dir (--run_dir), each written at once (a temp file renamed over it) so
// that a process polling for it never reads half of it.
//
//   start          node 0, once the cluster is warmed up: the measured
//                  window, "START_NS END_NS" (CLOCK_MONOTONIC, the same
//                  clock in every process of the machine)
//   want_master    node 0 asks for mastership (--node0_role=master)
//   result1, result2, result_client
//                  the clients of node 1, node 2 (--clients_on=all) and of
//                  the client process (--clients_on=process), once their
//                  window is over: EncodeResults
#ifndef CHORUS_BENCH_RUN_DIR_H_
#define CHORUS_BENCH_RUN_DIR_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "chorus/status.h"

namespace chorus {
namespace bench {

// What one closed-loop client measured.
struct ClientResult {
  std::vector<uint32_t> latencies_us;        // successful calls only
  std::map<std::string, uint64_t> failures;  // Status code name -> count
};

// Writes `text` to `path` at once; false on any error.
bool WriteFileAtomically(const std::string& path, const std::string& text);
// The whole file; false if it cannot be opened.
bool ReadFile(const std::string& path, std::string* text);

// The window in `dir`/start; false while node 0 has not written it.
bool ReadWindow(const std::string& dir, int64_t* start_ns, int64_t* end_ns);
bool WriteWindow(const std::string& dir, int64_t start_ns, int64_t end_ns);

// The results of one process's clients as a file: a line "failures CODE:N
// ...", then one latency (us) per line. Decode adds to *out.
std::string EncodeResults(const std::vector<ClientResult>& results);
bool DecodeResults(const std::string& text, ClientResult* out);

// Polls `dir`/`name` (every 10 ms) until it exists, then decodes it into
// *out. Timeout once `deadline` passed, Corruption if it does not parse.
Status WaitForResults(const std::string& dir, const std::string& name,
                      std::chrono::steady_clock::time_point deadline, ClientResult* out);

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_RUN_DIR_H_
