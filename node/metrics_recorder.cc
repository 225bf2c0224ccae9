#include "node/metrics_recorder.h"

#include <string>

namespace chorus {

namespace {

unsigned long long U(uint64_t v) { return static_cast<unsigned long long>(v); }

// "ip:port" of a NodeInfo::id() (ipv4 << 16 | port).
std::string NodeText(uint64_t id) {
  const uint32_t ip = static_cast<uint32_t>(id >> 16);
  return std::to_string(ip >> 24) + "." + std::to_string((ip >> 16) & 0xFF) + "." +
         std::to_string((ip >> 8) & 0xFF) + "." + std::to_string(ip & 0xFF) + ":" +
         std::to_string(id & 0xFFFF);
}

uint64_t MicrosSince(GroupMetricsRecorder::Clock::time_point start) {
  const auto d = GroupMetricsRecorder::Clock::now() - start;
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  return us < 0 ? 0 : static_cast<uint64_t>(us);
}

}  // namespace

GroupMetricsRecorder::GroupMetricsRecorder(uint32_t group, uint64_t self, uint64_t catchup_lag,
                                           Logger* logger)
    : group_(group), self_(self), catchup_lag_(catchup_lag), logger_(logger) {}

Status GroupMetricsRecorder::CountPropose(Status s, Clock::time_point start) {
  if (s.ok()) {
    Add(&ok_);
    propose_latency_.Observe(MicrosSince(start));
  } else if (s.IsBusy()) {
    Add(&busy_);
  } else if (s.IsTimeout()) {
    Add(&timeout_);
  } else if (s.IsNotMaster()) {
    Add(&not_master_);
  } else if (s.IsStopped()) {
    Add(&stopped_);
  } else {
    Add(&other_);
  }
  return s;
}

void GroupMetricsRecorder::OnLogWrite(Clock::time_point start, bool synced) {
  Add(&log_writes_);
  if (!synced) return;
  Add(&log_syncs_);
  sync_latency_.Observe(MicrosSince(start));
}

void GroupMetricsRecorder::OnApplied(size_t values) {
  Add(&instances_executed_);
  if (values == 0) return;
  values_per_instance_.Observe(values);
  Add(&values_executed_, values);
}

void GroupMetricsRecorder::OnRound(const RoundFacts& f) {
  Add(&rounds_);
  if (f.chosen > 0) instances_per_round_.Observe(f.chosen);
  Set(&chosen_end_, f.chosen_end);
  Set(&executed_, f.executed);
  Set(&log_start_, f.log_start);
  Set(&in_core_, f.in_core);
  Set(&backlog_, f.backlog);
  Set(&queued_, f.queued_events);
  Set(&master_node_, f.master_node);
  Set(&is_master_, f.self_master ? 1 : 0);
  Set(&elections_, f.elections_started);
  Set(&catchup_requests_, f.catchup_requests);
  Set(&catchup_reads_, f.catchup_reads);
  Set(&checkpoint_instance_, f.checkpoint_instance);
  Set(&checkpoints_made_, f.checkpoints_made);
  Set(&checkpoints_needed_, f.checkpoints_needed);
  Set(&checkpoint_replies_, f.checkpoint_replies);
  Set(&trims_, f.trims);
  Set(&garbage_, f.garbage);
  Set(&foreign_, f.foreign);
  LogEvents(f);
  first_round_ = false;
}

void GroupMetricsRecorder::LogEvents(const RoundFacts& f) {
  // Master: a new master known (or none), and this node's own role.
  if (!first_round_ && f.master_node != last_master_) {
    Add(&master_changes_);
    if (f.master_node == 0) {
      CHORUS_LOG(logger_, kInfo, "group %u: no master known (was %s) at instance %llu", group_,
                 (namer_ ? namer_(last_master_) : NodeText(last_master_)).c_str(), U(f.chosen_end));
    } else if (f.master_node != self_) {
      CHORUS_LOG(logger_, kInfo, "group %u: master is now %s (epoch %llu) at instance %llu", group_,
                 (namer_ ? namer_(f.master_node) : NodeText(f.master_node)).c_str(), U(f.master_epoch), U(f.chosen_end));
    }
  }
  if (f.self_master != last_self_master_) {
    if (f.self_master) {
      Add(&master_gained_);
      CHORUS_LOG(logger_, kInfo, "group %u: this node is the master (epoch %llu) at instance %llu",
                 group_, U(f.master_epoch), U(f.chosen_end));
    } else {
      Add(&master_lost_);
      CHORUS_LOG(logger_, kInfo, "group %u: this node is no longer the master at instance %llu",
                 group_, U(f.chosen_end));
    }
  }
  last_master_ = f.master_node;
  last_self_master_ = f.self_master;

  // Catch-up begins when this node is behind the master's chosen end by more
  // than the pipeline explains, is told to fetch a checkpoint, or applies
  // more instances in one round than the pipeline explains (a LEARN_VALUES
  // batch: before it even knows a master). It is over once it executed up
  // to the master's chosen end (with a master known), or, with none known,
  // at a round that applied no more than the pipeline explains.
  const bool jumped = f.chosen > catchup_lag_;
  const bool behind = f.checkpoint_needed || jumped ||
                      (f.master_node != 0 && f.master_chosen_end > f.executed + catchup_lag_);
  const bool done = f.master_node != 0 ? f.executed >= f.master_chosen_end : !jumped;
  if (!catching_up_now_ && behind) {
    catchup_from_ = f.executed >= f.chosen ? f.executed - f.chosen : 0;
    catching_up_now_ = true;
    Add(&catchups_started_);
    Set(&catching_up_, 1);
    CHORUS_LOG(logger_, kInfo,
               "group %u: catch-up started at instance %llu (master's chosen end %llu%s)", group_,
               U(catchup_from_), U(f.master_chosen_end),
               f.checkpoint_needed ? ", a checkpoint is needed" : "");
  } else if (catching_up_now_ && !f.checkpoint_needed && done) {
    catching_up_now_ = false;
    Add(&catchups_finished_);
    Set(&catching_up_, 0);
    CHORUS_LOG(logger_, kInfo, "group %u: catch-up done at instance %llu (%llu instances from %llu)",
               group_, U(f.executed), U(f.executed - catchup_from_), U(catchup_from_));
  }

  if (f.checkpoints_made > last_made_) {
    CHORUS_LOG(logger_, kInfo, "group %u: checkpoint made at instance %llu (log starts at %llu)",
               group_, U(f.checkpoint_instance), U(f.log_start));
  }
  last_made_ = f.checkpoints_made;
}

void GroupMetricsRecorder::Read(GroupMetrics* m) const {
  auto get = [](const std::atomic<uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  m->proposals_ok = get(ok_);
  m->proposals_busy = get(busy_);
  m->proposals_timeout = get(timeout_);
  m->proposals_not_master = get(not_master_);
  m->proposals_stopped = get(stopped_);
  m->proposals_failed_other = get(other_);
  propose_latency_.Read(&m->propose_latency_us);
  m->log_writes = get(log_writes_);
  m->log_syncs = get(log_syncs_);
  sync_latency_.Read(&m->sync_latency_us);
  m->rounds = get(rounds_);
  instances_per_round_.Read(&m->instances_per_round);
  values_per_instance_.Read(&m->values_per_instance);
  m->values_executed = get(values_executed_);
  m->instances_executed = get(instances_executed_);
  m->chosen_end = get(chosen_end_);
  m->executed = get(executed_);
  m->log_start = get(log_start_);
  m->instances_in_flight = get(in_core_);
  m->proposals_backlog = get(backlog_);
  m->inbound_queue_events = get(queued_);
  m->master_node = get(master_node_);
  m->is_master = get(is_master_) != 0;
  m->master_changes = get(master_changes_);
  m->master_gained = get(master_gained_);
  m->master_lost = get(master_lost_);
  m->elections_started = get(elections_);
  m->catchups_started = get(catchups_started_);
  m->catchups_finished = get(catchups_finished_);
  m->catching_up = get(catching_up_) != 0;
  m->catchup_requests = get(catchup_requests_);
  m->catchup_reads = get(catchup_reads_);
  m->checkpoint_instance = get(checkpoint_instance_);
  m->checkpoints_made = get(checkpoints_made_);
  m->checkpoints_needed = get(checkpoints_needed_);
  m->checkpoint_replies = get(checkpoint_replies_);
  m->log_trims = get(trims_);
  m->messages_garbage = get(garbage_);
  m->messages_foreign = get(foreign_);
}

}  // namespace chorus
