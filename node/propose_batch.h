// ProposeBatch: BatchPropose's accumulator for one group.
//
// Waiters queue up here; the batch leaves as ONE paxos value when it holds
// batch_max_count values, or batch_max_bytes bytes (both checked by the
// proposing thread that fills it, which posts it at once), or when its first
// value has waited batch_delay_ms (a timer task of the RuntimeEnv posts a
// kFlushBatch event; the loop then takes whatever is pending). Every waiter
// gets its own instance id, batch index and Execute result (in its own
// ExecuteContext). The blocking waiters of one batch share one BatchRelease
// (proposal.h): a gate from the NotifierPool, opened by the answer to the
// last of them, so the loop pays one wake-up per batch instead of one per
// value. A waiter refused at once (closed), or one for which no gate could
// be made, is answered on its own Notifier. The loop may hold a flush back
// while Options::batch_max_inflight batches are in flight (Group::FlushBatch):
// the batch then keeps filling.
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
#include "utils/notifier_pool.h"
#include "utils/mutex.h"

namespace chorus {

class ProposeBatch {
 public:
  // `gates` gives the batches' gates; null: every waiter is answered on its
  // own Notifier. REQUIRES: options, env and gates outlive this.
  ProposeBatch(const Options* options, const RuntimeEnv* env, std::shared_ptr<EventQueue> queue,
               NotifierPool* gates)
      : options_(options), env_(env), queue_(std::move(queue)), gates_(gates) {}

  // Adds `waiter` (its state machine id and payload set). Every waiter is
  // answered eventually: by the loop, or right here with Stopped when the
  // group's queue is already closed.
  void Add(std::shared_ptr<ProposalWaiter> waiter);

  // Values waiting in the pending batch (for tests).
  size_t pending_count();

  // The earliest deadline of the pending batch's values; false when empty.
  bool PendingDeadline(SteadyTime* deadline);

  // Takes the pending (partial) batch as a request; nullptr when empty.
  std::shared_ptr<ProposalRequest> TakePending();

  // Refuses every later Add (answered Stopped at once) and returns what was
  // pending (nullptr when empty), for the caller to answer.
  std::shared_ptr<ProposalRequest> Close();

 private:
  std::shared_ptr<ProposalRequest> TakeLocked() REQUIRES(mu_);
  // Joins a blocking waiter to the pending batch's release (making it if
  // needed); leaves it on its own Notifier when no gate can be had.
  void Gate(ProposalWaiter* waiter) REQUIRES(mu_);
  void Post(Event event);

  const Options* const options_;
  const RuntimeEnv* const env_;
  const std::shared_ptr<EventQueue> queue_;
  NotifierPool* const gates_;

  Mutex mu_;
  std::vector<std::shared_ptr<ProposalWaiter>> pending_ GUARDED_BY(mu_);
  size_t pending_bytes_ GUARDED_BY(mu_) = 0;
  // The earliest deadline of pending_'s waiters (valid while it is not empty).
  SteadyTime pending_deadline_ GUARDED_BY(mu_);
  // The pending batch's release, shared by its blocking waiters: made at
  // the first of them, null while there is none.
  std::shared_ptr<BatchRelease> pending_release_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
};

}  // namespace chorus

#endif  // CHORUS_NODE_PROPOSE_BATCH_H_
