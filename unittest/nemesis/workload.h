// Copyright (c) chorus authors.
//
// The nemesis's clients: threads that run one operation at a time against
// a random member (RESP over TCP, from the harness's namespace), and record
// each as a history.h Operation with invoke and complete times from one
// monotonic clock.
//
// Operations: GET, SET and CHORUS.CAS on a few shared register keys
// ("r<k>.<period>", a new set every key_seconds; every value unique:
// "<client>.<n>"), and SET of write-once keys ("u/<client>/<n>") for the
// lost-acknowledgement check.
//
// Outcomes: +OK, a value, :1 / :0 are kOk; TRYAGAIN (never proposed), a
// refused connection and the CAS argument errors are kFailed; TIMEOUT, any
// other error, a broken connection or no reply in time are kUnknown. A
// client whose operation ended kUnknown continues under a new client number
// (history.h: a client runs one operation at a time, and an unknown one
// never completes).

#ifndef CHORUS_UNITTEST_NEMESIS_WORKLOAD_H_
#define CHORUS_UNITTEST_NEMESIS_WORKLOAD_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster.h"
#include "history.h"

namespace chorus {
namespace nemesis {

struct WorkloadOptions {
  int threads = 6;
  int keys = 3;               // shared register keys at a time
  // Every this many seconds the clients move to `keys` new register keys
  // (the old ones keep their history): the checker's search grows with the
  // operations on one key, this keeps it linear in the run's length.
  // 0: the same keys for the whole run.
  int key_seconds = 10;
  int write_once_percent = 15;  // of the operations
  bool cas = true;            // CHORUS.CAS among the register operations
  int timeout_ms = 4000;      // one operation's reply
  int pause_ms = 5;           // at most, between two operations of a thread
  uint64_t seed = 1;
};

class Workload {
 public:
  Workload(Cluster* cluster, const WorkloadOptions& options);
  ~Workload();  // stops

  void Start();
  // Stops every thread after its current operation (each ends within
  // timeout_ms) and joins them.
  void Stop();

  // After Stop: the recorded history, ordered by invoke time.
  std::vector<Operation> History() const;
  static bool IsWriteOnceKey(const std::string& key) { return key.compare(0, 2, "u/") == 0; }

 private:
  void Run(int thread);

  Cluster* const cluster_;
  const WorkloadOptions options_;
  std::atomic<bool> stop_{false};
  int64_t start_ns_ = 0;
  std::atomic<uint64_t> next_id_{1};
  std::vector<std::thread> threads_;
  mutable std::mutex mu_;
  std::vector<Operation> history_;  // GUARDED_BY(mu_)
};

}  // namespace nemesis
}  // namespace chorus

#endif  // CHORUS_UNITTEST_NEMESIS_WORKLOAD_H_
