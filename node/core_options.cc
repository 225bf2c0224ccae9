#include "node/core_options.h"

#include <algorithm>

#include "node/value_codec.h"

namespace chorus {

std::string MemberAddress(const NodeInfo& node) {
  NodeInfo n = node;
  n.node_id = node.id();  // explicit, so the text names the id whatever the host is
  return n.ToString();
}

Status ParseMemberAddress(uint64_t id, const std::string& address, NodeInfo* node) {
  NodeInfo n;
  Status s = NodeInfo::Parse(address, &n);
  if (!s.ok()) return s;
  if (n.id() != id) n.node_id = id;  // the membership's id is the identity
  *node = n;
  return Status::OK();
}

paxos::CoreOptions MakeCoreOptions(const Options& o, uint32_t group) {
  paxos::CoreOptions c;
  c.cluster_id = o.cluster_id;
  c.group = group;
  c.self = o.self.id();
  // The genesis (the first start's membership; a log that recorded one
  // follows its own), with the addresses the membership keeps.
  for (const NodeInfo& n : o.nodes) {
    c.members.push_back(n.id());
    c.member_addresses.push_back(MemberAddress(n));
  }
  c.activation_distance = paxos::kDefaultActivationDistance;
  // Group::Open replaces these two with the data dir's (DataDirIdentity);
  // without one, a node joins exactly when Options::join says so.
  c.joined = !o.join.empty();
  c.incarnation = 0;
  for (const NodeInfo& n : o.join) {
    if (n.id() != c.self) c.join_peers.push_back(n.id());
  }
  c.max_inflight = static_cast<size_t>(std::max(o.max_inflight, 1));
  // The acceptance window must hold the pipeline; a few times it leaves
  // room for a lagging acceptor to keep voting while it catches up.
  c.window = std::max(c.window, 4 * c.max_inflight);
  c.prepare_timeout_ms = static_cast<uint64_t>(std::max(o.prepare_timeout_ms, 1));
  c.accept_timeout_ms = static_cast<uint64_t>(std::max(o.accept_timeout_ms, 1));
  c.learn_interval_ms = static_cast<uint64_t>(std::max(o.learn_interval_ms, 1));
  c.chosen_cache_size = o.chosen_cache_size;
  // A batch packs many values: the core must take the largest of both, plus
  // the batch framing (5 bytes of header, kBatchEntryOverheadBytes per value;
  // a single value's 13 bytes of header fit in the slack).
  c.max_value_bytes = std::max(o.max_value_bytes, o.batch_max_bytes) +
                      kBatchEntryOverheadBytes * static_cast<size_t>(std::max(o.batch_max_count, 1)) +
                      64;
  c.master_election = o.master_election;
  c.lease_ms = static_cast<uint64_t>(std::max(o.lease_ms, 1));
  c.heartbeat_interval_ms = static_cast<uint64_t>(std::max(o.heartbeat_interval_ms, 1));
  c.election_timeout_ms = static_cast<uint64_t>(std::max(o.election_timeout_ms, 1));
  c.election_jitter_ms = static_cast<uint64_t>(std::max(o.election_jitter_ms, 0));
  c.max_clock_drift_ppm = static_cast<uint64_t>(std::max(o.max_clock_drift_ppm, 0));
  c.forward_to_master = o.forward_to_master;
  c.log_keep_instances = o.log_keep_instances;
  return c;
}

}  // namespace chorus
