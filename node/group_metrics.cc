// Group's metrics hooks: what the loop publishes after each round
// and the recovery line of Open. Kept out of group.cc, which calls these in
// one line each.
#include "node/group.h"

namespace chorus {

void Group::PublishMetrics(const paxos::Outputs& round) {
  RoundFacts f;
  f.chosen = round.chosen.size();
  f.chosen_end = core_->chosen_end();
  f.executed = next_execute_.load(std::memory_order_relaxed);
  f.log_start = core_->log_start();
  f.in_core = admission_->in_core();
  f.backlog = admission_->backlogged();
  f.queued_events = queue_->size();
  f.checkpoint_needed = !round.checkpoint_needed.empty();
  if (env_.options->master_election) {
    const paxos::MasterView view = core_->master();
    f.master_node = view.node;
    f.master_epoch = view.epoch.number;
    f.self_master = view.node == env_.options->self.id() && view.self_ready;
    f.master_chosen_end = f.self_master ? f.chosen_end : view.master_chosen_end;
  }
  f.checkpoint_instance = checkpoint_->checkpoint_instance();
  f.checkpoints_made = checkpoint_->made();
  const paxos::CoreStats& stats = core_->stats();
  f.elections_started = stats.elections_started;
  f.catchup_requests = stats.catchup_requests;
  f.catchup_reads = stats.catchup_reads;
  f.checkpoints_needed = stats.checkpoints_needed;
  f.checkpoint_replies = stats.checkpoint_replies;
  f.trims = stats.trims;
  f.garbage = stats.garbage_messages;
  f.foreign = stats.foreign_messages + stats.sender_mismatches;
  metrics_.OnRound(f);
}

void Group::LogOpened(std::chrono::steady_clock::time_point began, uint64_t replayed) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - began)
                      .count();
  CHORUS_LOG(env_.logger, kInfo,
             "group %u: opened in %lld ms: log holds [%llu, %llu), replayed %llu instances into "
             "the state machines, newest checkpoint %llu",
             index_, static_cast<long long>(ms),
             static_cast<unsigned long long>(core_->log_start()),
             static_cast<unsigned long long>(core_->chosen_end()),
             static_cast<unsigned long long>(replayed),
             static_cast<unsigned long long>(checkpoint_->checkpoint_instance()));
}

}  // namespace chorus
