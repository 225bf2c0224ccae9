// CheckpointWorker: the node's thread for checkpoint work that must not run
// on a group's loop: a state machine's CheckpointWriter::Write and the file
// I/O of committing a checkpoint (listing, checksumming and fsyncing every
// file, the manifest, the rename). One thread for every group of a Node: a
// checkpoint is written rarely (every Options::checkpoint_interval_instances)
// and each group has at most one in progress, so a thread per group would
// idle almost always; the groups' checkpoints are written one after the
// other, in the order they were submitted.
//
// A job reports its outcome itself, typically by posting an event to its
// group's loop (GroupCheckpoint). Jobs still queued when Stop() is called
// are dropped (destroyed unrun): a checkpoint that was not committed leaves
// at most a staging dir, which the store deletes at its next Open.
#ifndef CHORUS_NODE_CHECKPOINT_WORKER_H_
#define CHORUS_NODE_CHECKPOINT_WORKER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <thread>

#include "chorus/status.h"
#include "utils/mutex.h"

namespace chorus {

class CheckpointWorker {
 public:
  // REQUIRES: max_queued >= 1.
  explicit CheckpointWorker(size_t max_queued);
  // Stops (see Stop).
  ~CheckpointWorker();

  CheckpointWorker(const CheckpointWorker&) = delete;
  CheckpointWorker& operator=(const CheckpointWorker&) = delete;

  // Starts the thread. IOError if it cannot be created. Call once.
  Status Start();

  // Thread-safe. Queues `job` to run on the worker thread. Returns false
  // (and destroys `job` unrun) when max_queued jobs wait or Stop() was
  // called.
  bool Submit(std::function<void()> job);

  // Drops the queued jobs, waits for the one running, joins the thread.
  // After it returns no job runs. Idempotent; thread-safe.
  void Stop();

  // Thread-safe counters: jobs run to completion; jobs refused or dropped.
  uint64_t completed() const { return completed_.load(std::memory_order_relaxed); }
  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  void Run();

  const size_t max_queued_;
  Mutex mu_;
  CondVar wake_;             // queue_ non-empty, or stopping_
  std::deque<std::function<void()>> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;                       // started by Start, joined by Stop
  Mutex stop_mu_;                       // serialises Stop (the join)
  std::atomic<uint64_t> completed_{0};
  std::atomic<uint64_t> dropped_{0};
};

}  // namespace chorus

#endif  // CHORUS_NODE_CHECKPOINT_WORKER_H_
