#include "node/options_validation.h"

#include <dirent.h>

#include <set>
#include <string>
#include <utility>

#include "chorus/state_machine.h"
#include "node/core_options.h"
#include "node/frame_auth.h"
#include "paxos/membership.h"

namespace chorus {

namespace {
Status Invalid(const std::string& msg) { return Status::InvalidArgument("options: " + msg); }

// Whether `dir` is a directory with at least one entry.
bool HoldsSomething(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  bool found = false;
  while (struct dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") {
      found = true;
      break;
    }
  }
  closedir(d);
  return found;
}

Status CheckPositive(const char* name, long long value) {
  if (value <= 0) return Invalid(std::string(name) + " must be > 0, got " + std::to_string(value));
  return Status::OK();
}
// The master election fields (checked whether master_election is on or
// not: a setting that is wrong now must not surface only when it is turned on).
Status ValidateMasterOptions(const Options& o) {
  Status s;
  if (!(s = CheckPositive("lease_ms", o.lease_ms)).ok()) return s;
  if (!(s = CheckPositive("heartbeat_interval_ms", o.heartbeat_interval_ms)).ok()) return s;
  if (!(s = CheckPositive("election_timeout_ms", o.election_timeout_ms)).ok()) return s;
  // Twice the interval below the lease: one lost heartbeat does not end it.
  if (2LL * o.heartbeat_interval_ms >= o.lease_ms) {
    return Invalid("heartbeat_interval_ms (" + std::to_string(o.heartbeat_interval_ms) +
                   ") must be below lease_ms / 2 (lease_ms is " + std::to_string(o.lease_ms) +
                   "), so that a lease outlives one lost heartbeat");
  }
  if (o.election_timeout_ms < o.lease_ms) {
    return Invalid("election_timeout_ms (" + std::to_string(o.election_timeout_ms) +
                   ") must be >= lease_ms (" + std::to_string(o.lease_ms) +
                   "): acceptors refuse an election while the old master's lease holds");
  }
  if (o.election_jitter_ms < 0) {
    return Invalid("election_jitter_ms must be >= 0, got " + std::to_string(o.election_jitter_ms));
  }
  if (o.max_clock_drift_ppm < 0 || o.max_clock_drift_ppm >= 500000) {
    return Invalid("max_clock_drift_ppm must be in [0, 500000), got " +
                   std::to_string(o.max_clock_drift_ppm));
  }
  return Status::OK();
}
// `path` without trailing slashes ("/" stays).
std::string Trimmed(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// Checkpoints and trimming (Options checkpoint_*, log_keep_*).
Status ValidateCheckpointOptions(const Options& o) {
  constexpr uint32_t kMinChunk = 4096;
  if (o.checkpoint_chunk_bytes < kMinChunk || o.checkpoint_chunk_bytes > o.max_frame_bytes / 2) {
    return Invalid("checkpoint_chunk_bytes must be in [" + std::to_string(kMinChunk) +
                   ", max_frame_bytes / 2 = " + std::to_string(o.max_frame_bytes / 2) + "], got " +
                   std::to_string(o.checkpoint_chunk_bytes));
  }
  if (o.checkpoint_send_bytes_per_sec != 0 && o.checkpoint_send_bytes_per_sec < kMinChunk) {
    return Invalid("checkpoint_send_bytes_per_sec must be 0 (unlimited) or at least " +
                   std::to_string(kMinChunk) + ", got " +
                   std::to_string(o.checkpoint_send_bytes_per_sec));
  }
  // Instance ids stay far below 2^62 (paxos::kMaxInstanceId); a margin or
  // interval beyond that is a unit mistake, not a setting.
  constexpr uint64_t kMaxInstances = uint64_t{1} << 48;
  if (o.checkpoint_interval_instances > kMaxInstances) {
    return Invalid("checkpoint_interval_instances must be at most 2^48, got " +
                   std::to_string(o.checkpoint_interval_instances));
  }
  if (o.log_keep_instances > kMaxInstances) {
    return Invalid("log_keep_instances must be at most 2^48, got " +
                   std::to_string(o.log_keep_instances));
  }
  // The logs live in data_dir/g<group>, the checkpoints in
  // checkpoint_dir/g<group>: one directory for both would mix them.
  if (!o.checkpoint_dir.empty() && !o.data_dir.empty() &&
      Trimmed(o.checkpoint_dir) == Trimmed(o.data_dir)) {
    return Invalid("checkpoint_dir '" + o.checkpoint_dir +
                   "' is data_dir: give the checkpoints a directory of their own (default: "
                   "data_dir/checkpoints)");
  }
  return Status::OK();
}

}  // namespace

Status ValidateNodeOptions(const Options& o) {
  // Exactly one of the two says how this node finds its cluster: the
  // initial membership, or members to join through.
  if (o.nodes.empty() && o.join.empty()) {
    return Invalid("nodes is empty: list every member of the cluster (or set join to join an "
                   "existing one)");
  }
  if (!o.nodes.empty() && !o.join.empty()) {
    return Invalid("nodes and join are both set: give nodes (the initial membership) or join "
                   "(members of an existing cluster), not both");
  }
  if (Status v = o.self.Validate(); !v.ok()) return Invalid("self: " + v.message());
  std::set<uint64_t> ids;
  for (const NodeInfo& n : o.nodes) {
    if (Status v = n.Validate(); !v.ok()) return Invalid("nodes: " + v.message());
    if (!ids.insert(n.id()).second) return Invalid("node " + n.ToString() + " is listed twice");
  }
  if (!o.nodes.empty() && ids.count(o.self.id()) == 0) {
    return Invalid("self " + o.self.ToString() + " is not in nodes");
  }
  std::set<uint64_t> join_ids;
  for (const NodeInfo& n : o.join) {
    if (Status v = n.Validate(); !v.ok()) return Invalid("join: " + v.message());
    // Self may be listed (the same member list on every node): it is skipped.
    if (n.id() == o.self.id()) continue;
    if (!join_ids.insert(n.id()).second) return Invalid("join lists " + n.ToString() + " twice");
  }
  if (!o.join.empty() && join_ids.empty()) {
    return Invalid("join names no member but self " + o.self.ToString());
  }
  if (o.nodes.size() > paxos::kMaxMembers || o.join.size() > paxos::kMaxMembers) {
    return Invalid("nodes / join list more than " + std::to_string(paxos::kMaxMembers) +
                   " members");
  }
  if (o.group_count < 1) return Invalid("group_count must be >= 1, got " + std::to_string(o.group_count));
  if (o.data_dir.empty() && !o.log_storage_factory) {
    return Invalid("data_dir is empty (and no log_storage_factory is set)");
  }
  if (!o.log_storage_factory && !o.create_if_missing && !HoldsSomething(o.data_dir)) {
    return Invalid("data_dir '" + o.data_dir +
                   "' is missing or empty and create_if_missing is false. On this node's first "
                   "start set create_if_missing; otherwise mount or restore its data dir (a node "
                   "that starts with a fresh log has forgotten its promises, which breaks Paxos "
                   "safety)");
  }
  Status s;
  if (!(s = CheckPositive("propose_timeout_ms", o.propose_timeout_ms)).ok()) return s;
  if (!(s = CheckPositive("prepare_timeout_ms", o.prepare_timeout_ms)).ok()) return s;
  if (!(s = CheckPositive("accept_timeout_ms", o.accept_timeout_ms)).ok()) return s;
  if (!(s = CheckPositive("learn_interval_ms", o.learn_interval_ms)).ok()) return s;
  if (!(s = CheckPositive("max_inflight", o.max_inflight)).ok()) return s;
  // Membership rule M2 (paxos/membership.h): the pipeline must fit in the
  // activation distance, which the runtime fixes at the default.
  if (static_cast<uint64_t>(o.max_inflight) > paxos::kDefaultActivationDistance) {
    return Invalid("max_inflight must be at most " +
                   std::to_string(paxos::kDefaultActivationDistance) +
                   " (the membership activation distance), got " + std::to_string(o.max_inflight));
  }
  if (!(s = CheckPositive("membership_timeout_ms", o.membership_timeout_ms)).ok()) return s;
  if (!(s = CheckPositive("member_live_ms", o.member_live_ms)).ok()) return s;
  if (o.catch_up_margin_instances > (uint64_t{1} << 48)) {
    return Invalid("catch_up_margin_instances must be at most 2^48, got " +
                   std::to_string(o.catch_up_margin_instances));
  }
  if (!(s = CheckPositive("max_waiting_proposals", o.max_waiting_proposals)).ok()) return s;
  if (!(s = CheckPositive("max_async_proposals", o.max_async_proposals)).ok()) return s;
  if (!(s = CheckPositive("max_queue_wait_ms", o.max_queue_wait_ms)).ok()) return s;
  if (!(s = CheckPositive("batch_max_count", o.batch_max_count)).ok()) return s;
  if (!(s = CheckPositive("batch_max_bytes", static_cast<long long>(o.batch_max_bytes))).ok()) return s;
  if (!(s = CheckPositive("max_value_bytes", static_cast<long long>(o.max_value_bytes))).ok()) return s;
  if (o.batch_delay_ms < 0 || o.batch_delay_ms >= o.propose_timeout_ms) {
    return Invalid("batch_delay_ms must be >= 0 and below propose_timeout_ms, got " +
                   std::to_string(o.batch_delay_ms));
  }
  if (o.batch_max_inflight < 0) {
    return Invalid("batch_max_inflight must be >= 0 (0: no limit), got " +
                   std::to_string(o.batch_max_inflight));
  }
  if (!(s = ValidateMasterOptions(o)).ok()) return s;
  if (!(s = ValidateClusterSecret(o.cluster_secret)).ok()) return s.Annotate("options");
  if (!o.cluster_secret.empty() && o.transport != nullptr) {
    return Invalid("cluster_secret applies to the built-in TCP transport; with Options::transport "
                   "set, authenticate in that transport (or leave cluster_secret empty)");
  }
  if (!(s = ValidateCheckpointOptions(o)).ok()) return s;
  if (o.max_inbound_queue_bytes < o.max_frame_bytes) {
    return Invalid("max_inbound_queue_bytes (" + std::to_string(o.max_inbound_queue_bytes) +
                   ") must be at least max_frame_bytes (" + std::to_string(o.max_frame_bytes) + ")");
  }
  // Every message the protocol sends must fit in a frame: its largest is a
  // function of the value size limits, the window and the catch-up batch
  // (paxos::CoreOptions::MaxMessageBytes).
  const paxos::CoreOptions core = MakeCoreOptions(o, 0);
  s = core.Validate();
  if (!s.ok()) return s.Annotate("options");
  const uint64_t needed = static_cast<uint64_t>(core.MaxMessageBytes()) + kFrameOverheadBytes;
  if (needed > o.max_frame_bytes) {
    return Invalid("max_frame_bytes (" + std::to_string(o.max_frame_bytes) +
                   ") is too small for the largest protocol message these limits allow (" +
                   std::to_string(needed) + " bytes): lower max_value_bytes / batch_max_bytes or "
                   "raise max_frame_bytes");
  }
  std::set<std::pair<uint32_t, int>> sm_ids;
  for (const auto& [group, sm] : o.state_machines) {
    if (sm == nullptr) return Invalid("state_machines holds a null StateMachine");
    if (group >= static_cast<uint32_t>(o.group_count)) {
      return Invalid("state machine " + std::to_string(sm->id()) + " is registered for group " +
                     std::to_string(group) + " but group_count is " + std::to_string(o.group_count));
    }
    if (sm->id() <= 0) return Invalid("state machine ids must be > 0, got " + std::to_string(sm->id()));
    if (!sm_ids.insert({group, sm->id()}).second) {
      return Invalid("two state machines with id " + std::to_string(sm->id()) + " in group " +
                     std::to_string(group));
    }
  }
  return Status::OK();
}

}  // namespace chorus
