// Copyright (c) chorus authors.
//
// Metrics: what a running Node counts, read in-process with
// Node::GetMetrics (one group) and Node::GetTransportMetrics (the node's
// transport). Snapshots are plain structs: copy them, diff two of them, or
// export them (the optional chorus_prometheus library serves them in the
// Prometheus text format).
//
// Every counter is monotonic since Node::Open (a restart starts again from
// 0); a gauge ("now") is its value as of the group loop's latest round.
// Rates (syncs per second, proposals per second) are the reader's to compute
// from two snapshots: chorus keeps no clock-based windows.
//
// A snapshot is not one atomic cut: each field is read on its own (relaxed),
// so two fields may come from adjacent rounds. Each field is exact by itself.
// Proposal outcomes are counted by the proposing thread before its call
// returns, and executed values when they are applied; the gauges and the
// per-round figures are published at the end of each round, after the
// round's proposers were answered: a caller that reads them right after its
// Propose returned may see the round before.
//
// Includes the standard library only.

#ifndef CHORUS_METRICS_H_
#define CHORUS_METRICS_H_

#include <cstddef>
#include <cstdint>

namespace chorus {

// A histogram with fixed bucket bounds: counts[i] counts the observations v
// with bounds[i-1] < v <= bounds[i] (bounds[-1] = -infinity); the last
// bucket, counts[kBuckets - 1], counts those above every bound (+Inf).
// Buckets are NOT cumulative (Prometheus' are; the exporter sums them).
template <size_t N>
struct Histogram {
  static constexpr size_t kBuckets = N + 1;
  uint64_t counts[kBuckets] = {};
  uint64_t count = 0;  // observations (the sum of counts)
  uint64_t sum = 0;    // the sum of the observed values
};

// Latency buckets, microseconds: 50 us .. 5 s, roughly 1-2.5-5 per decade.
constexpr size_t kLatencyBounds = 17;
constexpr uint64_t kLatencyBoundsUs[kLatencyBounds] = {
    50,     100,    250,    500,     1000,    2500,    5000,    10000,  25000,
    50000,  100000, 250000, 500000,  1000000, 2000000, 3000000, 5000000};
using LatencyHistogram = Histogram<kLatencyBounds>;

// Size buckets (values per round, values per instance): powers of two 1 .. 4096.
constexpr size_t kSizeBounds = 13;
constexpr uint64_t kSizeBoundsCount[kSizeBounds] = {1,   2,   4,    8,    16,   32,  64,
                                                   128, 256, 512, 1024, 2048, 4096};
using SizeHistogram = Histogram<kSizeBounds>;

// One group of one node (Node::GetMetrics).
struct GroupMetrics {
  // ---- Proposals (Propose and BatchPropose calls of this node), by the
  // Status the call returned (node.h lists the outcomes).
  uint64_t proposals_ok = 0;
  uint64_t proposals_busy = 0;        // Busy: overloaded or stalled, never proposed
  uint64_t proposals_timeout = 0;     // Timeout
  uint64_t proposals_not_master = 0;  // NotMaster
  uint64_t proposals_stopped = 0;     // Stopped (the node is stopping, or outcome unknown)
  // Every other failure: InvalidArgument, TooLarge, IOError, Corruption.
  uint64_t proposals_failed_other = 0;
  // Propose / BatchPropose call latency (us) of the calls that returned OK:
  // from the call to its return (queueing, consensus, Execute).
  LatencyHistogram propose_latency_us;

  // ---- The log.
  // Every log write of a round (one per round that persists anything) and
  // its latency (us); `log_syncs` counts the synced ones (fsync: votes,
  // variables, trims), whose latency is in sync_latency_us. Syncs per second
  // = the difference of log_syncs over two snapshots.
  uint64_t log_writes = 0;
  uint64_t log_syncs = 0;
  LatencyHistogram sync_latency_us;

  // ---- Rounds and values.
  uint64_t rounds = 0;  // rounds the loop executed (group commit: one write each)
  // Chosen instances applied per round (rounds that applied none are not
  // observed).
  SizeHistogram instances_per_round;
  // Application values per applied instance (1 for Propose, the batch's size
  // for BatchPropose; noop instances are not observed).
  SizeHistogram values_per_instance;
  uint64_t values_executed = 0;     // application values executed (all SMs)
  uint64_t instances_executed = 0;  // instances applied, noops and the replay on open included

