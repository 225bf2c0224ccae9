// Copyright (c) chorus authors.
//
// Options of a chorus Node. Every field has a default; Node::Open validates
// all of them and returns InvalidArgument with a message naming the field.

#ifndef CHORUS_OPTIONS_H_
#define CHORUS_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "chorus/log_storage.h"
#include "chorus/logging.h"
#include "chorus/transport.h"

namespace chorus {

class StateMachine;

struct Options {
  // ---- The cluster ----
  // This node. REQUIRED; must appear in `nodes`.
  NodeInfo self;
  // Every member of the cluster, self included, no duplicates. REQUIRED.
  std::vector<NodeInfo> nodes;
  // Identifies the cluster on the wire and in the data dir; messages and data
  // dirs of another cluster are refused. Default 1.
  uint64_t cluster_id = 1;
  // Number of independent paxos groups (each its own log, loop thread and
  // state machines). Default 1; must be >= 1.
  int group_count = 1;

  // ---- Storage ----
  // Directory of the paxos logs (one leveldb per group, in data_dir/g<group>).
  // REQUIRED unless log_storage_factory is set. The logs record the cluster
  // id, the group and this node's id; Open refuses a log of another cluster,
  // group or node (InvalidArgument naming both).
  std::string data_dir;
  // Create the logs when data_dir (or a group's directory in it) is missing
  // or empty. Default false, leveldb's convention: then Open returns
  // InvalidArgument naming the directory. A node must never start with a
  // fresh log by accident (e.g. restarted on an unmounted volume): it would
  // have forgotten the promises and votes it made, which breaks Paxos
  // safety. Set it on a node's very first start only (the sample programs
  // take --create_if_missing). Existing logs are opened whatever it says.
  // Ignored when log_storage_factory is set (the factory decides).
  bool create_if_missing = false;
  // Sync every promise/accept record before answering (fsync). Default true.
  // false trades durability for speed: a machine crash can then violate
  // safety. Only for tests and benchmarks.
  bool sync_writes = true;
  // Plug in another LogStorage: called once per group at Open. Default
  // (empty): leveldb under data_dir/g<group>.
  std::function<Status(uint32_t group, std::unique_ptr<LogStorage>* out)> log_storage_factory;

  // ---- State machines ----
  // (group, state machine) pairs; the Node borrows them: they must outlive
  // it. Ids must be unique within a group. A group may have none.
  std::vector<std::pair<uint32_t, StateMachine*>> state_machines;

  // ---- Network ----
  // Plug in another Transport (borrowed, must outlive the Node; the Node
  // calls Start and Stop). Default nullptr: TCP on self's address.
  Transport* transport = nullptr;
  // Largest frame the TCP transport accepts. Default 64 MiB.
  uint32_t max_frame_bytes = 64u << 20;
  // Bytes of peers' messages a group queues while its loop is busy (e.g.
  // waiting on a slow disk); beyond it incoming messages are dropped, which
  // the protocol tolerates (it retries). Default 256 MiB; must be at least
  // max_frame_bytes so that one largest message always fits.
  size_t max_inbound_queue_bytes = 256u << 20;

  // ---- Proposals ----
  // How long Propose waits for its value to be chosen and executed before
  // returning Timeout, unless the call sets its own
  // ExecuteContext::timeout_ms. Default 5000 ms.
  int propose_timeout_ms = 5000;
  // Largest value Propose accepts (TooLarge beyond). Default 8 MiB; must be
  // well under max_frame_bytes.
  size_t max_value_bytes = 8u << 20;
  // Instances a proposer keeps in flight at once per group. Default 64.
  // More instances share each fsync round (the loop persists a whole round
  // with one synced write): propose_bench with 100 clients measured 64 at
  // about 1.9x the throughput of 16, with a lower p99 (see README).
  int max_inflight = 64;
  // Overload protection, per group: proposals waiting (queued or in
  // flight) beyond this are rejected at once with Busy ("overloaded").
  // Default 10000.
  int max_waiting_proposals = 10000;
  // A group works on at most 2 x max_inflight proposals at once; the others
  // wait, in arrival order. One that waited longer than this before it was
  // proposed is failed with Busy (before its own deadline): "overloaded"
  // when it waited for room, "stalled" when the group's loop itself took it
  // only this late (a paused process, a blocked loop). Either way it was
  // never proposed. Default 2000 ms.
  int max_queue_wait_ms = 2000;

  // ---- Protocol timeouts ----
  // Phase 1 (prepare) retry timeout. Default 200 ms.
  int prepare_timeout_ms = 200;
  // Phase 2 (accept) retry timeout. Default 200 ms.
  int accept_timeout_ms = 200;
  // Interval of the learner's catch-up check. Default 500 ms.
  int learn_interval_ms = 500;
  // Chosen values each group keeps in memory to serve peers that lag
  // behind. A lagging peer asking for older ones is served from the log, on
  // the node's catch-up reader thread (never on the group's loop). Larger
  // costs memory (up to this many values per group); smaller costs disk
  // reads when a peer catches up. Default 1024.
  size_t chosen_cache_size = 1024;

  // ---- Batching (BatchPropose) ----
  // A batch leaves when it holds this many values... Default 64.
  int batch_max_count = 64;
  // ...or this many bytes of values... Default 1 MiB.
  size_t batch_max_bytes = 1u << 20;
  // ...or its first value has waited this long. Default 0: no timer; the
  // batch leaves as soon as the group's loop is free, holding everything that
  // arrived while it was busy with the previous round (natural batching).
  // A delay makes batches fuller under light load at the cost of latency;
  // propose_bench measured 0 as best on a 2-core machine (see README).
  int batch_delay_ms = 0;

  // ---- Logging ----
  // Where log lines go. Default (empty): stderr.
  LogHook log_hook;
  // Lines below this level are dropped. Default kWarning.
  LogLevel log_level = LogLevel::kWarning;
};

}  // namespace chorus

#endif  // CHORUS_OPTIONS_H_
