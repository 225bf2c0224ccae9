// ProposeBatch: BatchPropose's accumulator for one group.
//
// Waiters queue up here; the batch leaves as ONE paxos value when it holds
// batch_max_count values, or batch_max_bytes bytes (both checked by the
// proposing thread that fills it, which posts it at once), or when its first
// value has waited batch_delay_ms (a TimerThread task posts a kFlushBatch
// event; the loop then takes whatever is pending). Every waiter keeps its own
// Notifier and gets its own instance id, batch index and Execute result (in
// its own ExecuteContext).
//
// Thread safety: Add from any thread; TakePending from the loop; both lock mu_.
#ifndef CHORUS_NODE_PROPOSE_BATCH_H_
#define CHORUS_NODE_PROPOSE_BATCH_H_

#include <memory>
#include <mutex>
#include <vector>

#include "chorus/options.h"
#include "node/event_queue.h"
#include "node/proposal.h"
#include "utils/timer_thread.h"

namespace chorus {

class ProposeBatch {
 public:
  ProposeBatch(const Options* options, TimerThread* timer_thread,
               std::shared_ptr<EventQueue> queue)
      : options_(options), timer_thread_(timer_thread), queue_(std::move(queue)) {}

  // Adds `waiter` (its state machine id and payload set). Every waiter is
  // answered eventually: by the loop, or right here with Stopped when the
  // group's queue is already closed.
  void Add(std::shared_ptr<ProposalWaiter> waiter);

  // Takes the pending (partial) batch as a request; nullptr when empty.
  std::shared_ptr<ProposalRequest> TakePending();

  // Refuses every later Add (answered Stopped at once) and returns what was
  // pending (nullptr when empty), for the caller to answer.
  std::shared_ptr<ProposalRequest> Close();

 private:
  std::shared_ptr<ProposalRequest> TakeLocked();
  void Post(Event event);

  const Options* const options_;
  TimerThread* const timer_thread_;
  const std::shared_ptr<EventQueue> queue_;

  std::mutex mu_;
  std::vector<std::shared_ptr<ProposalWaiter>> pending_;  // GUARDED_BY(mu_)
  size_t pending_bytes_ = 0;                              // GUARDED_BY(mu_)
  bool closed_ = false;                                   // GUARDED_BY(mu_)
};

}  // namespace chorus

#endif  // CHORUS_NODE_PROPOSE_BATCH_H_
