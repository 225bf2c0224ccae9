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
  // This node. REQUIRED; must appear in `nodes` (unless `join` is set).
  NodeInfo self;
  // The INITIAL membership of every group: every member, self included, no
  // duplicates. REQUIRED unless `join` is set. It is used on the very first
  // start (the logs are empty) and recorded in each group's log. From then
  // on, each group's log is the source of truth for who is a member
  // (Node::AddMember and friends change it): on a restart the log wins, and
  // a node whose `nodes` names other ids than its log's membership logs one
  // warning per group and follows the log. Addresses are different: for an
  // id that `nodes` names, the address given here wins over the one the
  // log recorded (so a member that moved to a new address can be reached
  // once its peers are told its new address and keep its id: "id@host:port").
  std::vector<NodeInfo> nodes;
  // Join an existing cluster as a NEW node, through these members (any
  // subset of them; self may be listed and is skipped, so every node can be
  // given one list; `nodes` must then be empty). On its first start (with
  // create_if_missing) the node creates an empty data dir that is marked
  // "joined", learns each group's membership and log (or a checkpoint) from
  // them, and does not vote until a member adds it (Node::AddMember on any
  // node; until then its messages are refused and it waits). A node whose
  // disk was lost must come back this way, and be removed and added again:
  // it has forgotten the promises it made, and it never votes as its old
  // self (its new data dir has a new incarnation). On later starts the log
  // knows the membership and `join` is only used while it does not.
  // Default empty.
  std::vector<NodeInfo> join;
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
  // A secret shared by every member (any bytes; at least 16, e.g. 32 random
  // bytes from a secrets store): the TCP transport then authenticates every
  // frame with HMAC-SHA256 under it, bound to its connection and its place
  // on it, so that a process that can reach a node's port cannot speak for a
  // member (forge its node id), replay captured frames (on a new connection
  // or the same one), or join from another cluster that has another secret.
  // Frames that fail are dropped, counted (TransportStats /
  // TransportMetrics dropped_bad_mac) and close their connection. Frames are
  // not encrypted: this is authentication, not secrecy. Design and threat
  // model: node/frame_auth.h. Turn it on whenever the nodes' ports can be
  // reached by anything but the members (a shared network, a cloud VPC, a
  // host with other tenants); loopback-only test clusters do not need it.
  // Every member needs the same secret: a node with another one, or none,
  // is refused both ways. Cost: one HMAC-SHA256 per frame on each side, 32
  // bytes per frame and one short challenge per connection; propose_bench
  // measured it (README, "Authenticated transport"). Default empty: off,
  // and the wire is exactly as without it. Only for the built-in transport:
  // Open refuses it together with `transport`.
  std::string cluster_secret;

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
  // about 1.9x the throughput of 16, with a lower p99 (see README). At most
  // 256, the activation distance of membership changes (a change governs
  // 256 instances after its own, so the instances in flight when it is
  // chosen keep their quorums).
  int max_inflight = 64;
  // ---- Membership (Node::AddMember and friends) ----
  // Deadline of one membership call (the change, plus, for AddMember and
  // ChangeMember, the new node's catch-up before it votes): Timeout after
  // it. Default 120000 ms.
  int membership_timeout_ms = 120000;
  // A node counts as live for the safety check of RemoveMember (and the
  // choice of a new master when the master is removed) when the master
  // heard from it within this long. Default 2000 ms.
  int member_live_ms = 2000;
  // AddMember / ChangeMember promote the new node to a voter once its
  // executed instance is within this many instances of the master's chosen
  // end. Default 1000.
  uint64_t catch_up_margin_instances = 1000;

  // Overload protection, per group: proposals waiting (queued or in
  // flight) beyond this are rejected at once with Busy ("overloaded").
  // Default 10000.
  int max_waiting_proposals = 10000;
  // Asynchronous proposals (Node::ProposeAsync, BatchProposeAsync)
  // outstanding per group (queued, in flight, or executed and not yet
  // handed to their done) beyond this are refused at once with Busy. A
  // caller of ProposeAsync never blocks, so without a bound a tight loop
  // would queue without limit. Default 10000, as max_waiting_proposals: far
  // more than the group can work on at once (2 x max_inflight instances of
  // up to batch_max_count values), so it only refuses a caller that runs
  // ahead of the group (10000 values are about half a second of work at
  // the 20,000+ values/s propose_bench measures; beyond about
  // max_queue_wait_ms of work they would fail Busy "overloaded" anyway),
  // and it costs memory only when used (a value plus about 0.5 KB each).
  int max_async_proposals = 10000;
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

  // ---- Master election (per group) ----
  //
  // With master_election on, each group elects at most one master at a time.
  // The master keeps a lease: while it holds one, no other node can become
  // master, so the master serves linearizable reads with no message and no
  // log write (Node::ReadBarrier), and the other nodes forward their
  // proposals to it instead of competing with it (forward_to_master).
  // Keeping a master costs no log write: the lease is renewed by heartbeats
  // and the master's own ACCEPTs, which acceptors answer from memory. Every
  // election costs one noop instance in the log, nothing more.
  //
  // CLOCK CONTRACT. Leases are measured on each node's monotonic clock
  // (std::chrono::steady_clock; the wall clock is never read, so setting or
  // stepping it changes nothing). chorus assumes that every member's
  // monotonic clock runs at a rate within +/- max_clock_drift_ppm of real
  // time (true rate drift; NTP slewing stays far below the default bound).
  // A process that is paused (SIGSTOP, a long stall) loses its lease safely:
  // the monotonic clock keeps running while it is paused, so it serves no
  // lease read once it resumes past the lease's end. What the contract does
  // NOT cover: a clock that runs faster than the bound on an acceptor (its
  // grant ends early while the master still trusts its lease), or one that
  // stops while real time goes on on the master (a machine suspended to RAM:
  // CLOCK_MONOTONIC does not count the suspension).
  // Under the contract, two nodes never hold a lease of the same group at
  // the same instant, and a ReadBarrier never misses a value chosen before
  // it began.
  //
  // The defaults aim at a failover under 1.5 s on a LAN: a dead master's
  // lease runs out after at most lease_ms (800 ms), and a follower starts an
  // election election_timeout_ms (800 ms) plus up to election_jitter_ms
  // (200 ms) after the last heartbeat it heard, so a new master is ready
  // about 0.8 to 1.1 s after the old one died (one prepare round and one
  // noop commit more).

  // Elect a master per group. Default false: every node proposes on its
  // own, as before; the master queries return NotSupported and no heartbeat
  // is sent. All members of a cluster must use the same setting.
  bool master_election = false;
  // How long one grant of an acceptor holds: an acceptor that heard from
  // the master refuses to promise any other node for lease_ms of its own
  // clock. The master counts its lease from when it SENT the heartbeat (or
  // ACCEPT), shortened by the drift bound, so it ends before any grant.
  // Longer: fewer elections on a slow network, slower failover. Default
  // 800 ms. REQUIRES > 0.
  int lease_ms = 800;
  // How often the master sends heartbeats (renewing its lease and telling
  // the followers it is alive). REQUIRES 0 < heartbeat_interval_ms <
  // lease_ms / 2, so that a lease survives one lost heartbeat. Default
  // 100 ms: eight renewals per lease; a heartbeat is a few dozen bytes.
  int heartbeat_interval_ms = 100;
  // A follower that heard no heartbeat from a live master for this long
  // (plus a random 0..election_jitter_ms) starts an election. REQUIRES >=
  // lease_ms: an earlier election would only be refused by acceptors that
  // still grant the old master's lease. Default 800 ms.
  int election_timeout_ms = 800;
  // The random part of the election timeout, so that two followers rarely
  // campaign at once (and duel). REQUIRES >= 0. Default 200 ms.
  int election_jitter_ms = 200;
  // The bound on the rate drift of every member's monotonic clock, in parts
  // per million (see CLOCK CONTRACT above). The master shortens its lease by
  // this factor on both sides: lease_ms * (1e6 - ppm) / (1e6 + ppm).
  // Default 50000 (5%): a hundred times the 500 ppm NTP ever slews, and it
  // costs only 10% of the lease. REQUIRES 0 <= max_clock_drift_ppm < 500000.
  int max_clock_drift_ppm = 50000;
  // What Propose and BatchPropose do on a node that knows a live master
  // other than itself. true (default): the value is forwarded to the master,
  // which proposes it; the caller sees one extra hop and nothing else (the
  // call returns once the value executed on this node, as always). false:
  // the call returns NotMaster at once (definite: never proposed), whose
  // message names the master's address "ip:port", so the application can
  // send its request there. A value forwarded just before the master
  // changes is not re-sent (it could then execute twice): the call ends at
  // its deadline with Timeout, as any indeterminate outcome.
  bool forward_to_master = true;
  // Called on the group's loop thread each time the master of `group`, as
  // this node knows it, changes: this node became master (is_master true;
  // it is ready: ReadBarrier is served by its lease), it stopped being
  // master (false), or it learned of another master, or of none (false).
  // A new epoch of the same master (GetMaster shows it) does not call it.
  // It must be quick and must not block. It may call the Node's queries
  // (GetMaster for the details, IsMaster, GetGroupStatus), but never a call
  // that waits for the group (Propose, BatchPropose, ReadBarrier,
  // TransferMaster, StepDown): it runs on the loop that would answer it.
  // Default (empty): none.
  std::function<void(uint32_t group, bool is_master)> on_master_change;

  // ---- Checkpoints and log trimming (per group) ----
  //
  // A group makes a checkpoint only when every one of its state machines
  // supports them (StateMachine::PrepareCheckpoint). chorus stores the
  // newest complete one per group, trims the log below it (keeping a
  // margin, so that a peer that lags by less catches up from the log), loads
  // it on restart instead of replaying the whole log, and sends it to a peer
  // that fell behind every log (streamed in checksummed chunks, resumed
  // after an interruption, loaded in the running process).

  // Where the checkpoints live: one directory per group and checkpoint
  // (checkpoint_dir/g<group>/<instance>/). Default (empty): data_dir +
  // "/checkpoints"; with an empty data_dir as well (a log_storage_factory
  // and no data_dir), checkpoints are off and the log is never trimmed.
  std::string checkpoint_dir;
  // Make a checkpoint each time the group executed this many instances
  // since the last one. 0: never (no trimming; a peer behind every log
  // can still be sent the newest checkpoint there is, which is none).
  // Default 100000: at 20,000 values/s one every 5 s, and the log holds at
  // most this plus log_keep_instances records.
  uint64_t checkpoint_interval_instances = 100000;
  // Instances of log kept below the newest checkpoint when trimming.
  // A peer lagging by less than this catches up from the log (cheap); one
  // lagging by more gets the checkpoint. Default 20000. 0: trim right at
  // the checkpoint.
  uint64_t log_keep_instances = 20000;
  // ...and at least this many bytes of chosen values are kept below the
  // checkpoint (both margins hold: the trim point is the lower of the two).
  // Default 0 (the instance margin alone).
  uint64_t log_keep_bytes = 0;
  // A checkpoint is sent in chunks of this many bytes, each checksummed,
  // one chunk outstanding per transfer (bounded memory on both sides).
  // Default 1 MiB; REQUIRES 4 KiB .. max_frame_bytes / 2.
  uint32_t checkpoint_chunk_bytes = 1u << 20;
  // Rate limit of the checkpoint chunks this node sends (all transfers
  // together), so a transfer does not starve the replication traffic.
  // Default 200 MiB/s; 0: unlimited.
  uint64_t checkpoint_send_bytes_per_sec = 200u << 20;

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
  // While this many of the group's batches are in flight (proposed and not
  // yet chosen or failed), and they hold on average at least a third of
  // batch_max_count values, a batch that is not full does not leave when it
  // would: it keeps filling until one of them ends (or it fills up, or its
  // earliest deadline comes). Otherwise it leaves as before: a lone caller
  // waits for nothing, and neither do the few callers of a group whose
  // batches stay small (waiting would cost them a round of latency and save
  // little). Under load the batches fill while the ones ahead are
  // replicated, and each value costs the loop, the disk and the peers a
  // fraction of an instance instead of a whole one.
  // Default 0: no limit (every batch leaves at its flush, however many are
  // in flight). propose_bench on 2 cores (README "Batch shape"): 2 made one
  // group with 100 callers 1.18-1.27x faster (41-46 values per batch
  // instead of 29-31) but 4 groups of 25 callers 0.85-0.88x (their batches
  // came out smaller, 16 instead of 19), so it is for a deployment with
  // one busy group, chosen by measuring it.
  int batch_max_inflight = 0;

  // ---- Logging ----
  // Where log lines go. Default (empty): stderr.
  LogHook log_hook;
  // Lines below this level are dropped. Default kWarning.
  LogLevel log_level = LogLevel::kWarning;
};

}  // namespace chorus

#endif  // CHORUS_OPTIONS_H_
