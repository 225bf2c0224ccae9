// NodeImpl's metrics calls: Node::GetMetrics and
// Node::GetTransportMetrics. The group's recorder holds most fields; the
// node adds what lives elsewhere (checkpoint transfer, inbound drops).
#include "node/node_impl.h"

namespace chorus {

// REQUIRES: the caller registered as an ActiveCall (node_impl.cc).
Status NodeImpl::FillMetrics(uint32_t group, GroupMetrics* metrics) const {
  Group* g = FindGroup(group);
  if (g == nullptr) return Status::InvalidArgument("no group " + std::to_string(group));
  GroupMetrics m;
  g->metrics()->Read(&m);
  m.inbound_dropped = g->dropped_messages();
  m.checkpoints_loaded = g->checkpoints_loaded();
  const CheckpointTransferProgress p = checkpoint_transfer_->Progress(group);
  m.checkpoints_sent = p.sent;
  m.transfer_instance = p.instance;
  m.transfer_bytes_done = p.bytes_done;
  m.transfer_bytes_total = p.bytes_total;
  if (metrics != nullptr) *metrics = m;
  return Status::OK();
}

Status NodeImpl::GetTransportMetrics(TransportMetrics* metrics) const {
  TransportMetrics m;
  m.misrouted = misrouted_.load(std::memory_order_relaxed);
  if (own_transport_ != nullptr) {
    const TransportStats s = own_transport_->stats();
    m.known = true;
    m.bytes_sent = s.bytes_sent;
    m.bytes_received = s.bytes_received;
    m.frames_sent = s.frames_sent;
    m.frames_received = s.frames_received;
    m.dropped_corrupt = s.frames_dropped_corrupt;
    m.dropped_too_large = s.frames_dropped_too_large;
    m.dropped_foreign_cluster = s.frames_dropped_foreign_cluster;
    m.dropped_non_member = s.frames_dropped_non_member;
    m.dropped_bad_mac = s.frames_dropped_bad_mac;
    m.auth_challenge_failures = s.auth_challenge_failures;
    m.dropped_queue_full = s.sends_dropped_queue_full;
    m.connects = s.connects;
    m.disconnects = s.disconnects;
    m.connect_timeouts = s.connect_timeouts;
    m.connections_timed_out = s.connections_timed_out;
    m.connections_closed_on_error = s.connections_closed_on_error;
    m.connections_rejected_over_limit = s.connections_rejected_over_limit;
  }
  if (metrics != nullptr) *metrics = m;
  return Status::OK();
}

}  // namespace chorus