  // ---- Now (gauges, as of the loop's latest round).
  uint64_t chosen_end = 0;      // instances [0, chosen_end) are chosen here
  uint64_t executed = 0;        // the next instance the state machines execute
  uint64_t log_start = 0;       // the first instance the log holds
  uint64_t instances_in_flight = 0;  // this node's proposals inside the core
  uint64_t proposals_backlog = 0;    // proposals waiting for room in the core
  uint64_t inbound_queue_events = 0;  // events queued for the loop (messages included)
  // Messages dropped because the inbound queue held max_inbound_queue_bytes.
  uint64_t inbound_dropped = 0;

  // ---- Master (zero with master_election off).
  uint64_t master_node = 0;       // NodeInfo::id() of the known master, 0: none
  bool is_master = false;         // this node is the ready master
  uint64_t master_changes = 0;    // times the known master changed (to another node or none)
  uint64_t master_gained = 0;     // times this node became the ready master
  uint64_t master_lost = 0;       // times it stopped being it
  uint64_t elections_started = 0;  // phase 1 rounds begun to become master

  // ---- Catch-up. A catch-up begins when this node finds itself behind the
  // master's chosen end by more than the pipeline explains (2 x max_inflight
  // instances), needs a checkpoint, or learns more instances in one round
  // than the pipeline explains (a catch-up batch); it ends once it executed
  // up to the master's chosen end (with no master known: at the next round
  // that learned no more than the pipeline explains). A heuristic for
  // operators (and the info lines), not a protocol state.
  uint64_t catchups_started = 0;
  uint64_t catchups_finished = 0;
  bool catching_up = false;
  uint64_t catchup_requests = 0;  // ASK_LEARN / CONFIRM_LEARN sent
  uint64_t catchup_reads = 0;     // catch-up batches read from the log for peers

  // ---- Checkpoints (Options checkpoint_*).
  uint64_t checkpoint_instance = 0;   // the newest stored checkpoint (0: none)
  uint64_t checkpoints_made = 0;
  uint64_t checkpoints_loaded = 0;    // received from a peer and installed
  uint64_t checkpoints_sent = 0;      // sent whole to peers
  uint64_t checkpoints_needed = 0;    // "use a checkpoint" answers this node got
  uint64_t checkpoint_replies = 0;    // "use a checkpoint" answers it sent
  uint64_t log_trims = 0;
  uint64_t transfer_instance = 0;     // a checkpoint being received (0: none)
  uint64_t transfer_bytes_done = 0;
  uint64_t transfer_bytes_total = 0;

  // ---- Bad input the core dropped.
  uint64_t messages_garbage = 0;  // did not parse, or malformed
  uint64_t messages_foreign = 0;  // another cluster/group, a non-member, a forged sender
};

// The node's transport (Node::GetTransportMetrics). With the built-in TCP
// transport every field is filled (see TransportStats in transport.h for
// the drop reasons); with an application's own transport only `known` is
// false and every field is 0.
struct TransportMetrics {
  bool known = false;
  uint64_t bytes_sent = 0;      // frame bytes written to sockets (headers included)
  uint64_t bytes_received = 0;  // bytes read from sockets
  uint64_t frames_sent = 0;
  uint64_t frames_received = 0;
  // Drops, by reason.
  uint64_t dropped_corrupt = 0;         // bad magic, length or crc32c
  uint64_t dropped_too_large = 0;
  uint64_t dropped_foreign_cluster = 0;
  uint64_t dropped_non_member = 0;
  uint64_t dropped_bad_mac = 0;         // cluster_secret: HMAC did not verify
  uint64_t dropped_queue_full = 0;      // sends dropped: the peer's queue was full
  // Outgoing connections: established, and lost after being established
  // (each loss is followed by a reconnect attempt).
  uint64_t connects = 0;
  uint64_t disconnects = 0;
  uint64_t connect_timeouts = 0;
  uint64_t auth_challenge_failures = 0;  // cluster_secret: no or bad challenge
  uint64_t connections_timed_out = 0;   // dead-peer detection
  uint64_t connections_closed_on_error = 0;
  uint64_t connections_rejected_over_limit = 0;
  // Messages that named no group (dropped by the node).
  uint64_t misrouted = 0;
};

}  // namespace chorus

#endif  // CHORUS_METRICS_H_
