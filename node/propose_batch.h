// ProposeBatch: BatchPropose's accumulator for one group.
//
// Waiters queue up here; the batch leaves as ONE paxos value when it holds
// batch_max_count values, or batch_max_bytes bytes (both checked by the
// proposing thread that fills it, which posts it at once), or when its first
// value has waited batch_delay_ms (a timer task of the RuntimeEnv posts a
// kFlushBatch event; the loop then takes whatever is pending). Every waiter
// keeps its own Notifier and gets its own instance id, batch index and
// Execute result (in its own ExecuteContext).
//
// Thread safety: Add from any thread; TakePending from the loop; both lock mu_.
#ifndef CHORUS_NODE_PROPOSE_BATCH_H_
#define CHORUS_NODE_PROPOSE_BATCH_H_

#include <memory>
#include <vector>

#include "chorus/options.h"
#include "node/event_queue.h"
#include "node/proposal.h"
#include "node/runtime_env.h"
#include "utils/mutex.h"

namespace chorus {

class ProposeBatch {
 public:
  // REQUIRES: options and env outlive this.
  ProposeBatch(const Options* options, const RuntimeEnv* env, std::shared_ptr<EventQueue> queue)
      : options_(options), env_(env), queue_(std::move(queue)) {}

  // Adds `waiter` (its state machine id and payload set). Every waiter is
  // answered eventually: by the loop, or right here with Stopped when the
  // group's queue is already closed.
  void Add(std::shared_ptr<ProposalWaiter> waiter);

  // Values waiting in the pending batch (for tests).
  size_t pending_count();

  // Takes the pending (partial) batch as a request; nullptr when empty.
  std::shared_ptr<ProposalRequest> TakePending();

  // Refuses every later Add (answered Stopped at once) and returns what was
  // pending (nullptr when empty), for the caller to answer.
  std::shared_ptr<ProposalRequest> Close();

 private:
  std::shared_ptr<ProposalRequest> TakeLocked() REQUIRES(mu_);
  void Post(Event event);

  const Options* const options_;
  const RuntimeEnv* const env_;
  const std::shared_ptr<EventQueue> queue_;

  Mutex mu_;
  std::vector<std::shared_ptr<ProposalWaiter>> pending_ GUARDED_BY(mu_);
  size_t pending_bytes_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace chorus

#endif  // CHORUS_NODE_PROPOSE_BATCH_H_
