#include "node/proposal.h"

namespace chorus {

namespace {
long long Ms(std::chrono::steady_clock::duration d) {
  return static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}
}  // namespace

Status CheckNotStarted(const ProposalRequest& request, std::chrono::steady_clock::time_point now,
                       std::chrono::milliseconds max_queue_wait, uint32_t group) {
  const std::string where = "group " + std::to_string(group);
  if (now - request.enqueued > max_queue_wait) {
    if (request.taken - request.enqueued > max_queue_wait) {
      return Status::Busy(where + " stalled: its loop took the proposal only " +
                          std::to_string(Ms(request.taken - request.enqueued)) +
                          " ms after it was queued (max_queue_wait_ms " +
                          std::to_string(max_queue_wait.count()) +
                          "): the process was paused or the loop blocked; never proposed, "
                          "safe to retry");
    }
    return Status::Busy(where + " overloaded: the proposal waited " +
                        std::to_string(Ms(now - request.enqueued)) +
                        " ms for room among the proposals in flight (max_queue_wait_ms " +
                        std::to_string(max_queue_wait.count()) + "); never proposed, safe to retry");
  }
  if (now >= request.deadline) {
    return Status::Timeout(where + ": the proposal's deadline passed before it was proposed; "
                                   "never proposed, safe to retry");
  }
  return Status::OK();
}

}  // namespace chorus
