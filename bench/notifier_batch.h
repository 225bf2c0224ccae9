// notifier_bench --mode=batch: what answering a batch of sleeping waiters
// costs the answering thread, one Notifier per waiter against one
// NotifierGate for all of them (BatchPropose's two ways to release a batch).
#ifndef CHORUS_BENCH_NOTIFIER_BATCH_H_
#define CHORUS_BENCH_NOTIFIER_BATCH_H_

#include <string>
#include <vector>

namespace chorus {
namespace bench {

struct NotifierBatchConfig {
  int waiters = 64;  // threads answered together (BatchPropose's batch_max_count)
  int rounds = 500;  // timed batches per rep and row
  int reps = 5;      // repetitions, interleaved across rows
  bool json = false;
};

// Runs the rows "each" (every waiter on its own eventfd Notifier, answered
// by one Send each), "gate-eventfd" and "gate-pipe" (all on one gate, one
// Open), and prints per row the answering thread's CPU time and wall time
// per batch, and the wall time until the last waiter is back. Returns the
// process exit code.
int RunNotifierBatchBench(const NotifierBatchConfig& config);

}  // namespace bench
}  // namespace chorus

#endif  // CHORUS_BENCH_NOTIFIER_BATCH_H_
